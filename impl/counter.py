"""Apache Ignite's partition update counter: persistent (gap tracking) and in-memory (volatile) modes.

`PartitionUpdateCounter` follows Ignite's ``PartitionUpdateCounterTrackingImpl``: LWM (every counter up to
it is applied), HWM (the reservation counter, advanced by the primary at tx prepare) and the ranges that
were applied out of order. `VolatileUpdateCounter` follows ``PartitionUpdateCounterVolatileImpl``: one
counter, no gaps. Pure and single-threaded; the caller serializes access as Ignite's locks do.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Self

__all__ = [
    "GAPS_FORMAT_VERSION",
    "MAX_MISSED_UPDATES",
    "CounterInconsistencyError",
    "CounterState",
    "PartitionUpdateCounter",
    "TooManyGapsError",
    "VolatileUpdateCounter",
]

#: Ignite's ``MAX_MISSED_UPDATES``, the default gap limit: queueing one more out-of-order range is a critical
#: failure (OOM guard). A counter takes its own limit, so that a small model reaches it.
MAX_MISSED_UPDATES = 10_000

#: Version byte of Ignite's serialized gap list (``getBytes``).
GAPS_FORMAT_VERSION = 1

_HEADER = struct.Struct(">bi")  # version byte, int32 item count
_ITEM = struct.Struct(">qq")  # int64 start, int64 delta

_start_of = itemgetter(0)


class CounterInconsistencyError(AssertionError):
    """The counter would break its own invariant: Ignite asserts, or fails the node via its failure handler.

    Raised by `PartitionUpdateCounter.reserve` when HWM < LWM (Ignite: ``assert reserved >= cntr :
    "LWM after HWM"``) and by `PartitionUpdateCounter.update_lwm` when the exchange's value is below the
    highest applied counter (Ignite: "Failed to update the counter").
    """


class TooManyGapsError(RuntimeError):
    """Queueing a range beyond the gap limit (Ignite: "Too many gaps", a critical failure: the node stops)."""


@dataclass(frozen=True, slots=True)
class CounterState:
    """An immutable view of a `PartitionUpdateCounter` (for tests, traces and "nothing changed" checks)."""

    lwm: int
    hwm: int
    items: tuple[tuple[int, int], ...]
    first: bool


def _check_items(lwm: int, items: list[tuple[int, int]]) -> None:
    """Raise ValueError unless `items` is a valid out-of-order queue above `lwm` (Ignite's merged TreeMap)."""
    prev_end = lwm
    for index, (start, delta) in enumerate(items):
        if delta <= 0:
            raise ValueError(f"item {index} {(start, delta)}: delta must be > 0")
        if index == 0 and start <= lwm:
            raise ValueError(f"item 0 {(start, delta)}: must start above lwm={lwm} (start > lwm)")
        if index > 0 and start <= prev_end:
            raise ValueError(
                f"item {index} {(start, delta)}: must start after the previous item's end {prev_end}, "
                "with a gap (items are sorted, disjoint and never adjacent: adjacent items are merged)"
            )
        prev_end = start + delta


class PartitionUpdateCounter:
    """Ignite's persistent-mode partition update counter (``PartitionUpdateCounterTrackingImpl``).

    `items` holds the ranges applied out of order as sorted ``(start, delta)`` pairs; a pair covers the
    counters ``start+1 .. start+delta``. The applied counters are exactly ``1..lwm`` plus the items.
    `max_missed_updates` is the gap limit (Ignite's ``MAX_MISSED_UPDATES``), configuration, not state.
    """

    __slots__ = ("_first", "_hwm", "_items", "_limit", "_lwm")

    def __init__(
        self,
        lwm: int = 0,
        hwm: int | None = None,
        items: Iterable[tuple[int, int]] = (),
        first: bool = True,
        *,
        max_missed_updates: int = MAX_MISSED_UPDATES,
    ) -> None:
        """Build any valid state; `hwm` defaults to the highest applied counter (as after a restore)."""
        item_list = [(int(start), int(delta)) for start, delta in items]
        if lwm < 0:
            raise ValueError(f"lwm must be >= 0, got {lwm}")
        if max_missed_updates <= 0:
            raise ValueError(f"max_missed_updates must be > 0, got {max_missed_updates}")
        _check_items(lwm, item_list)
        self._lwm = lwm
        self._items = item_list
        self._hwm = self.highest_applied if hwm is None else hwm
        if self._hwm < 0:
            raise ValueError(f"hwm must be >= 0, got {self._hwm}")
        self._first = first
        self._limit = max_missed_updates

    # --- state -------------------------------------------------------------------------------------------

    @property
    def lwm(self) -> int:
        """Low watermark: every counter 1..lwm is applied (Ignite's ``get()``)."""
        return self._lwm

    @property
    def hwm(self) -> int:
        """High watermark: counters up to it were handed out by `reserve` (Ignite's ``reserved()``)."""
        return self._hwm

    @property
    def items(self) -> list[tuple[int, int]]:
        """A copy of the out-of-order ranges, sorted by start."""
        return list(self._items)

    @property
    def first(self) -> bool:
        """True until the first `update_lwm` (the first exchange drops queued items)."""
        return self._first

    @property
    def max_missed_updates(self) -> int:
        """The gap limit: how many out-of-order ranges may be queued."""
        return self._limit

    @property
    def highest_applied(self) -> int:
        """lwm if nothing is queued, else the end of the last queued item (Ignite's highestAppliedCounter)."""
        if not self._items:
            return self._lwm
        start, delta = self._items[-1]
        return start + delta

    @property
    def sequential(self) -> bool:
        """True when no range is queued out of order."""
        return not self._items

    def snapshot(self) -> CounterState:
        """The current state as an immutable, comparable value."""
        return CounterState(self._lwm, self._hwm, tuple(self._items), self._first)

    def copy(self) -> Self:
        """An independent copy (same class; skips validation, so any reachable state copies)."""
        clone = object.__new__(type(self))
        clone._lwm = self._lwm
        clone._hwm = self._hwm
        clone._items = list(self._items)
        clone._first = self._first
        clone._limit = self._limit
        return clone

    def __eq__(self, other: object) -> bool:
        # Ignite's equals compares lwm and queue only; comparing the whole state is more useful in tests.
        if not isinstance(other, PartitionUpdateCounter):
            return NotImplemented
        return type(self) is type(other) and self.snapshot() == other.snapshot()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(lwm={self._lwm}, hwm={self._hwm}, items={self._items!r}, "
            f"first={self._first})"
        )

    # --- operations --------------------------------------------------------------------------------------

    def reserve(self, delta: int) -> int:
        """Primary at tx prepare: hand out counters r+1 .. r+delta and return r, the old HWM.

        Ignite asserts r >= lwm ("LWM after HWM"): a copy whose HWM is below its LWM (a backup that has
        not been through an exchange) would hand out counters that are already applied. Raises before
        changing anything (Ignite adds first, then asserts).
        """
        if delta <= 0:
            raise ValueError(f"reserve: delta must be > 0, got {delta}")
        reserved = self._hwm
        if reserved < self._lwm:
            raise CounterInconsistencyError(f"LWM after HWM: lwm={self._lwm}, hwm={reserved}")
        self._hwm = reserved + delta
        return reserved

    def update(self, start: int, delta: int) -> bool:
        """Apply the committed or rolled-back range start+1 .. start+delta; True if it was new.

        Ignite's ``update(start, delta)``: start < lwm is stale (False), whatever the range's end;
        start == lwm moves lwm and absorbs the queued item starting at the new lwm; start > lwm queues the
        range, merged with the item ending at start and the item starting at start+delta. A range that
        lies inside a queued item is a duplicate (False). Never changes HWM.

        The gap limit, in Ignite's order: queueing a new item when `max_missed_updates` are queued raises
        TooManyGapsError, and so does a duplicate that starts exactly where a queued item starts, because
        Ignite checks the limit before it looks for an item there (a duplicate inside an item that starts
        below it is found first and ignored).

        A range that partly overlaps the applied counters (start >= lwm, some of its counters applied and
        some not) is not a valid input: 2PC applies a range whole or not at all, and Ignite would corrupt
        its queue. It raises ValueError and changes nothing.
        """
        if delta <= 0:
            raise ValueError(f"update: delta must be > 0, got {delta}")
        lwm = self._lwm
        if start < lwm:
            return False
        items = self._items
        last = start + delta
        # The last item starting below `last`: the only one that can hold counters of start+1 .. last
        # (items before it end before it starts).
        below = bisect_left(items, last, key=_start_of)
        prev = items[below - 1] if below > 0 else None
        prev_end = prev[0] + prev[1] if prev is not None else -1
        duplicate = False
        if prev is not None and prev_end > start:  # the range meets the applied item `prev`
            if prev[0] > start or prev_end < last:
                raise ValueError(self._overlap_message(start, delta, prev))
            if prev[0] < start:
                return False  # inside an item that starts below it: Ignite's lower-entry check finds it
            duplicate = True  # inside the item that starts at `start`: found after the limit check
        nxt = below if below < len(items) and items[below][0] == last else None
        merge_left = prev is not None and prev_end == start
        if start > lwm and nxt is None and not merge_left and len(items) >= self._limit:
            raise TooManyGapsError(f"Too many gaps: {len(items)} queued ranges, counter={self!r}")
        if duplicate:
            return False
        if start == lwm:
            if nxt is not None:
                last += items.pop(nxt)[1]  # only one queued item can start exactly at the new lwm
            self._lwm = last
            return True
        if nxt is not None:
            delta += items.pop(nxt)[1]
        if prev is not None and merge_left:
            items[below - 1] = (prev[0], prev[1] + delta)
        else:
            items.insert(below, (start, delta))
        return True

    def update_lwm(self, value: int) -> None:
        """Absolute update from the exchange's full message (Ignite's ``update(long)``).

        HWM = max(HWM, value, lwm) always (this is how a new primary's HWM reaches the max LWM). A value
        below lwm is outdated and ignored. A value below the highest applied counter means the supplier lacks
        updates this copy has: CounterInconsistencyError (raised after HWM was raised, as in Ignite).
        Otherwise lwm = value, and on the first call the queued items are dropped (rebalance restores them).
        Like Ignite, later calls keep the queue even though every item then lies at or below the new lwm.
        """
        self._hwm = max(self._hwm, value, self._lwm)
        if value < self._lwm:
            return
        if value < self.highest_applied:
            raise CounterInconsistencyError(
                f"Failed to update the counter: value={value} is below the highest applied counter "
                f"{self.highest_applied} (counter={self!r})"
            )
        self._lwm = value
        if self._first:
            self._items.clear()
            self._first = False

    def finalize(self) -> list[tuple[int, int]]:
        """Close every hole (exchange after a server left, once all txs are released); return the holes.

        Ignite's ``finalizeUpdateCounters``: each hole lwm+1 .. item.start is reported as an inclusive
        (first, last) gap (logged as a rollback record), lwm jumps to the item's end, the queue empties and
        finally HWM = lwm, so a reserved tail above the highest applied counter is dropped (HWM may go down).
        """
        gaps: list[tuple[int, int]] = []
        for start, delta in self._items:
            gaps.append((self._lwm + 1, start))
            self._lwm = start + delta
        self._items.clear()
        self._hwm = self._lwm
        return gaps

    # --- persistence -------------------------------------------------------------------------------------

    def to_bytes(self) -> bytes | None:
        """Ignite's gap format (``getBytes``): None if sequential, else version, int32 count, int64 pairs."""
        if not self._items:
            return None
        try:
            parts = [_HEADER.pack(GAPS_FORMAT_VERSION, len(self._items))]
            parts.extend(_ITEM.pack(start, delta) for start, delta in self._items)
        except struct.error as exc:
            raise ValueError(f"counter does not fit Ignite's int32/int64 gap format: {exc}") from exc
        return b"".join(parts)

    @classmethod
    def from_bytes(
        cls, lwm: int, data: bytes | None, *, max_missed_updates: int = MAX_MISSED_UPDATES
    ) -> Self:
        """Restore after a node restart: lwm from partition meta, items from `to_bytes` output.

        As on Ignite's restore, HWM = highest applied and the next exchange is the first one. Stricter than
        Ignite (which skips the version and ignores trailing bytes): malformed data raises ValueError.
        """
        if data is None:
            return cls(lwm, None, (), True, max_missed_updates=max_missed_updates)
        if not data:
            raise ValueError("gap data: expected the version byte at byte offset 0, got no data")
        if data[0] != GAPS_FORMAT_VERSION:
            raise ValueError(
                f"gap data: expected version {GAPS_FORMAT_VERSION} at byte offset 0, got {data[0]}"
            )
        if len(data) < _HEADER.size:
            raise ValueError(
                f"gap data: expected an int32 item count (4 bytes) at byte offset 1, "
                f"only {len(data) - 1} bytes left"
            )
        _, count = _HEADER.unpack_from(data, 0)
        if count < 0:
            raise ValueError(
                f"gap data: expected a non-negative int32 item count at byte offset 1, got {count}"
            )
        items: list[tuple[int, int]] = []
        offset = _HEADER.size
        for index in range(count):
            if offset + _ITEM.size > len(data):
                raise ValueError(
                    f"gap data: expected item {index} of {count} (int64 start, int64 delta: {_ITEM.size} "
                    f"bytes) at byte offset {offset}, only {len(data) - offset} bytes left"
                )
            start, delta = _ITEM.unpack_from(data, offset)
            items.append((start, delta))
            offset += _ITEM.size
        if offset != len(data):
            raise ValueError(
                f"gap data: expected end of data at byte offset {offset} after {count} items, "
                f"got {len(data) - offset} trailing bytes"
            )
        try:
            return cls(lwm, None, items, True, max_missed_updates=max_missed_updates)
        except ValueError as exc:
            raise ValueError(f"gap data: invalid items for lwm={lwm}: {exc}") from exc

    @staticmethod
    def _overlap_message(start: int, delta: int, item: tuple[int, int]) -> str:
        return (
            f"update({start}, {delta}): range {start + 1}..{start + delta} partly overlaps the applied "
            f"item {item} (a range is applied whole or not at all)"
        )


class VolatileUpdateCounter:
    """Ignite's in-memory-mode counter (``PartitionUpdateCounterVolatileImpl``): one value, no gaps.

    In-memory partitions lose their data with the node, so there is nothing to track: LWM and HWM are the
    same number, `reserve` advances it at prepare, and `update` only moves it forward.
    """

    __slots__ = ("_counter",)

    def __init__(self, counter: int = 0) -> None:
        if counter < 0:
            raise ValueError(f"counter must be >= 0, got {counter}")
        self._counter = counter

    @property
    def counter(self) -> int:
        return self._counter

    @property
    def lwm(self) -> int:
        return self._counter

    @property
    def hwm(self) -> int:
        """Same as lwm (Ignite's ``reserved()`` returns ``get()``)."""
        return self._counter

    @property
    def highest_applied(self) -> int:
        return self._counter

    @property
    def items(self) -> list[tuple[int, int]]:
        return []

    @property
    def sequential(self) -> bool:
        return True

    def copy(self) -> VolatileUpdateCounter:
        return VolatileUpdateCounter(self._counter)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VolatileUpdateCounter):
            return NotImplemented
        return self._counter == other._counter

    def __repr__(self) -> str:
        return f"VolatileUpdateCounter(counter={self._counter})"

    def reserve(self, delta: int) -> int:
        """Return the counter r and advance it by delta (Ignite's ``getAndAdd``); caller owns r+1..r+delta."""
        if delta <= 0:
            raise ValueError(f"reserve: delta must be > 0, got {delta}")
        reserved = self._counter
        self._counter = reserved + delta
        return reserved

    def update(self, start: int, delta: int) -> bool:
        """counter = max(counter, start+delta); True if it moved (Ignite's volatile update returns false)."""
        if delta <= 0:
            raise ValueError(f"update: delta must be > 0, got {delta}")
        if start + delta > self._counter:
            self._counter = start + delta
            return True
        return False

    def update_lwm(self, value: int) -> None:
        """Exchange's absolute value: only raises the counter."""
        self._counter = max(self._counter, value)

    def finalize(self) -> list[tuple[int, int]]:
        """No gaps to close; HWM is already the counter."""
        return []

    def to_bytes(self) -> bytes | None:
        """Nothing to persist (Ignite's volatile ``getBytes`` returns null)."""
        return None
