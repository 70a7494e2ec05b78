"""Deliberately broken NCache clusters (impl/ncache.py), one known bug class each: the bug zoo's
implementation side for spec/NCachePartitionReplica.tla (conformance/zoo/entries.py), selected by the entry's
name,
each breaking the rule spec/NCacheZoo.tla replaces.
"""

from __future__ import annotations

from tidemark.impl.ncache import NCacheCluster


class LogNotReplayed(NCacheCluster):
    """1. The operations logged during a bucket's transfer are not replayed before the switch."""

    def _replayed(self, bucket: int) -> frozenset[int]:
        return frozenset()


class MapNotConsulted(NCacheCluster):
    """2. A bucket in transfer is served by its temporary owner, not the permanent owner in the map."""

    def _route(self, bucket: int) -> str:
        return self.orphan[bucket] or self.temp[bucket] or self.owner[bucket]


class ReplicaOnItself(NCacheCluster):
    """3. The last member's replica stays on itself instead of going to the coordinator."""

    def _replica_holder(self, node: str, members: tuple[str, ...]) -> str | None:
        if len(members) > 1 and node == members[-1]:
            return node
        return super()._replica_holder(node, members)


class LeaveKeepsTransfers(NCacheCluster):
    """4. A leave does not revert the buckets in transfer to the leaver."""

    def _reverts(self, bucket: int, leavers: frozenset[str]) -> bool:
        return False


class RejoinWithoutPull(NCacheCluster):
    """5. A member back from maintenance does not pull its partition from its replica."""

    def _pulled(self, node: str) -> dict[int, int]:
        return {}


# The bug zoo's implementation mutants, by the zoo entry's name.
NCACHE_MUTANTS: dict[str, type[NCacheCluster]] = {
    "log-not-replayed": LogNotReplayed,
    "map-not-consulted-in-transfer": MapNotConsulted,
    "replica-on-itself": ReplicaOnItself,
    "leave-keeps-transfers": LeaveKeepsTransfers,
    "rejoin-without-pull": RejoinWithoutPull,
}
