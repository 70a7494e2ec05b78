"""impl/idle_verify.py: Ignite's per-copy figures and per-partition comparison, on figures a real Ignite
2.18 cluster gave (systems/ignite harness) and on generated cases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.impl.idle_verify import (
    MOVING_SIZE,
    HashRecord,
    RecordState,
    bytes_hash,
    check_counter,
    compare,
    counter_text,
    entry_sums,
    missed,
    missed_text,
    parse_missed,
    record,
    reported_state,
    version_hash,
    zero,
)

# Partition 0 of a real 2.18 cluster (8 partitions, keys 0..19 put in one transaction): keys 0, 8, 16
# with String values "v0", "v8", "v16" as the binary marshaller stores them, one GridCacheVersion.
# Ignite's dump said partHash=1755937174, partVerHash=-2101256764 and Java's hashCode of the version
# was 731236844.
REAL_ENTRIES = [(0, b"\t\x02\x00\x00\x00v0"), (8, b"\t\x02\x00\x00\x00v8"), (16, b"\t\x03\x00\x00\x00v16")]
REAL_VERSION = (1795633507947, 407113509, 2)  # order, topology version, node order


def test_figures_of_a_real_ignite_partition() -> None:
    assert version_hash(*REAL_VERSION) == 731236844
    ver = version_hash(*REAL_VERSION)
    assert entry_sums((k, v, ver) for k, v in REAL_ENTRIES) == (3, 1755937174, -2101256764)


def test_arrays_hash_code_of_bytes() -> None:
    assert bytes_hash(b"") == 1  # Arrays.hashCode(new byte[0])
    assert bytes_hash(b"\xff") == 30  # 31 * 1 + (-1)
    assert bytes_hash(b"abc") == 126145
    assert bytes_hash(bytes(range(256))) == bytes_hash(bytes(range(256)))  # wraps without error


def test_version_hash_is_a_long_hash_without_topology() -> None:
    assert version_hash(0) == 0
    assert version_hash(1 << 32) == 1  # Long.hashCode
    assert version_hash((1 << 63) - 1) == -(1 << 31)


def test_missed_counters_print_as_ignite_prints_them() -> None:
    # items (start, delta): 8..9 applied and 11 applied above LWM 5: 6..7 and 10 missing.
    ranges = missed(5, [(7, 2), (10, 1)])
    assert ranges == ((6, 7), (10, 10))
    assert missed_text(ranges) == "[6 - 7, 10]"
    assert counter_text(5, ranges, 11) == "[lwm=5, missed=[6 - 7, 10], hwm=11]"
    assert counter_text(0, (), 0) == "[lwm=0, missed=[], hwm=0]"


@given(st.integers(0, 1000), st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), max_size=6))
def test_missed_text_round_trips_and_is_a_valid_counter(lwm: int, steps: list[tuple[int, int]]) -> None:
    items, start = [], lwm
    for gap, delta in steps:  # a gap of `gap` missing counters, then `delta` applied ones
        start += gap
        items.append((start, delta))
        start += delta
    ranges = missed(lwm, items)
    assert parse_missed(missed_text(ranges)) == ranges
    check_counter(lwm, ranges, start)  # the highest applied counter is the last item's end


@pytest.mark.parametrize(
    ("text", "problem"),
    [("6 - 7", "brackets"), ("[6 -7]", "neither"), ("[7 - 6]", "ends before"), ("[a]", "neither")],
)
def test_unparsable_missed_text(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_missed(text)


@pytest.mark.parametrize(
    ("lwm", "ranges", "hwm", "problem"),
    [
        (-1, (), -1, "negative"),
        (5, (), 6, "no counter missed"),
        (5, ((7, 7),), 9, "lwm \\+ 1"),
        (5, ((6, 6), (7, 8)), 9, "ascending"),
        (5, ((6, 7),), 7, "not above"),
    ],
)
def test_impossible_counter_states(
    lwm: int, ranges: tuple[tuple[int, int], ...], hwm: int, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        check_counter(lwm, ranges, hwm)


def _owning(node: str, counter: str = "[lwm=1, missed=[], hwm=1]", part: int = 7, ver: int = 3) -> HashRecord:
    return record(node, node == "a", RecordState.OWNING, counter, 1, part, ver)


def test_compare_counter_and_hash_conflicts() -> None:
    a, b = _owning("a"), _owning("b")
    assert not compare([a, b]).conflict
    behind = _owning("c", counter="[lwm=0, missed=[], hwm=0]")
    assert compare([a, b, behind]).counter_conflict
    assert not compare([a, b, behind]).hash_conflict
    # partVerHash alone makes a hash conflict: the same data written with other versions (ABA).
    assert compare([a, _owning("b", ver=4)]).hash_conflict
    assert compare([a, _owning("b", part=8)]).hash_conflict


def test_moving_and_lost_copies_are_reported_without_data_and_not_compared() -> None:
    moving = record("m", False, RecordState.MOVING, "[lwm=0, missed=[], hwm=0]", 5, 99, 99)
    lost = record("l", False, RecordState.LOST, "[lwm=9, missed=[], hwm=9]", 5, 99, 99)
    assert (moving.size, moving.part_hash, moving.ver_hash) == (MOVING_SIZE, 0, 0)
    assert (lost.size, lost.part_hash, lost.ver_hash) == (0, 0, 0)
    verdict = compare([_owning("a"), moving, lost])
    assert (verdict.conflict, verdict.moving, verdict.lost) == (False, True, True)
    assert not compare([]).conflict and not compare([moving]).conflict
    assert reported_state("RENTING") is None and reported_state("EVICTED") is None
    assert reported_state("MOVING") is RecordState.MOVING


def test_hash_sums_wrap_like_java_ints() -> None:
    r = record("a", True, RecordState.OWNING, "[lwm=0, missed=[], hwm=0]", 2, (1 << 31) + 5, -(1 << 31) - 1)
    assert (r.part_hash, r.ver_hash) == (-(1 << 31) + 5, (1 << 31) - 1)


def test_skip_zeros_keeps_partitions_with_data_or_a_moving_copy() -> None:
    empty = record("a", True, RecordState.OWNING, "[lwm=0, missed=[], hwm=0]", 0, 0, 0)
    assert zero([empty, empty])
    assert not zero([empty, _owning("b")])
    moving = record("m", False, RecordState.MOVING, "[lwm=0, missed=[], hwm=0]", 0, 0, 0)
    assert not zero([empty, moving])
