"""Hazelcast's partition replica versions and anti-entropy, for one partition, as a value to step.

spec/HazelcastAntiEntropy.tla is the normative description; step names and message fields are the spec's
(Hazelcast's classes in brackets):

- `FragmentVersions` [PartitionReplicaFragmentVersions]: per namespace a vector of versions, slot r for
  backup replica r, and a dirty flag; -1 (`REQUIRES_SYNC`) marks a slot whose backup failed.
- `HazelcastCluster`: the live members, the partition table (index 0 the owner, then the backups), per
  member its namespaces' data, fragment versions, sync requests in flight and free sync permits, and the
  network of in-flight messages. Every step is a method that returns a new cluster and leaves this one
  unchanged; `enabled` lists the steps possible now and `apply` takes one. Nothing here chooses: the
  caller picks the step, so the order of delivery, losses and crashes.

Steps: Put (the owner applies and sends Backups), Backup / BackupFailure (a backup replica runs one),
AntiEntropy (the owner's periodic task [PartitionPrimaryReplicaAntiEntropyTask]) and BackupAntiEntropy
(the replica's check [PartitionBackupReplicaAntiEntropyOperation]), SyncRequest / SyncSend /
SyncResponse / SyncRetry / SyncTimeout (replica sync with permits [PartitionReplicaSyncRequest, ...Response,
...RetryResponse]), Drop (the network loses a backup), Crash (with promotion), Join, Migrate (a copy
migration into a vacant replica index) and Destroy (a map destroyed everywhere).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any, TypeVar

REQUIRES_SYNC = -1

Data = Mapping[int, int]  # key -> value


class StepNotEnabled(ValueError):
    """The step's guard is false in this state (or the step or a parameter is unknown)."""


@dataclass(frozen=True, slots=True)
class FragmentVersions:
    """One namespace's versions on one member: versions[r - 1] is backup replica r's version."""

    versions: tuple[int, ...]
    dirty: bool = False

    @classmethod
    def fresh(cls, slots: int) -> FragmentVersions:
        """A fragment seen for the first time: every slot 0 (entries are created on first use)."""
        return cls((0,) * slots)

    @classmethod
    def installed(cls, new: tuple[int, ...], replica: int) -> FragmentVersions:
        """After a sync or a copy migration to `replica`: the versions from its slot upward, the lower
        slots cleared, not dirty (clear() then set())."""
        return cls((0,) * (replica - 1) + new[replica - 1 :])

    def slot(self, replica: int) -> int:
        return self.versions[replica - 1]

    def increment(self, backups: int) -> FragmentVersions:
        """The owner's incrementAndGet for `backups` requested backups (slots marked -1 are skipped)."""
        return replace(
            self,
            versions=tuple(
                v + 1 if i < backups and v != REQUIRES_SYNC else v for i, v in enumerate(self.versions)
            ),
        )

    def is_stale(self, new: tuple[int, ...], replica: int) -> bool:
        """A backup is stale when this replica's slot is ahead of it, or marked "requires sync"."""
        current = self.slot(replica)
        return current == REQUIRES_SYNC or current > new[replica - 1]

    def update(self, new: tuple[int, ...], replica: int) -> FragmentVersions:
        """A newer version is copied from `replica`'s slot upward; a jump of more than one is dirty."""
        current, latest = self.slot(replica), new[replica - 1]
        if current >= latest:
            return self
        return FragmentVersions(
            self.versions[: replica - 1] + new[replica - 1 :], self.dirty or latest - current > 1
        )

    def mark_sync_required(self, replica: int) -> FragmentVersions:
        """A backup that failed while applying: its slot is -1 until a sync."""
        i = replica - 1
        return replace(self, versions=(*self.versions[:i], REQUIRES_SYNC, *self.versions[i + 1 :]))

    def shifted(self, index: int) -> FragmentVersions:
        """On the member promoted from `index`: slots 1..index-1 take the value of slot `index`."""
        v = self.versions
        return replace(self, versions=(v[index - 1],) * (index - 1) + v[index - 1 :])


