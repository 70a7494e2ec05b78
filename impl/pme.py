"""The whole partition-consistency protocol: transactions, topology changes, PME and rebalancing.

`PmeCluster` extends `tidemark.impl.cluster.Cluster` (2PC counter assignment) with what spec/PME.tla adds:

- topology events: NodeFail (memory lost, disk and partition states kept), Restart (copies rebuilt from
  the disk, not yet in the topology), Join (back in the topology), BaselineChange (the baseline becomes
  the live servers). The affinity is computed over the baseline: a partition's owners are its first
  Backups+1 servers in the configured order (the rendezvous order, given here). When every server is
  down the cluster is inactive: servers rejoin without exchanges, and once the baseline is back Activate
  starts the activation exchange; Checkpoint persists the counters' meta (impl/wal.py);
- the exchange (PME) per topology version: SendSingle(node) once no server holds a transaction of the
  old version (partition release and the exchange latch), with gap finalization after a server left;
  FullMessage(coordinator): the maximum LWM among OWNING copies, demotion of lagging copies on join,
  baseline change and activation, MOVING copies on new owners, RENTING copies off the assignment, LOST
  partitions, suppliers (historical from the WAL, or full), update(max) everywhere and the new owner list
  at once; `exchange_report` names what Ignite logs at that moment (failed counter updates, partition
  state validation);
- rebalancing: Supply(node, part, peer) answers a demand with a batch, Rebalance(node, part) applies it
  (the last batch makes the copy OWNING), Evict(node, part) drops a RENTING copy;
- `idle_verify`, the operator's consistency check.

Every partition shares one owner list (as in the 2PC slice): servers whose copies are all OWNING come
first. The spec's module comment lists the simplifications; step names and fields are the spec's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tidemark.impl.cluster import ACTIVE, STEPS, Cluster, Config, Fix, NearState, NearTx, Node
from tidemark.impl.counter import CounterInconsistencyError, PartitionUpdateCounter
from tidemark.impl.idle_verify import (
    HashRecord,
    RecordState,
    compare,
    counter_text,
    entry_sums,
    missed,
    record,
    version_hash,
)
from tidemark.impl.messages import LockResponse, Message, Version, receiver
from tidemark.impl.wal import DataRecord, Disk, Entry, RebalancedRecord, RollbackRecord, counter_meta


class PartState(StrEnum):
    """A copy's state (Ignite's GridDhtPartitionState; EVICTED is no copy, LOST a partition-wide mark)."""

    OWNING = "OWNING"
    MOVING = "MOVING"
    RENTING = "RENTING"


class Event(StrEnum):
    """The kinds of topology events an exchange handles."""

    LEFT = "left"
    JOINED = "joined"
    BASELINE = "baseline"
    AFFINITY = "affinity"  # late affinity switch: rebalancing ended, the owner order changes
    ACTIVATE = "activate"  # the cluster is activated after every server was down


class Mode(StrEnum):
    """How a MOVING copy is rebalanced."""

    HISTORICAL = "historical"  # the supplier's WAL records after the demander's counter
    FULL = "full"  # every entry the supplier has


@dataclass(frozen=True, slots=True)
class Copy:
    """A copy's persisted state and, while MOVING, its initial counter (where rebalancing starts)."""

    state: PartState
    init: int = 0


OWNING = Copy(PartState.OWNING)


@dataclass(frozen=True, slots=True)
class PartInfo:
    """A copy in a single message: its LWM, state, and how far back its WAL can supply."""

    lwm: int
    state: PartState
    hist: int


@dataclass(frozen=True, order=True, slots=True)
class SuppliedEntry:
    """An entry in a supply message."""

    key: int
    tx: str
    cntr: int


@dataclass(frozen=True, slots=True)
class Demand:
    """Demander -> supplier: the next batch of `part` from position `first` on (a counter, or a key in full
    mode; inclusive, because key 0 is a real key)."""

    part: int
    sender: str
    to: str
    mode: Mode
    first: int
    upto: int  # the maximum LWM of the exchange


@dataclass(frozen=True, slots=True)
class Supply:
    """Supplier -> demander: a batch of entries; `last` ends the rebalancing of `part`."""

    part: int
    sender: str
    to: str
    mode: Mode
    entries: frozenset[SuppliedEntry]
    last: bool
    upto: int
    first: int  # where the next demand starts: the position after the batch's last


RebalanceMessage = Demand | Supply


@dataclass(frozen=True)
class PmeConfig(Config):
    """The cluster's inputs plus the rebalancing knobs (spec/PME.tla's constants)."""

    wal_rebalance_threshold: int = 0  # historical rebalance only for partitions with more entries than this
    batch_size: int = 1  # entries per supply message

    def __post_init__(self) -> None:
        super().__post_init__()
        lists = set(self.owners.values())
        if len(lists) != 1:
            raise ValueError(f"every partition must have the same owner list, got {sorted(lists)}")
        if self.batch_size < 1 or self.wal_rebalance_threshold < 0:
            raise ValueError("batch_size must be >= 1 and wal_rebalance_threshold >= 0")

    @property
    def backups(self) -> int:
        return len(self.owners[0]) - 1


