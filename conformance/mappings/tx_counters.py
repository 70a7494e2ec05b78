"""Mapping for spec/TxCounters.tla <-> impl/cluster.py.

The implementation side of a spec state is `TxReplay`: a real `Cluster` plus the spec's `action` (the
step that led here). Constants become the cluster's `Config`: servers s1..sN, every partition owned by
s1..s(Backups+1), transactions t1, t2, ... named by their smallest key. Variables map one to one:
alive, restarted, topVer/readyVer (top_ver/ready_ver), owners (one list: every partition's), near,
txs, counter, data, wal (the disk's data and rollback records; checkpoint markers left out) and msgs
(the network; a message's type is its class name). Steps are the cluster's, with the spec's names.

Two spec-level rules live here rather than in the cluster: the model's bound on crashes (MaxFailures
hides NodeFail), and the terminal step Done, which the spec takes once every transaction finished and
nothing is in flight, so that TLC does not report a deadlock. The cluster's Checkpoint is no action of
this spec, which has no checkpoints (its header says why; spec/PME.tla models them), and is not listed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import ReplayError, State, shared_function, shared_record, shared_set
from tidemark.conformance.mappings.counter import counter_value
from tidemark.conformance.tlc.values import Function, Record, Value
from tidemark.conformance.zoo.mutants import CLUSTER_MUTANTS, implementation
from tidemark.impl.cluster import (
    Cluster,
    Config,
    Fix,
    LocalTx,
    NearState,
    NearTx,
    Node,
    Step,
    StepNotEnabled,
    TxState,
)
from tidemark.impl.counter import PartitionUpdateCounter
from tidemark.impl.messages import MESSAGE_TYPES, Message, Version
from tidemark.impl.wal import DataRecord, Disk, Entry, LoggedRecord, RebalancedRecord, RollbackRecord

DONE = Record(name="Done")
# Cluster steps that are no action of this spec.
STUTTERING = {"Checkpoint"}
_MESSAGE_CLASSES = {cls.__name__: cls for cls in MESSAGE_TYPES}


@dataclass(frozen=True)
class TxReplay:
    """A cluster and the spec action that produced it."""

    cluster: Cluster
    action: Value


# --- values ------------------------------------------------------------------------------------------


def _int(value: Value) -> int:
    if type(value) is not int:
        raise ReplayError(f"expected an integer, got {value!r}")
    return value


def _str(value: Value) -> str:
    if not isinstance(value, str):
        raise ReplayError(f"expected a string, got {value!r}")
    return value


def _set(value: Value) -> frozenset[Value]:
    if not isinstance(value, frozenset):
        raise ReplayError(f"expected a set, got {value!r}")
    return value


def _pairs(value: Value) -> Iterable[tuple[Value, Value]]:
    """A TLA+ function's (key, value) pairs, however TLC printed it (<<>>, a sequence, record, function)."""
    if isinstance(value, tuple):
        return enumerate(value, start=1)
    if isinstance(value, Record | Function):
        return value.items()
    raise ReplayError(f"expected a function, got {value!r}")


def _field(record: Value, name: str) -> Value:
    if not isinstance(record, Record) or name not in record:
        raise ReplayError(f"expected a record with field {name!r}, got {record!r}")
    return record[name]


def _version(value: Value) -> Version:
    if not (isinstance(value, tuple) and len(value) == 2):
        raise ReplayError(f"expected a version <<major, minor>>, got {value!r}")
    return Version(_int(value[0]), _int(value[1]))


def _writes(value: Value) -> frozenset[tuple[int, int]]:
    return frozenset((_int(w[0]), _int(w[1])) for w in cast(frozenset[tuple[int, int]], _set(value)))


def _to_value(value: object) -> Value:
    """A message field as a TLA+ value (versions and writes are tuples and sets of tuples)."""
    if isinstance(value, Version):
        return (value.major, value.minor)
    if isinstance(value, frozenset):
        return frozenset(tuple(w) for w in value)
    return cast(Value, value)


@lru_cache(maxsize=1 << 16)
def message_value(message: Message) -> Record:
    fields = {f.name: _to_value(getattr(message, f.name)) for f in dataclasses.fields(message)}
    return Record(type=type(message).__name__, **fields)


def message_of(value: Value) -> Message:
    kind = _str(_field(value, "type"))
    cls = _MESSAGE_CLASSES.get(kind)
    if cls is None:
        raise ReplayError(f"unknown message type {kind!r}")
    record = cast(Record, value)
    args: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        raw = _field(record, f.name)
        args[f.name] = _version(raw) if f.name == "ver" else _writes(raw) if f.name == "writes" else raw
    return cls(**args)  # type: ignore[arg-type]


@lru_cache(maxsize=1 << 12)
def step_value(step: Step) -> Record:
    return Record(name=step.name, **step.params())


def _local_tx_value(tx: LocalTx) -> Record:
    return shared_record(state=tx.state.value, writes=shared_set(frozenset(tx.writes)))


