"""spec/PME.tla's invariants restated over impl/pme.py's own state, for random runs of the implementation.

Hypothesis (tests/test_pme_stateful.py) and the random-walk campaign (conformance/campaign.py) drive
`PmeCluster`s beyond what TLC's models reach and check these after every step. Each check is the spec
invariant of the same name, read on the implementation: the WAL records of every disk stand for the
spec's `wal`, a copy held in memory (live or restarted server) for `Copy(n, p)`. `NoGapsAfterNodeLeft`
is an action property: it needs the state before the step too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from tidemark.impl.cluster import ACTIVE, NearState, Step
from tidemark.impl.pme import Demand, PartState, PmeCluster, covered, durable_counters, idle_verify
from tidemark.impl.wal import DataRecord, RollbackRecord

Check = Callable[[PmeCluster], Iterator[str]]


def data_records(cluster: PmeCluster) -> set[DataRecord]:
    return {r for node in cluster.nodes.values() for r in node.disk.records() if isinstance(r, DataRecord)}


def acked(cluster: PmeCluster, tx: str) -> bool:
    """PRIMARY_SYNC: the near node decided commit and the primary committed (a scenario's initial data,
    written by no transaction of the run, was committed everywhere before it)."""
    near = cluster.near.get(tx)
    if near is None:
        return True
    return near.state is NearState.COMMITTED and any(
        isinstance(r, DataRecord) and r.tx == tx for r in cluster.nodes[near.primary].disk.records()
    )


def holds(cluster: PmeCluster, node: str, record: DataRecord) -> bool:
    """The node holds the record's update, or a later write of its key."""
    entry = cluster.nodes[node].data.get(record.key)
    return entry is not None and entry.cntr >= record.cntr


def copies(cluster: PmeCluster) -> list[tuple[str, int, PartState]]:
    """Every copy held in memory: on live servers and on restarted ones."""
    return [
        (n, p, c.state)
        for n in sorted(cluster.alive | cluster.restarted)
        for p, c in sorted(cluster.states[n].items())
    ]


def unique_counters(cluster: PmeCluster) -> Iterator[str]:
    writers: dict[tuple[int, int], tuple[int, str]] = {}
    records = sorted(data_records(cluster))
    for r in records:
        at = (cluster.config.partition(r.key), r.cntr)
        first = writers.setdefault(at, (r.key, r.tx))
        if first != (r.key, r.tx):
            yield f"p{at[0]} counter {r.cntr} names key {first[0]} of {first[1]} and {r}"
    for node in sorted(cluster.config.servers):
        logged = cluster.nodes[node].disk.records()
        for part, copy in sorted(cluster.states[node].items()):
            if copy.state is not PartState.OWNING:
                continue  # a MOVING copy is rebalanced, a RENTING one evicted or rebalanced in full
            closed = {
                c
                for r in logged
                if isinstance(r, RollbackRecord) and r.part == part
                for c in range(r.start + 1, r.start + r.delta + 1)
            }
            for r in records:
                if cluster.config.partition(r.key) == part and r.cntr in closed and r not in logged:
                    yield f"{node} (OWNING) closed p{part} counter {r.cntr} of {r}, which it lacks"


def owning_covers_lwm(cluster: PmeCluster) -> Iterator[str]:
    records = data_records(cluster)
    for node, part, state in copies(cluster):
        if state is PartState.OWNING:
            lwm = cluster.nodes[node].counters[part].lwm
            lacking = sorted(
                r
                for r in records
                if cluster.config.partition(r.key) == part and r.cntr <= lwm and not holds(cluster, node, r)
            )
            if lacking:
                yield f"{node} p{part} OWNING at lwm={lwm} lacks {lacking}"


def counter_reflects_wal(cluster: PmeCluster) -> Iterator[str]:
    for node in sorted(cluster.alive):
        n = cluster.nodes[node]
        for part, copy in sorted(cluster.states[node].items()):
            if copy.state is not PartState.OWNING:
                continue
            counter = n.counters[part]
            done = covered(counter)
            preparing = {
                c
                for local in n.txs.values()
                if local.state in ACTIVE
                for k, c in local.writes
                if cluster.config.partition(k) == part
            }
            durable = durable_counters(n.disk, part, cluster.config)
            if not durable <= done | preparing:
                missing = sorted(durable - done - preparing)
                yield f"{node} p{part} {counter} does not cover its WAL's {missing}"
            if not done - set(range(1, counter.lwm + 1)) <= durable:
                yield f"{node} p{part} items {counter.items} are not in its WAL"