PME_STEPS: dict[str, tuple[str, ...]] = {
    **{name: params for name, params in STEPS.items() if name not in ("NodeFail", "Restart", "Exchange")},
    "NodeFail": ("node",),
    "Restart": ("node",),
    "Join": ("node",),
    "BaselineChange": (),
    "SendSingle": ("node",),
    "FullMessage": ("node",),
    "Supply": ("node", "part", "peer"),
    "Rebalance": ("node", "part"),
    "Evict": ("node", "part"),
    "TruncateWal": ("node",),
    "Activate": (),
}


@dataclass(frozen=True)
class IdleVerifyResult:
    """idle_verify's report: per partition, OWNING copies that disagree, and copies it skipped."""

    counter_conflicts: Mapping[int, Mapping[str, tuple[int, tuple[tuple[int, int], ...]]]]
    hash_conflicts: Mapping[int, Mapping[str, str]]
    skipped: Mapping[int, Mapping[str, str]]  # partition -> node -> MOVING / RENTING / LOST
    lost: frozenset[int]

    @property
    def clean(self) -> bool:
        return not self.counter_conflicts and not self.hash_conflicts


class PmeCluster(Cluster):
    """The cluster with topology changes, exchanges and rebalancing; see the module docstring."""

    STEPS = PME_STEPS
    FULL_FIRST = 0  # where a full rebalance starts: the smallest key
    EXTRA = (
        "states",
        "baseline",
        "lost",
        "pending",
        "singles",
        "rebal",
        "crashes",
        "joiners",
        "history",
        "join_order",
        "active",
    )

    __slots__ = EXTRA
    config: PmeConfig

    def __init__(
        self,
        config: PmeConfig,
        *,
        states: dict[str, dict[int, Copy]],
        baseline: frozenset[str],
        lost: frozenset[int],
        pending: frozenset[Event],
        singles: dict[str, dict[int, PartInfo]],
        rebal: frozenset[RebalanceMessage],
        crashes: int,
        joiners: frozenset[str],
        history: dict[str, dict[int, int]],
        join_order: tuple[str, ...],
        active: bool,
        **tx_state: Any,
    ) -> None:
        super().__init__(config, **tx_state)
        self.states = states  # per server, its copies (persisted: they survive a crash)
        self.baseline = baseline
        self.lost = lost  # LOST partitions
        self.pending = pending  # kinds of topology events since ready_ver
        self.singles = singles  # the coordinator's single messages for top_ver
        self.rebal = rebal  # demand and supply messages in flight
        self.crashes = crashes
        self.joiners = joiners  # joined since ready_ver: their copies are not yet vouched for
        self.history = history  # per server and partition: its WAL archive holds records above this only
        self.join_order = join_order  # the live servers, oldest first (Ignite's node order)
        self.active = active  # False from a total outage until the activation

    @classmethod
    def initial(cls, config: Config) -> PmeCluster:
        if not isinstance(config, PmeConfig):
            raise TypeError("PmeCluster needs a PmeConfig")
        base = Cluster.initial(config)
        return cls(
            config,
            states={n: {p: OWNING for p in config.owned(n)} for n in config.servers},
            baseline=frozenset(config.servers),
            lost=frozenset(),
            pending=frozenset(),
            singles={},
            rebal=frozenset(),
            crashes=0,
            joiners=frozenset(),
            history={n: dict.fromkeys(range(config.partitions), 0) for n in config.servers},
            join_order=config.servers,
            active=True,
            **{f: getattr(base, f) for f in Cluster.__slots__ if f != "config"},
        )

    def copy(self) -> PmeCluster:
        clone = super().copy()
        assert isinstance(clone, PmeCluster)
        clone.states = {n: dict(copies) for n, copies in self.states.items()}
        clone.baseline = self.baseline
        clone.lost = self.lost
        clone.pending = self.pending
        clone.singles = dict(self.singles)
        clone.rebal = self.rebal
        clone.crashes = self.crashes
        clone.joiners = self.joiners
        clone.history = {n: dict(parts) for n, parts in self.history.items()}
        clone.join_order = self.join_order
        clone.active = self.active
        return clone

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PmeCluster):
            return NotImplemented
        return super().__eq__(other) and all(getattr(self, f) == getattr(other, f) for f in self.EXTRA)

    __hash__ = None

    def __repr__(self) -> str:
        extra = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.EXTRA)
        return f"{super().__repr__()[:-1]}, {extra})"

    # --- observations ------------------------------------------------------------------------------------

    def state_of(self, node: str, part: int) -> str:
        """The copy's state, or "EVICTED" when the server has no copy."""
        copy = self.states[node].get(part)
        return copy.state.value if copy else "EVICTED"

    def ideal_owners(self, baseline: Iterable[str] | None = None) -> tuple[str, ...]:
        """The affinity over the baseline: its first Backups+1 servers in the configured order."""
        members = set(self.baseline if baseline is None else baseline)
        return tuple(n for n in self.config.servers if n in members)[: self.config.backups + 1]

    def assigned(self) -> list[str]:
        """The live servers of the assignment, in its order."""
        return [n for n in self.ideal_owners() if n in self.alive]

    def owner_order(self) -> tuple[str, ...]:
        """The owner list for the current copy states: servers whose copies are all OWNING first (late
        affinity assignment: a server still rebalancing is no primary), in the assignment's order."""

        def ready(n: str) -> bool:
            copies = self.states[n]
            return all(copies.get(p) == OWNING for p in range(self.config.partitions))

        assigned = self.assigned()
        return tuple([n for n in assigned if ready(n)] + [n for n in assigned if not ready(n)])

    def writable(self, tx: str) -> bool:
        """Writes to a LOST partition fail (READ_WRITE_SAFE, READ_ONLY_SAFE): the tx cannot start."""
        return not {self.config.partition(k) for k in self.config.transactions[tx]} & self.lost

    @property
    def coordinator(self) -> str:
        """The oldest live server by join order, as in Ignite: a server that rejoined is the youngest."""
        return self.join_order[0]

    @property
    def quiet(self) -> bool:
        """Nothing in flight: transactions, exchange, rebalancing and evictions done (the MOVING and RENTING
        copies of a LOST partition wait for the operator)."""
        return (
            super().quiet
            and not self.rebal
            and all(
                c.state is PartState.OWNING or p in self.lost
                for n in self.alive
                for p, c in self.states[n].items()
            )
        )

    # --- transactions on writable partitions -------------------------------------------------------------

    def _when_tx_start(self, tx: str) -> NearTx | None:
        return super()._when_tx_start(tx) if self.writable(tx) else None

    def _when_tx_remap(self, tx: str) -> Message | None:
        return super()._when_tx_remap(tx) if self.writable(tx) else None

    def _when_tx_rollback(self, tx: str) -> object | None:
        """Also: a locking transaction whose partition became LOST fails on the near node (its lock future
        fails with the partition's loss) and is rolled back."""
        near = self.near[tx]
        if near.state is NearState.LOCKING and not self.writable(tx):
            return near
        return super()._when_tx_rollback(tx)

    def _when_lock(self, tx: str, node: str) -> Message | None:
        """The primary locks only keys of its OWNING copies (late affinity keeps an OWNING copy primary and
        the primary refuses otherwise); the request waits until the copy owns or the topology changes."""
        owning = all(
            self.state_of(node, self.config.partition(k)) == PartState.OWNING
            for k in self.config.transactions[tx]
        )
        return super()._when_lock(tx, node) if owning else None

    # --- topology events ---------------------------------------------------------------------------------

    def _new_version(self, version: Version, event: Event) -> None:
        """A topology event: the exchange's messages and rebalancing of the old version are cancelled."""
        self.top_ver = version
        self.pending = self.pending | {event}
        self.singles = {}
        self.rebal = frozenset()

    def _when_node_fail(self, node: str) -> bool | None:
        return True if node in self.alive else None

    def node_fail(self, node: str) -> PmeCluster:
        """A server crashes: memory lost, disk and partition states kept, messages to it lost; the near node
        fails the lock futures mapped to it. The next exchange finalizes counters (a server left)."""
        self._require(self._when_node_fail(node), "NodeFail", node=node)
        c = self.copy()
        c.alive = self.alive - {node}
        c.nodes[node] = Node({}, {}, {}, self.nodes[node].disk)
        c.network = frozenset(
            m
            for m in self.network
            if receiver(m) != node and not (type(m) is LockResponse and m.sender == node)
        )
        c.crashes = self.crashes + 1
        c.joiners = self.joiners - {node}
        c.join_order = tuple(n for n in self.join_order if n != node)
        c.active = self.active and bool(c.alive)  # the last server down: the cluster is inactive
        c._new_version(Version(self.top_ver.major + 1, 0), Event.LEFT)
        return c

    def _when_restart(self, node: str) -> bool | None:
        return True if node not in self.alive | self.restarted else None

    def restart(self, node: str) -> PmeCluster:
        """A crashed server starts again: OWNING and RENTING copies rebuilt from the disk, MOVING copies from
        their initial counter. It is not in the topology until it joins."""
        self._require(self._when_restart(node), "Restart", node=node)
        c = self.copy()
        disk = self.nodes[node].disk
        copies = self.states[node]
        counters, data = disk.restore(sorted(copies), self.config.partition)
        for part, copy in copies.items():
            if copy.state is PartState.MOVING:
                counters[part] = PartitionUpdateCounter(copy.init, copy.init, first=True)
        c.nodes[node] = Node({}, counters, data, disk)
        c.restarted = self.restarted | {node}
        return c

    def _when_join(self, node: str) -> bool | None:
        if self.active:
            ok = self.top_ver == self.ready_ver
        else:  # the near node recovers the transactions of servers that left before one comes back
            ok = not any(self._recovery_due(tx) for tx in self.near)
        return True if ok and node in self.restarted else None

    def join(self, node: str) -> PmeCluster:
        """The restarted server joins (once the previous exchange completed): the exchange demotes it if it
        lags. An inactive cluster runs no exchange: the server only enters the topology (once no tx
        recovery is due)."""
        self._require(self._when_join(node), "Join", node=node)
        c = self.copy()
        c.alive = self.alive | {node}
        c.restarted = self.restarted - {node}
        c.join_order = (*self.join_order, node)
        if self.active:
            c.joiners = self.joiners | {node}
            c._new_version(Version(self.top_ver.major + 1, 0), Event.JOINED)
        return c

    def _when_activate(self) -> bool | None:
        ok = not self.active and bool(self.alive) and self.baseline <= self.alive
        return True if ok else None

    def activate(self) -> PmeCluster:
        """Every baseline server is back after a total outage: the operator (or auto-activation) activates
        the cluster. The activation exchange restores the persisted copies, demotes lagging OWNING copies
        like a join, and decides the LOST partitions afresh: Ignite keeps no LOST mark across a cluster
        restart (`_already_lost`)."""
        self._require(self._when_activate(), "Activate")
        c = self.copy()
        c.active = True
        c.joiners = frozenset()
        c.pending = frozenset()
        c._new_version(Version(self.top_ver.major + 1, 0), Event.ACTIVATE)
        return c

    def _when_baseline_change(self) -> bool | None:
        return True if self.active and self.baseline != self.alive else None

    def baseline_change(self) -> PmeCluster:
        """The operator sets the baseline to the live servers (a minor version): partitions move."""
        self._require(self._when_baseline_change(), "BaselineChange")
        c = self.copy()
        c.baseline = self.alive
        c._new_version(Version(self.top_ver.major, self.top_ver.minor + 1), Event.BASELINE)
        return c

    # --- the exchange --------------------------------------------------------------------------------------

    def _released(self) -> bool:
        """Partition release and the exchange latch: no server holds a transaction of the old version, and
        no tx recovery is due."""
        return not any(t.state in ACTIVE for n in self.alive for t in self.nodes[n].txs.values()) and not any(
            self._recovery_due(tx) for tx in self.near
        )

    def _when_send_single(self, node: str) -> bool | None:
        ok = (
            self.active and node in self.alive and self.top_ver != self.ready_ver and node not in self.singles
        )
        return True if ok and self._released() else None

    def send_single(self, node: str) -> PmeCluster:
        """Finalize the counters if a server left (holes closed and logged as rollback records), then send
        the coordinator the single message: per copy its LWM, state and how far back its WAL supplies."""
        self._require(self._when_send_single(node), "SendSingle", node=node)
        c = self.copy()
        n = c.nodes[node]
        if self._finalizes():
            for part, counter in sorted(n.counters.items()):
                gaps = counter.finalize()
                n.disk = n.disk.log(RollbackRecord(part, first - 1, last - first + 1) for first, last in gaps)
        else:
            for part, counter in sorted(n.counters.items()):
                closing = self._gaps_closed(node, part)
                for start, delta in closing:
                    counter.update(start, delta)
                n.disk = n.disk.log(RollbackRecord(part, start, delta) for start, delta in closing)
        c.singles[node] = {
            part: PartInfo(
                ctr.lwm,
                self.states[node][part].state,
                hist_from(n.disk, part, ctr.lwm, c.config, self.history[node][part]),
            )
            for part, ctr in sorted(n.counters.items())
        }
        return c

    def _finalizes(self) -> bool:
        """Counters are finalized at an exchange that began with a server left: a node left merged into a
        running join exchange finalizes nothing (Ignite finalizes at the exchange's init only)."""
        return Event.LEFT in self.pending and Event.JOINED not in self.pending

    def _gaps_closed(self, node: str, part: int) -> list[tuple[int, int]]:
        """The gaps of the copy the exchange closes besides finalize, as ranges (start, delta): none in
        Ignite; with Fix.EXCHANGE_CLOSES_UNCOVERED_GAPS, at an exchange that demotes, in a partition that
        stays (an OWNING copy of a server that is no joiner), those for which no other live server logged
        an update (updates that exist nowhere). Closing logs rollback records, not data records, so the
        servers' decisions do not depend on their order."""
        stays = part not in self._already_lost() and any(
            o not in self.joiners and self.state_of(o, part) == PartState.OWNING for o in self.alive
        )
        if Fix.EXCHANGE_CLOSES_UNCOVERED_GAPS not in self.config.fixes or not self._demotes() or not stays:
            return []
        counter = self.nodes[node].counters[part]
        logged = {
            r.cntr
            for o in self.alive - {node}
            for r in self.nodes[o].disk.records()
            if isinstance(r, DataRecord) and self.config.partition(r.key) == part
        }
        return runs(set(range(1, counter.highest_applied + 1)) - covered(counter) - logged)

    def _when_full_message(self, node: str) -> bool | None:
        ok = (
            self.top_ver != self.ready_ver
            and bool(self.alive)
            and set(self.singles) == self.alive
            and node == self.coordinator
        )
        return True if ok else None

    def full_message(self, node: str) -> PmeCluster:
        """The coordinator's decision, applied by every server at once: new copy states, update(max LWM) on
        OWNING and MOVING copies (raising a new primary's HWM), demands for MOVING copies, LOST partitions,
        and the new owner list; transactions then map on the new version."""
        self._require(self._when_full_message(node), "FullMessage", node=node)
        c = self.copy()
        now_lost = {p for p in range(self.config.partitions) if self._lost_now(p)}
        demands = []
        for n in sorted(self.alive):
            copies: dict[int, Copy] = {}
            for p in range(self.config.partitions):
                new = self._exchange_state(n, p)
                if new is None:
                    continue
                copies[p] = new
                counter = c.nodes[n].counters.setdefault(p, PartitionUpdateCounter())
                if p in now_lost or p in self._already_lost():
                    continue  # a LOST partition waits for the operator: nothing moves
                if new.state in (PartState.OWNING, PartState.MOVING):
                    # Ignite logs "Failed to update partition counter" and carries on (exchange_report).
                    with suppress(CounterInconsistencyError):
                        counter.update_lwm(self._full_counter(p))
                    floor = self._hwm_floor(p)
                    if floor > counter.hwm:
                        c.nodes[n].counters[p] = PartitionUpdateCounter(
                            counter.lwm, floor, counter.items, counter.first
                        )
                if new.state is PartState.MOVING:
                    demands.append(self._demand(n, p, new.init))
            c.states[n] = copies
        c.lost = self._already_lost() | now_lost
        owner_list = c.owner_order()
        c.owners = {p: owner_list for p in range(self.config.partitions)}
        c.rebal = frozenset(demands)
        c.ready_ver = self.top_ver
        c.pending = frozenset()
        c.singles = {}
        c.joiners = frozenset()
        return c

    def _exchange_state(self, node: str, part: int) -> Copy | None:
        """The coordinator's decision for the copy (None: no copy): lagging OWNING copies are demoted on a
        join, a baseline change and an activation."""
        return self._new_state(node, part, node in self.assigned(), self._demotes())

    def _demotes(self) -> bool:
        """Lagging OWNING copies are demoted on a join, a baseline change and an activation."""
        return bool(self.pending & {Event.JOINED, Event.BASELINE, Event.ACTIVATE})

    def _owning_copies(self, part: int) -> list[str]:
        return [
            n
            for n in sorted(self.singles)
            if (i := self.singles[n].get(part)) and i.state is PartState.OWNING
        ]

    def _already_lost(self) -> frozenset[int]:
        """The partitions the exchange finds LOST already: none at the activation after a total outage."""
        return frozenset() if Event.ACTIVATE in self.pending else self.lost

    def _lost_now(self, part: int) -> bool:
        """No server that was in the topology at ready_ver has an OWNING copy: a copy that comes back with a
        joining server vouches for nothing on its own (it may lack what the owners that left had)."""
        return set(self._owning_copies(part)) <= self.joiners

    def _full_counter(self, part: int) -> int:
        """The counter the full message carries, which OWNING and MOVING copies take: the maximum LWM of every
        copy reported, MOVING and RENTING ones included (Ignite's collectUpdateCounters); only demotions and
        suppliers look at OWNING copies alone."""
        return max((info[part].lwm for info in self.singles.values() if part in info), default=0)

    def _hwm_floor(self, part: int) -> int:
        """A floor under every updated copy's HWM besides the counter: none in Ignite; with
        Fix.EXCHANGE_RAISES_HWM the highest counter any copy in the single messages applied."""
        if Fix.EXCHANGE_RAISES_HWM not in self.config.fixes:
            return 0
        counters = (self.nodes[n].counters[part] for n in self.singles if part in self.states[n])
        return max((ctr.highest_applied for ctr in counters), default=0)

    def _max_lwm(self, part: int) -> int:
        return max((self.singles[n][part].lwm for n in self._owning_copies(part)), default=0)

    def _new_state(self, node: str, part: int, assigned: bool, demote: bool) -> Copy | None:
        """The copy's state after the exchange (None: no copy)."""
        current = self.states[node].get(part)
        if part in self._already_lost() or self._lost_now(part):
            return current
        if not assigned:
            return Copy(PartState.RENTING) if current else None
        if current is None:
            return Copy(PartState.MOVING, 0)
        info = self.singles[node][part]
        if info.state is PartState.MOVING:
            return current
        if info.state is PartState.RENTING:
            return self._reassigned(node, part)
        if not (demote and info.lwm < self._max_lwm(part)):
            return OWNING
        return Copy(PartState.MOVING, info.lwm)

    def _reassigned(self, node: str, part: int) -> Copy:
        """A RENTING copy assigned again is cleared and rebalanced in full, as a new copy: its LWM may be a
        maximum it received while MOVING, before it had the data."""
        return Copy(PartState.MOVING, 0)

    def _wal_covers(self, supplier: str, part: int, init: int) -> bool:
        """The supplier's WAL still reaches back to the demander's counter."""
        return self.singles[supplier][part].hist <= init

    def _historical(self, supplier: str, part: int, init: int) -> bool:
        """The demander is not empty, the supplier's WAL reaches back to its counter, the partition is big
        enough, and fewer updates are missing than it has entries."""
        size = sum(1 for k in self.nodes[supplier].data if self.config.partition(k) == part)
        return (
            init > 0
            and self._wal_covers(supplier, part, init)
            and self._enough_entries(size)
            and self._max_lwm(part) - init < size
        )

    def _enough_entries(self, size: int) -> bool:
        """Big enough for WAL rebalancing: more entries than the threshold (Ignite reserves history only for
        partitions with fullSize() > threshold)."""
        return size > self.config.wal_rebalance_threshold

    def _suppliers(self, part: int) -> list[str]:
        """The copies that may supply: the OWNING ones with the maximum LWM, oldest first."""
        best = self._max_lwm(part)
        owning = self._owning_copies(part)
        return [n for n in self.config.servers if n in owning and self.singles[n][part].lwm == best]

    def _demand(self, demander: str, part: int, init: int) -> Demand:
        """Ask the first supplier that can supply from its WAL, else the first supplier (full)."""
        best = self._max_lwm(part)
        suppliers = self._suppliers(part)
        historical = [n for n in suppliers if self._historical(n, part, init)]
        if historical:
            return Demand(part, demander, historical[0], Mode.HISTORICAL, init + 1, best)
        return Demand(part, demander, suppliers[0], Mode.FULL, self.FULL_FIRST, best)

    # --- WAL history ---------------------------------------------------------------------------------------

    def _when_truncate_wal(self, node: str) -> bool | None:
        if node not in self.alive or node in self.singles:
            return None
        if any(node in (m.sender, m.to) for m in self.rebal):
            return None  # history offered in the single message or used by rebalancing is reserved
        behind = any(
            copy.state is PartState.OWNING and self.nodes[node].counters[p].lwm > self.history[node][p]
            for p, copy in self.states[node].items()
        )
        return True if behind else None

    def truncate_wal(self, node: str) -> PmeCluster:
        """Checkpoint and truncate the WAL archive: records at or below each OWNING copy's LWM are in the
        checkpoint's pages, no longer available to supply a historical rebalance."""
        self._require(self._when_truncate_wal(node), "TruncateWal", node=node)
        c = self.copy()
        n = c.nodes[node]
        n.disk = n.disk.checkpoint(n.counters)
        for p, copy in self.states[node].items():
            if copy.state is PartState.OWNING:
                c.history[node][p] = max(self.history[node][p], n.counters[p].lwm)
        return c

    def _when_checkpoint(self, node: str) -> bool | None:
        """A checkpoint writes the counters' meta when it changed since the last one (Ignite skips a
        checkpoint with no dirty pages)."""
        disk = self.nodes[node].disk
        changed = (disk.meta or {}) != counter_meta(self.nodes[node].counters)
        return True if node in self.alive | self.restarted and changed else None

    # --- rebalancing ---------------------------------------------------------------------------------------

    def _when_supply(self, node: str, part: int, peer: str) -> Demand | None:
        return next(
            (
                m
                for m in self.rebal
                if type(m) is Demand and m.to == node and m.part == part and m.sender == peer
            ),
            None,
        )

    def supply(self, node: str, part: int, peer: str) -> PmeCluster:
        """Answer a demand with the next batch: historical - WAL data records of the partition with counters
        from `first` up to `upto`, by counter; full - the entries with keys from `first` on, by key."""
        demand: Demand = self._require(
            self._when_supply(node, part, peer), "Supply", node=node, part=part, peer=peer
        )
        n = self.nodes[node]
        pool: list[SuppliedEntry]
        if demand.mode is Mode.HISTORICAL:
            logged = {
                SuppliedEntry(r.key, r.tx, r.cntr)
                for r in n.disk.records()
                if isinstance(r, DataRecord)
                and self.config.partition(r.key) == part
                and max(demand.first, self.history[node][part] + 1) <= r.cntr <= demand.upto
            }
            pool = sorted(logged, key=lambda e: e.cntr)
            position = [e.cntr for e in pool]
        else:
            pool = sorted(
                SuppliedEntry(k, e.tx, e.cntr)
                for k, e in n.data.items()
                if self.config.partition(k) == part and k >= demand.first
            )
            position = [e.key for e in pool]
        size = self.config.batch_size
        batch = frozenset(pool[:size])
        first = max([demand.first, *(p + 1 for p in position[:size])])
        c = self.copy()
        reply = Supply(part, node, peer, demand.mode, batch, len(pool) <= size, demand.upto, first)
        c.rebal = (self.rebal - {demand}) | {reply}
        return c

    def _when_rebalance(self, node: str, part: int) -> Supply | None:
        return next((m for m in self.rebal if type(m) is Supply and m.to == node and m.part == part), None)

    def rebalance(self, node: str, part: int) -> PmeCluster:
        """Apply a batch: entries newer than the copy's own, logged to the WAL. After the last batch the
        counter is durable up to LWM (logged) and the copy is OWNING - and when that ends the version's
        rebalancing and changes the owner order, the late affinity switch starts an exchange on a new
        minor version (the primary changes only at exchanges); else ask for the next batch."""
        supply: Supply = self._require(self._when_rebalance(node, part), "Rebalance", node=node, part=part)
        c = self.copy()
        n = c.nodes[node]
        newest: dict[int, SuppliedEntry] = {}
        for e in supply.entries:
            if (e.key not in n.data or n.data[e.key].cntr < e.cntr) and (
                e.key not in newest or newest[e.key].cntr < e.cntr
            ):
                newest[e.key] = e
        records: list[DataRecord | RebalancedRecord] = []
        for e in sorted(newest.values(), key=lambda e: e.cntr):
            n.data[e.key] = Entry(e.tx, e.cntr)
            records.append(DataRecord(e.key, e.tx, e.cntr))
        if supply.last:
            records.append(RebalancedRecord(part, n.counters[part].lwm))
            c.states[node][part] = OWNING
            c.rebal = self.rebal - {supply}
            if not c.rebal and c.owner_order() != self.owners[0]:
                c._new_version(Version(self.top_ver.major, self.top_ver.minor + 1), Event.AFFINITY)
        else:
            more = Demand(part, node, supply.sender, supply.mode, supply.first, supply.upto)
            c.rebal = (self.rebal - {supply}) | {more}
        n.disk = n.disk.log(records)
        return c

    def _when_evict(self, node: str, part: int) -> bool | None:
        renting = self.active and part not in self.lost and self.state_of(node, part) == PartState.RENTING
        moving = any(self.state_of(n, part) == PartState.MOVING for n in self.alive)
        return True if renting and not moving else None

    def evict(self, node: str, part: int) -> PmeCluster:
        """Drop a RENTING copy (data and counter) once no copy of its partition is MOVING (not in a LOST
        partition: its copies stay as they are)."""
        self._require(self._when_evict(node, part), "Evict", node=node, part=part)
        c = self.copy()
        del c.states[node][part]
        c.history[node][part] = 0
        n = c.nodes[node]
        n.counters.pop(part, None)
        n.data = {k: e for k, e in n.data.items() if self.config.partition(k) != part}
        return c