@lru_cache(maxsize=1 << 14)
def _wal_value(records: tuple[LoggedRecord, ...]) -> frozenset[Value]:
    return frozenset(map(_record_value, records))


@lru_cache(maxsize=1 << 14)
def _record_value(record: LoggedRecord) -> Record:
    if isinstance(record, DataRecord):
        return Record(type="data", key=record.key, tx=record.tx, cntr=record.cntr)
    if isinstance(record, RebalancedRecord):
        return Record(type="rebalanced", part=record.part, lwm=record.lwm)
    return Record(type="rollback", part=record.part, start=record.start, delta=record.delta)


def _wal_of(value: Value) -> tuple[LoggedRecord, ...]:
    """WAL records in a canonical order: data by key and counter, then rollback and rebalanced records
    (restoring from them gives the same counters and data in any order)."""
    records: list[LoggedRecord] = []
    for r in _set(value):
        kind = _field(r, "type")
        if kind == "data":
            records.append(DataRecord(_int(_field(r, "key")), _str(_field(r, "tx")), _int(_field(r, "cntr"))))
        elif kind == "rollback":
            records.append(
                RollbackRecord(_int(_field(r, "part")), _int(_field(r, "start")), _int(_field(r, "delta")))
            )
        elif kind == "rebalanced":
            records.append(RebalancedRecord(_int(_field(r, "part")), _int(_field(r, "lwm"))))
        else:
            raise ReplayError(f"unknown WAL record type {kind!r}")
    return tuple(sorted(records, key=lambda r: (type(r).__name__ != "DataRecord", repr(r))))


