"""A deterministic Ignite cluster running pessimistic transactions: how 2PC assigns update counters.

`Cluster` is a value: servers (up, crashed or restarted), the topology version and the owner lists it
maps on, the near node's transactions, per server its transactions (holding key locks), per partition
counters (`impl.counter.PartitionUpdateCounter`), data and disk (`impl.wal`), and the network of
in-flight messages (`tidemark.impl.messages`). Every protocol step is one method with explicit parameters that
returns a new Cluster and leaves this one unchanged; `enabled()` lists the steps possible now as
`Step` values and `apply(step)` takes one. Nothing here chooses: the caller picks the step, and so the
order of delivery, the moment of a crash and the near node's decisions. spec/TxCounters.tla is the
normative description; step names, states and message fields are the spec's.

The protocol (seed 001 "Update counter flow", ignite-internals.md "2PC counter flow"):
    TxStart -> Lock (or LockRemap -> TxRemap -> Lock) -> TxPrepare -> Prepare -> BackupPrepare
    -> Prepared -> TxCommit -> Commit -> BackupCommit
or, after Prepared, TxRollback -> Rollback -> BackupRollback -> RolledBack (the primary last).
Failures: NodeFail (memory lost, WAL kept, messages to the node lost), Recover (the primary failed:
commit only if the near node decided commit, else the backups drop the counters), Exchange (finalize,
max LWM, switch owners), Restart (rebuild from the disk). Checkpoint persists pages; the spec treats
it as stuttering, since restart gives the same result with or without it.

Simplification shared with the spec: a transaction's keys must map to one primary (its partitions share
one owner list), so the near map has a single entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cache, cached_property
from itertools import product
from typing import Any

from immutables import Map

from tidemark.impl.affinity import key_partition
from tidemark.impl.counter import PartitionUpdateCounter
from tidemark.impl.messages import (
    NEAR,
    DhtFinishRequest,
    DhtFinishResponse,
    DhtPrepareRequest,
    DhtPrepareResponse,
    FinishRequest,
    LockRequest,
    LockResponse,
    Message,
    PrepareRequest,
    PrepareResponse,
    Version,
    Write,
    receiver,
)
from tidemark.impl.wal import DataRecord, Disk, Entry, RollbackRecord

INITIAL_VERSION = Version(1, 0)


class NearState(StrEnum):
    """A transaction on the near node."""

    IDLE = "idle"
    LOCKING = "locking"
    PREPARING = "preparing"
    COMMITTED = "committed"  # commit decided and sent to the primary
    ROLLED_BACK = "rolledBack"  # rollback decided (and sent, if the primary is alive)


class TxState(StrEnum):
    """A transaction on a server (primary or backup)."""

    LOCKED = "locked"
    PREPARING = "preparing"
    PREPARED = "prepared"
    ROLLING_BACK = "rollingBack"
    COMMITTED = "committed"
    ROLLED_BACK = "rolledBack"


# States in which a server's transaction holds its key locks (primary from Lock, backups from prepare).
ACTIVE = frozenset({TxState.LOCKED, TxState.PREPARING, TxState.PREPARED, TxState.ROLLING_BACK})


@dataclass(frozen=True, slots=True)
class NearTx:
    """The near node's transaction: its state, topology version and primary (the near map)."""

    state: NearState
    ver: Version
    primary: str


@dataclass(frozen=True, slots=True)
class LocalTx:
    """A server's transaction: its state and its writes (key, counter); no writes until prepare."""

    state: TxState
    writes: frozenset[Write] = frozenset()


@dataclass(frozen=True, order=True, slots=True)
class Step:
    """One protocol step with its parameters, e.g. Step("Lock", tx="t1", node="s1")."""

    name: str
    tx: str | None = None
    node: str | None = None
    part: int | None = None  # rebalancing and eviction steps (spec/PME.tla)
    peer: str | None = None  # the demander a supplier answers

    def params(self) -> dict[str, str | int]:
        fields = (("tx", self.tx), ("node", self.node), ("part", self.part), ("peer", self.peer))
        return {k: v for k, v in fields if v is not None}

    def __str__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params().items())})"


class StepNotEnabled(ValueError):
    """The step's guard is false in this state (or the step or a parameter is unknown)."""


