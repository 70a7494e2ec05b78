"""NCache's partition-replica topology as pure state machines (spec/NCachePartitionReplica.tla).

The key space is cut into 1000 buckets (`bucket_of`: the 32-bit hash split into ranges). The coordinator,
the oldest member, keeps the distribution map: per bucket its permanent owner, its temporary owner (the
member it is being moved to) and its status. Every member's partition has one replica, on the member that
joined after it (the last member's on the first). Steps carry the spec's action names: `join` (Join),
`start_transfer` / `end_transfer` (StartTransfer / EndTransfer: one bucket pulled, operations on it logged
on the old owner and replayed before the switch), `leave` (Leave: graceful or abrupt; transfers to the
leaver revert, its buckets are orphaned and served by its replica), `pull_orphan` (PullOrphan), `write`
(Write: replicated synchronously or queued), `replication_failure` (ReplicationFailure: a synchronous
write undone on both), `replicate` (Replicate: the head of an owner's queue), `split`, `loser_write` and
`merge` (Split, LoserWrite, Merge: a split-brain that cuts members off, writes the loser side
acknowledges, and the merge that discards them; the losers may join again), `stop_for_maintenance`
(StopForMaintenance: a member stopped, its buckets served from its replica) with its three exits
`maintenance_rejoin`, `maintenance_timeout` and `maintenance_failure` (MaintenanceRejoin,
MaintenanceTimeout, MaintenanceFailure) and `done`.

Every step returns a new cluster; a step that is not enabled raises StepNotEnabled. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import TypeVar

BUCKETS = 1000  # NCache's bucket count
HASH_RANGE = 1 << 31  # a 32-bit hash's magnitude range

FUNCTIONAL = "Functional"
NEED_TRANSFER = "NeedTransfer"
UNDER_STATE_TRANSFER = "UnderStateTransfer"

Store = Mapping[int, int]  # key -> value (a value n is the n-th write); absent keys have none


def bucket_size(count: int = BUCKETS) -> int:
    """ceil(2^31 / count): the hash range of one bucket."""
    return -(-HASH_RANGE // count)


def bucket_of(hash_code: int, count: int = BUCKETS) -> int:
    """The bucket of a 32-bit hash: its magnitude divided by the bucket size (negative and positive hashes
    fold onto the same buckets)."""
    if not -HASH_RANGE <= hash_code < HASH_RANGE:
        raise ValueError(f"hash {hash_code} is not a 32-bit integer")
    return abs(hash_code) // bucket_size(count)


class StepNotEnabled(ValueError):
    """The step's guard is false in this state."""


@dataclass(frozen=True)
class NCacheConfig:
    nodes: tuple[str, ...]  # the nodes that may join, in their join order; the first starts the cluster
    bucket_count: int = BUCKETS
    sync: bool = True  # synchronous replication (False: asynchronous, queued)

    def __post_init__(self) -> None:
        if not self.nodes or len(set(self.nodes)) != len(self.nodes):
            raise ValueError("nodes must be distinct and not empty")
        if self.bucket_count < 1:
            raise ValueError("bucket_count must be positive")

    def bucket(self, key: int) -> int:
        return bucket_of(key, self.bucket_count)


@dataclass(frozen=True)
class Step:
    """One spec action: its name and the parameters it has."""

    name: str
    node: str | None = None
    key: int | None = None
    value: int | None = None
    bucket: int | None = None
    graceful: bool | None = None
    nodes: frozenset[str] | None = None


def _copy_bucket(dst: Store, src: Store, bucket: int, config: NCacheConfig) -> dict[int, int]:
    """dst with bucket's keys replaced by src's."""
    out = {k: v for k, v in dst.items() if config.bucket(k) != bucket}
    out.update((k, v) for k, v in src.items() if config.bucket(k) == bucket)
    return out


def _clear_bucket(store: Store, bucket: int, config: NCacheConfig) -> dict[int, int]:
    return {k: v for k, v in store.items() if config.bucket(k) != bucket}


