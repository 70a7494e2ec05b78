"""Ignite's idle_verify: tidemark's one definition of "the copies of a partition are consistent".

`control.sh --cache idle_verify` runs, on every node, IdleVerifyUtility.calculatePartitionHash over each
local copy of a partition and sends back one PartitionHashRecord per copy; IdleVerifyResult.Builder then
compares, per partition, the copies with each other. This module holds both halves as Ignite 2.18 defines
them, for the model's clusters (tidemark.impl.pme.idle_verify) and for snapshots of real grids at scale
(conformance/audit):

- a copy's record: `size` (its entries), `part_hash` = sum of key.hashCode() + sum of
  Arrays.hashCode(value bytes), `ver_hash` = sum of the entries' GridCacheVersion.hashCode() (it catches an
  entry rewritten with the same value, the ABA case), each a Java int that wraps, so the order of the
  entries does not matter; and the counter's comparable text "[lwm=N, missed=[a - b, c], hwm=H]"
  (PartitionUpdateCounterTrackingImpl.comparableState, compared in full since IGNITE-17114). MOVING and
  LOST copies get a record without hashes; RENTING and EVICTED copies get none.
- a partition's verdict: the OWNING records are compared with the first one: a counter conflict when a
  counter text differs, a hash conflict when `part_hash` or `ver_hash` differs (the size is not compared).
  MOVING and LOST records are listed as skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from typing import Final

from tidemark.impl.affinity import MASK32, hash_long, to_int32

#: PartitionHashRecord.MOVING_PARTITION_SIZE: the size a MOVING copy reports (Long.MIN_VALUE).
MOVING_SIZE: Final = -(1 << 63)

#: GridDhtPartitionState's names a copy can have.
COPY_STATES: Final = ("OWNING", "MOVING", "RENTING", "EVICTED", "LOST")

#: GridCacheVersion's bounds: a non-negative topology version and order, a 27-bit node order.
NODE_ORDER_MAX: Final = 0x07FF_FFFF


class RecordState(StrEnum):
    """PartitionHashRecord.PartitionState: the states a copy is reported in."""

    OWNING = "OWNING"
    MOVING = "MOVING"
    LOST = "LOST"


def reported_state(state: str) -> RecordState | None:
    """The state a copy's record carries; None for RENTING and EVICTED copies, which are not reported."""
    return RecordState(state) if state in RecordState.__members__ else None


# --- hashes ------------------------------------------------------------------------------------------


def bytes_hash(data: bytes) -> int:
    """Arrays.hashCode(byte[]): h = 31*h + b over the signed bytes, from 1."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & MASK32
    return to_int32(h)


def version_hash(order: int, topology: int = 0, node_order: int = 0) -> int:
    """GridCacheVersion.hashCode: 31 * (31 * topVer + nodeOrder) + Long.hashCode(order).

    A snapshot gives the version's order, and optionally its topology version and node order (0 if not
    given, which leaves the hash a function of the order alone)."""
    return to_int32(31 * (31 * topology + node_order) + hash_long(order))


# --- the counter's comparable text ---------------------------------------------------------------------


def missed(lwm: int, items: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """The counters a copy lacks below its highest applied one, as (first, last) ranges, from the counter's
    out-of-order items (start, delta): each item covers start+1..start+delta."""
    ranges, prev = [], lwm
    for start, delta in items:
        ranges.append((prev + 1, start))
        prev = start + delta
    return tuple(ranges)


def missed_text(ranges: Iterable[tuple[int, int]]) -> str:
    """As Ignite prints them: "[6 - 7, 9]" (a single missing counter without a range), "[]" for none."""
    return "[" + ", ".join(str(a) if a == b else f"{a} - {b}" for a, b in ranges) + "]"


_RANGE = re.compile(r"(\d+)(?: - (\d+))?")


def parse_missed(text: str) -> tuple[tuple[int, int], ...]:
    """The ranges of a missed-counters text like "[6 - 7, 9]"; ValueError if it is not one."""
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError(f"{text!r} is not a list in brackets like '[6 - 7, 9]' or '[]'")
    body = text[1:-1]
    if not body:
        return ()
    ranges = []
    for part in body.split(", "):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ValueError(f"{part!r} in {text!r} is neither a counter 'N' nor a range 'A - B'")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first:
            raise ValueError(f"range {part!r} in {text!r} ends before it starts")
        ranges.append((first, last))
    return tuple(ranges)


def check_counter(lwm: int, ranges: Sequence[tuple[int, int]], hwm: int) -> None:
    """ValueError unless (lwm, missed ranges, hwm) is a state Ignite's tracking counter can be in: the
    first missing counter is lwm+1, the ranges are ascending with applied counters between them, and the
    highest applied counter is above the last; with nothing missed it equals the LWM."""
    if lwm < 0:
        raise ValueError(f"lwm {lwm} is negative")
    if not ranges:
        if hwm != lwm:
            raise ValueError(f"hwm {hwm} differs from lwm {lwm} with no counter missed")
        return
    if ranges[0][0] != lwm + 1:
        raise ValueError(f"the first missed counter is {ranges[0][0]}, not lwm + 1 = {lwm + 1}")
    for (_, last), (first, _) in pairwise(ranges):
        if first <= last + 1:
            raise ValueError(f"missed ranges must be ascending with applied counters between them: {ranges}")
    if hwm <= ranges[-1][1]:
        raise ValueError(f"hwm {hwm} is not above the last missed counter {ranges[-1][1]}")


def counter_text(lwm: int, ranges: Iterable[tuple[int, int]], hwm: int) -> str:
    """PartitionUpdateCounterTrackingImpl.comparableState(): what idle_verify compares between copies."""
    return f"[lwm={lwm}, missed={missed_text(ranges)}, hwm={hwm}]"


# --- records and verdicts ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HashRecord:
    """One copy's PartitionHashRecord (MOVING: size MOVING_SIZE and no hashes; LOST: size 0, no hashes)."""

    node: str
    primary: bool
    state: RecordState
    counter: str
    size: int
    part_hash: int = 0
    ver_hash: int = 0


