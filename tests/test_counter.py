"""Unit tests of impl/counter.py: Ignite's partition update counter, scenario by scenario."""

from __future__ import annotations

import struct

import pytest

from tidemark.impl.counter import (
    MAX_MISSED_UPDATES,
    CounterInconsistencyError,
    CounterState,
    PartitionUpdateCounter,
    TooManyGapsError,
    VolatileUpdateCounter,
)


def state(counter: PartitionUpdateCounter) -> tuple[int, int, list[tuple[int, int]]]:
    return counter.lwm, counter.hwm, counter.items


# --- construction --------------------------------------------------------------------------------------


def test_seed_example_state() -> None:
    # The seed's example: LWM=5, HWM=9, seq=(6,2): updates 7, 8 applied out of order, 6 and 9 missing.
    c = PartitionUpdateCounter(lwm=5, hwm=9, items=[(6, 2)])
    assert state(c) == (5, 9, [(6, 2)])
    assert c.highest_applied == 8
    assert not c.sequential
    assert c.first


def test_defaults_and_hwm_defaults_to_highest_applied() -> None:
    assert state(PartitionUpdateCounter()) == (0, 0, [])
    assert PartitionUpdateCounter().sequential
    assert PartitionUpdateCounter(lwm=3, items=[(5, 2)]).hwm == 7


@pytest.mark.parametrize(
    ("lwm", "items", "message"),
    [
        (5, [(5, 1)], "above lwm"),  # adjacent to lwm: would have been absorbed
        (5, [(3, 4)], "above lwm"),
        (0, [(1, 0)], "delta must be > 0"),
        (0, [(4, 1), (1, 1)], "previous item"),  # unsorted
        (0, [(1, 3), (2, 5)], "previous item"),  # overlapping
        (0, [(1, 2), (3, 1)], "never adjacent"),  # adjacent: must be merged into (1, 3)
        (-1, [], "lwm must be >= 0"),
    ],
)
def test_constructor_rejects_invalid_items(lwm: int, items: list[tuple[int, int]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PartitionUpdateCounter(lwm=lwm, items=items)


def test_constructor_rejects_a_negative_hwm() -> None:
    with pytest.raises(ValueError, match="hwm must be >= 0, got -1"):
        PartitionUpdateCounter(lwm=0, hwm=-1)
    assert PartitionUpdateCounter(lwm=0, hwm=0).hwm == 0


def test_items_property_is_a_copy() -> None:
    c = PartitionUpdateCounter(lwm=0, items=[(2, 1)])
    c.items.append((10, 1))
    assert c.items == [(2, 1)]


def test_copy_is_independent_and_equal() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=9, items=[(6, 2)])
    d = c.copy()
    assert d == c and d is not c
    d.update(5, 1)
    assert c.items == [(6, 2)] and d.items == []
    assert d != c


def test_equality_compares_whole_state_and_repr_shows_it() -> None:
    a = PartitionUpdateCounter(lwm=1, hwm=4, items=[(2, 1)])
    assert a == PartitionUpdateCounter(lwm=1, hwm=4, items=[(2, 1)])
    assert a != PartitionUpdateCounter(lwm=1, hwm=5, items=[(2, 1)])
    assert a != PartitionUpdateCounter(lwm=1, hwm=4, items=[(2, 1)], first=False)
    assert repr(a) == "PartitionUpdateCounter(lwm=1, hwm=4, items=[(2, 1)], first=True)"
    assert a.snapshot() == CounterState(1, 4, ((2, 1),), True)
    # Another type is not comparable here: Python then tries the other side.
    assert a.__eq__(CounterState(1, 4, ((2, 1),), True)) is NotImplemented


# --- reserve -------------------------------------------------------------------------------------------


def test_reserve_returns_old_hwm_and_advances_it() -> None:
    c = PartitionUpdateCounter()
    assert c.reserve(3) == 0
    assert c.reserve(2) == 3
    assert state(c) == (0, 5, [])


def test_reserve_rejects_hwm_below_lwm_without_changing_state() -> None:
    # A backup that applied ranges reserved elsewhere: LWM=4, HWM still 0 (no exchange yet).
    c = PartitionUpdateCounter(lwm=4, hwm=0)
    with pytest.raises(CounterInconsistencyError, match="LWM after HWM: lwm=4, hwm=0"):
        c.reserve(1)
    assert state(c) == (4, 0, [])
    assert isinstance(CounterInconsistencyError("x"), AssertionError)


@pytest.mark.parametrize("delta", [0, -1])
def test_reserve_and_update_reject_non_positive_delta(delta: int) -> None:
    c = PartitionUpdateCounter()
    with pytest.raises(ValueError, match="delta must be > 0"):
        c.reserve(delta)
    with pytest.raises(ValueError, match="delta must be > 0"):
        c.update(0, delta)


# --- update --------------------------------------------------------------------------------------------


def test_in_order_updates_move_lwm() -> None:
    c = PartitionUpdateCounter(hwm=5)
    assert c.update(0, 3)
    assert c.update(3, 2)
    assert state(c) == (5, 5, [])


def test_seed_example_filling_the_holes() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=9, items=[(6, 2)])
    assert c.update(8, 1)  # counter 9 merges into the item ending at 8 (merge left)
    assert state(c) == (5, 9, [(6, 3)])
    assert c.update(5, 1)  # counter 6: lwm catches up and absorbs the item starting at 6
    assert state(c) == (9, 9, [])
    assert c.sequential


