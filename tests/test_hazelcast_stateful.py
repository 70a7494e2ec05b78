"""Stateful test: impl/hazelcast.py driven through random schedules (puts, reordered and lost backups,
failed backups, anti-entropy, syncs and timeouts, crashes, joins, migrations, destroys), with
spec/HazelcastAntiEntropy.tla's invariants restated over the implementation's own state after every step,
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
from tidemark.conformance.mappings.hazelcast import HazelcastMapping, HzReplay, build, step_of
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import Record, Value, value_sort_key
from tidemark.conformance.traces import Trace, write_traces
from tidemark.impl.hazelcast import REQUIRES_SYNC, HazelcastCluster

SPEC = Path("spec/HazelcastAntiEntropy.tla")
WIDE = Path("spec/HazelcastAntiEntropy-sim.cfg")  # 3 members, 2 backups, 2 maps, 2 keys, 4 puts, 2 crashes
FAULTS = {"Drop", "BackupFailure", "Crash", "Join", "Destroy", "SyncTimeout"}
FAULT_ODDS = 5


# --- the spec's invariants, on the implementation ------------------------------------------------------


def permits_conserved(run: HzReplay) -> None:
    limit = run.cluster.config.max_parallel
    for m, s in run.cluster.members.items():
        held = len(s.syncs) + sum(s.serving.values())
        assert s.permits + held == limit, f"PermitsConserved: {m} has {s.permits} free and {held} held"


def versions_mean_data(run: HzReplay) -> None:
    c = run.cluster
    owner = c.owner
    if owner is None:
        return
    for m in sorted(c.alive):
        r = c.index_of(m)
        if not 1 <= r <= c.config.backup_count:
            continue
        for ns, mine in c.members[m].versions.items():
            theirs = c.members[owner].versions.get(ns)
            if ns in c.destroyed or ns in run.forked[m] or theirs is None or mine.dirty or theirs.dirty:
                continue
            if mine.slot(r) != REQUIRES_SYNC and mine.slot(r) == theirs.slot(r):
                assert c.data_of(m, ns) == c.data_of(owner, ns), f"VersionsMeanData: {m} {ns} at {mine}"


def data_never_goes_back(before: HazelcastCluster, after: HazelcastCluster, name: str) -> None:
    if name in ("SyncResponse", "Migrate", "Destroy"):
        return
    for m in sorted(before.alive & after.alive):
        for ns, entries in before.members[m].data.items():
            now = after.data_of(m, ns)
            for k, v in entries.items():
                assert k in now and now[k] >= v, f"DataNeverGoesBack: {m} {ns}[{k}] {v} -> {now.get(k)}"


# --- the state machine -----------------------------------------------------------------------------------


def make_machine(
    model: Path, runs: list[tuple[dict[str, Value], ...]] | None = None
) -> type[RuleBasedStateMachine]:
    """Random schedules under the model's bounds; with `runs`, every run's states are appended to it."""
    mapping: HazelcastMapping = build(read_config(model).constants)

    class HazelcastMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            members = mapping.config.members
            self.run = HzReplay(
                HazelcastCluster.initial(mapping.config),
                0,
                0,
                0,
                {m: frozenset() for m in members},
                Record(name="Init"),
            )
            self.states = [mapping.abstract(self.run)] if runs is not None else []

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            actions = sorted(mapping.enabled(self.run), key=value_sort_key)
            protocol = [a for a in actions if step_of(a).name not in FAULTS]
            faults = [a for a in actions if step_of(a).name in FAULTS]
            fault = not protocol or (faults and data.draw(st.integers(1, FAULT_ODDS), label="fault?") == 1)
            action = data.draw(st.sampled_from(faults if fault else protocol), label="action")
            before = self.run.cluster
            self.run = mapping.apply(self.run, action)
            data_never_goes_back(before, self.run.cluster, step_of(action).name)
            if runs is not None:
                self.states.append(mapping.abstract(self.run))

        @invariant()
        def spec_invariants(self) -> None:
            permits_conserved(self.run)
            versions_mean_data(self.run)

        def teardown(self) -> None:
            if runs is not None:
                runs.append(tuple(self.states))

    HazelcastMachine.__name__ = f"HazelcastMachine[{model.stem}]"
    return HazelcastMachine


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    """Random schedules of the wide model (invariants checked on the way), as distinct ITF traces."""
    runs: list[tuple[dict[str, Value], ...]] = []
    run_state_machine_as_test(
        make_machine(WIDE, runs), settings=settings(max_examples=120, stateful_step_count=60)
    )
    return distinct_traces(runs, "HazelcastAntiEntropy", WIDE)


def test_random_schedules_reach_every_kind_of_step(traces: list[Trace]) -> None:
    assert len(traces) >= 100
    seen = set().union(*map(action_names, traces))
    kinds = {"Backup", "BackupFailure", "Drop", "BackupAntiEntropy", "SyncSend", "SyncResponse", "SyncRetry"}
    kinds |= {"SyncTimeout", "Crash", "Join", "Migrate", "Destroy"}
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
TestHazelcastSchedulesStandard = make_machine(Path("spec/HazelcastAntiEntropy.cfg")).TestCase
TestHazelcastSchedulesStandard.settings = settings(max_examples=100, stateful_step_count=60)
