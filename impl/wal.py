"""A server's disk: the write-ahead log (WAL) and the pages of its last checkpoint, and restore from them.

The WAL holds data records (one per committed entry, with its update counter), rollback records (a
counter range closed without data: a rolled-back transaction or a gap finalized at an exchange) and
checkpoint markers. A checkpoint persists the counters' partition meta: per partition the LWM and gaps
(``PartitionUpdateCounter.to_bytes``) - this is what an absolute update at an exchange leaves, which no
WAL record holds. Restore after a crash, as Ignite's recovery does: counters from the last checkpoint's
meta, then the records after its marker replayed (a data record with counter c applies update(c-1, 1), a
rollback record update(start, delta)), then each counter initialized like a partition read from disk (HWM
= highest applied, the next exchange is the first). The WAL keeps every record (truncating its archive
only limits historical rebalancing, see impl/pme.py), so the data is rebuilt from its data records: the
newest entry per key, which is what the data pages of a checkpoint plus the replay give.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from tidemark.impl.counter import PartitionUpdateCounter


@dataclass(frozen=True, order=True, slots=True)
class Entry:
    """A cache entry: the transaction that wrote it (the model's value) and the update's counter."""

    tx: str
    cntr: int


@dataclass(frozen=True, order=True, slots=True)
class DataRecord:
    """A committed entry: key, value (the writing transaction) and update counter (Ignite's DataRecord)."""

    key: int
    tx: str
    cntr: int


@dataclass(frozen=True, order=True, slots=True)
class RollbackRecord:
    """Counters start+1 .. start+delta of a partition closed without data (Ignite's RollbackRecord)."""

    part: int
    start: int
    delta: int


@dataclass(frozen=True, order=True, slots=True)
class RebalancedRecord:
    """Counters 1..lwm of a partition are durable here: a rebalanced copy became OWNING (Ignite
    checkpoints a rebalanced partition before owning it; the record stands for that checkpoint)."""

    part: int
    lwm: int


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """The marker of a checkpoint: recovery replays only the records after the last one."""


WalRecord: TypeAlias = DataRecord | RollbackRecord | RebalancedRecord | CheckpointRecord
LoggedRecord: TypeAlias = DataRecord | RollbackRecord | RebalancedRecord


# What a checkpoint persists of the counters: per partition (lwm, gap bytes), Ignite's partition meta.
Meta: TypeAlias = Mapping[int, tuple[int, bytes | None]]


def counter_meta(counters: Mapping[int, PartitionUpdateCounter]) -> dict[int, tuple[int, bytes | None]]:
    """The partition meta a checkpoint of these counters writes."""
    return {part: (c.lwm, c.to_bytes()) for part, c in counters.items()}


@dataclass(frozen=True, slots=True)
class Disk:
    """What survives a crash: the WAL and the counters' meta of the last checkpoint (None before the
    first)."""

    wal: tuple[WalRecord, ...] = ()
    meta: Meta | None = None
    # Index in `wal` just after the last checkpoint marker: where recovery starts replaying counters.
    replay_from: int = field(default=0)

    def log(self, records: Iterable[WalRecord]) -> Disk:
        """The disk with `records` appended to the WAL."""
        return Disk(self.wal + tuple(records), self.meta, self.replay_from)

    def checkpoint(self, counters: Mapping[int, PartitionUpdateCounter]) -> Disk:
        """Persist the counters' meta (LWM and gaps) and write the checkpoint marker."""
        wal = (*self.wal, CheckpointRecord())
        return Disk(wal, counter_meta(counters), len(wal))

    def restore(
        self, parts: Iterable[int], partition_of: Callable[[int], int]
    ) -> tuple[dict[int, PartitionUpdateCounter], dict[int, Entry]]:
        """Counters of partitions `parts` rebuilt from the last checkpoint's meta and the WAL after its
        marker, their data from every data record (records of other partitions - evicted copies - are
        skipped)."""
        meta = self.meta or {}
        counters = {
            part: PartitionUpdateCounter.from_bytes(*meta[part]) if part in meta else PartitionUpdateCounter()
            for part in parts
        }
        data: dict[int, Entry] = {}
        for rec in self.records():
            if isinstance(rec, DataRecord) and partition_of(rec.key) in counters:
                newest = data.get(rec.key)
                data[rec.key] = (
                    Entry(rec.tx, rec.cntr) if newest is None or newest.cntr < rec.cntr else newest
                )
        for record in self.wal[self.replay_from :]:
            if isinstance(record, DataRecord) and partition_of(record.key) in counters:
                counters[partition_of(record.key)].update(record.cntr - 1, 1)
            elif isinstance(record, RollbackRecord) and record.part in counters:
                counters[record.part].update(record.start, record.delta)
            elif isinstance(record, RebalancedRecord) and record.part in counters:
                _cover(counters[record.part], record.lwm)
        # As on partition init from disk: HWM = highest applied; the next exchange is the first.
        restored = {
            part: PartitionUpdateCounter.from_bytes(c.lwm, c.to_bytes()) for part, c in counters.items()
        }
        return restored, data

    def records(self) -> list[LoggedRecord]:
        """The data, rollback and rebalanced records, in WAL order (checkpoint markers left out)."""
        return [r for r in self.wal if not isinstance(r, CheckpointRecord)]


def _cover(counter: PartitionUpdateCounter, upto: int) -> None:
    """Apply the counters up to `upto` the counter lacks (a rebalanced record)."""
    covered = set(range(1, counter.lwm + 1))
    for start, delta in counter.items:
        covered.update(range(start + 1, start + delta + 1))
    missing = [c for c in range(counter.lwm + 1, upto + 1) if c not in covered]
    for c in missing:
        counter.update(c - 1, 1)
