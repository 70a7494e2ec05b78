"""Stateful test: impl/cluster.py driven through random schedules, with spec/TxCounters.tla's invariants
checked on the implementation after every step, and the runs validated by TLC as behaviors of the spec.

Hypothesis draws each step from `Cluster.enabled()` (transaction steps, message deliveries, crashes,
restarts, checkpoints, exchanges): nothing else chooses. The invariants below restate the spec's in
Python over the implementation's own state (WAL records, counters, data, the near node), so a bug the
abstraction hides would still show. The same runs, abstracted with the TxCounters mapping, are ITF
traces that `tidemark validate` must accept in one TLC run, and a tampered one must be rejected at its
step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from tidemark.conformance.cli.main import main
from tidemark.conformance.mappings.tx_counters import (
    STUTTERING,
    TxCountersMapping,
    TxReplay,
    build,
    step_value,
)
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import Record, Value, canonical_json, make_function, state_to_itf
from tidemark.conformance.traces import Trace, write_traces
from tidemark.conformance.validate import validate_traces
from tidemark.conformance.zoo.mutants import CLUSTER_MUTANTS, NoOutOfOrderTrackingCluster
from tidemark.impl.cluster import Cluster, NearState, Node, Step, TxState
from tidemark.impl.counter import PartitionUpdateCounter
from tidemark.impl.wal import DataRecord, RollbackRecord

SPEC = Path("spec/TxCounters.tla")
STANDARD = Path("spec/TxCounters.cfg")  # 3 servers, one partition, txs {1, 2} and {3}, one crash
WIDE = Path("spec/TxCounters-sim.cfg")  # 4 servers, two partitions, overlapping keys, two crashes


# --- the spec's invariants, on the implementation --------------------------------------------------------


def covered(counter: PartitionUpdateCounter) -> set[int]:
    """The counters a copy claims: 1..lwm and every out-of-order item (the spec's Covered)."""
    claimed = set(range(1, counter.lwm + 1))
    for start, delta in counter.items:
        claimed.update(range(start + 1, start + delta + 1))
    return claimed


def wal_counters(cluster: Cluster, node: Node, part: int) -> set[int]:
    """The counters of `part` the node's WAL makes durable: data records and rollback ranges."""
    durable: set[int] = set()
    for record in node.disk.records():
        if isinstance(record, DataRecord) and cluster.config.partition(record.key) == part:
            durable.add(record.cntr)
        elif isinstance(record, RollbackRecord) and record.part == part:
            durable.update(range(record.start + 1, record.start + record.delta + 1))
    return durable


def data_records(cluster: Cluster) -> set[DataRecord]:
    """Every data record on every server's disk, alive or not."""
    return {r for node in cluster.nodes.values() for r in node.disk.records() if isinstance(r, DataRecord)}


def acked(cluster: Cluster, tx: str) -> bool:
    """PRIMARY_SYNC acknowledgement: the near node decided commit and its primary logged the commit."""
    near = cluster.near[tx]
    primary_wal = cluster.nodes[near.primary].disk.records()
    return near.state is NearState.COMMITTED and any(
        isinstance(r, DataRecord) and r.tx == tx for r in primary_wal
    )


def holding(cluster: Cluster) -> list[str]:
    """Servers whose memory counts: alive, or restarted from their disk."""
    return sorted(cluster.alive | cluster.restarted)


def unique_counters(cluster: Cluster) -> None:
    records = data_records(cluster)
    for part in cluster.owners:
        closed: set[int] = set()
        for node in cluster.nodes.values():
            for r in node.disk.records():
                if isinstance(r, RollbackRecord) and r.part == part:
                    closed.update(range(r.start + 1, r.start + r.delta + 1))
        writers: dict[int, tuple[int, str]] = {}
        for r in sorted(records):
            if cluster.config.partition(r.key) != part:
                continue
            assert r.cntr not in closed, f"UniqueCounters: counter {r.cntr} of p{part} updated and closed"
            first = writers.setdefault(r.cntr, (r.key, r.tx))
            assert first == (r.key, r.tx), f"UniqueCounters: p{part} counter {r.cntr} for {first} and {r}"


def lwm_is_durable(cluster: Cluster) -> None:
    records = data_records(cluster)
    for name in holding(cluster):
        node = cluster.nodes[name]
        for part, counter in node.counters.items():
            updates = {r.cntr for r in records if cluster.config.partition(r.key) == part}
            missing = sorted(set(range(1, counter.lwm + 1)) & updates - wal_counters(cluster, node, part))
            assert not missing, f"LwmIsDurable: {name} p{part} lwm={counter.lwm} lacks updates {missing}"


def counter_reflects_wal(cluster: Cluster) -> None:
    for name in holding(cluster):
        node = cluster.nodes[name]
        for part, counter in node.counters.items():
            durable = wal_counters(cluster, node, part)
            assert durable <= covered(counter), (
                f"CounterReflectsWal: {name} p{part} {counter} vs WAL {durable}"
            )
            out_of_order = covered(counter) - set(range(1, counter.lwm + 1))
            assert out_of_order <= durable, (
                f"CounterReflectsWal: {name} p{part} items {counter.items} not in WAL"
            )


def primary_hwm_covers(cluster: Cluster) -> None:
    for part, owners in cluster.owners.items():
        if not owners or owners[0] not in cluster.alive:
            continue
        primary = cluster.nodes[owners[0]].counters[part]
        assert primary.hwm >= primary.lwm, f"PrimaryHwmCovers: {owners[0]} p{part} {primary}"
        for owner in set(owners) & cluster.alive:
            applied = cluster.nodes[owner].counters[part].highest_applied
            assert primary.hwm >= applied, (
                f"PrimaryHwmCovers: {owners[0]} p{part} hwm below {owner}'s {applied}"
            )


def _has_acked(cluster: Cluster, name: str, record: DataRecord) -> bool:
    entry = cluster.nodes[name].data.get(record.key)
    return entry is not None and entry.cntr >= record.cntr


def acked_never_lost(cluster: Cluster) -> None:
    for record in data_records(cluster):
        if not acked(cluster, record.tx):
            continue
        for name in holding(cluster):
            if record in cluster.nodes[name].disk.records():
                assert _has_acked(cluster, name, record), f"AckedNeverLost: {name} lost {record}"


def commit_only_prepared(cluster: Cluster) -> None:
    for tx, near in cluster.near.items():
        if near.state is not NearState.COMMITTED:
            continue
        for backup in (set(cluster.tx_owners(tx)) & cluster.alive) - {near.primary}:
            local = cluster.nodes[backup].txs.get(tx)
            voted = local is not None and local.state in (TxState.PREPARED, TxState.COMMITTED)
            assert voted, f"CommitOnlyPrepared: {tx} committed, {backup} holds {local}"


def quiet_consistent(cluster: Cluster) -> None:
    if not cluster.quiet:
        return
    records = data_records(cluster)
    for part, owners in cluster.owners.items():
        live = sorted(set(owners) & cluster.alive)
        views = {
            n: (
                {k: e for k, e in cluster.nodes[n].data.items() if cluster.config.partition(k) == part},
                cluster.nodes[n].counters[part].highest_applied,
            )
            for n in live
        }
        assert all(v == views[live[0]] for v in views.values()), (
            f"QuietConsistent: p{part} copies differ: {views}"
        )
        for name in live:
            lost = [r for r in records if acked(cluster, r.tx) and not _has_acked(cluster, name, r)]
            assert not lost, f"QuietConsistent: {name} lacks acknowledged {lost}"


INVARIANTS: tuple[Callable[[Cluster], None], ...] = (
    unique_counters,
    lwm_is_durable,
    counter_reflects_wal,
    primary_hwm_covers,
    acked_never_lost,
    commit_only_prepared,
    quiet_consistent,
)


# --- the state machine -----------------------------------------------------------------------------------

FAULTS = {"NodeFail", "Restart", "Checkpoint"}
FAULT_ODDS = 6


def make_machine(
    cluster_class: type[Cluster], model: Path, runs: list[tuple[dict[str, Value], ...]] | None = None
) -> type[RuleBasedStateMachine]:
    """Random schedules of `cluster_class` under the model's constants (its crash bound included); with
    `runs`, every run's states abstracted to spec states are appended to it."""
    mapping: TxCountersMapping = build(read_config(model).constants)

    class ClusterMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.cluster = cluster_class.initial(mapping.config)
            self.action: Value = Record(name="Init")
            self.states = [self._abstract()] if runs is not None else []

        def _abstract(self) -> dict[str, Value]:
            return mapping.abstract(TxReplay(self.cluster, self.action))

        def _choices(self) -> tuple[list[Step], list[Step]]:
            """The enabled protocol steps, and the enabled crashes, restarts and checkpoints."""
            crashes_left = mapping.max_failures - len(self.cluster.down | self.cluster.restarted)
            protocol, faults = [], []
            for s in self.cluster.enabled():
                if s.name not in FAULTS:
                    protocol.append(s)
                elif s.name != "NodeFail" or crashes_left > 0:
                    faults.append(s)
            return protocol, faults

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            protocol, faults = self._choices()
            # Faults are always enabled (a live server can always checkpoint). Drawn uniformly with the
            # protocol steps they would crash most runs within a few steps, so a fault is taken one time
            # in FAULT_ODDS (or when nothing else is enabled).
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

    ClusterMachine.__name__ = f"ClusterMachine[{cluster_class.__name__}, {model.stem}]"
    return ClusterMachine


# Four servers (one owning nothing), two partitions, lock waits on overlapping keys, two crashes. Half the
# profile's examples: the standard model's 200 runs below cover the steps; this adds breadth in ~10 s.
TestClusterSchedulesWide = make_machine(Cluster, WIDE).TestCase
TestClusterSchedulesWide.settings = settings(max_examples=100)


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    """The standard model's random schedules (invariants checked on the way), as distinct ITF traces."""
    runs: list[tuple[dict[str, Value], ...]] = []
    run_state_machine_as_test(make_machine(Cluster, STANDARD, runs))
    distinct = {canonical_json([state_to_itf(s) for s in run]): run for run in runs}
    return [
        Trace(id=f"hypothesis-{i}", spec="TxCounters", states=run, config=str(STANDARD))
        for i, run in enumerate(distinct.values())
    ]


def _names(trace: Trace) -> Iterator[str]:
    for state in trace.states:
        action = state["action"]
        assert isinstance(action, Record)
        yield str(action["name"])


def test_random_schedules_reach_every_kind_of_step(traces: list[Trace]) -> None:
    assert len(traces) >= 100
    seen = {name for trace in traces for name in _names(trace)}
    kinds = {"BackupCommit", "BackupRollback", "NodeFail", "Restart", "Recover", "Exchange", "RolledBack"}
    assert kinds <= seen, f"never taken: {sorted(kinds - seen)}"


@pytest.mark.tlc
def test_tidemark_validate_accepts_every_schedule_in_one_tlc_run(
    traces: list[Trace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "schedules.jsonl"
    write_traces(path, traces)  # the spec and model come from each trace's #meta
    assert main(["validate", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["traces"], report["accepted"], report["rejected"]) == (len(traces), len(traces), [])
    assert (report["spec"], report["config"], report["tlc_runs"]) == (str(SPEC), str(STANDARD), 1)


@pytest.mark.tlc
def test_tlc_rejects_a_tampered_schedule_at_the_tampered_step(traces: list[Trace]) -> None:
    trace, commit = next(
        (t, i) for t in traces for i, name in enumerate(_names(t)) if name in ("Commit", "BackupCommit")
    )
    state = trace.states[commit]
    # The commit applied; claim its data never reached the memory of the node it ran on.
    action = state["action"]
    assert isinstance(action, Record)
    emptied = {**state, "data": _without_node_data(state["data"], str(action["node"]))}
    tampered = Trace(
        id="tampered",
        spec="TxCounters",
        states=(*trace.states[:commit], emptied, *trace.states[commit + 1 :]),
    )
    report = validate_traces([tampered], SPEC, STANDARD)
    assert report.accepted == 0
    [rejection] = report.rejected
    assert (rejection.id, rejection.step, rejection.action) == ("tampered", commit, action["name"])
    assert any(line.startswith(f"data.{action['node']}") for line in rejection.diff), rejection.diff


def _without_node_data(data: Value, node: str) -> Value:
    assert isinstance(data, Record)
    return make_function({n: (make_function({}) if n == node else v) for n, v in data.items()})


# --- the invariants catch the known bugs -----------------------------------------------------------------

# Finding a bug needs no shrinking: skip it, so a caught mutant costs only the search.
FIND_ONLY = settings(phases=[Phase.explicit, Phase.reuse, Phase.generate])


@pytest.mark.parametrize(
    ("cluster_class", "invariant"),
    [
        (NoOutOfOrderTrackingCluster, "LwmIsDurable"),
        (CLUSTER_MUTANTS["commit-without-wal"], "CounterReflectsWal"),
    ],
    ids=["no-out-of-order-tracking", "commit-without-wal"],
)
def test_the_invariants_catch_a_broken_cluster(cluster_class: type[Cluster], invariant: str) -> None:
    with pytest.raises(AssertionError, match=invariant):
        run_state_machine_as_test(make_machine(cluster_class, STANDARD), settings=FIND_ONLY)