def test_out_of_order_update_is_queued_and_hwm_unchanged() -> None:
    c = PartitionUpdateCounter(hwm=10)
    assert c.update(4, 2)
    assert state(c) == (0, 10, [(4, 2)])
    assert c.highest_applied == 6


def test_queue_stays_sorted_when_inserting_before_and_between() -> None:
    c = PartitionUpdateCounter(hwm=20)
    assert c.update(10, 1)
    assert c.update(2, 1)
    assert c.update(6, 1)
    assert c.items == [(2, 1), (6, 1), (10, 1)]


def test_merge_left() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=10, items=[(2, 2)])
    assert c.update(4, 1)
    assert c.items == [(2, 3)]


def test_merge_right() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=10, items=[(5, 2)])
    assert c.update(3, 2)
    assert c.items == [(3, 4)]


def test_merge_both_sides_into_one_item() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=12, items=[(2, 2), (6, 3), (11, 1)])
    assert c.update(4, 2)
    assert c.items == [(2, 7), (11, 1)]


def test_catch_up_without_absorb_leaves_the_non_adjacent_item() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=10, items=[(4, 2)])
    assert c.update(0, 2)
    assert state(c) == (2, 10, [(4, 2)])


def test_catch_up_absorbs_only_the_item_at_the_new_lwm() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=20, items=[(2, 3), (7, 1), (10, 2)])
    assert c.update(0, 2)
    assert state(c) == (5, 20, [(7, 1), (10, 2)])


@pytest.mark.parametrize(("start", "delta"), [(0, 1), (2, 3), (4, 1), (0, 5), (4, 4)])
def test_stale_ranges_below_lwm_return_false_and_change_nothing(start: int, delta: int) -> None:
    # start < lwm is stale even when it reaches above lwm (Ignite only looks at start).
    c = PartitionUpdateCounter(lwm=5, hwm=9, items=[(6, 2)])
    before = c.snapshot()
    assert c.update(start, delta) is False
    assert c.snapshot() == before


@pytest.mark.parametrize(("start", "delta"), [(6, 2), (6, 1), (7, 1), (11, 3), (12, 1)])
def test_covered_duplicates_return_false_and_change_nothing(start: int, delta: int) -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=20, items=[(6, 2), (10, 5)])
    before = c.snapshot()
    assert c.update(start, delta) is False
    assert c.snapshot() == before


@pytest.mark.parametrize(
    ("start", "delta"),
    [
        (5, 3),  # catch-up range 6..8 runs into item (6, 2), which covers 7..8
        (6, 3),  # 7..9: the item (6, 2) covers 7..8, counter 9 is new
        (7, 3),  # 8..10 overlaps the end of (6, 2)
        (8, 6),  # 9..14 contains the whole item (10, 2)
        (9, 2),  # 10..11: the item (10, 2) covers 11, counter 10 is new
        (9, 4),  # 10..13: both ends new, the item (10, 2) inside
    ],
)
def test_partial_overlap_is_rejected_without_change(start: int, delta: int) -> None:
    # One documented error for every range that is partly applied, whichever side the applied part is on.
    c = PartitionUpdateCounter(lwm=5, hwm=20, items=[(6, 2), (10, 2)])
    before = c.snapshot()
    with pytest.raises(ValueError, match="partly overlaps"):
        c.update(start, delta)
    assert c.snapshot() == before