# Every step and its parameters, in the order enabled() lists them. The method is the snake-case name.
STEPS: dict[str, tuple[str, ...]] = {
    "TxStart": ("tx",),
    "TxRemap": ("tx",),
    "TxPrepare": ("tx",),
    "TxCommit": ("tx",),
    "TxRollback": ("tx",),
    "Lock": ("tx", "node"),
    "LockRemap": ("tx", "node"),
    "Prepare": ("tx", "node"),
    "Prepared": ("tx", "node"),
    "Commit": ("tx", "node"),
    "Rollback": ("tx", "node"),
    "RolledBack": ("tx", "node"),
    "BackupPrepare": ("tx", "node"),
    "BackupCommit": ("tx", "node"),
    "BackupRollback": ("tx", "node"),
    "Recover": ("tx",),
    "NodeFail": ("node",),
    "Restart": ("node",),
    "Exchange": (),
    "Checkpoint": ("node",),
}


@cache
def step_method(name: str) -> str:
    """The method taking a step: its snake-case name (TxStart -> tx_start)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Fix(StrEnum):
    """A proposed change that closes a way Ignite 2.18 loses acknowledged writes (docs/pme.md, section 9).
    None is on by default: the default cluster is Ignite's protocol, weaknesses included."""

    # A backup rolling back a recovered transaction applies its counter range (update and rollback record)
    # instead of dropping it: a new primary can no longer hand out a range some copy closed.
    RECOVERY_CLOSES_RANGE = "recovery-closes-range"
    # The full message raises every updated copy's HWM to the highest counter any copy applied (impl/pme.py):
    # a range a copy closed above its LWM (a rollback) is not handed out again either.
    EXCHANGE_RAISES_HWM = "exchange-raises-hwm"
    # An exchange that demotes (join, baseline change, activation) first closes, on every copy, the gaps
    # no other live copy covers (updates that exist nowhere; impl/pme.py): a node left merged into a join
    # exchange or a total outage no longer leaves a copy whose LWM understates what it holds.
    EXCHANGE_CLOSES_UNCOVERED_GAPS = "exchange-closes-uncovered-gaps"


@dataclass(frozen=True)
class Config:
    """The cluster's fixed inputs: servers, the initial owner lists, and the transactions to run.

    `owners` maps each partition 0..P-1 to its owners, primary first (the affinity slice computes them
    with rendezvous hashing; here they are given). `transactions` maps a name to the keys it writes; its
    partitions must share one owner list (one primary per transaction). `fixes` turns on proposed changes
    to the protocol (none: Ignite's).
    """

    servers: tuple[str, ...]
    owners: Mapping[int, tuple[str, ...]]
    transactions: Mapping[str, frozenset[int]]
    fixes: frozenset[Fix] = frozenset()

    def __post_init__(self) -> None:
        if len(set(self.servers)) != len(self.servers) or NEAR in self.servers:
            raise ValueError(f"servers must be distinct and not {NEAR!r}: {self.servers}")
        if sorted(self.owners) != list(range(len(self.owners))) or not self.owners:
            raise ValueError(f"owners must cover partitions 0..P-1, got {sorted(self.owners)}")
        for part, owners in self.owners.items():
            if not owners or len(set(owners)) != len(owners) or not set(owners) <= set(self.servers):
                raise ValueError(f"partition {part}: owners {owners} must be distinct servers")
        for tx, keys in self.transactions.items():
            lists = {self.owners[self.partition(k)] for k in keys}
            if len(lists) != 1:
                raise ValueError(
                    f"transaction {tx}: keys {sorted(keys)} map to partitions with different owner lists "
                    f"{sorted(lists)}; a transaction must have one primary"
                )

    @property
    def partitions(self) -> int:
        return len(self.owners)

    def partition(self, key: int) -> int:
        """Ignite's key -> partition for an integer key (key % partitions for small keys)."""
        return key_partition(key, self.partitions)

    def owned(self, node: str) -> list[int]:
        """The partitions `node` holds a copy of (in the initial assignment)."""
        return [p for p, owners in sorted(self.owners.items()) if node in owners]

    def candidates(self, steps: Mapping[str, tuple[str, ...]]) -> list[tuple[Step, str, dict[str, Any]]]:
        """Every step of `steps` with every combination of its parameters, in order, each with its guard's
        name and arguments: the same for every state of a cluster, so built once per set of steps."""
        known = self._candidates.get(id(steps))
        if known is None:
            values: dict[str, list[Any]] = {
                "tx": sorted(self.transactions),
                "node": list(self.servers),
                "part": list(range(self.partitions)),
                "peer": list(self.servers),
            }
            known = self._candidates[id(steps)] = [
                (Step(name, **kwargs), f"_when_{step_method(name)}", kwargs)
                for name, params in steps.items()
                for kwargs in (
                    dict(zip(params, combination, strict=True))
                    for combination in product(*(values[p] for p in params))
                )
            ]
        return known

    @cached_property
    def _candidates(self) -> dict[int, list[tuple[Step, str, dict[str, Any]]]]:
        return {}  # by id of the steps mapping: the STEPS of a cluster class, which lives as long as it

    @cached_property
    def conflicts(self) -> Mapping[str, frozenset[str]]:
        """Per transaction, the others writing one of its keys: the only ones whose locks it can wait for
        (looked up instead of scanning every transaction a server ever held)."""
        writers: dict[int, set[str]] = {}
        for tx, keys in self.transactions.items():
            for key in keys:
                writers.setdefault(key, set()).add(tx)
        return {
            tx: frozenset().union(*(writers[k] for k in keys)) - {tx}
            for tx, keys in self.transactions.items()
        }