@dataclass(frozen=True)
class NCacheCluster:
    config: NCacheConfig
    members: tuple[str, ...]  # live members in join order; the coordinator first
    left: frozenset[str]
    owner: tuple[str, ...]  # per bucket: its permanent owner
    temp: tuple[str | None, ...]  # per bucket: the member it is moving to
    status: tuple[str, ...]
    orphan: tuple[str | None, ...]  # per bucket: the member whose replica serves it after its owner left
    logged: tuple[frozenset[int], ...]  # per bucket: keys written while under state transfer
    active: Mapping[str, Store]
    replica: Mapping[str, Store]
    queue: Mapping[str, tuple[tuple[int, int], ...]]  # per member: (key, value) waiting for replication
    cut: frozenset[str] = frozenset()  # the members a split-brain cut off (the loser side)
    cut_store: Store = field(default_factory=dict)  # what the loser side serves and writes meanwhile
    rejoining: frozenset[str] = frozenset()  # losers of a merged split, restarted: they may join again
    maint: str | None = None  # the member stopped for maintenance

    @classmethod
    def initial(cls, config: NCacheConfig) -> NCacheCluster:
        """The first node alone, owning every bucket."""
        n = config.bucket_count
        empty: dict[str, Store] = {x: {} for x in config.nodes}
        return cls(
            config,
            members=(config.nodes[0],),
            left=frozenset(),
            owner=(config.nodes[0],) * n,
            temp=(None,) * n,
            status=(FUNCTIONAL,) * n,
            orphan=(None,) * n,
            logged=(frozenset(),) * n,
            active=empty,
            replica=dict(empty),
            queue={x: () for x in config.nodes},
        )

    # --- the map and the chain -------------------------------------------------------------------------

    @property
    def coordinator(self) -> str:
        return self.members[0]

    @property
    def buckets(self) -> range:
        return range(self.config.bucket_count)

    def owned(self, node: str, owner: tuple[str, ...] | None = None) -> list[int]:
        return [b for b, o in enumerate(owner or self.owner) if o == node]

    def _replica_holder(self, node: str, members: tuple[str, ...]) -> str | None:
        """The member holding node's replica: the next to have joined, the first after the last."""
        if len(members) == 1:
            return None
        return members[(members.index(node) + 1) % len(members)]

    def replica_holder(self, node: str) -> str | None:
        return self._replica_holder(node, self.members)

    def replica_of(self, holder: str, members: tuple[str, ...]) -> str | None:
        """The member whose partition `holder` keeps as replica."""
        return next((x for x in members if self._replica_holder(x, members) == holder), None)

    def up_holder(self, node: str) -> str | None:
        """node's replica holder while it is up (none while it is stopped for maintenance)."""
        holder = self.replica_holder(node)
        return None if holder == self.maint else holder

    def serving(self, bucket: int) -> str | None:
        """The member whose replica store serves the bucket: the replica of a departed owner until pulled,
        the replica of an owner stopped for maintenance until it comes back; else none."""
        if self.orphan[bucket] is not None:
            return self.orphan[bucket]
        if self.owner[bucket] == self.maint:
            return self.replica_holder(self.maint)
        return None

    def _route(self, bucket: int) -> str:
        """Who serves the bucket: the replica serving it, else the permanent owner (also while the bucket
        is in transfer: the new owner answers only once it owns it)."""
        return self.serving(bucket) or self.owner[bucket]

    def store_of(self, bucket: int) -> Store:
        """The store the bucket's keys are served from."""
        serving = self.serving(bucket)
        return self.replica[serving] if serving else self.active[self.owner[bucket]]

    def weight(self, bucket: int) -> int:
        """A bucket's weight for the join's choice: the entries its owner holds (NCache: their bytes)."""
        return sum(1 for k in self.active[self.owner[bucket]] if self.config.bucket(k) == bucket)

    def gives(self, node: str, share: int) -> list[int]:
        """The buckets node gives a joiner so that it keeps `share`: its lightest beyond the share."""
        owned = sorted(self.owned(node), key=lambda b: (self.weight(b), b))
        return owned[: max(0, len(owned) - share)]

    def reassigned(self, orphaned: list[int], members: tuple[str, ...], share: int) -> dict[int, str]:
        """New owners of orphaned buckets: round-robin over the members below the share in join order
        (counts not updated while assigning, as in NCache), the coordinator when none is below."""
        below = [x for x in members if len(set(self.owned(x)) - set(orphaned)) < share]
        if not below:
            return {b: members[0] for b in orphaned}
        return {b: below[i % len(below)] for i, b in enumerate(sorted(orphaned))}

    def _reverts(self, bucket: int, leavers: frozenset[str]) -> bool:
        """Whether a leave reverts this bucket's transfer: it was moving to a leaver."""
        return self.temp[bucket] in leavers

    def _replayed(self, bucket: int) -> frozenset[int]:
        """The logged keys replayed on the new owner before the switch: all of them."""
        return self.logged[bucket]

    def _rebuilt(
        self,
        members: tuple[str, ...],
        owner: tuple[str, ...],
        orphan: tuple[str | None, ...],
        kept: Mapping[str, Store],
    ) -> dict[str, Store]:
        """Replica stores after a membership change: each re-pulled from its member's active partition,
        except the keys of buckets it serves as an orphan holder (taken from `kept`)."""
        bucket = self.config.bucket
        out: dict[str, Store] = {}
        for h in self.config.nodes:
            if h not in members:
                out[h] = {}
                continue
            of = self.replica_of(h, members)
            store = {k: v for k, v in kept[h].items() if orphan[bucket(k)] == h}
            if of is not None:
                store.update(
                    (k, v)
                    for k, v in self.active[of].items()
                    if owner[bucket(k)] == of and orphan[bucket(k)] != h
                )
            out[h] = store
        return out

    # --- guards ----------------------------------------------------------------------------------------

    def _require(self, ok: bool, step: str) -> None:
        if not ok:
            raise StepNotEnabled(f"{step} is not enabled")

    @property
    def next_node(self) -> str | None:
        joined = len(self.members) + len(self.left)
        return self.config.nodes[joined] if joined < len(self.config.nodes) else None

    @property
    def quiet(self) -> bool:
        return all(s == FUNCTIONAL for s in self.status) and not any(self.queue.values())

    def can_fail_replication(self, key: int) -> bool:
        bucket = self.config.bucket(key)
        served_by_owner = self.serving(bucket) is None
        return self.config.sync and served_by_owner and self.up_holder(self.owner[bucket]) is not None

    # --- client writes and replication -----------------------------------------------------------------

    def write(self, key: int, value: int) -> NCacheCluster:
        """A client write: at the serving member, logged if the bucket is under state transfer, replicated
        synchronously to the owner's replica holder or queued for it."""
        bucket = self.config.bucket(key)
        served = self._route(bucket)
        active, replica, queue = dict(self.active), dict(self.replica), dict(self.queue)
        if self.serving(bucket) is not None:
            replica[served] = {**replica[served], key: value}
        else:
            active[served] = {**active[served], key: value}
            holder = self.up_holder(served)
            if holder is not None and self.config.sync:
                replica[holder] = {**replica[holder], key: value}
            elif holder is not None:
                queue[served] = (*queue[served], (key, value))
        logged = self.logged
        if self.status[bucket] == UNDER_STATE_TRANSFER:
            logged = _set(logged, bucket, logged[bucket] | {key})
        return replace(self, active=active, replica=replica, queue=queue, logged=logged)

    def replication_failure(self, key: int, value: int) -> NCacheCluster:
        """A synchronous replication fails: the item is removed from the owner and the replica again and
        the client gets an error - the stores end as they were."""
        self._require(self.can_fail_replication(key), "ReplicationFailure")
        return self

    def replicate(self, node: str) -> NCacheCluster:
        """The head of node's queue goes to its replica holder; dropped if node no longer owns the bucket
        (it moved with its data and its new replica was pulled) or the holder is stopped for maintenance
        (it pulls the whole partition when it comes back)."""
        self._require(node in self.members and bool(self.queue[node]), f"Replicate({node})")
        (key, value), rest = self.queue[node][0], self.queue[node][1:]
        bucket = self.config.bucket(key)
        holder = self.up_holder(node)
        replica = dict(self.replica)
        if holder is not None and self.owner[bucket] == node and self.orphan[bucket] is None:
            replica[holder] = {**replica[holder], key: value}
        return replace(self, replica=replica, queue={**self.queue, node: rest})

    # --- state transfer --------------------------------------------------------------------------------

    def join(self, node: str) -> NCacheCluster:
        """The next node joins when every bucket is functional: the buckets each member holds beyond the
        new share get it as temporary owner; replicas are re-pulled along the new chain."""
        joiner = node == self.next_node or node in self.rejoining
        self._require(joiner and self.quiet_map and self.maint is None, f"Join({node})")
        members = (*self.members, node)
        share = self.config.bucket_count // len(members)
        moving = {b for x in self.members for b in self.gives(x, share)}
        temp = tuple(node if b in moving else None for b in self.buckets)
        status = tuple(NEED_TRANSFER if b in moving else FUNCTIONAL for b in self.buckets)
        replica = self._rebuilt(members, self.owner, self.orphan, self.replica)
        return replace(
            self,
            members=members,
            left=self.left - {node},
            rejoining=self.rejoining - {node},
            temp=temp,
            status=status,
            replica=replica,
        )

    @property
    def quiet_map(self) -> bool:
        return all(s == FUNCTIONAL for s in self.status)

    def start_transfer(self, bucket: int) -> NCacheCluster:
        """The temporary owner copies the bucket from its permanent owner; writes are logged from now on."""
        target = self.temp[bucket]
        self._require(self.status[bucket] == NEED_TRANSFER and target is not None, f"StartTransfer({bucket})")
        assert target is not None
        active = dict(self.active)
        active[target] = _copy_bucket(active[target], active[self.owner[bucket]], bucket, self.config)
        return replace(
            self,
            active=active,
            status=_set(self.status, bucket, UNDER_STATE_TRANSFER),
            logged=_set(self.logged, bucket, frozenset()),
        )

    def end_transfer(self, bucket: int) -> NCacheCluster:
        """The log is replayed on the new owner, then the bucket switches: the new owner and its replica
        holder have it, the old owner and its replica holder drop it."""
        self._require(self.status[bucket] == UNDER_STATE_TRANSFER, f"EndTransfer({bucket})")
        old, new = self.owner[bucket], self.temp[bucket]
        assert new is not None
        caught = dict(self.active[new])
        for k in self._replayed(bucket):
            if k in self.active[old]:
                caught[k] = self.active[old][k]
            else:
                caught.pop(k, None)
        active = {**self.active, new: caught, old: _clear_bucket(self.active[old], bucket, self.config)}
        replica = self._moved_replica(bucket, self.replica_holder(old), new, active)
        return replace(
            self,
            owner=_set(self.owner, bucket, new),
            temp=_set(self.temp, bucket, None),
            status=_set(self.status, bucket, FUNCTIONAL),
            logged=_set(self.logged, bucket, frozenset()),
            active=active,
            replica=replica,
        )

    def _moved_replica(
        self, bucket: int, dropped_by: str | None, owner: str, active: Mapping[str, Store]
    ) -> dict[str, Store]:
        """Replica stores after bucket moved to owner: `dropped_by`'s replica store drops it, owner's
        replica holder pulls it from owner's active store."""
        replica: dict[str, Store] = dict(self.replica)
        if dropped_by is not None:
            replica[dropped_by] = _clear_bucket(replica[dropped_by], bucket, self.config)
        holder = self.replica_holder(owner)
        if holder is not None:
            replica[holder] = _copy_bucket(replica[holder], active[owner], bucket, self.config)
        return replica

    def pull_orphan(self, bucket: int) -> NCacheCluster:
        """The new owner of an orphaned bucket pulls it from the replica serving it."""
        source = self.orphan[bucket]
        self._require(source is not None, f"PullOrphan({bucket})")
        assert source is not None
        x = self.owner[bucket]
        active = {**self.active, x: _copy_bucket(self.active[x], self.replica[source], bucket, self.config)}
        return replace(
            self,
            active=active,
            replica=self._moved_replica(bucket, source, x, active),
            orphan=_set(self.orphan, bucket, None),
            status=_set(self.status, bucket, FUNCTIONAL),
        )

    def leave(self, node: str, graceful: bool) -> NCacheCluster:
        """node leaves (graceful: its queue is flushed first; abrupt: the queue is lost)."""
        ok = node in self.members and len(self.members) > 1 and self.maint is None
        self._require(ok, f"Leave({node})")
        return self._depart(frozenset({node}), graceful)

    def _flushed(self, node: str, graceful: bool) -> dict[int, int]:
        """What node's replica holder keeps when node departs: gracefully, node's queue is flushed to it
        first (the keys node still owns); abruptly, the queue is lost."""
        holder = self.replica_holder(node)
        assert holder is not None
        flushed = dict(self.replica[holder])
        if graceful:
            for key, value in self.queue[node]:
                if self.owner[self.config.bucket(key)] == node:
                    flushed[key] = value
        return flushed

    def _depart(self, leavers: frozenset[str], graceful: bool) -> NCacheCluster:
        """The cluster without the leavers: transfers to them revert; their buckets are orphaned - served
        from the owner's replica holder unless it departs too (then, like those already served from a
        leaver's replica store, they are lost) - and handed to the members below the share."""
        members = tuple(x for x in self.members if x not in leavers)
        holders = {x: self.replica_holder(x) for x in leavers}
        kept = dict(self.replica)
        for x, h in holders.items():
            if h is not None and h not in leavers:
                kept[h] = self._flushed(x, graceful)
        orphaned = [b for b, o in enumerate(self.owner) if o in leavers]
        to = self.reassigned(orphaned, members, self.config.bucket_count // len(members))
        owner = tuple(to.get(b, o) for b, o in enumerate(self.owner))

        def orphan_of(b: int, o: str | None) -> str | None:
            if o in leavers:
                return None
            if b in to and o is None:
                holder = holders[self.owner[b]]
                return None if holder in leavers else holder
            return o

        orphan = tuple(orphan_of(b, o) for b, o in enumerate(self.orphan))
        cleared = {b for b in self.buckets if b in to or self._reverts(b, leavers)}
        status = tuple(
            NEED_TRANSFER
            if orphan[b] is not None
            else FUNCTIONAL
            if b in cleared or self.orphan[b] in leavers
            else s
            for b, s in enumerate(self.status)
        )
        return replace(
            self,
            members=members,
            left=self.left | leavers,
            owner=owner,
            orphan=orphan,
            temp=tuple(None if b in cleared else t for b, t in enumerate(self.temp)),
            status=status,
            logged=tuple(frozenset() if b in cleared else g for b, g in enumerate(self.logged)),
            active={**self.active, **{x: {} for x in leavers}},
            replica=self._rebuilt(members, owner, orphan, kept),
            queue={**self.queue, **{x: () for x in leavers}},
        )

    # --- split-brain -------------------------------------------------------------------------------------

    def loses(self, nodes: frozenset[str]) -> bool:
        """Whether a split cutting `nodes` off leaves them the loser: the rest is larger, or on a tie the
        rest's coordinator has the lower address (the oldest member is the lowest here)."""
        rest = len(self.members) - len(nodes)
        return len(nodes) < rest or (len(nodes) == rest and self.members[0] not in nodes)

    def split(self, nodes: frozenset[str]) -> NCacheCluster:
        """The network cuts `nodes` off: the rest goes on as if they had left abruptly; they go on serving
        the clients connected to them from what they owned."""
        ok = not self.cut and self.maint is None and bool(nodes) and nodes <= set(self.members)
        self._require(ok and self.loses(nodes), f"Split({sorted(nodes)})")
        bucket = self.config.bucket
        held = {k: v for x in nodes for k, v in self.active[x].items() if self.owner[bucket(k)] == x}
        return replace(self._depart(nodes, graceful=False), cut=nodes, cut_store=held)

    def loser_write(self, key: int, value: int) -> NCacheCluster:
        """A client connected to the loser side writes there (and is acknowledged)."""
        self._require(bool(self.cut), "LoserWrite")
        return replace(self, cut_store={**self.cut_store, key: value})

    def merge(self) -> NCacheCluster:
        """Connectivity returns: the losers restart, their data discarded; they may join again."""
        self._require(bool(self.cut), "Merge")
        return replace(self, cut=frozenset(), cut_store={}, rejoining=self.rejoining | self.cut)

    # --- maintenance mode --------------------------------------------------------------------------------

    def can_stop_for_maintenance(self, node: str) -> bool:
        return (
            self.maint is None
            and not self.cut
            and node in self.members
            and len(self.members) > 1
            and self.quiet_map
        )

    def stop_for_maintenance(self, node: str) -> NCacheCluster:
        """node is stopped for maintenance (gracefully: its queue flushed to its replica holder first); its
        in-memory stores are gone, its buckets stay in the map, served from its replica; state transfer,
        joins, leaves and splits wait."""
        self._require(self.can_stop_for_maintenance(node), f"StopForMaintenance({node})")
        holder = self.replica_holder(node)
        assert holder is not None
        replica = {**self.replica, holder: self._flushed(node, graceful=True), node: {}}
        return replace(
            self,
            active={**self.active, node: {}},
            replica=replica,
            queue={**self.queue, node: ()},
            maint=node,
        )

    def maintenance_rejoin(self, node: str) -> NCacheCluster:
        """Exit 1: node comes back within the timeout, pulls its partition from its replica (with what was
        written meanwhile) and re-pulls the replica it holds from that partition's owner."""
        self._require(self.maint == node, f"MaintenanceRejoin({node})")
        of = self.replica_of(node, self.members)
        assert of is not None
        bucket = self.config.bucket
        active = self._pulled(node)
        partition = {k: v for k, v in self.active[of].items() if self.owner[bucket(k)] == of}
        return replace(
            self,
            active={**self.active, node: active},
            replica={**self.replica, node: partition},
            maint=None,
        )

    def _pulled(self, node: str) -> dict[int, int]:
        """What node pulls when it comes back from maintenance: its partition, from its replica."""
        holder = self.replica_holder(node)
        assert holder is not None
        return {k: v for k, v in self.replica[holder].items() if self.owner[self.config.bucket(k)] == node}

    def maintenance_timeout(self, node: str) -> NCacheCluster:
        """Exit 2: the timeout expires without node: it is declared dead and a normal leave starts."""
        self._require(self.maint == node, f"MaintenanceTimeout({node})")
        return replace(self._depart(frozenset({node}), graceful=True), maint=None)

    def maintenance_failure(self, node: str) -> NCacheCluster:
        """Exit 3: another member fails; maintenance ends for the whole cluster and both depart at once."""
        down = self.maint
        ok = down is not None and node != down and node in self.members and len(self.members) > 2
        self._require(ok, f"MaintenanceFailure({node})")
        assert down is not None
        return replace(self._depart(frozenset({down, node}), graceful=False), maint=None)

    def done(self) -> NCacheCluster:
        """The terminal step: nothing in flight."""
        self._require(self.quiet, "Done")
        return self

    # --- steps -----------------------------------------------------------------------------------------

    def enabled(self, keys: frozenset[int], value: int) -> Iterator[Step]:
        """Every step enabled here; a write writes `value`."""
        if self.quiet:
            yield Step("Done")
        for k in sorted(keys):
            yield Step("Write", key=k, value=value)
            if self.can_fail_replication(k):
                yield Step("ReplicationFailure", key=k, value=value)
        for x in self.members:
            if self.queue[x]:
                yield Step("Replicate", node=x)
        if self.quiet_map and self.maint is None:
            for joiner in sorted({*self.rejoining, *([self.next_node] if self.next_node else [])}):
                yield Step("Join", node=joiner)
        if len(self.members) > 1 and self.maint is None:
            for x in self.members:
                yield Step("Leave", node=x, graceful=True)
                yield Step("Leave", node=x, graceful=False)
                if self.can_stop_for_maintenance(x):
                    yield Step("StopForMaintenance", node=x)
        if self.maint is not None:
            yield Step("MaintenanceRejoin", node=self.maint)
            yield Step("MaintenanceTimeout", node=self.maint)
            for x in self.members:
                if x != self.maint and len(self.members) > 2:
                    yield Step("MaintenanceFailure", node=x)
        if not self.cut and self.maint is None:
            for size in range(1, len(self.members)):
                for nodes in map(frozenset, combinations(self.members, size)):
                    if self.loses(nodes):
                        yield Step("Split", nodes=nodes)
        if self.cut:
            for k in sorted(keys):
                yield Step("LoserWrite", key=k, value=value)
            yield Step("Merge")
        for b in self.buckets:
            if self.status[b] == NEED_TRANSFER and self.temp[b] is not None:
                yield Step("StartTransfer", bucket=b)
            if self.status[b] == UNDER_STATE_TRANSFER:
                yield Step("EndTransfer", bucket=b)
            if self.orphan[b] is not None:
                yield Step("PullOrphan", bucket=b)

    def apply(self, step: Step) -> NCacheCluster:
        """The step's operation (StepNotEnabled if its guard is false or a parameter is missing)."""
        try:
            match step.name:
                case "Write":
                    return self.write(_given(step.key), _given(step.value))
                case "ReplicationFailure":
                    return self.replication_failure(_given(step.key), _given(step.value))
                case "Replicate":
                    return self.replicate(_given(step.node))
                case "Join":
                    return self.join(_given(step.node))
                case "Leave":
                    return self.leave(_given(step.node), _given(step.graceful))
                case "StartTransfer":
                    return self.start_transfer(_given(step.bucket))
                case "EndTransfer":
                    return self.end_transfer(_given(step.bucket))
                case "PullOrphan":
                    return self.pull_orphan(_given(step.bucket))
                case "Split":
                    return self.split(_given(step.nodes))
                case "LoserWrite":
                    return self.loser_write(_given(step.key), _given(step.value))
                case "StopForMaintenance":
                    return self.stop_for_maintenance(_given(step.node))
                case "MaintenanceRejoin":
                    return self.maintenance_rejoin(_given(step.node))
                case "MaintenanceTimeout":
                    return self.maintenance_timeout(_given(step.node))
                case "MaintenanceFailure":
                    return self.maintenance_failure(_given(step.node))
                case "Merge":
                    return self.merge()
                case "Done":
                    return self.done()
        except (KeyError, IndexError) as error:
            raise StepNotEnabled(f"{step.name}: unknown member or bucket {error}") from error
        raise StepNotEnabled(f"unknown step {step.name!r}")


T = TypeVar("T")


def _set(values: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*values[:index], value, *values[index + 1 :])


def _given(value: T | None) -> T:
    if value is None:
        raise StepNotEnabled("a parameter of the step is missing")
    return value