def test_wal_replay_of_single_data_records_rebuilds_the_counter() -> None:
    # WAL replay: data record with counter c applies update(c - 1, 1), in any order.
    c = PartitionUpdateCounter()
    for counter in [3, 1, 5, 2, 4]:
        assert c.update(counter - 1, 1)
    assert state(c) == (5, 0, [])
    assert c.update(2, 1) is False  # replaying the record for counter 3 again


# --- too many gaps ---------------------------------------------------------------------------------------


def full_queue() -> PartitionUpdateCounter:
    # MAX_MISSED_UPDATES items (3i+1, 1), each covering counter 3i+2; holes 3i+3 .. 3i+4 between them.
    items = [(3 * i + 1, 1) for i in range(MAX_MISSED_UPDATES)]
    return PartitionUpdateCounter(lwm=0, hwm=4 * MAX_MISSED_UPDATES, items=items)


def test_too_many_gaps_when_queueing_beyond_the_limit() -> None:
    c = full_queue()
    before = c.snapshot()
    with pytest.raises(TooManyGapsError, match="Too many gaps"):
        c.update(3 * MAX_MISSED_UPDATES + 5, 1)  # not adjacent to anything: would be item 10,001
    assert c.snapshot() == before


def test_merge_right_at_the_limit_is_not_a_new_gap() -> None:
    c = full_queue()
    assert c.update(3, 1)  # counter 4 joins item (4, 1) from the left
    assert len(c.items) == MAX_MISSED_UPDATES
    assert c.items[:2] == [(1, 1), (3, 2)]


def test_merge_left_at_the_limit_is_not_a_new_gap() -> None:
    c = full_queue()
    assert c.update(2, 1)  # counter 3 extends item (1, 1)
    assert len(c.items) == MAX_MISSED_UPDATES
    assert c.items[:2] == [(1, 2), (4, 1)]


def test_limit_allows_exactly_max_items() -> None:
    items = [(3 * i + 1, 1) for i in range(MAX_MISSED_UPDATES - 1)]
    c = PartitionUpdateCounter(lwm=0, items=items)
    assert c.update(3 * MAX_MISSED_UPDATES + 5, 1)
    assert len(c.items) == MAX_MISSED_UPDATES
    with pytest.raises(TooManyGapsError):
        c.update(3 * MAX_MISSED_UPDATES + 10, 1)
    assert len(c.items) == MAX_MISSED_UPDATES


def two_items(limit: int) -> PartitionUpdateCounter:
    # Items (1, 2) and (5, 1): counters 2..3 and 6 applied, 1 and 4..5 missing.
    return PartitionUpdateCounter(lwm=0, hwm=8, items=[(1, 2), (5, 1)], max_missed_updates=limit)


@pytest.mark.parametrize(("start", "delta"), [(1, 1), (1, 2), (5, 1)])
def test_a_duplicate_starting_where_an_item_starts_hits_the_limit_like_ignite(start: int, delta: int) -> None:
    # Ignite looks at the item below `start`, then checks the limit, and only then finds the item that
    # starts at `start`: at the limit, a duplicate it would otherwise ignore throws.
    c = two_items(limit=2)
    before = c.snapshot()
    with pytest.raises(TooManyGapsError):
        c.update(start, delta)
    assert c.snapshot() == before
    assert two_items(limit=3).update(start, delta) is False


def test_a_duplicate_inside_an_item_starting_below_is_ignored_at_the_limit() -> None:
    c = two_items(limit=2)
    assert c.update(2, 1) is False  # counter 3, inside (1, 2): the lower item is checked first
    assert c.update(2, 1) is False
    assert c.items == [(1, 2), (5, 1)]


@pytest.mark.parametrize(
    ("start", "delta", "items"),
    [
        (0, 1, [(5, 1)]),  # catch-up absorbing (1, 2)
        (3, 1, [(1, 3), (5, 1)]),  # merge left
        (4, 1, [(1, 2), (4, 2)]),  # merge right
        (3, 2, [(1, 5)]),  # merge both
    ],
)
def test_updates_that_queue_no_new_item_pass_at_the_limit(
    start: int, delta: int, items: list[tuple[int, int]]
) -> None:
    c = two_items(limit=2)
    assert c.update(start, delta) is True
    assert c.items == items