# --- messages (`sender` is the spec's `from`) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Backup:
    """The owner's backup of one put to replica `replica`, carrying the whole vector; `held` while an
    anti-entropy operation sent before it to the same member has not run (they run in order)."""

    sender: str
    to: str
    replica: int
    ns: str
    key: int
    value: int
    versions: tuple[int, ...]
    held: bool = False


@dataclass(frozen=True, slots=True)
class AntiEntropy:
    """The owner's versions for replica `replica`: its slot per namespace; it runs after the backups
    that were in flight to the member when it was sent (`after`, by value)."""

    sender: str
    to: str
    replica: int
    versions: tuple[tuple[str, int], ...]  # (namespace, version), sorted
    after: frozenset[int]


@dataclass(frozen=True, slots=True)
class SyncRequest:
    sender: str
    to: str
    replica: int
    namespaces: frozenset[str]


@dataclass(frozen=True, slots=True)
class SyncResponse:
    """The owner's data of one namespace and its vector."""

    sender: str
    to: str
    replica: int
    ns: str
    data: tuple[tuple[int, int], ...]  # (key, value), sorted
    versions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SyncRetry:
    sender: str
    to: str
    replica: int
    namespaces: frozenset[str]


Message = Backup | AntiEntropy | SyncRequest | SyncResponse | SyncRetry


@dataclass(frozen=True, slots=True)
class MemberState:
    """A member's memory (all lost in a crash): data and fragment versions per namespace, its sync
    requests in flight as (namespace, replica index), its free sync permits, and as an owner the
    replications it prepares offloaded, holding a permit each ((member, replica index, namespace) ->
    how many)."""

    data: Mapping[str, Data]
    versions: Mapping[str, FragmentVersions]
    syncs: frozenset[tuple[str, int]]
    permits: int
    serving: Mapping[tuple[str, int, str], int]


@dataclass(frozen=True)
class HazelcastConfig:
    """The cluster's fixed inputs: members (the initial partition table in that order), versions per
    vector (the largest backup index), backups per put, the maps, the non-fragmented namespace and the
    sync permits per member (hazelcast.partition.max.parallel.replications; 0 disables sync)."""

    members: tuple[str, ...]
    slots: int = 6
    backup_count: int = 1
    maps: frozenset[str] = frozenset({"map1"})
    internal: str = "internal"
    max_parallel: int = 10

    def __post_init__(self) -> None:
        if not self.members or len(set(self.members)) != len(self.members):
            raise ValueError(f"members must be distinct and at least one: {self.members}")
        if not 1 <= self.backup_count <= self.slots:
            raise ValueError(f"backup_count must be in 1..slots ({self.slots}), got {self.backup_count}")
        if self.internal in self.maps or self.max_parallel < 0:
            raise ValueError("the internal namespace is no map, and max_parallel must be >= 0")

    @property
    def namespaces(self) -> frozenset[str]:
        return self.maps | {self.internal}


@dataclass(frozen=True, order=True, slots=True)
class Step:
    """One step with its parameters, e.g. Step("Backup", member="m2", msg=...)."""

    name: str
    member: str | None = None
    msg: Message | None = None
    granted: frozenset[str] | None = None
    to: str | None = None  # SyncSend: the replica's member
    ns: str | None = None
    key: int | None = None
    value: int | None = None
    replica: int | None = None


def _grants(candidates: frozenset[str], permits: int) -> list[frozenset[str]]:
    """The ways to give `candidates` the permits there are: every subset of min(permits, n) of them."""
    size = min(permits, len(candidates))
    return [frozenset(c) for c in combinations(sorted(candidates), size)]