class Node:
    """A server's memory (transactions, counters, data: lost in a crash) and its disk (kept)."""

    __slots__ = ("counters", "data", "disk", "txs")

    def __init__(
        self,
        txs: Mapping[str, LocalTx],
        counters: dict[int, PartitionUpdateCounter],
        data: dict[int, Entry],
        disk: Disk,
    ) -> None:
        # A persistent map, replaced (never changed) by a step: copies share it, so a step costs the same
        # however many transactions the server held before.
        self.txs: Map[str, LocalTx] = txs if isinstance(txs, Map) else Map(txs)
        self.counters = counters
        self.data = data
        self.disk = disk

    def copy(self) -> Node:
        return Node(self.txs, {p: c.copy() for p, c in self.counters.items()}, dict(self.data), self.disk)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (self.txs, self.counters, self.data, self.disk) == (
            other.txs,
            other.counters,
            other.data,
            other.disk,
        )

    def __repr__(self) -> str:
        return f"Node(txs={self.txs}, counters={self.counters}, data={self.data}, disk={self.disk})"


class Cluster:
    """The whole cluster as a value; see the module docstring."""

    STEPS = STEPS  # the steps this cluster takes (a subclass may take others)

    __slots__ = ("alive", "config", "near", "network", "nodes", "owners", "ready_ver", "restarted", "top_ver")

    def __init__(
        self,
        config: Config,
        *,
        alive: frozenset[str],
        restarted: frozenset[str],
        top_ver: Version,
        ready_ver: Version,
        owners: dict[int, tuple[str, ...]],
        near: Mapping[str, NearTx],
        nodes: dict[str, Node],
        network: frozenset[Message],
    ) -> None:
        self.config = config
        self.alive = alive  # servers up and in the topology
        self.restarted = restarted  # crashed servers restarted from disk (they do not rejoin)
        self.top_ver = top_ver  # the latest topology version
        self.ready_ver = ready_ver  # the version whose exchange completed: transactions map on it
        self.owners = owners  # per partition, the owner list on ready_ver, primary first
        self.near: Map[str, NearTx] = near if isinstance(near, Map) else Map(near)  # persistent, as Node.txs
        self.nodes = nodes
        self.network = network

    @classmethod
    def initial(cls, config: Config) -> Cluster:
        """Every server up and empty, every transaction idle, on the initial topology version."""
        return cls(
            config,
            alive=frozenset(config.servers),
            restarted=frozenset(),
            top_ver=INITIAL_VERSION,
            ready_ver=INITIAL_VERSION,
            owners=dict(config.owners),
            near={
                tx: NearTx(NearState.IDLE, INITIAL_VERSION, config.owners[config.partition(min(keys))][0])
                for tx, keys in sorted(config.transactions.items())
            },
            nodes={
                n: Node({}, {p: PartitionUpdateCounter() for p in config.owned(n)}, {}, Disk())
                for n in config.servers
            },
            network=frozenset(),
        )

    def copy(self) -> Cluster:
        """An independent copy (of the same class: deliberately broken subclasses stay broken)."""
        clone = object.__new__(type(self))
        clone.config = self.config
        clone.alive = self.alive
        clone.restarted = self.restarted
        clone.top_ver = self.top_ver
        clone.ready_ver = self.ready_ver
        clone.owners = dict(self.owners)
        clone.near = self.near
        clone.nodes = {n: node.copy() for n, node in self.nodes.items()}
        clone.network = self.network
        return clone

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cluster):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in Cluster.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable internals

    def __repr__(self) -> str:
        return (
            f"Cluster(alive={sorted(self.alive)}, restarted={sorted(self.restarted)}, "
            f"top_ver={self.top_ver}, ready_ver={self.ready_ver}, owners={self.owners}, near={self.near}, "
            f"nodes={self.nodes}, network={sorted(map(repr, self.network))})"
        )

    # --- observations ------------------------------------------------------------------------------------

    @property
    def down(self) -> frozenset[str]:
        """Crashed servers not restarted."""
        return frozenset(self.config.servers) - self.alive - self.restarted

    def tx_owners(self, tx: str) -> tuple[str, ...]:
        """The owner list of the transaction's partitions on the ready version, primary first."""
        return self.owners[self.config.partition(min(self.config.transactions[tx]))]

    @property
    def quiet(self) -> bool:
        """Nothing in flight: no started transaction unfinished anywhere, no message, no exchange due."""
        return (
            all(
                t.state in (NearState.IDLE, NearState.COMMITTED, NearState.ROLLED_BACK)
                for t in self.near.values()
            )
            and not self.network
            and not any(t.state in ACTIVE for n in self.alive for t in self.nodes[n].txs.values())
            and self.top_ver == self.ready_ver
        )

    def enabled(self) -> list[Step]:
        """Every step possible now, in STEPS order, then by transaction and node."""
        return [
            step
            for step, guard, kwargs in self.config.candidates(self.STEPS)
            if getattr(self, guard)(**kwargs) is not None
        ]

    def apply(self, step: Step) -> Cluster:
        """Take `step` (see `enabled`); raises StepNotEnabled if it is not possible here."""
        if step.name not in self.STEPS or set(step.params()) != set(self.STEPS[step.name]):
            raise StepNotEnabled(f"unknown step {step} (steps: {', '.join(self.STEPS)})")
        result: Cluster = getattr(self, step_method(step.name))(**step.params())
        return result

    # --- helpers -----------------------------------------------------------------------------------------

    def _require(self, context: Any, step: str, **params: Any) -> Any:
        if context is None:
            raise StepNotEnabled(f"{Step(step, **params)} is not enabled")
        return context

    def _find(self, kind: type[Message], **fields: object) -> Message | None:
        """An in-flight message of this kind with these field values, or None."""
        for m in self.network:
            if type(m) is kind and all(getattr(m, k) == v for k, v in fields.items()):
                return m
        return None

    def _post(self, consumed: Iterable[Message], sent: Iterable[Message]) -> None:
        """Take messages off the network and send others; a message to a failed server is lost."""
        live = self.alive | {NEAR}
        self.network = (self.network - frozenset(consumed)) | {m for m in sent if receiver(m) in live}

    def _in_state(self, node: str, tx: str, state: TxState) -> bool:
        local = self.nodes[node].txs.get(tx)
        return local is not None and local.state is state

    def _set_tx(self, node: str, tx: str, local: LocalTx) -> None:
        n = self.nodes[node]
        n.txs = n.txs.set(tx, local)

    def _set_state(self, node: str, tx: str, state: TxState) -> None:
        self._set_tx(node, tx, replace(self.nodes[node].txs[tx], state=state))

    def _set_near(self, tx: str, near: NearTx) -> None:
        self.near = self.near.set(tx, near)

    def _locks_free(self, node: str, tx: str) -> bool:
        """No transaction holding locks on `node` writes one of tx's keys."""
        txs = self.nodes[node].txs
        held = (txs.get(other) for other in self.config.conflicts[tx])
        return not any(local is not None and local.state in ACTIVE for local in held)

    def _dht_nodes(self, tx: str, primary: str) -> frozenset[str]:
        """The primary's DHT map: the other owners (the owner list cannot change while tx holds locks)."""
        return frozenset(self.tx_owners(tx)) - {primary}

    def _all_answered(
        self, kind: type[DhtPrepareResponse | DhtFinishResponse], tx: str, primary: str
    ) -> bool:
        live = self._dht_nodes(tx, primary) & self.alive
        return all(kind(tx, b, primary) in self.network for b in live)

    def _ranges(self, writes: Iterable[Write]) -> dict[int, tuple[int, int]]:
        """Per partition, the range (start, delta) of the writes: counters start+1 .. start+delta."""
        counters: dict[int, list[int]] = {}
        for key, cntr in writes:
            counters.setdefault(self.config.partition(key), []).append(cntr)
        return {part: (min(cs) - 1, len(cs)) for part, cs in sorted(counters.items())}

    def _commit_on(self, node: str, tx: str, writes: frozenset[Write]) -> None:
        """Commit on one server: data records to the WAL, entries written, then update(start, delta)."""
        n = self.nodes[node]
        n.disk = n.disk.log(DataRecord(k, tx, c) for k, c in sorted(writes, key=lambda w: w[1]))
        for key, cntr in writes:
            n.data[key] = Entry(tx, cntr)
        for part, (start, delta) in self._ranges(writes).items():
            n.counters[part].update(start, delta)

    def _rollback_on(self, node: str, writes: frozenset[Write]) -> None:
        """Rollback on one server: update(start, delta), and a rollback record when it applied."""
        n = self.nodes[node]
        for part, (start, delta) in self._ranges(writes).items():
            if n.counters[part].update(start, delta):
                n.disk = n.disk.log([RollbackRecord(part, start, delta)])

    def _recovery_due(self, tx: str) -> bool:
        near = self.near[tx]
        return (
            near.primary not in self.alive
            and near.state in (NearState.PREPARING, NearState.COMMITTED, NearState.ROLLED_BACK)
            and (
                near.state is NearState.PREPARING
                or any(self._in_state(n, tx, TxState.PREPARED) for n in self.alive)
                or any(m.tx == tx for m in self.network)
            )
        )

    # --- the near node -----------------------------------------------------------------------------------

    def _when_tx_start(self, tx: str) -> NearTx | None:
        near = self.near[tx]
        ok = near.state is NearState.IDLE and self.top_ver == self.ready_ver and bool(self.tx_owners(tx))
        return near if ok else None

    def tx_start(self, tx: str) -> Cluster:
        """Map the keys to their primary on the ready version (near map) and send the lock request.

        Mapping waits while an exchange is pending (top_ver != ready_ver).
        """
        self._require(self._when_tx_start(tx), "TxStart", tx=tx)
        return self._map(tx, consumed=())

    def _primary_for(self, tx: str) -> str:
        """The near map: the transaction's primary on the ready version."""
        return self.tx_owners(tx)[0]

    def _map(self, tx: str, consumed: Iterable[Message]) -> Cluster:
        c = self.copy()
        primary = self._primary_for(tx)
        c._set_near(tx, NearTx(NearState.LOCKING, self.ready_ver, primary))
        c._post(consumed, [LockRequest(tx, primary, self.ready_ver)])
        return c

    def _when_tx_remap(self, tx: str) -> Message | None:
        near = self.near[tx]
        if near.state is not NearState.LOCKING or self.top_ver != self.ready_ver:
            return None
        return next(
            (m for m in self.network if type(m) is LockResponse and m.tx == tx and m.ver != near.ver), None
        )

    def tx_remap(self, tx: str) -> Cluster:
        """The primary answered with a newer version: map again on the ready version and retry the lock."""
        response = self._require(self._when_tx_remap(tx), "TxRemap", tx=tx)
        return self._map(tx, consumed=[response])

    def _when_tx_prepare(self, tx: str) -> Message | None:
        near = self.near[tx]
        granted = LockResponse(tx, near.primary, near.ver)
        return granted if near.state is NearState.LOCKING and granted in self.network else None

    def tx_prepare(self, tx: str) -> Cluster:
        """Keys locked: the application commits, so the near node sends the prepare request."""
        granted = self._require(self._when_tx_prepare(tx), "TxPrepare", tx=tx)
        c = self.copy()
        near = c.near[tx]
        c._set_near(tx, replace(near, state=NearState.PREPARING))
        c._post([granted], [PrepareRequest(tx, near.primary)])
        return c

    def _prepare_response(self, tx: str) -> Message | None:
        near = self.near[tx]
        response = PrepareResponse(tx, near.primary)
        return response if near.state is NearState.PREPARING and response in self.network else None

    def _decide(self, tx: str, commit: bool) -> Cluster:
        response = self._prepare_response(tx)
        assert response is not None
        c = self.copy()
        near = c.near[tx]
        c._set_near(tx, replace(near, state=NearState.COMMITTED if commit else NearState.ROLLED_BACK))
        c._post([response], [FinishRequest(tx, near.primary, commit)])
        return c

    def _when_tx_commit(self, tx: str) -> Message | None:
        return self._prepare_response(tx)

    def tx_commit(self, tx: str) -> Cluster:
        """PREPARED: the near node decides commit and sends the finish request to the primary."""
        self._require(self._when_tx_commit(tx), "TxCommit", tx=tx)
        return self._decide(tx, commit=True)

    def _when_tx_rollback(self, tx: str) -> object | None:
        near = self.near[tx]
        lost = near.primary not in self.alive or not any(m.tx == tx for m in self.network)
        if near.state is NearState.LOCKING and lost:
            return near
        return self._prepare_response(tx)

    def tx_rollback(self, tx: str) -> Cluster:
        """Roll back: after PREPARED (a timeout, or the application), or when the lock request was lost
        with its primary (the lock future fails on node left; its lock messages are cancelled; a restarted
        primary is a new node that never saw the request)."""
        self._require(self._when_tx_rollback(tx), "TxRollback", tx=tx)
        if self.near[tx].state is NearState.PREPARING:
            return self._decide(tx, commit=False)
        c = self.copy()
        c._set_near(tx, replace(c.near[tx], state=NearState.ROLLED_BACK))
        c.network = frozenset(m for m in c.network if m.tx != tx)
        return c

    # --- the primary -------------------------------------------------------------------------------------

    def _when_lock(self, tx: str, node: str) -> Message | None:
        request = LockRequest(tx, node, self.ready_ver)
        ok = self.top_ver == self.ready_ver and request in self.network and self._locks_free(node, tx)
        return request if ok else None

    def lock(self, tx: str, node: str) -> Cluster:
        """Lock request on the ready version: take exclusive locks on the keys (waits while one is held)."""
        request = self._require(self._when_lock(tx, node), "Lock", tx=tx, node=node)
        c = self.copy()
        c._set_tx(node, tx, LocalTx(TxState.LOCKED))
        c._post([request], [LockResponse(tx, node, self.ready_ver)])
        return c

    def _when_lock_remap(self, tx: str, node: str) -> Message | None:
        if self.top_ver != self.ready_ver:
            return None
        return next(
            (
                m
                for m in self.network
                if type(m) is LockRequest and m.tx == tx and m.to == node and m.ver != self.ready_ver
            ),
            None,
        )

    def lock_remap(self, tx: str, node: str) -> Cluster:
        """Lock request on an older version: the ready topology is newer and incompatible (every server
        change alters the cache's affinity nodes), so the primary answers "remap" with its version."""
        request = self._require(self._when_lock_remap(tx, node), "LockRemap", tx=tx, node=node)
        c = self.copy()
        c._post([request], [LockResponse(tx, node, self.ready_ver)])
        return c

    def _when_prepare(self, tx: str, node: str) -> Message | None:
        request = PrepareRequest(tx, node)
        # Ignite checks the node is still primary and the partition OWNING on the tx's version; every live
        # owner is OWNING here (no rebalancing), and the owner list cannot change while tx holds locks.
        ok = (
            request in self.network
            and self._in_state(node, tx, TxState.LOCKED)
            and self.tx_owners(tx)[0] == node
        )
        return request if ok else None

    def prepare(self, tx: str, node: str) -> Cluster:
        """Reserve a counter range per partition (reserve(delta)), give the keys counters start+1, start+2,
        ... in key order, and send them to the backups (the DHT map) in prepare requests."""
        request = self._require(self._when_prepare(tx, node), "Prepare", tx=tx, node=node)
        c = self.copy()
        keys = sorted(self.config.transactions[tx])
        by_part: dict[int, list[int]] = {}
        for key in keys:
            by_part.setdefault(self.config.partition(key), []).append(key)
        writes: set[Write] = set()
        for part, part_keys in sorted(by_part.items()):
            start = c.nodes[node].counters[part].reserve(len(part_keys))
            writes.update((key, start + i) for i, key in enumerate(part_keys, start=1))
        frozen = frozenset(writes)
        c._set_tx(node, tx, LocalTx(TxState.PREPARING, frozen))
        c._post([request], [DhtPrepareRequest(tx, node, b, frozen) for b in self._dht_nodes(tx, node)])
        return c

    def _when_prepared(self, tx: str, node: str) -> bool | None:
        ok = self._in_state(node, tx, TxState.PREPARING) and self._all_answered(DhtPrepareResponse, tx, node)
        return True if ok else None

    def prepared(self, tx: str, node: str) -> Cluster:
        """Every live backup answered: PREPARED, answer the near node. A failed backup leaves the DHT map."""
        self._require(self._when_prepared(tx, node), "Prepared", tx=tx, node=node)
        c = self.copy()
        c._set_state(node, tx, TxState.PREPARED)
        answers = [m for m in c.network if type(m) is DhtPrepareResponse and m.tx == tx]
        c._post(answers, [PrepareResponse(tx, node)])
        return c

    def _finish_request(self, tx: str, node: str, commit: bool) -> Message | None:
        request = FinishRequest(tx, node, commit)
        ok = request in self.network and self._in_state(node, tx, TxState.PREPARED)
        return request if ok else None

    def _when_commit(self, tx: str, node: str) -> Message | None:
        return self._finish_request(tx, node, commit=True)

    def commit(self, tx: str, node: str) -> Cluster:
        """Commit on the primary (WAL, data, counters) and send the finish request to the backups. The
        primary's reply (PRIMARY_SYNC) acknowledges the transaction; it is not modeled as a message."""
        request = self._require(self._when_commit(tx, node), "Commit", tx=tx, node=node)
        c = self.copy()
        local = c.nodes[node].txs[tx]
        c._commit_on(node, tx, local.writes)
        c._set_state(node, tx, TxState.COMMITTED)
        c._post([request], [DhtFinishRequest(tx, node, b, True) for b in self._dht_nodes(tx, node)])
        return c

    def _when_rollback(self, tx: str, node: str) -> Message | None:
        return self._finish_request(tx, node, commit=False)

    def rollback(self, tx: str, node: str) -> Cluster:
        """Rollback on the primary, first step: the backups roll back first."""
        request = self._require(self._when_rollback(tx, node), "Rollback", tx=tx, node=node)
        c = self.copy()
        c._set_state(node, tx, TxState.ROLLING_BACK)
        c._post([request], [DhtFinishRequest(tx, node, b, False) for b in self._dht_nodes(tx, node)])
        return c

    def _when_rolled_back(self, tx: str, node: str) -> bool | None:
        ok = self._in_state(node, tx, TxState.ROLLING_BACK) and self._all_answered(
            DhtFinishResponse, tx, node
        )
        return True if ok else None

    def rolled_back(self, tx: str, node: str) -> Cluster:
        """Rollback on the primary, second step: every live backup finished; update(start, delta) and the
        rollback record here."""
        self._require(self._when_rolled_back(tx, node), "RolledBack", tx=tx, node=node)
        c = self.copy()
        c._rollback_on(node, c.nodes[node].txs[tx].writes)
        c._set_state(node, tx, TxState.ROLLED_BACK)
        c._post([m for m in c.network if type(m) is DhtFinishResponse and m.tx == tx], [])
        return c

    # --- backups -----------------------------------------------------------------------------------------

    def _when_backup_prepare(self, tx: str, node: str) -> Message | None:
        request = self._find(DhtPrepareRequest, tx=tx, to=node)
        return request if request is not None and self._locks_free(node, tx) else None

    def backup_prepare(self, tx: str, node: str) -> Cluster:
        """Lock the keys, keep their counters, answer the primary."""
        request = self._require(self._when_backup_prepare(tx, node), "BackupPrepare", tx=tx, node=node)
        assert isinstance(request, DhtPrepareRequest)
        c = self.copy()
        c._set_tx(node, tx, LocalTx(TxState.PREPARED, request.writes))
        c._post([request], [DhtPrepareResponse(tx, node, request.sender)])
        return c

    def _backup_finish(self, tx: str, node: str, commit: bool) -> Message | None:
        request = self._find(DhtFinishRequest, tx=tx, to=node, commit=commit)
        ok = request is not None and self._in_state(node, tx, TxState.PREPARED)
        return request if ok else None

    def _when_backup_commit(self, tx: str, node: str) -> Message | None:
        return self._backup_finish(tx, node, commit=True)

    def backup_commit(self, tx: str, node: str) -> Cluster:
        """Commit on a backup (WAL, data, update(start, delta)), possibly after later transactions."""
        request = self._require(self._when_backup_commit(tx, node), "BackupCommit", tx=tx, node=node)
        c = self.copy()
        c._commit_on(node, tx, c.nodes[node].txs[tx].writes)
        c._set_state(node, tx, TxState.COMMITTED)
        c._post([request], [])
        return c

    def _when_backup_rollback(self, tx: str, node: str) -> Message | None:
        return self._backup_finish(tx, node, commit=False)

    def backup_rollback(self, tx: str, node: str) -> Cluster:
        """Roll back on a backup: update(start, delta) and the rollback record; tell the primary."""
        request = self._require(self._when_backup_rollback(tx, node), "BackupRollback", tx=tx, node=node)
        assert isinstance(request, DhtFinishRequest)
        c = self.copy()
        c._rollback_on(node, c.nodes[node].txs[tx].writes)
        c._set_state(node, tx, TxState.ROLLED_BACK)
        c._post([request], [DhtFinishResponse(tx, node, request.sender)])
        return c

    # --- failures, recovery, the exchange ----------------------------------------------------------------

    def _when_node_fail(self, node: str) -> bool | None:
        return True if node in self.alive else None

    def node_fail(self, node: str) -> Cluster:
        """A server crashes: memory (transactions, locks, data, counters) lost, disk kept, messages to it
        lost; the topology moves to the next major version."""
        self._require(self._when_node_fail(node), "NodeFail", node=node)
        c = self.copy()
        c.alive = self.alive - {node}
        c.top_ver = Version(self.top_ver.major + 1, 0)
        fresh = {p: PartitionUpdateCounter() for p in self.config.owned(node)}
        c.nodes[node] = Node({}, fresh, {}, self.nodes[node].disk)
        c.network = frozenset(m for m in self.network if receiver(m) != node)
        return c

    def _when_restart(self, node: str) -> bool | None:
        return True if node in self.down else None

    def restart(self, node: str) -> Cluster:
        """A crashed server restarts: counters and data rebuilt from its disk. It does not rejoin."""
        self._require(self._when_restart(node), "Restart", node=node)
        c = self.copy()
        disk = self.nodes[node].disk
        counters, data = disk.restore(self.config.owned(node), self.config.partition)
        c.nodes[node] = Node({}, counters, data, disk)
        c.restarted = self.restarted | {node}
        return c

    def _when_recover(self, tx: str) -> bool | None:
        return True if self._recovery_due(tx) else None

    def recover(self, tx: str) -> Cluster:
        """Tx recovery after the primary failed: commit only if every tx node is prepared - the near node
        is prepared once it decided commit - else roll back. Backups commit as usual; a backup rolling back
        drops the counters (no update, no record): finalize closes the hole at the exchange (with
        Fix.RECOVERY_CLOSES_RANGE it applies them with a rollback record)."""
        self._require(self._when_recover(tx), "Recover", tx=tx)
        commit = self.near[tx].state is NearState.COMMITTED
        c = self.copy()
        c._set_near(tx, replace(c.near[tx], state=NearState.COMMITTED if commit else NearState.ROLLED_BACK))
        closes = Fix.RECOVERY_CLOSES_RANGE in self.config.fixes
        for node in sorted(self.alive):
            if self._in_state(node, tx, TxState.PREPARED):
                if commit:
                    c._commit_on(node, tx, c.nodes[node].txs[tx].writes)
                elif closes:
                    c._rollback_on(node, c.nodes[node].txs[tx].writes)
                c._set_state(node, tx, TxState.COMMITTED if commit else TxState.ROLLED_BACK)
        c.network = frozenset(m for m in self.network if m.tx != tx)
        return c

    def _when_exchange(self) -> bool | None:
        ok = (
            self.top_ver != self.ready_ver
            and not any(t.state in ACTIVE for n in self.alive for t in self.nodes[n].txs.values())
            and not any(self._recovery_due(tx) for tx in self.near)
        )
        return True if ok else None

    def exchange(self) -> Cluster:
        """The exchange (PME) for the new topology, once every transaction finished on every live server: a
        server left, so the survivors finalize their counters (holes logged as rollback records), every
        owner takes the survivors' maximum LWM (update(value): this raises the new primary's HWM), and all
        servers switch to the new owner lists at once. A partition with no live owner is left LOST (empty
        owner list; not modeled further)."""
        self._require(self._when_exchange(), "Exchange")
        c = self.copy()
        for part, owners in sorted(self.owners.items()):
            survivors = [n for n in owners if n in self.alive]
            for n in survivors:
                node = c.nodes[n]
                gaps = node.counters[part].finalize()
                node.disk = node.disk.log(
                    RollbackRecord(part, first - 1, last - first + 1) for first, last in gaps
                )
            if survivors:
                max_lwm = max(c.nodes[n].counters[part].lwm for n in survivors)
                for n in survivors:
                    c.nodes[n].counters[part].update_lwm(max_lwm)
            c.owners[part] = tuple(survivors)
        c.ready_ver = self.top_ver
        return c

    def _when_checkpoint(self, node: str) -> bool | None:
        return True if node in self.alive | self.restarted else None

    def checkpoint(self, node: str) -> Cluster:
        """Persist the pages (counters' LWM and gaps, data) and write the checkpoint marker to the WAL."""
        self._require(self._when_checkpoint(node), "Checkpoint", node=node)
        c = self.copy()
        n = c.nodes[node]
        n.disk = n.disk.checkpoint(n.counters)
        return c

    # --- inspection (tests, scenarios) -------------------------------------------------------------------

    def run(self, steps: Iterable[Step | str]) -> Cluster:
        """Apply steps in order; a string is parsed as "Name(tx=t1, node=s1)" or "Name"."""
        cluster = self
        for step in steps:
            cluster = cluster.apply(parse_step(step) if isinstance(step, str) else step)
        return cluster


_STEP_TEXT = re.compile(r"^\s*(\w+)\s*(?:\((.*)\))?\s*$")


def parse_step(text: str) -> Step:
    """A Step from "Lock(tx=t1, node=s1)" (or "Exchange"); raises StepNotEnabled if malformed."""
    match = _STEP_TEXT.match(text)
    if match is None:
        raise StepNotEnabled(f"not a step: {text!r} (expected Name or Name(param=value, ...))")
    params: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in (match.group(2) or "").split(","))):
        key, sep, value = part.partition("=")
        name, value = key.strip(), value.strip()
        if not sep or name not in ("tx", "node", "part", "peer") or (name == "part" and not value.isdigit()):
            raise StepNotEnabled(
                f"bad parameter {part!r} in {text!r} (expected tx=..., node=..., part=<number> or peer=...)"
            )
        params[name] = int(value) if name == "part" else value
    return Step(match.group(1), **params)