def test_the_limit_is_per_counter_and_survives_copy_and_restore() -> None:
    c = two_items(limit=2)
    with pytest.raises(TooManyGapsError):
        c.copy().update(7, 1)  # counter 8: a third item
    restored = PartitionUpdateCounter.from_bytes(c.lwm, c.to_bytes(), max_missed_updates=2)
    assert restored.max_missed_updates == 2
    with pytest.raises(TooManyGapsError):
        restored.update(7, 1)
    assert two_items(limit=3).update(7, 1) is True
    assert PartitionUpdateCounter().max_missed_updates == MAX_MISSED_UPDATES == 10_000
    with pytest.raises(ValueError, match="max_missed_updates must be > 0"):
        PartitionUpdateCounter(max_missed_updates=0)


# --- update_lwm (exchange) -------------------------------------------------------------------------------


def test_update_lwm_below_lwm_is_ignored_but_raises_hwm() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=3, items=[(6, 2)])
    c.update_lwm(4)
    assert state(c) == (5, 5, [(6, 2)])  # HWM = max(HWM, value, lwm)
    assert c.first  # ignored: not the first real update


def test_update_lwm_below_highest_applied_is_an_inconsistency() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=6, items=[(6, 2)])
    with pytest.raises(CounterInconsistencyError, match=r"value=7 .*highest applied counter 8"):
        c.update_lwm(7)
    assert state(c) == (5, 7, [(6, 2)])  # like Ignite, HWM was already raised


def test_first_update_lwm_drops_queued_items() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=9, items=[(6, 2)])
    c.update_lwm(10)
    assert state(c) == (10, 10, [])
    assert not c.first


def test_update_lwm_equal_to_lwm_on_a_sequential_counter_raises_hwm() -> None:
    # A new primary after the exchange: LWM 7, stale HWM 2 -> HWM becomes 7.
    c = PartitionUpdateCounter(lwm=7, hwm=2)
    c.update_lwm(7)
    assert state(c) == (7, 7, [])
    assert c.reserve(1) == 7


def test_second_update_lwm_keeps_queued_items_like_ignite() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=10, items=[], first=False)
    assert c.update(3, 2)
    c.update_lwm(6)  # value >= highest applied (5): allowed, but the item is not dropped
    assert state(c) == (6, 10, [(3, 2)])
    assert c.highest_applied == 5  # below lwm: Ignite's queue keeps the stale item
    assert c.update(6, 1)  # the stale item is inert for later updates
    assert state(c) == (7, 10, [(3, 2)])


# --- finalize ------------------------------------------------------------------------------------------


def test_finalize_reports_holes_and_drops_hwm_to_lwm() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=12, items=[(6, 2), (9, 1)])
    assert c.finalize() == [(6, 6), (9, 9)]
    assert state(c) == (10, 10, [])  # HWM went down from 12: reserved tail 11..12 dropped


def test_finalize_multi_counter_gap() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=10, items=[(3, 1)])
    assert c.finalize() == [(1, 3)]
    assert state(c) == (4, 4, [])


def test_finalize_without_items_reports_nothing_and_sets_hwm() -> None:
    c = PartitionUpdateCounter(lwm=4, hwm=9)
    assert c.finalize() == []
    assert state(c) == (4, 4, [])


def test_finalize_keeps_first_flag() -> None:
    c = PartitionUpdateCounter(lwm=0, hwm=4, items=[(2, 1)])
    c.finalize()
    assert c.first


# --- persistence ---------------------------------------------------------------------------------------


def test_sequential_counter_serializes_to_none_and_restores() -> None:
    c = PartitionUpdateCounter(lwm=7, hwm=9)
    assert c.to_bytes() is None
    r = PartitionUpdateCounter.from_bytes(7, None)
    assert state(r) == (7, 7, [])
    assert r.first


def test_bytes_layout_is_ignites() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=20, items=[(6, 2), (10, 5)])
    assert c.to_bytes() == bytes.fromhex(
        "01 00000002 0000000000000006 0000000000000002 000000000000000a 0000000000000005"
    )


