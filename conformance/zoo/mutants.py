"""Deliberately broken implementations, selected by name, to show that the checks catch real bugs.

impl/ stays correct; each mutant here subclasses an impl class and re-creates one known bug class.
`tidemark conform --mutant NAME` replays a spec against a mutant; the tests run the Hypothesis state
machines against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, TypeVar

from tidemark.conformance.errors import TidemarkError
from tidemark.impl.cluster import Cluster, Config, TxState
from tidemark.impl.counter import PartitionUpdateCounter
from tidemark.impl.pme import Copy, Event, PartState, PmeCluster
from tidemark.impl.wal import DataRecord, RollbackRecord

T = TypeVar("T")


class NoOutOfOrderTrackingCounter(PartitionUpdateCounter):
    """Update moves LWM to the end of the applied range, ignoring holes (no out-of-order tracking).

    The bug the seed warns about: a copy that applied a later transaction first reports an LWM that
    claims updates it never had, so rebalancing after its restart never restores them.
    """

    def update(self, start: int, delta: int) -> bool:
        if start < self.lwm:
            return False
        self._lwm = start + delta
        return True


COUNTER_MUTANTS: dict[str, type[PartitionUpdateCounter]] = {
    "no-out-of-order-tracking": NoOutOfOrderTrackingCounter,
}


class PrimaryRollbackFirst(Cluster):
    """The primary applies its rollback (update and rollback record) before its backups finished.

    Ignite rolls back the primary last; a primary that closes the range first, then fails, leaves a
    rolled-back range the new primary can hand out again.
    """

    def rollback(self, tx: str, node: str) -> Cluster:
        rolled = super().rollback(tx, node)
        rolled._rollback_on(node, rolled.nodes[node].txs[tx].writes)
        rolled._set_state(node, tx, TxState.ROLLED_BACK)
        return rolled


class CommitWithoutWal(Cluster):
    """Commit writes the entries and updates the counter but logs no data records.

    The counter then claims updates that a restart cannot rebuild: LWM is no longer durable.
    """

    def _commit_on(self, node: str, tx: str, writes: frozenset[tuple[int, int]]) -> None:
        disk = self.nodes[node].disk
        super()._commit_on(node, tx, writes)
        self.nodes[node].disk = disk


CLUSTER_MUTANTS: dict[str, type[Cluster]] = {
    "primary-rollback-first": PrimaryRollbackFirst,
    "commit-without-wal": CommitWithoutWal,
}


# --- the whole protocol (impl/pme.py): the bug zoo's implementation side ---------------------------------


class PmeNoOutOfOrderTracking(PmeCluster):
    """1. Every copy counts with NoOutOfOrderTrackingCounter: LWM jumps over holes."""

    def _commit_on(self, node: str, tx: str, writes: frozenset[tuple[int, int]]) -> None:
        counters = self.nodes[node].counters
        for part, c in counters.items():
            counters[part] = NoOutOfOrderTrackingCounter(c.lwm, c.hwm, c.items, c.first)
        super()._commit_on(node, tx, writes)


class StaleHwmAfterSwitch(PmeCluster):
    """2. The full message's update(max LWM) leaves HWM alone: a new primary keeps its stale HWM."""

    def full_message(self, node: str) -> PmeCluster:
        after = super().full_message(node)
        for name, n in after.nodes.items():
            before = self.nodes[name].counters
            for part, c in n.counters.items():
                if part in before:
                    n.counters[part] = PartitionUpdateCounter(c.lwm, before[part].hwm, c.items, c.first)
        return after


class FinalizeBeforeRelease(PmeCluster):
    """3. The exchange finalizes without waiting for the old version's transactions to be released."""

    def _released(self) -> bool:
        return True


class AnyOwningSupplies(PmeCluster):
    """4. The supplier is the oldest OWNING copy, whatever its counter."""

    def _suppliers(self, part: int) -> list[str]:
        owning = self._owning_copies(part)
        return [n for n in self.config.servers if n in owning]


class PmePrimaryRollbackFirst(PrimaryRollbackFirst, PmeCluster):
    """5. The primary rolls back (update and rollback record) before its backups finished."""


class MapToAnotherOwner(PmeCluster):
    """6. Non-atomic primary switch: the near node maps transactions with another owner's view of the
    primary on the same version (the last owner)."""

    def _primary_for(self, tx: str) -> str:
        return self.tx_owners(tx)[-1]


class RestoreSequential(PmeCluster):
    """7. Gaps are not persisted: a restarted OWNING copy believes it is sequential up to its highest
    applied counter."""

    def restart(self, node: str) -> PmeCluster:
        restarted = super().restart(node)
        counters = restarted.nodes[node].counters
        for part, copy in self.states[node].items():
            if copy.state is not PartState.MOVING:
                counters[part] = PartitionUpdateCounter(counters[part].highest_applied)
        return restarted


class PmeCommitWithoutWal(CommitWithoutWal, PmeCluster):
    """8. LWM moves before the update is durable: the commit's data records never reach the WAL."""


class HistoricalIgnoringWal(PmeCluster):
    """9. Historical rebalance although the supplier's WAL no longer reaches back to the copy's counter."""

    def _wal_covers(self, supplier: str, part: int, init: int) -> bool:
        return True


class NeverFinalizes(PmeCluster):
    """10. The exchange after a server left demotes nothing, as it should, but also skips finalize()."""

    def _finalizes(self) -> bool:
        return False