def covered(counter: PartitionUpdateCounter) -> set[int]:
    """The counters a counter says are applied or closed: 1..LWM and its out-of-order ranges."""
    done = set(range(1, counter.lwm + 1))
    for start, delta in counter.items:
        done.update(range(start + 1, start + delta + 1))
    return done


def runs(counters: Iterable[int]) -> list[tuple[int, int]]:
    """Counters as maximal ranges (start, delta), in order: {3, 4, 6} -> [(2, 2), (5, 1)]."""
    result: list[tuple[int, int]] = []
    for c in sorted(counters):
        if result and sum(result[-1]) == c - 1:
            result[-1] = (result[-1][0], result[-1][1] + 1)
        else:
            result.append((c - 1, 1))
    return result


def durable_counters(disk: Disk, part: int, config: Config) -> set[int]:
    """The counters of `part` the WAL makes durable: data, rollback and rebalanced records."""
    durable: set[int] = set()
    for r in disk.records():
        if isinstance(r, DataRecord) and config.partition(r.key) == part:
            durable.add(r.cntr)
        elif isinstance(r, RollbackRecord) and r.part == part:
            durable.update(range(r.start + 1, r.start + r.delta + 1))
        elif isinstance(r, RebalancedRecord) and r.part == part:
            durable.update(range(1, r.lwm + 1))
    return durable