def test_bytes_round_trip_restores_items_with_hwm_at_highest_applied() -> None:
    c = PartitionUpdateCounter(lwm=5, hwm=20, items=[(6, 2), (10, 5)], first=False)
    r = PartitionUpdateCounter.from_bytes(c.lwm, c.to_bytes())
    assert state(r) == (5, 15, [(6, 2), (10, 5)])
    assert r.first


def test_from_bytes_returns_the_subclass() -> None:
    class Sub(PartitionUpdateCounter):
        pass

    assert type(Sub.from_bytes(0, None)) is Sub


def good_bytes() -> bytes:
    data = PartitionUpdateCounter(lwm=0, items=[(2, 1), (5, 2)]).to_bytes()
    assert data is not None
    return data


def test_an_empty_gap_list_restores_a_sequential_counter() -> None:
    # Ignite writes nothing for an empty queue, but reads a zero item count as an empty one.
    restored = PartitionUpdateCounter.from_bytes(3, struct.pack(">bi", 1, 0))
    assert state(restored) == (3, 3, []) and restored.first


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "version byte at byte offset 0"),
        (b"\x02" + good_bytes()[1:], "expected version 1 at byte offset 0, got 2"),
        (b"\x01\x00\x00", r"int32 item count \(4 bytes\) at byte offset 1, only 2 bytes left"),
        (b"\x01\xff\xff\xff\xff", "non-negative int32 item count at byte offset 1, got -1"),
        (good_bytes()[:-3], "item 1 of 2 .* at byte offset 21, only 13 bytes left"),
        (good_bytes()[:5], "item 0 of 2 .* at byte offset 5, only 0 bytes left"),
        (good_bytes() + b"\x00", "end of data at byte offset 37 after 2 items, got 1 trailing bytes"),
        (struct.pack(">bi", 1, 1) + struct.pack(">qq", 0, 1), "invalid items for lwm=0: .*above lwm"),
        (struct.pack(">bi", 1, 2) + struct.pack(">qqqq", 3, 1, 2, 1), "invalid items"),
    ],
)
def test_from_bytes_rejects_malformed_data(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PartitionUpdateCounter.from_bytes(0, data)


def test_to_bytes_rejects_values_beyond_int64() -> None:
    c = PartitionUpdateCounter(lwm=0, items=[(2**63, 1)])
    with pytest.raises(ValueError, match="int64"):
        c.to_bytes()


# --- in-memory (volatile) mode ---------------------------------------------------------------------------


def test_volatile_reserve_advances_the_single_counter() -> None:
    v = VolatileUpdateCounter()
    assert v.counter == 0
    assert v.reserve(1) == 0
    assert v.reserve(2) == 1
    v = VolatileUpdateCounter()
    assert v.reserve(3) == 0
    assert v.reserve(2) == 3
    assert (v.lwm, v.hwm, v.counter, v.highest_applied) == (5, 5, 5, 5)


def test_volatile_update_is_a_max_without_gaps() -> None:
    v = VolatileUpdateCounter()
    assert v.update(4, 2)  # out of order: jumps to 6, the hole 1..4 is not tracked
    assert v.lwm == 6
    assert v.update(0, 2) is False
    assert v.update(5, 1) is False
    assert v.lwm == 6
    assert v.items == [] and v.sequential


def test_volatile_update_lwm_finalize_and_bytes() -> None:
    v = VolatileUpdateCounter(4)
    v.update_lwm(2)
    assert v.lwm == 4
    v.update_lwm(9)
    assert v.lwm == 9 and v.hwm == 9
    assert v.finalize() == []
    assert v.lwm == 9 and v.hwm == 9
    assert v.to_bytes() is None


def test_volatile_copy_equality_and_validation() -> None:
    v = VolatileUpdateCounter(3)
    w = v.copy()
    assert w == v and repr(w) == "VolatileUpdateCounter(counter=3)"
    w.update(3, 1)
    assert w != v
    assert v.__eq__(PartitionUpdateCounter(3)) is NotImplemented
    with pytest.raises(ValueError):
        VolatileUpdateCounter(-1)
    with pytest.raises(ValueError):
        v.update(0, 0)
    with pytest.raises(ValueError, match="delta must be > 0"):
        v.reserve(0)
    assert v.counter == 3