class FullRebalanceAfterKeyZero(PmeCluster):
    """11. A full rebalance starts after key 0, not at it: the smallest key is never supplied."""

    FULL_FIRST = 1


class FinalizesOnAnyLeft(PmeCluster):
    """12. A server left merged into a join exchange finalizes every copy, the rejoining one's holes too."""

    def _finalizes(self) -> bool:
        return Event.LEFT in self.pending


class ReassignedAtLwm(PmeCluster):
    """13. A RENTING copy assigned again is rebalanced from its own (possibly inflated) LWM."""

    def _reassigned(self, node: str, part: int) -> Copy:
        return Copy(PartState.MOVING, self.singles[node][part].lwm)


class EnoughEntriesAtThreshold(PmeCluster):
    """14. Historical rebalance for a partition with exactly the threshold's entries."""

    def _enough_entries(self, size: int) -> bool:
        return size >= self.config.wal_rebalance_threshold


class DemoteWithoutActivation(PmeCluster):
    """15. The activation after a total outage demotes no lagging OWNING copy."""

    def _demotes(self) -> bool:
        return bool(self.pending & {Event.JOINED, Event.BASELINE})


# The bug zoo's implementation mutants, by the zoo entry's name (conformance/zoo/entries.py).
PME_MUTANTS: dict[str, type[PmeCluster]] = {
    "no-out-of-order-tracking": PmeNoOutOfOrderTracking,
    "stale-hwm-after-switch": StaleHwmAfterSwitch,
    "finalize-before-release": FinalizeBeforeRelease,
    "any-owning-supplies": AnyOwningSupplies,
    "primary-rollback-first": PmePrimaryRollbackFirst,
    "non-atomic-primary-switch": MapToAnotherOwner,
    "gaps-not-persisted": RestoreSequential,
    "commit-without-wal": PmeCommitWithoutWal,
    "historical-without-wal": HistoricalIgnoringWal,
    "node-left-without-finalize": NeverFinalizes,
    "full-rebalance-skips-key-0": FullRebalanceAfterKeyZero,
    "merged-left-finalizes-joiner": FinalizesOnAnyLeft,
    "renting-keeps-counter": ReassignedAtLwm,
    "wal-threshold-inclusive": EnoughEntriesAtThreshold,
    "activation-without-demotion": DemoteWithoutActivation,
}


def implementation(
    spec: str, registry: Mapping[str, type[T]], correct: type[T], mutant: str | None
) -> type[T]:
    """The class a mapping replays against: the correct one, or the mutant of that name."""
    if mutant is None:
        return correct
    if mutant not in registry:
        raise TidemarkError(
            f"unknown mutant {mutant!r} for {spec}", source="--mutant", expected=f"one of {sorted(registry)}"
        )
    return registry[mutant]


class CounterClassCluster(Cluster):
    """A cluster whose partition counters are all of `counter_class` (a Cluster takes no counter class).

    Cluster builds `PartitionUpdateCounter`s itself at three points: the initial state, a crash (fresh
    memory) and a restart (Disk.restore); every other step copies or mutates the counters it has, and
    copies keep their class. Subclasses swap the class at those three points.
    """

    counter_class: ClassVar[type[PartitionUpdateCounter]] = PartitionUpdateCounter

    @classmethod
    def initial(cls, config: Config) -> Cluster:
        cluster = super().initial(config)
        for node in cluster.nodes.values():
            node.counters = {part: cls.counter_class() for part in node.counters}
        return cluster

    def node_fail(self, node: str) -> Cluster:
        failed = super().node_fail(node)
        failed.nodes[node].counters = {part: self.counter_class() for part in failed.nodes[node].counters}
        return failed

    def restart(self, node: str) -> Cluster:
        restarted = super().restart(node)
        restarted.nodes[node].counters = self._restored_counters(node)
        return restarted

    def _restored_counters(self, node: str) -> dict[int, PartitionUpdateCounter]:
        """Disk.restore's counters, replayed with `counter_class` (Disk.restore takes no counter class):
        the checkpoint's meta, then the records after its marker, then init as on partition start."""
        disk = self.nodes[node].disk
        parts = self.config.owned(node)
        cls = self.counter_class
        if disk.meta is None:
            counters = {part: cls() for part in parts}
        else:
            counters = {part: cls.from_bytes(*disk.meta[part]) for part in parts}
        for record in disk.wal[disk.replay_from :]:
            if isinstance(record, DataRecord):
                counters[self.config.partition(record.key)].update(record.cntr - 1, 1)
            elif isinstance(record, RollbackRecord):
                counters[record.part].update(record.start, record.delta)
        return {part: cls.from_bytes(c.lwm, c.to_bytes()) for part, c in counters.items()}


class NoOutOfOrderTrackingCluster(CounterClassCluster):
    """Every copy counts with NoOutOfOrderTrackingCounter: the seed's "out of order updates are not
    tracked" cluster, in which a copy that applied a later transaction first claims the earlier one."""

    counter_class = NoOutOfOrderTrackingCounter


# Clusters running a counter mutant, by the counter mutant's name (scenario files' "counter").
CLUSTER_COUNTERS: dict[str, type[Cluster]] = {
    "no-out-of-order-tracking": NoOutOfOrderTrackingCluster,
}