@dataclass(frozen=True)
class HazelcastCluster:
    """One partition's replicas on the members, and the network; see the module docstring."""

    config: HazelcastConfig
    alive: frozenset[str]
    table: tuple[str | None, ...]  # replica index 0..slots -> member
    members: Mapping[str, MemberState]
    network: frozenset[Message]
    destroyed: frozenset[str]

    @classmethod
    def initial(cls, config: HazelcastConfig) -> HazelcastCluster:
        """Every member up and empty, the table in the members' order."""
        size = config.slots + 1
        return cls(
            config,
            alive=frozenset(config.members),
            table=tuple((config.members + (None,) * size)[:size]),
            members={m: cls._fresh_member(config) for m in config.members},
            network=frozenset(),
            destroyed=frozenset(),
        )

    @staticmethod
    def _fresh_member(config: HazelcastConfig) -> MemberState:
        return MemberState({}, {}, frozenset(), config.max_parallel, {})

    # --- observations ----------------------------------------------------------------------------------

    @property
    def owner(self) -> str | None:
        return self.table[0]

    def index_of(self, member: str) -> int:
        """The member's replica index, or -1 when it holds no replica."""
        return self.table.index(member) if member in self.table else -1

    def fragment(self, member: str, ns: str) -> FragmentVersions:
        return self.members[member].versions.get(ns) or FragmentVersions.fresh(self.config.slots)

    def data_of(self, member: str, ns: str) -> Data:
        return self.members[member].data.get(ns, {})

    def backups_to(self, member: str) -> frozenset[int]:
        """The backups in flight to `member`, by value."""
        return frozenset(m.value for m in self.network if isinstance(m, Backup) and m.to == member)

    def deliverable(self, msg: Message) -> bool:
        """Backups and anti-entropy operations to a member run in the order they were sent (backups
        among themselves in any order): a held backup waits, as does an anti-entropy operation whose
        earlier backups are in flight."""
        if isinstance(msg, Backup):
            return not msg.held
        if isinstance(msg, AntiEntropy):
            return not msg.after & self.backups_to(msg.to)
        return True

    def can_sync(self, member: str) -> bool:
        """A replica asks for a sync when the owner is known and is not itself, and it is a replica."""
        return self.owner is not None and self.owner != member and self.index_of(member) >= 1

    def requestable(self, member: str, namespaces: frozenset[str], replica: int) -> frozenset[str]:
        """The namespaces `member` may request for `replica` now: none in flight already."""
        if not self.can_sync(member):
            return frozenset()
        return frozenset(ns for ns in namespaces if (ns, replica) not in self.members[member].syncs)

    def behind(self, msg: AntiEntropy) -> frozenset[str]:
        """The namespaces an anti-entropy operation finds dirty or different on its member."""
        r = msg.replica
        found = [ns for ns, v in msg.versions if (f := self.fragment(msg.to, ns)).dirty or f.slot(r) != v]
        return frozenset(found)

    def _checks(self, msg: AntiEntropy) -> bool:
        """The member runs the check: it is that replica index, and the sender its owner."""
        return self.index_of(msg.to) == msg.replica and msg.sender == self.owner

    def request_grants(self, msg: AntiEntropy) -> list[frozenset[str]]:
        """The sync requests an anti-entropy operation may lead to (which namespaces get permits)."""
        if not self._checks(msg):
            return [frozenset()]
        can = self.requestable(msg.to, self.behind(msg), msg.replica)
        return _grants(can, self.members[msg.to].permits)

    def answer_grants(self, msg: SyncRequest) -> list[frozenset[str]]:
        """The namespaces the owner may answer with data (the rest get a retry)."""
        owner = msg.to
        if owner != self.owner or self.members[owner].permits == 0:
            return [frozenset()]
        return _grants(msg.namespaces, self.members[owner].permits)

    # --- the rules (one method each, so that the bug zoo's mutants can break one) -----------------------

    def _stale(self, fragment: FragmentVersions, versions: tuple[int, ...], replica: int) -> bool:
        return fragment.is_stale(versions, replica)

    def _update(
        self, fragment: FragmentVersions, versions: tuple[int, ...], replica: int
    ) -> FragmentVersions:
        return fragment.update(versions, replica)

    def _failed(
        self, fragment: FragmentVersions, versions: tuple[int, ...], replica: int
    ) -> FragmentVersions:
        return fragment.mark_sync_required(replica)

    def _shifted(self, fragment: FragmentVersions, index: int) -> FragmentVersions:
        return fragment.shifted(index)

    def _increments(self) -> int:
        """Slots a put increments: the requested backup count, also for replicas that do not exist."""
        return self.config.backup_count

    def _permits_back(self, cleared: int, named: int) -> int:
        """Permits that clearing requests gives back: one per request still registered (one that timed out
        gave its permit back already)."""
        return cleared

    def _sends(self, kept: Mapping[str, FragmentVersions]) -> bool:
        """Whether an anti-entropy round sends its operations: always (so that backups drop fragments)."""
        return True

    # --- helpers ---------------------------------------------------------------------------------------

    def _require(self, ok: bool, step: str, **params: object) -> None:
        if not ok:
            shown = ", ".join(f"{k}={v}" for k, v in params.items())
            raise StepNotEnabled(f"{step}({shown}) is not enabled")

    def _with(
        self,
        member: str,
        *,
        network: frozenset[Message] | None = None,
        **changes: Any,
    ) -> HazelcastCluster:
        """This cluster with one member's state changed (and the network, if given)."""
        members = {**self.members, member: replace(self.members[member], **changes)}
        return replace(self, members=members, network=self.network if network is None else network)

    def _requested(
        self, member: str, granted: frozenset[str], replica: int
    ) -> tuple[dict[str, Any], set[Message]]:
        """Register `granted` (one permit each) and the request for them."""
        state = self.members[member]
        if not granted:
            return {}, set()
        owner = self.owner
        assert owner is not None
        changes: dict[str, Any] = {
            "syncs": state.syncs | {(ns, replica) for ns in granted},
            "permits": state.permits - len(granted),
        }
        return changes, {SyncRequest(member, owner, replica, granted)}

    def _cleared(self, member: str, namespaces: frozenset[str], replica: int) -> dict[str, Any]:
        """Clear the member's requests for these namespaces and index, each freeing its permit."""
        state = self.members[member]
        gone = {(ns, replica) for ns in namespaces} & state.syncs
        return {
            "syncs": state.syncs - gone,
            "permits": state.permits + self._permits_back(len(gone), len(namespaces)),
        }

    def _message(self, kind: type[Message], msg: Message, member: str, step: str) -> None:
        self._require(
            type(msg) is kind and msg in self.network and msg.to == member and self.deliverable(msg),
            step,
            member=member,
            msg=msg,
        )

    # --- puts and backups ------------------------------------------------------------------------------

    def put(self, ns: str, key: int, value: int) -> HazelcastCluster:
        """The owner applies a put, increments the vector for the requested backups, and sends each
        backup replica of `backed()` that the table has a Backup with the whole vector."""
        owner = self.owner
        self._require(
            owner is not None and ns in self.config.namespaces and ns not in self.destroyed, "Put", ns=ns
        )
        assert owner is not None
        state = self.members[owner]
        fragment = self.fragment(owner, ns).increment(self._increments())
        sent = {
            Backup(owner, m, r, ns, key, value, fragment.versions, self._round_to(m))
            for r in self.backed()
            if (m := self.table[r]) is not None
        }
        return self._with(
            owner,
            network=self.network | sent,
            data={**state.data, ns: {**self.data_of(owner, ns), key: value}},
            versions={**state.versions, ns: fragment},
        )

    def backed(self) -> range:
        """The replica indexes a put sends backups to: 1..backup_count, capped at the live members but one
        (Hazelcast's getMaxAllowedBackupCount): a replica a crash left at a higher index gets none."""
        return range(1, min(self.config.backup_count, len(self.alive) - 1) + 1)

    def _round_to(self, member: str) -> bool:
        return any(isinstance(m, AntiEntropy) and m.to == member for m in self.network)

    def backup(self, member: str, msg: Message) -> HazelcastCluster:
        """The replica runs a Backup: ignored if it is no longer that replica index or the backup is
        stale; else applied, versions updated (dirty on a jump), and a dirty fragment asks for a sync."""
        self._message(Backup, msg, member, "Backup")
        assert isinstance(msg, Backup)
        rest = self.network - {msg}
        r = msg.replica
        current = self.fragment(member, msg.ns)
        if self.index_of(member) != r or self._stale(current, msg.versions, r):
            return replace(self, network=rest)
        state = self.members[member]
        new = self._update(current, msg.versions, r)
        changes: dict[str, Any] = {}
        sent: set[Message] = set()
        if new.dirty and state.permits > 0:
            changes, sent = self._requested(member, self.requestable(member, frozenset({msg.ns}), r), r)
        return self._with(
            member,
            network=rest | sent,
            data={**state.data, msg.ns: {**self.data_of(member, msg.ns), msg.key: msg.value}},
            versions={**state.versions, msg.ns: new},
            **changes,
        )

    def backup_failure(self, member: str, msg: Message) -> HazelcastCluster:
        """The Backup fails while applying: nothing applied, the replica's slot marked -1."""
        self._message(Backup, msg, member, "BackupFailure")
        assert isinstance(msg, Backup)
        current = self.fragment(member, msg.ns)
        ok = self.index_of(member) == msg.replica and not self._stale(current, msg.versions, msg.replica)
        self._require(ok, "BackupFailure", member=member, msg=msg)
        state = self.members[member]
        marked = self._failed(current, msg.versions, msg.replica)
        return self._with(member, network=self.network - {msg}, versions={**state.versions, msg.ns: marked})

    # --- anti-entropy ----------------------------------------------------------------------------------

    def service_namespaces(self, owner: str) -> frozenset[str]:
        """The namespaces the owner's services have: its record stores, and the non-fragmented one."""
        return frozenset(self.members[owner].data) | {self.config.internal}

    def anti_entropy(self, member: str) -> HazelcastCluster:
        """The owner's periodic task (one round in flight): drop the fragments its services no longer
        have, then send every replica of the table its slot of each remaining fragment."""
        idle = not any(isinstance(m, AntiEntropy) for m in self.network)
        self._require(member == self.owner and idle, "AntiEntropy", member=member)
        state = self.members[member]
        keep = self.service_namespaces(member)
        kept = {ns: f for ns, f in state.versions.items() if ns in keep}
        sent = {
            AntiEntropy(
                member, m, r, tuple(sorted((ns, f.slot(r)) for ns, f in kept.items())), self.backups_to(m)
            )
            for r in range(1, self.config.slots + 1)
            if (m := self.table[r]) is not None and self._sends(kept)
        }
        return self._with(member, network=self.network | sent, versions=kept)

    def _released(self, member: str) -> frozenset[Message]:
        """The network once an anti-entropy operation ran on `member`: its backups are no longer held."""
        return frozenset(
            replace(m, held=False) if isinstance(m, Backup) and m.to == member else m for m in self.network
        )

    def backup_anti_entropy(self, member: str, msg: Message, granted: frozenset[str]) -> HazelcastCluster:
        """The replica checks the owner's versions: rejected unless it is that replica index and the
        sender its owner; else it drops the fragments the owner did not send and requests a sync of the
        `granted` ones among those dirty or different."""
        self._message(AntiEntropy, msg, member, "BackupAntiEntropy")
        assert isinstance(msg, AntiEntropy)
        self._require(
            granted in self.request_grants(msg), "BackupAntiEntropy", member=member, granted=granted
        )
        network = self._released(member) - {msg}
        if not self._checks(msg):
            return replace(self, network=network)
        kept = {ns: self.fragment(member, ns) for ns, _ in msg.versions}
        changes, sent = self._requested(member, granted, msg.replica)
        return self._with(member, network=network | sent, versions=kept, **changes)

    # --- replica sync ----------------------------------------------------------------------------------

    def sync_request(self, member: str, msg: Message, granted: frozenset[str]) -> HazelcastCluster:
        """The member takes a sync request: not the owner or no free permit - a retry for all; else it takes
        a permit for each `granted` namespace and replicates them offloaded (`sync_send`), the rest get a
        retry."""
        self._message(SyncRequest, msg, member, "SyncRequest")
        assert isinstance(msg, SyncRequest)
        self._require(granted in self.answer_grants(msg), "SyncRequest", member=member, granted=granted)
        rest = msg.namespaces - granted
        sent: set[Message] = {SyncRetry(member, msg.sender, msg.replica, rest)} if rest else set()
        state = self.members[member]
        serving = dict(state.serving)
        for ns in granted:
            task = (msg.sender, msg.replica, ns)
            serving[task] = serving.get(task, 0) + 1
        return self._with(
            member,
            network=(self.network - {msg}) | sent,
            permits=state.permits - len(granted),
            serving=serving,
        )

    def sync_send(self, member: str, to: str, replica: int, ns: str) -> HazelcastCluster:
        """The offloaded replication of `ns` for `replica` of `to` is sent: the namespace's data and the
        owner's vector - or, for a namespace empty on the owner, a retry; the permit comes back. A member
        that left gets nothing."""
        state = self.members[member]
        task = (to, replica, ns)
        self._require(task in state.serving, "SyncSend", member=member, to=to, replica=replica, ns=ns)
        fragment = self.fragment(member, ns)  # read through getPartitionReplicaVersions: created
        data = tuple(sorted(self.data_of(member, ns).items()))
        sent: Message = (
            SyncResponse(member, to, replica, ns, data, fragment.versions)
            if data
            else SyncRetry(member, to, replica, frozenset({ns}))
        )
        serving = {t: n - (t == task) for t, n in state.serving.items() if t != task or n > 1}
        return self._with(
            member,
            network=self.network | {sent} if to in self.alive else self.network,
            versions={**state.versions, ns: fragment},
            permits=state.permits + 1,
            serving=serving,
        )

    def sync_response(self, member: str, msg: Message) -> HazelcastCluster:
        """The replica installs a sync response if it is still that replica index (data replaced, versions
        set from the index upward, dirty cleared); otherwise the response's operations fail. Either way the
        request is cleared, and a member that is no replica at all clears its versions of the namespace."""
        self._message(SyncResponse, msg, member, "SyncResponse")
        assert isinstance(msg, SyncResponse)
        state = self.members[member]
        cleared = self._cleared(member, frozenset({msg.ns}), msg.replica)
        network = self.network - {msg}
        index = self.index_of(member)
        if index == msg.replica:
            installed = FragmentVersions.installed(msg.versions, msg.replica)
            return self._with(
                member,
                network=network,
                data={**state.data, msg.ns: dict(msg.data)},
                versions={**state.versions, msg.ns: installed},
                **cleared,
            )
        if index < 0:
            fresh = FragmentVersions.fresh(self.config.slots)
            return self._with(member, network=network, versions={**state.versions, msg.ns: fresh}, **cleared)
        return self._with(member, network=network, **cleared)

    def sync_retry(self, member: str, msg: Message) -> HazelcastCluster:
        """The replica's requests for those namespaces are cleared (permits back); anti-entropy retries."""
        self._message(SyncRetry, msg, member, "SyncRetry")
        assert isinstance(msg, SyncRetry)
        return self._with(
            member, network=self.network - {msg}, **self._cleared(member, msg.namespaces, msg.replica)
        )

    def sync_timeout(self, member: str, ns: str, replica: int) -> HazelcastCluster:
        """A request times out: its permit comes back (a late response is still installed)."""
        self._require((ns, replica) in self.members[member].syncs, "SyncTimeout", member=member, ns=ns)
        return self._with(member, **self._cleared(member, frozenset({ns}), replica))

    # --- network, membership, data structures ----------------------------------------------------------

    def drop(self, msg: Message) -> HazelcastCluster:
        """The network loses a backup."""
        self._require(isinstance(msg, Backup) and msg in self.network, "Drop", msg=msg)
        return replace(self, network=self.network - {msg})

    def promoted_index(self, crashed: str) -> int | None:
        """The index of the replica a crash of the owner promotes: the smallest surviving one."""
        return next((i for i in range(1, len(self.table)) if self.table[i] not in (None, crashed)), None)

    def crash(self, member: str) -> HazelcastCluster:
        """A member crashes: memory lost, messages to and from it lost. If it owned the partition, the
        replica with the smallest surviving index c is promoted, only its vectors shifted (slots 1..c-1
        take slot c's value), and every request to the old owner is cancelled (permits back); a backup's
        index is vacated. The owner never crashes without a surviving replica."""
        owner = member == self.owner
        c = self.promoted_index(member)
        self._require(member in self.alive and (not owner or c is not None), "Crash", member=member)
        members = dict(self.members)
        members[member] = self._fresh_member(self.config)
        table = [None if m == member else m for m in self.table]
        if owner:
            assert c is not None
            promoted = self.table[c]
            assert promoted is not None
            table[0], table[c] = promoted, None
            state = members[promoted]
            shifted = {ns: self._shifted(f, c) for ns, f in state.versions.items()}
            members[promoted] = replace(state, versions=shifted)
            members = {
                m: replace(s, syncs=frozenset(), permits=self.config.max_parallel) for m, s in members.items()
            }
        network = frozenset(m for m in self.network if member not in (m.sender, m.to))
        return replace(
            self, alive=self.alive - {member}, table=tuple(table), members=members, network=network
        )

    def join(self, member: str) -> HazelcastCluster:
        """A crashed member starts again, empty, and joins (no replica until a migration)."""
        self._require(member in self.config.members and member not in self.alive, "Join", member=member)
        return replace(self, alive=self.alive | {member})

    def migrate(self, member: str, replica: int) -> HazelcastCluster:
        """The master fills a vacant replica index with a live member (a joiner, or a replica shifted up
        from a larger index) by a copy migration from the owner: its data (for indexes within the backup
        count) and its vectors from the new index upward, dirty cleared."""
        owner = self.owner
        index = self.index_of(member)
        ok = (
            owner is not None
            and 1 <= replica < len(self.table)
            and self.table[replica] is None
            and member in self.alive
            and member != owner
            and (index == -1 or index > replica)
        )
        self._require(ok, "Migrate", member=member, replica=replica)
        assert owner is not None
        table = [None if m == member else m for m in self.table]
        table[replica] = member
        source = self.members[owner]
        data = dict(source.data) if replica <= self.config.backup_count else self.members[member].data
        versions = {ns: FragmentVersions.installed(f.versions, replica) for ns, f in source.versions.items()}
        return replace(self._with(member, data=data, versions=versions), table=tuple(table))

    def destroy(self, ns: str) -> HazelcastCluster:
        """A map is destroyed: every member drops its data at once (version tables keep the fragment
        until anti-entropy drops it)."""
        self._require(ns in self.config.maps and ns not in self.destroyed, "Destroy", ns=ns)
        members = {
            m: replace(s, data={x: d for x, d in s.data.items() if x != ns}) for m, s in self.members.items()
        }
        return replace(self, members=members, destroyed=self.destroyed | {ns})

    # --- steps -----------------------------------------------------------------------------------------

    def enabled(self, keys: frozenset[int], value: int) -> Iterator[Step]:
        """Every step possible now; a put writes `value` to one of `keys`. Faults (Drop, BackupFailure,
        Crash) and Join, Destroy are listed too: bounding them is the caller's business."""
        if self.owner is not None:
            for ns in sorted(self.config.namespaces - self.destroyed):
                for key in sorted(keys):
                    yield Step("Put", ns=ns, key=key, value=value)
        for msg in sorted(self.network, key=repr):
            if not self.deliverable(msg):
                if isinstance(msg, Backup):
                    yield Step("Drop", msg=msg)
                continue
            yield from self._receive_steps(msg)
        for m in self.config.members:
            if m == self.owner and not any(isinstance(x, AntiEntropy) for x in self.network):
                yield Step("AntiEntropy", member=m)
            for ns, r in sorted(self.members[m].syncs):
                yield Step("SyncTimeout", member=m, ns=ns, replica=r)
            for to, r, ns in sorted(self.members[m].serving):
                yield Step("SyncSend", member=m, to=to, replica=r, ns=ns)
            if m in self.alive and (m != self.owner or self.promoted_index(m) is not None):
                yield Step("Crash", member=m)
            if m not in self.alive:
                yield Step("Join", member=m)
            if self.owner is not None and m in self.alive and m != self.owner:
                index = self.index_of(m)
                for r in range(1, len(self.table)):
                    if self.table[r] is None and (index == -1 or index > r):
                        yield Step("Migrate", member=m, replica=r)
        for ns in sorted(self.config.maps - self.destroyed):
            yield Step("Destroy", ns=ns)

    def _receive_steps(self, msg: Message) -> Iterator[Step]:
        m = msg.to
        if isinstance(msg, Backup):
            yield Step("Backup", member=m, msg=msg)
            f = self.fragment(m, msg.ns)
            if self.index_of(m) == msg.replica and not self._stale(f, msg.versions, msg.replica):
                yield Step("BackupFailure", member=m, msg=msg)
            yield Step("Drop", msg=msg)
        elif isinstance(msg, AntiEntropy):
            for granted in self.request_grants(msg):
                yield Step("BackupAntiEntropy", member=m, msg=msg, granted=granted)
        elif isinstance(msg, SyncRequest):
            for granted in self.answer_grants(msg):
                yield Step("SyncRequest", member=m, msg=msg, granted=granted)
        elif isinstance(msg, SyncResponse):
            yield Step("SyncResponse", member=m, msg=msg)
        else:
            yield Step("SyncRetry", member=m, msg=msg)

    def apply(self, step: Step) -> HazelcastCluster:
        """Take `step` (see `enabled`); raises StepNotEnabled if it is not possible here."""
        take = _TAKE.get(step.name)
        if take is None:
            raise StepNotEnabled(f"unknown step {step.name!r}")
        try:
            return take(self, step)
        except KeyError as error:
            raise StepNotEnabled(f"{step.name}: unknown {error}") from error


