"""Stateful test: impl/pme.py driven through random schedules of the whole protocol (transactions, crashes,
restarts, joins, checkpoints, baseline changes, exchanges, rebalancing), with spec/PME.tla's invariants
restated over the implementation's own state after every step, and the runs validated by TLC as
behaviors of the spec.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from conformance.cli import main
from conformance.mappings.pme import PmeMapping, build
from conformance.mappings.tx_counters import STUTTERING, TxReplay, step_value
from conformance.tlc.config import read_config
from conformance.tlc.values import Record, Value, canonical_json, state_to_itf
from conformance.traces import Trace, write_traces
from impl.cluster import NearState, Step
from impl.pme import PartState, PmeCluster, durable_counters, idle_verify
from impl.wal import DataRecord, RollbackRecord

SPEC = Path("spec/PME.tla")
STANDARD = Path("spec/PME.cfg")  # 3 servers, one partition, txs {1, 2} and {3}, one crash, restart, join
WIDE = Path("spec/PME-sim.cfg")  # 4 servers, two partitions, two crashes, baseline changes


# --- the spec's invariants, on the implementation --------------------------------------------------------


def data_records(cluster: PmeCluster) -> set[DataRecord]:
    return {r for node in cluster.nodes.values() for r in node.disk.records() if isinstance(r, DataRecord)}


def acked(cluster: PmeCluster, tx: str) -> bool:
    near = cluster.near[tx]
    return near.state is NearState.COMMITTED and any(
        isinstance(r, DataRecord) and r.tx == tx for r in cluster.nodes[near.primary].disk.records()
    )


def holds(cluster: PmeCluster, node: str, record: DataRecord) -> bool:
    entry = cluster.nodes[node].data.get(record.key)
    return entry is not None and entry.cntr >= record.cntr


def copies(cluster: PmeCluster) -> list[tuple[str, int, PartState]]:
    """Every copy held in memory: on live servers and on restarted ones."""
    return [
        (n, p, c.state)
        for n in sorted(cluster.alive | cluster.restarted)
        for p, c in sorted(cluster.states[n].items())
    ]


def unique_counters(cluster: PmeCluster) -> None:
    writers: dict[tuple[int, int], tuple[int, str]] = {}
    closed: set[tuple[int, int]] = set()
    for node in cluster.nodes.values():
        for r in node.disk.records():
            if isinstance(r, RollbackRecord):
                closed.update((r.part, c) for c in range(r.start + 1, r.start + r.delta + 1))
    for r in sorted(data_records(cluster)):
        at = (cluster.config.partition(r.key), r.cntr)
        assert at not in closed, f"UniqueCounters: p{at[0]} counter {r.cntr} updated and closed"
        first = writers.setdefault(at, (r.key, r.tx))
        assert first == (r.key, r.tx), f"UniqueCounters: p{at[0]} counter {r.cntr} for {first} and {r}"


def owning_covers_lwm(cluster: PmeCluster) -> None:
    records = data_records(cluster)
    for node, part, state in copies(cluster):
        if state is not PartState.OWNING:
            continue
        lwm = cluster.nodes[node].counters[part].lwm
        lacking = [
            r
            for r in records
            if cluster.config.partition(r.key) == part and r.cntr <= lwm and not holds(cluster, node, r)
        ]
        assert not lacking, f"OwningCoversLwm: {node} p{part} lwm={lwm} lacks {lacking}"


def counter_reflects_wal(cluster: PmeCluster) -> None:
    for node in sorted(cluster.alive):
        n = cluster.nodes[node]
        for part, copy in cluster.states[node].items():
            if copy.state is PartState.MOVING:
                continue
            counter = n.counters[part]
            covered = set(range(1, counter.lwm + 1))
            for start, delta in counter.items:
                covered.update(range(start + 1, start + delta + 1))
            preparing = {
                c
                for local in n.txs.values()
                if local.state.value in ("locked", "preparing", "prepared", "rollingBack")
                for k, c in local.writes
                if cluster.config.partition(k) == part
            }
            durable = durable_counters(n.disk, part, cluster.config)
            assert durable <= covered | preparing, (
                f"CounterReflectsWal: {node} p{part} {counter} vs {durable}"
            )
            assert covered - set(range(1, counter.lwm + 1)) <= durable, (
                f"CounterReflectsWal: {node} p{part} items {counter.items} not in its WAL"
            )


def primary_hwm_covers(cluster: PmeCluster) -> None:
    if cluster.top_ver != cluster.ready_ver:
        return
    for part, owners in cluster.owners.items():
        if not owners or part in cluster.lost:
            continue
        primary = cluster.nodes[owners[0]].counters[part]
        assert primary.hwm >= primary.lwm, f"PrimaryHwmCovers: {owners[0]} p{part} {primary}"
        for node in sorted(cluster.alive):
            if part in cluster.nodes[node].counters:
                applied = cluster.nodes[node].counters[part].highest_applied
                assert primary.hwm >= applied, f"PrimaryHwmCovers: {owners[0]} below {node}'s {applied}"


def owners_follow_affinity(cluster: PmeCluster) -> None:
    owners = set(cluster.owners[0])
    if cluster.top_ver == cluster.ready_ver:
        assert owners == set(cluster.ideal_owners()) & cluster.alive, f"OwnersFollowAffinity: {owners}"
    for node in owners & cluster.alive:
        missing = set(range(cluster.config.partitions)) - cluster.lost - set(cluster.states[node])
        assert not missing, f"OwnersFollowAffinity: owner {node} holds no copy of {missing}"


def acked_never_lost(cluster: PmeCluster) -> None:
    for record in data_records(cluster):
        if not acked(cluster, record.tx):
            continue
        part = cluster.config.partition(record.key)
        for node, p, state in copies(cluster):
            if p == part and state is not PartState.MOVING and record in cluster.nodes[node].disk.records():
                assert holds(cluster, node, record), f"AckedNeverLost: {node} lost {record}"


def idle_verify_clean(cluster: PmeCluster) -> None:
    if not cluster.quiet:
        return
    report = idle_verify(cluster)
    assert report.clean, f"IdleVerifyClean: {report}"
    for record in data_records(cluster):
        part = cluster.config.partition(record.key)
        if acked(cluster, record.tx) and part not in cluster.lost:
            for node in sorted(cluster.alive):
                if cluster.state_of(node, part) == PartState.OWNING:
                    assert holds(cluster, node, record), f"IdleVerifyClean: {node} lacks acked {record}"


INVARIANTS: tuple[Callable[[PmeCluster], None], ...] = (
    unique_counters,
    owning_covers_lwm,
    counter_reflects_wal,
    primary_hwm_covers,
    owners_follow_affinity,
    acked_never_lost,
    idle_verify_clean,
)


# --- the state machine -----------------------------------------------------------------------------------

FAULTS = {"NodeFail", "Restart", "Join", "Checkpoint", "BaselineChange"}
FAULT_ODDS = 6


def make_machine(
    cluster_class: type[PmeCluster], model: Path, runs: list[tuple[dict[str, Value], ...]] | None = None
) -> type[RuleBasedStateMachine]:
    """Random schedules under the model's constants (crash bound, baseline auto-adjust); with `runs`,
    every run's states abstracted to spec states are appended to it."""
    mapping: PmeMapping = build(read_config(model).constants)

    class PmeMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.cluster = cluster_class.initial(mapping.config)
            self.action: Value = Record(name="Init")
            self.states = [self._abstract()] if runs is not None else []

        def _abstract(self) -> dict[str, Value]:
            return mapping.abstract(TxReplay(self.cluster, self.action))

        def _choices(self) -> tuple[list[Step], list[Step]]:
            protocol, faults = [], []
            for s in self.cluster.enabled():
                if s.name == "Checkpoint" or mapping._allowed(s, self.cluster):
                    (faults if s.name in FAULTS else protocol).append(s)
            return protocol, faults

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            protocol, faults = self._choices()
            # A live server can always checkpoint: faults drawn uniformly would crash most runs early.
            fault = not protocol or data.draw(st.integers(1, FAULT_ODDS), label="fault?") == 1
            step = data.draw(st.sampled_from(faults if fault else protocol), label="step")
            self.cluster = self.cluster.apply(step)
            if step.name not in STUTTERING:
                self.action = step_value(step)
            if runs is not None:
                self.states.append(self._abstract())

        @invariant()
        def spec_invariants(self) -> None:
            for check in INVARIANTS:
                check(self.cluster)

        def teardown(self) -> None:
            if runs is not None:
                runs.append(tuple(self.states))

    PmeMachine.__name__ = f"PmeMachine[{cluster_class.__name__}, {model.stem}]"
    return PmeMachine


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    """Random schedules of the standard model (invariants checked on the way), as distinct ITF traces."""
    runs: list[tuple[dict[str, Value], ...]] = []
    run_state_machine_as_test(
        make_machine(PmeCluster, STANDARD, runs), settings=settings(stateful_step_count=60)
    )
    distinct = {canonical_json([state_to_itf(s) for s in run]): run for run in runs}
    return [
        Trace(id=f"hypothesis-{i}", spec="PME", states=run, config=str(STANDARD))
        for i, run in enumerate(distinct.values())
    ]


def _names(trace: Trace) -> set[str]:
    return {str(s["action"]["name"]) for s in trace.states if isinstance(s["action"], Record)}


def test_random_schedules_reach_the_exchange_and_rebalancing(traces: list[Trace]) -> None:
    assert len(traces) >= 100
    seen = set().union(*map(_names, traces))
    kinds = {"NodeFail", "Restart", "Join", "SendSingle", "FullMessage", "Supply", "Rebalance", "Recover"}
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
    assert (report["spec"], report["config"]) == (str(SPEC), str(STANDARD))


# Four servers, two partitions, two crashes, baseline changes (RENTING copies, evictions, full rebalance).
TestPmeSchedulesWide = make_machine(PmeCluster, WIDE).TestCase
TestPmeSchedulesWide.settings = settings(max_examples=100, stateful_step_count=80)
