"""What each protocol's scenarios may say: its steps, the counters it runs, the copy states it has, the
expectations it can observe, and the rules a scenario must follow for it.

The format (format.py) holds every protocol's steps and expectations; a protocol here takes a part of
them. A new protocol adds its steps and expectations to the format, its rules here and its adapter in
adapters/. The checks that hold for every protocol are in load.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tidemark.conformance.scenarios.expectations import NodeExpectation
from tidemark.conformance.scenarios.format import ScenarioFile, TxStartStep
from tidemark.conformance.scenarios.vocabulary import TRACKING
from tidemark.conformance.zoo.mutants import CLUSTER_COUNTERS
from tidemark.impl.affinity import key_partition
from tidemark.impl.cluster import STEPS
from tidemark.impl.pme import PME_STEPS

if TYPE_CHECKING:
    from tidemark.conformance.scenarios.load import ScenarioChecker

# Expectations and options only some protocols have, and what a protocol without one lacks.
FEATURES: dict[str, str] = {
    "wal_rebalance_threshold": "does not rebalance",
    "batch_size": "does not rebalance",
    "init": "has no MOVING copies",
    "history": "does not truncate the WAL archive",
    "rebalanced": "does not rebalance",
    "pending": "has an atomic Exchange: nothing is ever pending",
    "coordinator": "has an atomic Exchange, run by no coordinator",
    "idle_verify": "has no idle_verify",
    "maps": "has no maps (namespaces are Hazelcast's)",
    "max_parallel": "has no replica sync permits",
    "slots": "has no version vectors",
    "replica": "has no replica indexes (see partitions)",
    "versions": "has no version vectors (see counters)",
    "dirty": "has no version vectors (see counters)",
    "entries": "has no namespaces (see data)",
    "permits": "has no replica sync permits",
    "exchange": "has an atomic Exchange that reports nothing",
    "fixes": "has no proposed fixes",
    "mutant": "runs no mutant of impl/pme.py (see counter)",
    "sync": "has no replication mode to choose (NCache's)",
    "replica_of": "has no replica chain (NCache's)",
}
# What a Hazelcast scenario observes instead of Ignite's counters, copies and transactions.
HAZELCAST_FEATURES = frozenset(
    {"maps", "max_parallel", "slots", "replica", "versions", "dirty", "entries", "permits"}
)
# What an NCache scenario observes: each member's active and replica stores (as the namespaces "active" and
# "replica" of entries), whose partition it keeps as replica, the coordinator.
NCACHE_FEATURES = frozenset({"sync", "replica_of", "entries", "coordinator"})
NCACHE_STORES = ("active", "replica")
IGNITE_FEATURES = frozenset(FEATURES) - HAZELCAST_FEATURES - {"sync", "replica_of"}


class ScenarioProtocol(Protocol):
    """What the loader asks of a protocol (IgniteProtocol, HazelcastProtocol)."""

    @property
    def name(self) -> str: ...

    @property
    def steps(self) -> Mapping[str, tuple[str, ...]]: ...

    @property
    def counters(self) -> tuple[str, ...]: ...

    @property
    def features(self) -> frozenset[str]: ...

    def check_cluster(self, checker: ScenarioChecker) -> None: ...

    def check_node(
        self, checker: ScenarioChecker, at: str, node: str, expectation: NodeExpectation
    ) -> None: ...


@dataclass(frozen=True)
class IgniteProtocol:
    """One of Ignite's protocols as impl/ models it: one client, owner lists, one primary per
    transaction (a transaction's keys map to partitions that share one owner list)."""

    name: str
    steps: Mapping[str, tuple[str, ...]]
    counters: tuple[str, ...]
    partition_states: tuple[str, ...]
    features: frozenset[str]
    # True: copies come and go (a MOVING copy on a new owner, an evicted one), so an expectation may name
    # any partition; False: a server holds its initial copies only.
    copies_move: bool
    # True: every partition is owned by the first backups+1 servers (impl.pme computes the affinity over
    # the baseline in the listed, rendezvous, order; another initial list would move at the first exchange).
    affinity_fixed: bool

    def check_cluster(self, checker: ScenarioChecker) -> None:
        cluster = checker.scenario.cluster
        affinity = checker.servers[: cluster.backups + 1]
        for part, owners in (cluster.owners or {}).items():
            if self.affinity_fixed and owners != affinity:
                raise checker.fail(
                    f"cluster.owners[{part}]",
                    f"owners {owners}: with protocol {self.name!r} every partition is owned by the first "
                    "backups+1 servers",
                    f"{affinity}, or reorder cluster.servers",
                )
        owners_of = owner_lists(checker.scenario)
        for tx, index in checker.txs.items():
            keys = checker.scenario.steps[index]
            assert isinstance(keys, TxStartStep)
            lists = {owners_of[key_partition(k, cluster.partitions)] for k in keys.keys}
            if len(lists) > 1:
                raise checker.fail(
                    f"steps[{index}].keys",
                    f"the keys of {tx} map to partitions with the owner lists {sorted(lists)}",
                    "keys whose partitions share one owner list: the model has one primary per transaction",
                )

    def check_node(self, checker: ScenarioChecker, at: str, node: str, expectation: NodeExpectation) -> None:
        """The copies a server's expectation names, and their states."""
        for part, state in (expectation.partitions or {}).items():
            if state not in self.partition_states:
                raise checker.fail(
                    f"{at}.partitions[{part}]",
                    f"{state} is no copy state of protocol {self.name!r}",
                    f"one of {self.partition_states}",
                )
        owned = [p for p, owners in owner_lists(checker.scenario).items() if node in owners]
        for field in ("counters", "partitions", "init", "history", "rebalanced"):
            for part in getattr(expectation, field) or {}:
                if not self.copies_move and part not in owned:
                    raise checker.fail(
                        f"{at}.{field}[{part}]",
                        f"{node} holds no copy of partition {part}",
                        f"one of {owned}",
                    )
                if part >= checker.scenario.cluster.partitions:
                    raise checker.fail(f"{at}.{field}[{part}]", f"no partition {part}", checker.partitions())


def owner_lists(scenario: ScenarioFile) -> dict[int, tuple[str, ...]]:
    """Each partition's initial owner list, primary first (default: the first backups+1 servers)."""
    cluster = scenario.cluster
    default = tuple(cluster.servers[: cluster.backups + 1])
    return {p: tuple(cluster.owners[p]) if cluster.owners else default for p in range(cluster.partitions)}


# Hazelcast's steps (impl/hazelcast.py) and the parameters each needs ("granted" is optional).
HAZELCAST_STEPS: dict[str, tuple[str, ...]] = {
    "Put": ("ns", "key"),
    "Backup": ("node", "ns", "put"),
    "BackupFailure": ("node", "ns", "put"),
    "Drop": ("node", "ns", "put"),
    "AntiEntropy": ("node",),
    "BackupAntiEntropy": ("node",),
    "SyncRequest": ("node", "peer"),
    "SyncSend": ("node", "peer", "ns"),
    "SyncResponse": ("node", "ns"),
    "SyncRetry": ("node",),
    "SyncTimeout": ("node", "ns", "replica"),
    "Crash": ("node",),
    "Join": ("node",),
    "Migrate": ("node", "replica"),
    "Destroy": ("ns",),
}
_HAZELCAST_PARAMS = ("node", "peer", "ns", "key", "put", "replica", "granted")
# The Ignite-only parts of a server's expectation.
_IGNITE_NODE_FIELDS = ("counters", "data", "partitions", "init", "history", "rebalanced", "txs")


def check_params(
    checker: ScenarioChecker,
    steps: Mapping[str, tuple[str, ...]],
    params: tuple[str, ...],
    optional: Mapping[str, str],
) -> None:
    """Every step gives exactly the parameters its protocol's step needs (and the one optional to it)."""
    for index, step in enumerate(checker.scenario.steps):
        needed = steps[step.step]
        given = [p for p in params if getattr(step, p, None) is not None]
        missing = [p for p in needed if p not in given]
        extra = [p for p in given if p not in needed and optional.get(step.step) != p]
        if missing or extra:
            wrong = missing[0] if missing else extra[0]
            also = f" (and optionally {optional[step.step]})" if step.step in optional else ""
            raise checker.fail(
                f"steps[{index}].{wrong}",
                f"{step.step} {'needs' if missing else 'takes no'} {wrong}",
                f"{step.step} with {', '.join(needed)}{also}",
            )


def namespaces(scenario: ScenarioFile) -> list[str]:
    """A Hazelcast scenario's namespaces: its maps and the non-fragmented one."""
    return [*(scenario.cluster.maps or ["map1"]), "internal"]


def slots(scenario: ScenarioFile) -> int:
    """Versions per vector: as given, else the servers' backups (servers - 1, at most 6, at least 1)."""
    return scenario.cluster.slots or max(1, min(6, len(scenario.cluster.servers) - 1))


@dataclass(frozen=True)
class HazelcastProtocol:
    """Hazelcast's replica versions and anti-entropy as impl/hazelcast.py models them: one partition, its
    members in the partition table in the servers' order, the client only issuing puts."""

    name: str
    steps: Mapping[str, tuple[str, ...]]
    counters: tuple[str, ...]
    features: frozenset[str]

    def check_cluster(self, checker: ScenarioChecker) -> None:
        scenario = checker.scenario
        cluster = scenario.cluster
        if cluster.partitions != 1 or cluster.owners is not None or cluster.initial_data:
            raise checker.fail(
                "cluster",
                "protocol 'hazelcast' models one partition, owned in the servers' order, empty",
                "partitions 1, no owners, no initial_data",
            )
        if not 1 <= cluster.backups <= slots(scenario):
            raise checker.fail(
                "cluster.backups", f"{cluster.backups} backups", f"1..{slots(scenario)} (the vector's slots)"
            )
        if "internal" in (cluster.maps or []) or len(set(cluster.maps or [])) != len(cluster.maps or []):
            raise checker.fail("cluster.maps", f"maps {cluster.maps}", "distinct names other than internal")
        check_params(checker, self.steps, _HAZELCAST_PARAMS, {s: "granted" for s in _GRANTING})
        for index, step in enumerate(scenario.steps):
            for ns in [getattr(step, "ns", None), *(getattr(step, "granted", None) or [])]:
                if ns is not None and ns not in namespaces(scenario):
                    raise checker.fail(
                        f"steps[{index}]", f"unknown namespace {ns!r}", f"one of {namespaces(scenario)}"
                    )

    def check_node(self, checker: ScenarioChecker, at: str, node: str, expectation: NodeExpectation) -> None:
        for field in _IGNITE_NODE_FIELDS:
            if getattr(expectation, field) is not None:
                raise checker.fail(
                    f"{at}.{field}",
                    f"protocol 'hazelcast' has no {field}",
                    "state, replica, versions, dirty, entries, permits",
                )
        known = namespaces(checker.scenario)
        for field in ("versions", "dirty", "entries"):
            for ns, value in (getattr(expectation, field) or {}).items():
                if ns not in known:
                    raise checker.fail(f"{at}.{field}.{ns}", f"unknown namespace {ns!r}", f"one of {known}")
                if field == "versions" and value and len(value) != slots(checker.scenario):
                    raise checker.fail(
                        f"{at}.versions.{ns}",
                        f"{len(value)} versions",
                        f"{slots(checker.scenario)} (the slots) or []",
                    )


_GRANTING = ("BackupAntiEntropy", "SyncRequest")

# NCache's steps (impl/ncache.py) and the parameters each needs.
NCACHE_STEPS: dict[str, tuple[str, ...]] = {
    "Join": ("node",),
    "Write": ("key",),
    "ReplicationFailure": ("key",),
    "Replicate": ("node",),
    "Leave": ("node", "graceful"),
    "StartTransfer": ("bucket",),
    "EndTransfer": ("bucket",),
    "PullOrphan": ("bucket",),
    "StopForMaintenance": ("node",),
    "MaintenanceRejoin": ("node",),
    "MaintenanceTimeout": ("node",),
    "MaintenanceFailure": ("node",),
    "Split": ("nodes",),
    "LoserWrite": ("key",),
    "Merge": (),
}
_NCACHE_PARAMS = ("node", "nodes", "key", "bucket", "graceful")


@dataclass(frozen=True)
class NCacheProtocol:
    """NCache's partition-replica topology as impl/ncache.py models it: the first server starts alone, the
    others join in the servers' order; the partitions are the buckets; the client only writes."""

    name: str
    steps: Mapping[str, tuple[str, ...]]
    counters: tuple[str, ...]
    features: frozenset[str]

    def check_cluster(self, checker: ScenarioChecker) -> None:
        cluster = checker.scenario.cluster
        if cluster.backups != 0 or cluster.owners is not None or cluster.initial_data:
            raise checker.fail(
                "cluster",
                "protocol 'ncache' places one replica per member itself and starts empty",
                "backups 0, no owners, no initial_data",
            )
        check_params(checker, self.steps, _NCACHE_PARAMS, {})

    def check_node(self, checker: ScenarioChecker, at: str, node: str, expectation: NodeExpectation) -> None:
        for field in _IGNITE_NODE_FIELDS:
            if getattr(expectation, field) is not None:
                raise checker.fail(
                    f"{at}.{field}", f"protocol 'ncache' has no {field}", "state, entries, replica_of"
                )
        for store in expectation.entries or {}:
            if store not in NCACHE_STORES:
                raise checker.fail(
                    f"{at}.entries.{store}", f"unknown store {store!r}", f"one of {NCACHE_STORES}"
                )


PROTOCOLS: dict[str, ScenarioProtocol] = {
    "2pc": IgniteProtocol(
        name="2pc",
        steps=STEPS,
        counters=(TRACKING, *CLUSTER_COUNTERS),
        partition_states=("OWNING", "MOVING", "OFFLINE"),
        features=frozenset(),
        copies_move=False,
        affinity_fixed=False,
    ),
    "pme": IgniteProtocol(
        name="pme",
        steps=PME_STEPS,
        counters=(TRACKING,),
        partition_states=("OWNING", "MOVING", "RENTING", "EVICTED", "LOST", "OFFLINE"),
        features=IGNITE_FEATURES,
        copies_move=True,
        affinity_fixed=True,
    ),
    "hazelcast": HazelcastProtocol(
        name="hazelcast", steps=HAZELCAST_STEPS, counters=(TRACKING,), features=HAZELCAST_FEATURES
    ),
    "ncache": NCacheProtocol(
        name="ncache", steps=NCACHE_STEPS, counters=(TRACKING,), features=NCACHE_FEATURES
    ),
}