def primary_hwm_covers(cluster: PmeCluster) -> Iterator[str]:
    if cluster.top_ver != cluster.ready_ver:
        return
    for part, owners in sorted(cluster.owners.items()):
        if not owners or part in cluster.lost:
            continue
        primary = cluster.nodes[owners[0]].counters[part]
        if primary.hwm < primary.lwm:
            yield f"{owners[0]} p{part} hwm below lwm: {primary}"
        for node in sorted(cluster.alive):
            if part in cluster.nodes[node].counters:
                applied = cluster.nodes[node].counters[part].highest_applied
                if primary.hwm < applied:
                    yield f"{owners[0]} (primary) p{part} hwm={primary.hwm} < {node}'s last update {applied}"


def owners_follow_affinity(cluster: PmeCluster) -> Iterator[str]:
    owners = set(cluster.owners[0])
    if cluster.top_ver == cluster.ready_ver and owners != set(cluster.ideal_owners()) & cluster.alive:
        yield f"owners {sorted(owners)} are not the live ideal owners {cluster.ideal_owners()}"
    for node in sorted(owners & cluster.alive):
        missing = set(range(cluster.config.partitions)) - cluster.lost - set(cluster.states[node])
        if missing:
            yield f"owner {node} holds no copy of {sorted(missing)}"


def acked_never_lost(cluster: PmeCluster) -> Iterator[str]:
    for record in sorted(data_records(cluster)):
        if not acked(cluster, record.tx):
            continue
        part = cluster.config.partition(record.key)
        for node, p, state in copies(cluster):
            owning = p == part and state is PartState.OWNING
            if owning and record in cluster.nodes[node].disk.records() and not holds(cluster, node, record):
                yield f"{node} lost the acknowledged {record}"


def idle_verify_clean(cluster: PmeCluster) -> Iterator[str]:
    if not cluster.quiet:
        return
    report = idle_verify(cluster)
    if not report.clean:
        yield f"idle_verify on a quiet cluster: {report}"
    for record in sorted(data_records(cluster)):
        part = cluster.config.partition(record.key)
        if acked(cluster, record.tx) and part not in cluster.lost:
            for node in sorted(cluster.alive):
                owning = cluster.state_of(node, part) == PartState.OWNING
                if owning and not holds(cluster, node, record):
                    yield f"{node} OWNING lacks the acknowledged {record} on a quiet cluster"


def rebalance_mode_as_ignite(cluster: PmeCluster) -> Iterator[str]:
    threshold = cluster.config.wal_rebalance_threshold
    for m in sorted(cluster.rebal, key=repr):
        if m.mode.value != "historical":
            continue
        supplier = m.to if isinstance(m, Demand) else m.sender
        size = sum(1 for k in cluster.nodes[supplier].data if cluster.config.partition(k) == m.part)
        if m.first <= 1 or size <= threshold:
            yield f"historical rebalance {m} from a partition of {size} entries (threshold {threshold})"


INVARIANTS: dict[str, Check] = {
    "UniqueCounters": unique_counters,
    "OwningCoversLwm": owning_covers_lwm,
    "CounterReflectsWal": counter_reflects_wal,
    "PrimaryHwmCovers": primary_hwm_covers,
    "OwnersFollowAffinity": owners_follow_affinity,
    "AckedNeverLost": acked_never_lost,
    "IdleVerifyClean": idle_verify_clean,
    "RebalanceModeAsIgnite": rebalance_mode_as_ignite,
}


def no_gaps_after_node_left(before: PmeCluster, step: Step, after: PmeCluster) -> Iterator[str]:
    """The action property: a full message finds every OWNING copy of a server that finalized without
    gaps."""
    if step.name != "FullMessage" or not before._finalizes():
        return
    for node in sorted(after.alive):
        for part, copy in sorted(after.states[node].items()):
            counter = after.nodes[node].counters[part]
            if copy.state is PartState.OWNING and counter.items:
                yield f"{node} p{part} OWNING with gaps {counter.items} after a node-left exchange"


def violations(cluster: PmeCluster, before: PmeCluster | None = None, step: Step | None = None) -> list[str]:
    """Every invariant (and, given the step that led here, NoGapsAfterNodeLeft) that fails, as
    "Name: what"."""
    found = [f"{name}: {what}" for name, check in INVARIANTS.items() for what in check(cluster)]
    if before is not None and step is not None:
        found += [f"NoGapsAfterNodeLeft: {what}" for what in no_gaps_after_node_left(before, step, cluster)]
    return found
