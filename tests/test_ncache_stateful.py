"""Stateful test: impl/ncache.py driven through random schedules (joins, transfers, writes, failed
replications, graceful and abrupt leaves, orphan pulls, split-brains and merges, maintenance and its
exits), with
spec/NCachePartitionReplica.tla's invariants restated over the implementation's own state after every step,
and the runs validated by TLC as behaviors of the spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import action_names, distinct_traces
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from tidemark.conformance.cli.main import main
from tidemark.conformance.mappings.ncache import NCacheMapping, NcReplay, build
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import Record, Value, value_sort_key
from tidemark.conformance.traces import Trace, write_traces
from tidemark.impl.ncache import FUNCTIONAL, UNDER_STATE_TRANSFER, NCacheCluster

SPEC = Path("spec/NCachePartitionReplica.tla")
WIDE = Path("spec/NCachePartitionReplica-sim.cfg")  # 4 nodes, 6 buckets, 5 writes, 2 leaves, a split


# --- the spec's invariants, on the implementation ------------------------------------------------------


def map_is_sound(c: NCacheCluster) -> None:
    """OneOwner, StatusMatchesMap, Routed, ReplicaElsewhere."""
    for b in c.buckets:
        temp, orphan = c.temp[b], c.orphan[b]
        assert c.owner[b] in c.members, f"OneOwner: bucket {b} owned by {c.owner[b]}"
        assert temp is None or (temp in c.members and temp != c.owner[b] and orphan is None), f"OneOwner: {b}"
        assert (c.status[b] == FUNCTIONAL) == (temp is None and orphan is None), f"StatusMatchesMap: {b}"
        assert not c.logged[b] or c.status[b] == UNDER_STATE_TRANSFER, f"StatusMatchesMap: {b} logged"
        assert (orphan or c.owner[b]) in c.members, f"Routed: {b}"
    assert all(c.replica_holder(x) != x for x in c.members), "ReplicaElsewhere"


def acked_writes_survive(run: NcReplay) -> None:
    """AckedWritesSurvive, where the models say it holds: no split, at most one member gone (a leave, or a
    stop for maintenance and its timeout)."""
    c = run.cluster
    if run.splits or len(c.left) > 1:
        return
    for k, v in run.acked.items():
        assert c.store_of(c.config.bucket(k)).get(k) == v, f"AckedWritesSurvive: {k}={v}"


# --- the state machine -----------------------------------------------------------------------------------


def make_machine(
    model: Path, runs: list[tuple[dict[str, Value], ...]] | None = None
) -> type[RuleBasedStateMachine]:
    """Random schedules under the model's bounds; with `runs`, every run's states are appended to it."""
    mapping: NCacheMapping = build(read_config(model).constants)

    class NCacheMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.run = NcReplay(NCacheCluster.initial(mapping.config), {}, 0, 0, 0, 0, Record(name="Init"))
            self.states = [mapping.abstract(self.run)] if runs is not None else []

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            actions = sorted(mapping.enabled(self.run), key=value_sort_key)
            action = data.draw(st.sampled_from(actions), label="action")
            self.run = mapping.apply(self.run, action)
            if runs is not None:
                self.states.append(mapping.abstract(self.run))

        @invariant()
        def spec_invariants(self) -> None:
            map_is_sound(self.run.cluster)
            acked_writes_survive(self.run)

        def teardown(self) -> None:
            if runs is not None:
                runs.append(tuple(self.states))

    NCacheMachine.__name__ = f"NCacheMachine[{model.stem}]"
    return NCacheMachine


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    """Random schedules of the wide model (invariants checked on the way), as distinct ITF traces."""
    runs: list[tuple[dict[str, Value], ...]] = []
    run_state_machine_as_test(
        make_machine(WIDE, runs), settings=settings(max_examples=120, stateful_step_count=40)
    )
    return distinct_traces(runs, "NCachePartitionReplica", WIDE)


def test_random_schedules_reach_every_kind_of_step(traces: list[Trace]) -> None:
    assert len(traces) >= 100
    seen = set().union(*map(action_names, traces))
    kinds = {"Join", "StartTransfer", "EndTransfer", "Write", "ReplicationFailure", "Leave", "PullOrphan"}
    kinds |= {"Split", "LoserWrite", "Merge"}  # a stop for maintenance is rare here: the next machine
    assert kinds <= seen, f"never taken: {sorted(kinds - seen)}"


@pytest.mark.tlc
def test_tidemark_validate_accepts_every_schedule(
    traces: list[Trace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "schedules.jsonl"
    write_traces(path, traces)
    assert main(["validate", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["traces"], report["accepted"], report["rejected"]) == (len(traces), len(traces), [])
    assert (report["spec"], report["config"]) == (str(SPEC), str(WIDE))


# The standard model's bounds, the schedules of the test suite's profile.
TestNCacheSchedulesStandard = make_machine(Path("spec/NCachePartitionReplica.cfg")).TestCase
TestNCacheSchedulesStandard.settings = settings(max_examples=100, stateful_step_count=40)

# Maintenance mode's bounds: a stop and its exits.
MAINTENANCE = Path("spec/NCachePartitionReplica-maintenance.cfg")
TestNCacheSchedulesMaintenance = make_machine(MAINTENANCE).TestCase
TestNCacheSchedulesMaintenance.settings = settings(max_examples=100, stateful_step_count=30)