def hist_from(disk: Disk, part: int, lwm: int, config: Config, truncated: int) -> int:
    """How far back the WAL can supply `part` up to `lwm`: the truncated history, or the highest counter
    <= lwm it lacks (0: all)."""
    durable = durable_counters(disk, part, config)
    return max([truncated, *(c for c in range(1, lwm + 1) if c not in durable)])


@dataclass(frozen=True)
class ExchangeReport:
    """What Ignite logs when the coordinator finishes an exchange; nothing in the protocol acts on it.

    `update_failures`: partition -> the copies whose update(max LWM) fails because they applied updates
    above every OWNING copy's LWM ("Failed to update partition counter. Most probably a node with most
    actual data is out of topology"; Ignite carries on with HWM raised, LWM and gaps kept). The partition
    state validation, over the OWNING copies after the decision (just-joined servers and empty copies left
    out): `counters_inconsistent` - partition -> node -> LWM ("Partitions update counters are
    inconsistent"), `sizes_inconsistent` - partition -> node -> entries ("Partitions cache sizes are
    inconsistent")."""

    update_failures: Mapping[int, tuple[str, ...]]
    counters_inconsistent: Mapping[int, Mapping[str, int]]
    sizes_inconsistent: Mapping[int, Mapping[str, int]]

    @property
    def clean(self) -> bool:
        return not (self.update_failures or self.counters_inconsistent or self.sizes_inconsistent)