def record(
    node: str, primary: bool, state: RecordState, counter: str, size: int, part_hash: int, ver_hash: int
) -> HashRecord:
    """A copy's record from its figures (hash sums of any width are wrapped to Java ints); a MOVING or LOST
    copy is reported without its data, as calculatePartitionHash does."""
    if state is RecordState.MOVING:
        return HashRecord(node, primary, state, counter, MOVING_SIZE)
    if state is RecordState.LOST:
        return HashRecord(node, primary, state, counter, 0)
    return HashRecord(node, primary, state, counter, size, to_int32(part_hash), to_int32(ver_hash))


def entry_sums(entries: Iterable[tuple[int, bytes, int]]) -> tuple[int, int, int]:
    """(size, part_hash, ver_hash) of entries given as (key hash, value bytes, version hash)."""
    size = part = ver = 0
    for key_hash, value, ver_hash in entries:
        size += 1
        part += key_hash + bytes_hash(value)
        ver += ver_hash
    return size, to_int32(part), to_int32(ver)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A partition's verdict from its records (IdleVerifyResult.Builder.build)."""

    counter_conflict: bool
    hash_conflict: bool
    moving: bool  # a record is MOVING: listed as skipped
    lost: bool  # a record is LOST: listed as skipped

    @property
    def conflict(self) -> bool:
        return self.counter_conflict or self.hash_conflict


def compare(records: Sequence[HashRecord]) -> Verdict:
    """Compare a partition's OWNING records with the first one (equality is transitive, so which one is
    first does not change the verdict)."""
    owning = [r for r in records if r.state is RecordState.OWNING]
    first = owning[0] if owning else None
    return Verdict(
        counter_conflict=any(r.counter != first.counter for r in owning[1:]) if first else False,
        hash_conflict=any((r.part_hash, r.ver_hash) != (first.part_hash, first.ver_hash) for r in owning[1:])
        if first
        else False,
        moving=any(r.state is RecordState.MOVING for r in records),
        lost=any(r.state is RecordState.LOST for r in records),
    )


def zero(records: Sequence[HashRecord]) -> bool:
    """--skip-zeros leaves a partition out of the dump when every record has size 0 and the first one's
    hashes (VerifyBackupPartitionsDumpTask.needToAdd); a MOVING record's size is not 0."""
    first = records[0]
    return all(
        r.size == 0 and (r.part_hash, r.ver_hash) == (first.part_hash, first.ver_hash) for r in records
    )
