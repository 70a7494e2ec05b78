"""Which boundary situations a run reached: the states where data-loss bugs hid because no model went there.

A model that never visits a state cannot check it, so every model and every campaign reports which of
these it reached (`tidemark verify`'s report):

- key 0: an update of key 0, the smallest key (a full rebalance starts there);
- size == threshold: a rebalancing decided for a supplier whose partition has exactly the WAL rebalance
  threshold's entries (historical needs more);
- merged join+left: an exchange that began with a join handled a server left too;
- RENTING->MOVING: a RENTING copy assigned again;
- two failures: a second server crash in one run;
- total outage: every server down (the cluster inactive until the activation).

Each is a predicate over one step, read on spec states (a TLC state graph's edges, or a trace) and on
impl/pme.py transitions (the campaign), with the same names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tidemark.conformance.tlc.values import Record, Value
from tidemark.impl.cluster import Step
from tidemark.impl.pme import Demand, Event, PartState, PmeCluster
from tidemark.impl.wal import DataRecord

BOUNDARIES = (
    "key 0",
    "size == threshold",
    "merged join+left",
    "RENTING->MOVING",
    "two failures",
    "total outage",
)


def _items(value: Value) -> Iterable[tuple[Value, Value]]:
    """A TLA+ function's pairs, however TLC printed it (<<>>, a sequence, a record, a function)."""
    if isinstance(value, tuple):
        return enumerate(value, start=1)
    if isinstance(value, Mapping):
        return value.items()
    return ()


def _field(value: Value | None, name: str) -> Value | None:
    return value[name] if isinstance(value, Record) and name in value else None


def _copy_states(state: Mapping[str, Value]) -> dict[tuple[Value, Value], Value | None]:
    return {(n, p): _field(c, "state") for n, copies in _items(state["state"]) for p, c in _items(copies)}


def _size(state: Mapping[str, Value], node: Value | None, part: Value | None, partitions: int) -> int:
    data = dict(_items(state["data"])).get(node, ()) if node is not None else ()
    return sum(1 for k, _ in _items(data) if isinstance(k, int) and k % partitions == part)


def spec_reached(
    src: Mapping[str, Value], dst: Mapping[str, Value], constants: Mapping[str, Value]
) -> set[str]:
    """The boundaries an edge src -> dst of spec/PME.tla's state graph reaches."""
    reached = set()
    partitions = constants.get("Partitions")
    threshold = constants.get("WalRebalanceThreshold")
    action = _field(dst.get("action"), "name")
    records = (r for _, w in _items(dst["wal"]) if isinstance(w, frozenset) for r in w)
    if any(_field(r, "type") == "data" and _field(r, "key") == 0 for r in records):
        reached.add("key 0")
    crashes = dst.get("crashes")
    if isinstance(crashes, int) and crashes >= 2:
        reached.add("two failures")
    if dst.get("active") is False:
        reached.add("total outage")
    if action == "FullMessage" and isinstance(partitions, int):
        pending = src.get("pending")
        if isinstance(pending, frozenset) and {"joined", "left"} <= pending:
            reached.add("merged join+left")
        before, after = _copy_states(src), _copy_states(dst)
        if any(s == "RENTING" and after.get(k) == "MOVING" for k, s in before.items()):
            reached.add("RENTING->MOVING")
        demands = dst.get("rebal")
        for m in demands if isinstance(demands, frozenset) else ():
            if _size(dst, _field(m, "to"), _field(m, "part"), partitions) == threshold:
                reached.add("size == threshold")
    return reached


def impl_reached(before: PmeCluster, step: Step, after: PmeCluster) -> set[str]:
    """The boundaries a step of the implementation reaches (the same predicates as `spec_reached`)."""
    reached = set()
    if step.name in ("Commit", "BackupCommit", "Recover", "Rebalance") and any(
        isinstance(r, DataRecord) and r.key == 0 for n in after.nodes.values() for r in n.disk.records()
    ):
        reached.add("key 0")
    if after.crashes >= 2:
        reached.add("two failures")
    if not after.active:
        reached.add("total outage")
    if step.name == "FullMessage":
        if {Event.JOINED, Event.LEFT} <= before.pending:
            reached.add("merged join+left")
        for node, copies in before.states.items():
            for part, copy in copies.items():
                moving = after.states[node].get(part)
                if copy.state is PartState.RENTING and moving and moving.state is PartState.MOVING:
                    reached.add("RENTING->MOVING")
        threshold = after.config.wal_rebalance_threshold
        for m in after.rebal:
            supplier = after.nodes[m.to].data if isinstance(m, Demand) else {}
            if sum(1 for k in supplier if after.config.partition(k) == m.part) == threshold:
                reached.add("size == threshold")
    return reached
