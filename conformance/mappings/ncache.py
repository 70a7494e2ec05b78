"""Mapping for spec/NCachePartitionReplica.tla <-> impl/ncache.py.

The implementation side of a spec state is `NcReplay`: a real `NCacheCluster` plus what the spec keeps
beside the protocol - the model's budgets (writes, leaves), the ghost `acked` (the last acknowledged value
per key) and the `action` that led here. Constants become the cluster's `NCacheConfig`: nodes n1..nN,
BucketCount and Sync. Variables map one to one: members (a sequence), left, owner / temp / status / orphan
/ logged (functions of the bucket; "none" for no member), active and replica (member -> key -> value over
every key of the model, 0 for none) and queue (member -> sequence of [key, value]).

Spec-level rules kept here: MaxWrites bounds Write, ReplicationFailure and LoserWrite (write n writes
value n), a Write or a LoserWrite is acknowledged, MaxLeaves bounds Leave and MaintenanceFailure (the
second member down), MaxSplits bounds Split, MaxMaintenance bounds StopForMaintenance. The cut-off member
of a split-brain and its store are `cut` and `cutStore`, the losers that may join again `rejoining`; the
member stopped for maintenance is `maint`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import ReplayError, State, shared_function, shared_record, shared_set
from tidemark.conformance.mappings.tx_counters import _field, _int, _pairs, _set, _str
from tidemark.conformance.tlc.values import Record, Value
from tidemark.conformance.zoo.mutants import implementation
from tidemark.conformance.zoo.ncache_mutants import NCACHE_MUTANTS
from tidemark.impl.ncache import NCacheCluster, NCacheConfig, Step, StepNotEnabled, Store

NONE = "none"
SPEC = "NCachePartitionReplica"
WRITES = ("Write", "ReplicationFailure", "LoserWrite")  # each spends a write number
ACKNOWLEDGED = ("Write", "LoserWrite")
LEAVES = ("Leave", "MaintenanceFailure")  # each spends a leave


@dataclass(frozen=True)
class NcReplay:
    """A cluster, the model's budgets and ghost, and the spec action that produced it."""

    cluster: NCacheCluster
    acked: Mapping[int, int]
    writes: int
    leaves: int
    splits: int
    maints: int
    action: Value


def action_value(step: Step) -> Record:
    """A step as the spec's `action` record."""
    fields: dict[str, Value] = {"name": step.name}
    for name in ("node", "key", "value", "bucket", "graceful"):
        if (v := getattr(step, name)) is not None:
            fields[name] = v
    if step.nodes is not None:
        fields["nodes"] = shared_set(step.nodes)
    return shared_record(**fields)


def step_of(action: Value) -> Step:
    """The step a spec action names."""
    record = cast(Record, action)
    name = _str(_field(record, "name"))
    graceful = record.get("graceful")
    if graceful is not None and not isinstance(graceful, bool):
        raise ReplayError(f"expected a boolean, got {graceful!r}")
    ints = {k: _int(record[k]) for k in ("key", "value", "bucket") if k in record}
    node = _str(record["node"]) if "node" in record else None
    nodes = frozenset(_str(n) for n in _set(record["nodes"])) if "nodes" in record else None
    return Step(name, node=node, graceful=graceful, nodes=nodes, **ints)


def _member(value: Value) -> str | None:
    name = _str(value)
    return None if name == NONE else name