def exchange_report(cluster: PmeCluster) -> ExchangeReport:
    """The report of the exchange whose full message is due (every live server sent its single message);
    spec/PME.tla's UpdateFailures, CountersInconsistent and SizesInconsistent."""
    if cluster.top_ver == cluster.ready_ver or not cluster.alive or set(cluster.singles) != cluster.alive:
        raise ValueError("no exchange is ready for its full message")
    failures: dict[int, tuple[str, ...]] = {}
    counters: dict[int, dict[str, int]] = {}
    sizes: dict[int, dict[str, int]] = {}
    for part in range(cluster.config.partitions):
        if part in cluster._already_lost() or cluster._lost_now(part):
            continue
        best = cluster._full_counter(part)
        failing = []
        for node in sorted(cluster.singles):
            new = cluster._exchange_state(node, part)
            if part not in cluster.states[node] or new is None or new.state is PartState.RENTING:
                continue
            ctr = cluster.nodes[node].counters[part]
            if ctr.lwm <= best < ctr.highest_applied:
                failing.append(node)
            size = sum(1 for k in cluster.nodes[node].data if cluster.config.partition(k) == part)
            lwm = cluster.singles[node][part].lwm
            if new.state is PartState.OWNING and node not in cluster.joiners and (lwm or size):
                counters.setdefault(part, {})[node] = lwm
                sizes.setdefault(part, {})[node] = size
        if failing:
            failures[part] = tuple(failing)
    return ExchangeReport(
        update_failures=failures,
        counters_inconsistent={p: v for p, v in counters.items() if len(set(v.values())) > 1},
        sizes_inconsistent={p: v for p, v in sizes.items() if len(set(v.values())) > 1},
    )