class TxCountersMapping:
    spec = "TxCounters"
    fixes: frozenset[Fix] = frozenset()  # the proposed fixes the spec (a variant) makes

    def __init__(self, constants: Mapping[str, Value], cluster_class: type[Cluster]) -> None:
        try:
            servers = _int(constants["ServerCount"])
            backups = _int(constants["Backups"])
            partitions = _int(constants["Partitions"])
            key_sets = [frozenset(_int(k) for k in _set(ks)) for ks in _set(constants["TxKeys"])]
            self.max_failures = _int(constants["MaxFailures"])
        except (KeyError, ReplayError) as error:
            raise TidemarkError(
                f"model constants do not fit {self.spec}: {error}",
                source=f"{self.spec} model",
                expected="ServerCount, Backups, Partitions, TxKeys (a set of sets of keys), MaxFailures",
            ) from error
        names = [f"s{i}" for i in range(1, servers + 1)]
        owners = tuple(names[: backups + 1])
        try:
            self.config = self.make_config(
                constants,
                servers=tuple(names),
                owners={p: owners for p in range(partitions)},
                transactions={f"t{i}": ks for i, ks in enumerate(sorted(key_sets, key=min), start=1)},
            )
        except (ValueError, ReplayError) as error:
            raise TidemarkError(
                str(error), source=f"{self.spec} model", expected="a valid cluster"
            ) from error
        keys = set().union(*key_sets)
        if any(self.config.partition(k) != k % partitions for k in keys):
            raise TidemarkError(
                "the spec's k % Partitions differs from Ignite's partition for some key",
                source=f"{self.spec} model",
                expected="small non-negative keys",
            )
        self.cluster_class = cluster_class

    def make_config(self, constants: Mapping[str, Value], **fields: Any) -> Config:
        """The cluster's Config from the model's servers, owners and transactions."""
        return Config(**fields, fixes=self.fixes)

    # --- spec state <-> implementation -------------------------------------------------------------

    def concretize(self, state: State) -> TxReplay:
        return TxReplay(self.cluster_class(self.config, **self.cluster_fields(state)), state["action"])

    def cluster_fields(self, state: State) -> dict[str, Any]:
        """The Cluster constructor's keyword arguments for a spec state."""
        owners = tuple(_str(o) for o in cast(tuple[str, ...], state["owners"]))
        near = {
            _str(tx): NearTx(
                NearState(_str(_field(v, "state"))), _version(_field(v, "ver")), _str(_field(v, "primary"))
            )
            for tx, v in _pairs(state["near"])
        }
        per_node = {name: dict(_pairs(state[name])) for name in ("txs", "counter", "data", "wal")}
        nodes = {}
        for n in self.config.servers:
            txs = {
                _str(tx): LocalTx(TxState(_str(_field(v, "state"))), _writes(_field(v, "writes")))
                for tx, v in _pairs(per_node["txs"][n])
            }
            counters = {
                _int(p): PartitionUpdateCounter(
                    _int(_field(c, "lwm")),
                    _int(_field(c, "hwm")),
                    [(_int(i[0]), _int(i[1])) for i in cast(tuple[tuple[int, int], ...], _field(c, "items"))],
                    bool(_field(c, "first")),
                )
                for p, c in _pairs(per_node["counter"][n])
            }
            data = {
                _int(k): Entry(_str(_field(e, "tx")), _int(_field(e, "cntr")))
                for k, e in _pairs(per_node["data"][n])
            }
            nodes[n] = Node(txs, counters, data, Disk(_wal_of(per_node["wal"][n])))
        return {
            "alive": frozenset(_str(n) for n in _set(state["alive"])),
            "restarted": frozenset(_str(n) for n in _set(state["restarted"])),
            "top_ver": _version(state["topVer"]),
            "ready_ver": _version(state["readyVer"]),
            "owners": {p: owners for p in range(self.config.partitions)},
            "near": near,
            "nodes": nodes,
            "network": frozenset(message_of(m) for m in _set(state["msgs"])),
        }

    def initial(self) -> TxReplay:
        """The spec's Init: the cluster as `Cluster.initial` builds it (a driver's `init`)."""
        return TxReplay(self.cluster_class.initial(self.config), Record(name="Init"))

    def abstract(self, impl: TxReplay) -> State:
        c = impl.cluster
        owner_lists = set(c.owners.values())
        if len(owner_lists) != 1:
            raise ReplayError(
                f"partitions have different owner lists {sorted(owner_lists)}; the spec has one"
            )
        nodes = c.nodes
        return {
            "alive": shared_set(c.alive),
            "restarted": shared_set(c.restarted),
            "topVer": _to_value(c.top_ver),
            "readyVer": _to_value(c.ready_ver),
            "owners": next(iter(owner_lists)),
            "near": shared_function(
                (tx, shared_record(state=t.state.value, ver=_to_value(t.ver), primary=t.primary))
                for tx, t in c.near.items()
            ),
            "txs": shared_function(
                (n, shared_function((tx, _local_tx_value(t)) for tx, t in node.txs.items()))
                for n, node in nodes.items()
            ),
            "counter": shared_function(
                (n, shared_function((p, counter_value(ctr)) for p, ctr in node.counters.items()))
                for n, node in nodes.items()
            ),
            "data": shared_function(
                (n, shared_function((k, shared_record(tx=e.tx, cntr=e.cntr)) for k, e in node.data.items()))
                for n, node in nodes.items()
            ),
            "wal": shared_function((n, _wal_value(tuple(node.disk.records()))) for n, node in nodes.items()),
            "msgs": shared_set(frozenset(map(message_value, c.network))),
            "action": impl.action,
        }

    # --- steps ---------------------------------------------------------------------------------------

    def _done(self, cluster: Cluster) -> bool:
        """The spec's Done: every transaction finished and nothing in flight."""
        return cluster.quiet and all(t.state is not NearState.IDLE for t in cluster.near.values())

    def _may_fail(self, cluster: Cluster) -> bool:
        return len(self.config.servers) - len(cluster.alive) < self.max_failures

    def _allowed(self, step: Step, cluster: Cluster) -> bool:
        """The model's bounds on top of the cluster's guards (MaxFailures hides NodeFail)."""
        return not self._stutters(step.name) and (step.name != "NodeFail" or self._may_fail(cluster))

    def _stutters(self, name: str) -> bool:
        """A cluster step that is no spec action (the spec stutters on it)."""
        return name in STUTTERING

    def enabled(self, impl: TxReplay) -> set[Value]:
        cluster = impl.cluster
        actions: set[Value] = {step_value(s) for s in cluster.enabled() if self._allowed(s, cluster)}
        if self._done(cluster):
            actions.add(DONE)
        return actions

    def apply(self, impl: TxReplay, action: Value) -> TxReplay:
        name = _str(_field(action, "name"))
        if name == "Done":
            if not self._done(impl.cluster):
                raise ReplayError("Done: a transaction is unfinished or something is in flight")
            return TxReplay(impl.cluster, action)
        if self._stutters(name):
            raise ReplayError(f"{name} is not a spec action")
        record = cast(Record, action)
        params: dict[str, str | int] = {p: _str(record[p]) for p in ("tx", "node", "peer") if p in record}
        if "part" in record:
            params["part"] = _int(record["part"])
        try:
            return TxReplay(impl.cluster.apply(Step(name, **params)), action)  # type: ignore[arg-type]
        except StepNotEnabled as error:
            raise ReplayError(str(error)) from error


class TxCountersFixedMapping(TxCountersMapping):
    """spec/TxCountersFixed.tla: the cluster with Fix.RECOVERY_CLOSES_RANGE on."""

    spec = "TxCountersFixed"
    fixes = frozenset({Fix.RECOVERY_CLOSES_RANGE})


def build(constants: Mapping[str, Value], mutant: str | None = None) -> TxCountersMapping:
    return TxCountersMapping(constants, implementation("TxCounters", CLUSTER_MUTANTS, Cluster, mutant))


def build_fixed(constants: Mapping[str, Value], mutant: str | None = None) -> TxCountersMapping:
    return TxCountersFixedMapping(
        constants, implementation("TxCountersFixed", CLUSTER_MUTANTS, Cluster, mutant)
    )
