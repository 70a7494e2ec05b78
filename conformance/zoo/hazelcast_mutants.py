"""Deliberately broken Hazelcast clusters (impl/hazelcast.py), one known bug class each: the bug zoo's
implementation side for spec/HazelcastAntiEntropy.tla (conformance/zoo/entries.py), selected by the entry's
name,
each breaking the rule spec/HazelcastZoo.tla replaces.
"""

from __future__ import annotations

from collections.abc import Mapping

from tidemark.impl.hazelcast import FragmentVersions, HazelcastCluster


class StaleBackupApplied(HazelcastCluster):
    """1. hazelcast#7759: a backup runs without the stale check."""

    def _stale(self, fragment: FragmentVersions, versions: tuple[int, ...], replica: int) -> bool:
        return False


class JumpKeepsVersions(HazelcastCluster):
    """2. hazelcast#9205: a jump is applied and marked dirty, but the versions stay behind."""

    def _update(
        self, fragment: FragmentVersions, versions: tuple[int, ...], replica: int
    ) -> FragmentVersions:
        if versions[replica - 1] - fragment.slot(replica) > 1:
            return FragmentVersions(fragment.versions, True)
        return super()._update(fragment, versions, replica)


class JumpNotDirty(HazelcastCluster):
    """3. A jump is applied without marking the fragment dirty."""

    def _update(
        self, fragment: FragmentVersions, versions: tuple[int, ...], replica: int
    ) -> FragmentVersions:
        updated = super()._update(fragment, versions, replica)
        return FragmentVersions(updated.versions, fragment.dirty)


class FailedBackupAdvances(HazelcastCluster):
    """4. hazelcast#4174: a failed backup sets the versions as if it had been applied."""

    def _failed(
        self, fragment: FragmentVersions, versions: tuple[int, ...], replica: int
    ) -> FragmentVersions:
        updated = super()._update(fragment, versions, replica)
        return FragmentVersions(updated.versions, fragment.dirty)


class PromotionWithoutShift(HazelcastCluster):
    """5. hazelcast#4724: the promoted owner's vectors are not shifted."""

    def _shifted(self, fragment: FragmentVersions, index: int) -> FragmentVersions:
        return fragment


class PermitBackPerNamespace(HazelcastCluster):
    """6. hazelcast#16837: clearing requests gives a permit back per namespace named, registered or not."""

    def _permits_back(self, cleared: int, named: int) -> int:
        return named


class SilentOwnerWithoutFragments(HazelcastCluster):
    """7. hazelcast#10775: an owner with no fragment left sends no anti-entropy operation."""

    def _sends(self, kept: Mapping[str, FragmentVersions]) -> bool:
        return bool(kept)


class IncrementsCappedAtMembers(HazelcastCluster):
    """8. The owner increments only as many slots as the cluster has backups (members - 1)."""

    def _increments(self) -> int:
        return min(self.config.backup_count, len(self.alive) - 1)


# The bug zoo's implementation mutants, by the zoo entry's name.
HAZELCAST_MUTANTS: dict[str, type[HazelcastCluster]] = {
    "stale-backup-applied": StaleBackupApplied,
    "jump-keeps-versions": JumpKeepsVersions,
    "jump-not-dirty": JumpNotDirty,
    "failed-backup-advances": FailedBackupAdvances,
    "promotion-without-shift": PromotionWithoutShift,
    "permit-back-twice": PermitBackPerNamespace,
    "silent-owner-without-fragments": SilentOwnerWithoutFragments,
    "increments-capped-at-members": IncrementsCappedAtMembers,
}
