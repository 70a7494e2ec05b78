"""A server's disk: the write-ahead log (WAL) and the pages of its last checkpoint, and restore from them.

The WAL holds data records (one per committed entry, with its update counter), rollback records (a
counter range closed without data: a rolled-back transaction or a gap finalized at an exchange) and
checkpoint markers. A checkpoint persists the pages: per partition the counter's LWM and gaps (Ignite's
partition meta, ``PartitionUpdateCounter.to_bytes``) and the data. Restore after a crash, as Ignite's
recovery does: start from the last checkpoint's pages, replay the records after its marker (a data record
with counter c applies update(c-1, 1), a rollback record update(start, delta)), then initialize each
counter like a partition read from disk (HWM = highest applied, the next exchange is the first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from impl.counter import PartitionUpdateCounter


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


@dataclass(frozen=True, slots=True)
class Pages:
    """What a checkpoint persists: per partition the counter's (lwm, gap bytes), and the data."""

    counters: Mapping[int, tuple[int, bytes | None]]
    data: Mapping[int, Entry]


@dataclass(frozen=True, slots=True)
class Disk:
    """What survives a crash: the WAL and the pages of the last checkpoint (None before the first)."""

    wal: tuple[WalRecord, ...] = ()
    pages: Pages | None = None
    # Index in `wal` just after the last checkpoint marker: where recovery starts replaying.
    replay_from: int = field(default=0)

    def log(self, records: Iterable[WalRecord]) -> Disk:
        """The disk with `records` appended to the WAL."""
        return Disk(self.wal + tuple(records), self.pages, self.replay_from)

    def checkpoint(self, counters: Mapping[int, PartitionUpdateCounter], data: Mapping[int, Entry]) -> Disk:
        """Persist the pages (counters' LWM and gaps, data) and write the checkpoint marker."""
        pages = Pages({part: (c.lwm, c.to_bytes()) for part, c in counters.items()}, dict(data))
        wal = (*self.wal, CheckpointRecord())
        return Disk(wal, pages, len(wal))

    def restore(
        self, parts: Iterable[int], partition_of: Callable[[int], int]
    ) -> tuple[dict[int, PartitionUpdateCounter], dict[int, Entry]]:
        """Counters and data of partitions `parts` rebuilt from the last checkpoint and the WAL after its
        marker (records of other partitions - evicted copies - are skipped)."""
        pages = self.pages or Pages({}, {})
        counters = {
            part: PartitionUpdateCounter.from_bytes(*pages.counters[part])
            if part in pages.counters
            else PartitionUpdateCounter()
            for part in parts
        }
        data = {k: e for k, e in pages.data.items() if partition_of(k) in counters}
        for record in self.wal[self.replay_from :]:
            if isinstance(record, DataRecord) and partition_of(record.key) in counters:
                counters[partition_of(record.key)].update(record.cntr - 1, 1)
                if record.key not in data or data[record.key].cntr < record.cntr:
                    data[record.key] = Entry(record.tx, record.cntr)
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