T = TypeVar("T")


def _given(value: T | None) -> T:
    if value is None:
        raise StepNotEnabled("a parameter of the step is missing")
    return value


def _msg(step: Step) -> Message:
    if step.msg is None:
        raise StepNotEnabled(f"{step.name} needs a message")
    return step.msg


# Each step's method, called with the step's parameters.
_TAKE: dict[str, Callable[[HazelcastCluster, Step], HazelcastCluster]] = {
    "Put": lambda c, s: c.put(_given(s.ns), _given(s.key), _given(s.value)),
    "Backup": lambda c, s: c.backup(_given(s.member), _msg(s)),
    "BackupFailure": lambda c, s: c.backup_failure(_given(s.member), _msg(s)),
    "AntiEntropy": lambda c, s: c.anti_entropy(_given(s.member)),
    "BackupAntiEntropy": lambda c, s: c.backup_anti_entropy(_given(s.member), _msg(s), _given(s.granted)),
    "SyncRequest": lambda c, s: c.sync_request(_given(s.member), _msg(s), _given(s.granted)),
    "SyncSend": lambda c, s: c.sync_send(_given(s.member), _given(s.to), _given(s.replica), _given(s.ns)),
    "SyncResponse": lambda c, s: c.sync_response(_given(s.member), _msg(s)),
    "SyncRetry": lambda c, s: c.sync_retry(_given(s.member), _msg(s)),
    "SyncTimeout": lambda c, s: c.sync_timeout(_given(s.member), _given(s.ns), _given(s.replica)),
    "Drop": lambda c, s: c.drop(_msg(s)),
    "Crash": lambda c, s: c.crash(_given(s.member)),
    "Join": lambda c, s: c.join(_given(s.member)),
    "Migrate": lambda c, s: c.migrate(_given(s.member), _given(s.replica)),
    "Destroy": lambda c, s: c.destroy(_given(s.ns)),
}