class NCacheMapping:
    spec = SPEC

    def __init__(self, constants: Mapping[str, Value], cluster_class: type[NCacheCluster]) -> None:
        try:
            count = _int(constants["NodeCount"])
            sync = constants["Sync"]
            if not isinstance(sync, bool):
                raise ReplayError(f"Sync must be a boolean, got {sync!r}")
            self.config = NCacheConfig(
                nodes=tuple(f"n{i}" for i in range(1, count + 1)),
                bucket_count=_int(constants["BucketCount"]),
                sync=sync,
            )
            self.keys = frozenset(_int(k) for k in _set(constants["Keys"]))
            self.max_writes = _int(constants["MaxWrites"])
            self.max_leaves = _int(constants["MaxLeaves"])
            self.max_splits = _int(constants["MaxSplits"])
            self.max_maintenance = _int(constants["MaxMaintenance"])
        except (KeyError, ReplayError, ValueError) as error:
            raise TidemarkError(
                f"model constants do not fit {SPEC}: {error}",
                source=f"{SPEC} model",
                expected="NodeCount, BucketCount, Keys, Sync, MaxWrites, MaxLeaves, MaxSplits and "
                "MaxMaintenance",
            ) from error
        self.cluster_class = cluster_class

    # --- spec state <-> implementation -----------------------------------------------------------------

    def _store(self, value: Value) -> dict[int, int]:
        return {_int(k): v for k, x in _pairs(value) if (v := _int(x)) != 0}

    def _queue(self, value: Value) -> tuple[tuple[int, int], ...]:
        return tuple((_int(_field(e, "key")), _int(_field(e, "value"))) for _, e in _pairs(value))

    def _total(self, store: Store) -> Value:
        return shared_function((k, store.get(k, 0)) for k in self.keys)

    def concretize(self, state: State) -> NcReplay:
        def per_bucket(name: str) -> list[Value]:
            return [v for _, v in sorted(_pairs(state[name]), key=lambda p: _int(p[0]))]

        nodes = self.config.nodes
        cluster = self.cluster_class(
            self.config,
            members=tuple(_str(m) for _, m in _pairs(state["members"])),
            left=frozenset(_str(m) for m in _set(state["left"])),
            owner=tuple(_str(v) for v in per_bucket("owner")),
            temp=tuple(_member(v) for v in per_bucket("temp")),
            status=tuple(_str(v) for v in per_bucket("status")),
            orphan=tuple(_member(v) for v in per_bucket("orphan")),
            logged=tuple(frozenset(_int(k) for k in _set(v)) for v in per_bucket("logged")),
            active={n: self._store(_field(state["active"], n)) for n in nodes},
            replica={n: self._store(_field(state["replica"], n)) for n in nodes},
            queue={n: self._queue(_field(state["queue"], n)) for n in nodes},
            cut=frozenset(_str(m) for m in _set(state["cut"])),
            cut_store=self._store(state["cutStore"]),
            maint=_member(state["maint"]),
            rejoining=frozenset(_str(m) for m in _set(state["rejoining"])),
        )
        acked = self._store(state["acked"])
        writes, leaves, splits, maints = (_int(state[v]) for v in ("writes", "leaves", "splits", "maints"))
        return NcReplay(cluster, acked, writes, leaves, splits, maints, state["action"])

    def abstract(self, impl: NcReplay) -> State:
        c = impl.cluster
        per_bucket = enumerate
        return {
            "members": shared_function(enumerate(c.members, start=1)),
            "left": shared_set(c.left),
            "owner": shared_function(per_bucket(c.owner)),
            "temp": shared_function((b, t or NONE) for b, t in per_bucket(c.temp)),
            "status": shared_function(per_bucket(c.status)),
            "orphan": shared_function((b, o or NONE) for b, o in per_bucket(c.orphan)),
            "logged": shared_function((b, shared_set(g)) for b, g in per_bucket(c.logged)),
            "active": shared_function((n, self._total(s)) for n, s in c.active.items()),
            "replica": shared_function((n, self._total(s)) for n, s in c.replica.items()),
            "queue": shared_function(
                (n, tuple(shared_record(key=k, value=v) for k, v in q)) for n, q in c.queue.items()
            ),
            "acked": self._total(impl.acked),
            "writes": impl.writes,
            "leaves": impl.leaves,
            "cut": shared_set(c.cut),
            "cutStore": self._total(c.cut_store),
            "splits": impl.splits,
            "rejoining": shared_set(c.rejoining),
            "maint": c.maint or NONE,
            "maints": impl.maints,
            "action": impl.action,
        }

    # --- steps -----------------------------------------------------------------------------------------

    def _allowed(self, step: Step, impl: NcReplay) -> bool:
        """The model's budgets on top of the cluster's guards."""
        if step.name in WRITES:
            return impl.writes < self.max_writes
        if step.name in LEAVES:
            return impl.leaves < self.max_leaves
        if step.name == "StopForMaintenance":
            return impl.maints < self.max_maintenance
        if step.name == "Split":
            return impl.splits < self.max_splits
        return True

    def enabled(self, impl: NcReplay) -> set[Value]:
        steps = impl.cluster.enabled(self.keys, impl.writes + 1)
        return {action_value(s) for s in steps if self._allowed(s, impl)}

    def apply(self, impl: NcReplay, action: Value) -> NcReplay:
        step = step_of(action)
        if not self._allowed(step, impl):
            raise ReplayError(f"{step.name}: the model's bound is reached")
        written = step.name in WRITES
        if written and step.value != impl.writes + 1:
            raise ReplayError(f"write number {impl.writes + 1} writes that value, not {step.value}")
        if step.key is not None and step.key not in self.keys:
            raise ReplayError(f"key {step.key} is not a key of the model")
        try:
            after = impl.cluster.apply(step)
        except StepNotEnabled as error:
            raise ReplayError(str(error)) from error
        acked = impl.acked
        if step.name in ACKNOWLEDGED and step.key is not None and step.value is not None:
            acked = {**acked, step.key: step.value}
        leaves, splits = impl.leaves + (step.name in LEAVES), impl.splits + (step.name == "Split")
        maints = impl.maints + (step.name == "StopForMaintenance")
        return NcReplay(after, acked, impl.writes + written, leaves, splits, maints, action)


def build(constants: Mapping[str, Value], mutant: str | None = None) -> NCacheMapping:
    return NCacheMapping(constants, implementation(SPEC, NCACHE_MUTANTS, NCacheCluster, mutant))
