"""Mapping for spec/PME.tla <-> impl/pme.py.

The 2PC part (alive, restarted, versions, owners, near, txs, counter, data, wal, msgs) maps as in
conformance/mappings/tx_counters.py; the exchange and rebalancing variables map one to one onto
PmeCluster's fields: state (copy states and initial counters), baseline, lost, pending (event kinds),
singles (the coordinator's single messages), rebal (Demand and Supply messages), crashes, joiners,
history (where each WAL archive was truncated), joinOrder (join_order: the live servers, oldest first),
active, and ckpt (each disk's checkpointed counter meta: lwm and the gaps its bytes hold).

Spec-level rules kept here: MaxFailures bounds NodeFail (the spec counts crashes) and FailAfterDecisions
holds it back while the client has an undecided transaction, BaselineAutoAdjust
allows BaselineChange, WalTruncation allows TruncateWal, Checkpoints allows Checkpoint, and Done is the
spec's terminal step once nothing is in flight. spec/PMEFixed.tla maps onto a cluster with every proposed
fix on (tidemark.impl.cluster.Fix).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, cast

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import ReplayError, State, shared_function, shared_record, shared_set
from tidemark.conformance.mappings.tx_counters import (
    TxCountersMapping,
    TxReplay,
    _field,
    _int,
    _pairs,
    _set,
    _str,
)
from tidemark.conformance.tlc.values import Record, Value
from tidemark.conformance.zoo.mutants import PME_MUTANTS, implementation
from tidemark.impl.cluster import Cluster, Config, Fix, NearState, Step
from tidemark.impl.counter import PartitionUpdateCounter
from tidemark.impl.pme import (
    Copy,
    Demand,
    Event,
    Mode,
    PartInfo,
    PartState,
    PmeCluster,
    PmeConfig,
    SuppliedEntry,
    Supply,
)
from tidemark.impl.wal import Disk


def _bool(value: Value) -> bool:
    if not isinstance(value, bool):
        raise ReplayError(f"expected a boolean, got {value!r}")
    return value


def _demand_or_supply(value: Value) -> Demand | Supply:
    record = cast(Record, value)
    kind = _str(_field(record, "type"))
    common: dict[str, Any] = {
        "part": _int(_field(record, "part")),
        "sender": _str(_field(record, "sender")),
        "to": _str(_field(record, "to")),
        "mode": Mode(_str(_field(record, "mode"))),
    }
    if kind == "Demand":
        return Demand(**common, first=_int(_field(record, "first")), upto=_int(_field(record, "upto")))
    if kind == "Supply":
        entries = frozenset(
            SuppliedEntry(_int(_field(e, "key")), _str(_field(e, "tx")), _int(_field(e, "cntr")))
            for e in _set(_field(record, "entries"))
        )
        return Supply(
            **common,
            entries=entries,
            last=_bool(_field(record, "last")),
            upto=_int(_field(record, "upto")),
            first=_int(_field(record, "first")),
        )
    raise ReplayError(f"unknown rebalancing message type {kind!r}")


@lru_cache(maxsize=1 << 14)
def _rebal_value(m: Demand | Supply) -> Record:
    common: dict[str, Value] = {
        "part": m.part,
        "sender": m.sender,
        "to": m.to,
        "mode": m.mode.value,
        "first": m.first,
    }
    if isinstance(m, Demand):
        return Record(type="Demand", upto=m.upto, **common)
    entries = frozenset(Record(key=e.key, tx=e.tx, cntr=e.cntr) for e in m.entries)
    return Record(type="Supply", entries=entries, last=m.last, upto=m.upto, **common)


def _meta_value(meta: Mapping[int, tuple[int, bytes | None]] | None) -> Value:
    """A disk's checkpointed counter meta as the spec's ckpt[n]: partition -> [lwm, items]."""
    return shared_function(
        (p, shared_record(lwm=lwm, items=tuple(PartitionUpdateCounter.from_bytes(lwm, gaps).items)))
        for p, (lwm, gaps) in (meta or {}).items()
    )


def _meta_of(value: Value) -> dict[int, tuple[int, bytes | None]] | None:
    meta = {}
    for p, m in _pairs(value):
        lwm = _int(_field(m, "lwm"))
        items = [(_int(i[0]), _int(i[1])) for i in cast(tuple[tuple[int, int], ...], _field(m, "items"))]
        meta[_int(p)] = (lwm, PartitionUpdateCounter(lwm, None, items).to_bytes())
    return meta or None


class PmeMapping(TxCountersMapping):
    spec = "PME"
    fixes: frozenset[Fix] = frozenset()

    def __init__(self, constants: Mapping[str, Value], cluster_class: type[Cluster]) -> None:
        super().__init__(constants, cluster_class)
        try:
            self.auto_adjust = _bool(constants["BaselineAutoAdjust"])
            self.truncation = _bool(constants["WalTruncation"])
            self.checkpoints = _bool(constants["Checkpoints"])
            self.fail_after_decisions = _bool(constants["FailAfterDecisions"])
        except (KeyError, ReplayError) as error:
            raise TidemarkError(
                f"model constants do not fit PME: {error}",
                source="PME model",
                expected="BaselineAutoAdjust, WalTruncation, Checkpoints, FailAfterDecisions (booleans), "
                "WalRebalanceThreshold, BatchSize",
            ) from error

    def make_config(self, constants: Mapping[str, Value], **fields: Any) -> Config:
        try:
            threshold = _int(constants["WalRebalanceThreshold"])
            batch = _int(constants["BatchSize"])
        except KeyError as error:
            raise ReplayError(f"missing constant {error}") from error
        return PmeConfig(**fields, wal_rebalance_threshold=threshold, batch_size=batch, fixes=self.fixes)

    # --- spec state <-> implementation -------------------------------------------------------------

    def concretize(self, state: State) -> TxReplay:
        states = {
            _str(n): {
                _int(p): Copy(PartState(_str(_field(c, "state"))), _int(_field(c, "init")))
                for p, c in _pairs(copies)
            }
            for n, copies in _pairs(state["state"])
        }
        singles = {
            _str(n): {
                _int(p): PartInfo(
                    _int(_field(i, "lwm")), PartState(_str(_field(i, "state"))), _int(_field(i, "hist"))
                )
                for p, i in _pairs(parts)
            }
            for n, parts in _pairs(state["singles"])
        }
        fields = self.cluster_fields(state)
        for n, meta in _pairs(state["ckpt"]):
            node = fields["nodes"][_str(n)]
            node.disk = Disk(node.disk.wal, _meta_of(meta))
        pme_class = cast(type[PmeCluster], self.cluster_class)
        cluster = pme_class(
            cast(PmeConfig, self.config),
            **fields,
            states=states,
            baseline=frozenset(_str(n) for n in _set(state["baseline"])),
            lost=frozenset(_int(p) for p in _set(state["lost"])),
            pending=frozenset(Event(_str(e)) for e in _set(state["pending"])),
            singles=singles,
            rebal=frozenset(_demand_or_supply(m) for m in _set(state["rebal"])),
            crashes=_int(state["crashes"]),
            joiners=frozenset(_str(n) for n in _set(state["joiners"])),
            history={
                _str(n): {_int(p): _int(h) for p, h in _pairs(parts)} for n, parts in _pairs(state["history"])
            },
            join_order=tuple(_str(n) for n in cast(tuple[str, ...], state["joinOrder"])),
            active=_bool(state["active"]),
        )
        return TxReplay(cluster, state["action"])

    def abstract(self, impl: TxReplay) -> State:
        c = cast(PmeCluster, impl.cluster)
        return {
            **super().abstract(impl),
            "state": shared_function(
                (
                    n,
                    shared_function(
                        (p, shared_record(state=cp.state.value, init=cp.init)) for p, cp in copies.items()
                    ),
                )
                for n, copies in c.states.items()
            ),
            "baseline": shared_set(c.baseline),
            "lost": shared_set(c.lost),
            "pending": shared_set(frozenset(e.value for e in c.pending)),
            "singles": shared_function(
                (
                    n,
                    shared_function(
                        (p, shared_record(lwm=i.lwm, state=i.state.value, hist=i.hist))
                        for p, i in parts.items()
                    ),
                )
                for n, parts in c.singles.items()
            ),
            "rebal": shared_set(frozenset(map(_rebal_value, c.rebal))),
            "crashes": c.crashes,
            "joiners": shared_set(c.joiners),
            "history": shared_function((n, shared_function(parts.items())) for n, parts in c.history.items()),
            "joinOrder": c.join_order,
            "active": c.active,
            "ckpt": shared_function((n, _meta_value(node.disk.meta)) for n, node in c.nodes.items()),
        }

    # --- steps ---------------------------------------------------------------------------------------

    def _done(self, cluster: Cluster) -> bool:
        """The spec's Done: nothing in flight, and every transaction finished or unable to start."""
        pme = cast(PmeCluster, cluster)
        return pme.quiet and all(
            t.state is not NearState.IDLE or not pme.writable(tx) for tx, t in pme.near.items()
        )

    def _may_fail(self, cluster: Cluster) -> bool:
        decided = all(
            t.state in (NearState.IDLE, NearState.COMMITTED, NearState.ROLLED_BACK)
            for t in cluster.near.values()
        )
        return cast(PmeCluster, cluster).crashes < self.max_failures and (
            decided or not self.fail_after_decisions
        )

    def _allowed(self, step: Step, cluster: Cluster) -> bool:
        switches = {
            "BaselineChange": self.auto_adjust,
            "TruncateWal": self.truncation,
            "Checkpoint": self.checkpoints,
        }
        if step.name in switches:
            return switches[step.name]
        return super()._allowed(step, cluster)

    def _stutters(self, name: str) -> bool:
        return False  # the spec models checkpoints


class PmeFixedMapping(PmeMapping):
    """spec/PMEFixed.tla: the cluster with every proposed fix on."""

    spec = "PMEFixed"
    fixes = frozenset(Fix)


def build(constants: Mapping[str, Value], mutant: str | None = None) -> PmeMapping:
    return PmeMapping(constants, implementation("PME", PME_MUTANTS, PmeCluster, mutant))


def build_fixed(constants: Mapping[str, Value], mutant: str | None = None) -> PmeMapping:
    return PmeFixedMapping(constants, implementation("PMEFixed", PME_MUTANTS, PmeCluster, mutant))