def idle_verify(cluster: PmeCluster) -> IdleVerifyResult:
    """Ignite's idle_verify: per partition, the live OWNING copies' records (impl.idle_verify: the counter's
    comparable text, and the key, value and version hashes of its entries: the model's value is the
    writing transaction's name in UTF-8, its version the update's counter) compared as Ignite compares
    them; MOVING and RENTING copies, and copies of LOST partitions, are skipped."""
    counters: dict[int, dict[str, tuple[int, tuple[tuple[int, int], ...]]]] = {}
    hashes: dict[int, dict[str, str]] = {}
    records: dict[int, list[HashRecord]] = {}
    skipped: dict[int, dict[str, str]] = {}
    for node in sorted(cluster.alive):
        n = cluster.nodes[node]
        for part, copy in sorted(cluster.states[node].items()):
            if part in cluster.lost or copy.state is not PartState.OWNING:
                skipped.setdefault(part, {})[node] = "LOST" if part in cluster.lost else copy.state.value
                continue
            ctr = n.counters[part]
            counters.setdefault(part, {})[node] = (ctr.lwm, tuple(ctr.items))
            text = counter_text(ctr.lwm, missed(ctr.lwm, ctr.items), ctr.highest_applied)
            entries = (
                (k, e.tx.encode(), version_hash(e.cntr))
                for k, e in n.data.items()
                if cluster.config.partition(k) == part
            )
            hashed = record(
                node, cluster.owners[part][:1] == (node,), RecordState.OWNING, text, *entry_sums(entries)
            )
            records.setdefault(part, []).append(hashed)
            hashes.setdefault(part, {})[node] = f"partHash={hashed.part_hash}, partVerHash={hashed.ver_hash}"
    verdicts = {part: compare(rs) for part, rs in records.items()}
    return IdleVerifyResult(
        counter_conflicts={p: counters[p] for p, v in verdicts.items() if v.counter_conflict},
        hash_conflicts={p: hashes[p] for p, v in verdicts.items() if v.hash_conflict},
        skipped=skipped,
        lost=cluster.lost,
    )
