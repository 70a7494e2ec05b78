"""impl/ncache_balance.py: NCache's join by bytes and its automatic data load balancing."""

from __future__ import annotations

import random

import pytest

from tidemark.impl.ncache_balance import (
    auto_balance,
    join,
    joined,
    member_weights,
    overloaded,
    shuffle_select,
    weight_select,
)

BIG = 10**15  # a cache size no member's data reaches 10 % of: joins shuffle


def skewed(buckets: int = 1000, seed: int = 7) -> list[int]:
    rng = random.Random(seed)
    weights = [0] * buckets
    for _ in range(20 * buckets):
        weights[rng.randrange(buckets)] += 100 + int(1_000_000 / rng.randrange(1, 10_001))
    return weights


def test_shuffle_walks_the_diagonal_and_wraps() -> None:
    rows = [[0, 1, 2], [3, 4, 5], [6]]
    # column 0 row 0, column 1 row 1, column 2: row 2 has no column 2, so row 0 again
    assert shuffle_select(rows, 3) == [0, 4, 2]
    assert shuffle_select([[5, 6]], 2) == [5, 6]


def test_weight_select_takes_a_row_within_the_cushion() -> None:
    weights = [1, 2, 3, 10, 20, 30]
    rows = [[0, 1, 2], [3, 4, 5]]
    assert weight_select(rows, weights, 3, 62) == [3, 4, 5]  # 60 is within 10 % of 62
    assert weight_select(rows, weights, 3, 6) == [0, 1, 2]


def test_weight_select_combines_two_rows_when_no_row_fits() -> None:
    weights = [1, 2, 3, 10, 20, 30]
    chosen = weight_select([[0, 1, 2], [3, 4, 5]], weights, 3, 33)
    assert len(set(chosen)) == 3
    assert sum(weights[b] for b in chosen) == 33  # buckets 3 and 4 swapped into the light row: 10 + 20 + 3


def test_join_keeps_the_count_share_either_way() -> None:
    weights = skewed()
    for cache_size in (BIG, 1):
        owners = joined(weights, 3, cache_size)
        assert sorted(owners.count(x) for x in range(3)) == [333, 333, 334]
        assert len(owners) == 1000


def test_a_weighed_join_gives_the_joiner_its_due_bytes() -> None:
    weights = skewed()
    owners = joined(weights, 4, 1)  # cache size 1: always above the threshold
    after = join(owners, weights, 4, 1)
    total = sum(weights)
    got = member_weights(after, weights, 5)[4]
    assert abs(got - total / 5) <= 0.1 * total / 5
    # every bucket the joiner got came from a member that held more than the share
    assert all(after[b] == owners[b] for b in range(1000) if after[b] != 4)


def test_below_the_threshold_a_join_does_not_weigh() -> None:
    weights = skewed()
    small, heavy = join((0,) * 1000, weights, 1, BIG), join((0,) * 1000, weights, 1, 1)
    assert small != heavy
    # the shuffle takes the diagonal of a 2-row matrix: alternately lighter and heavier buckets
    ranked = sorted(range(1000), key=lambda b: (weights[b], b))
    given = {b for b in range(1000) if small[b] == 1}
    assert given == {ranked[c + 500 * (c % 2)] for c in range(500)}


def test_overloaded_is_measured_against_the_average() -> None:
    weights = [10] * 8 + [100, 100]
    owners = (0,) * 8 + (1, 1)
    assert member_weights(owners, weights, 2) == [80, 200]
    assert overloaded(owners, weights, 2) == []  # 200 is 43 % above the average of 140
    assert overloaded(owners, weights, 2, percent=40) == [1]
    assert overloaded((0,) * 10, [0] * 10, 2) == []  # no data: nothing to balance


def test_auto_balance_is_off_by_default() -> None:
    weights = [1] * 8 + [100, 100]
    owners = (0,) * 5 + (1,) * 5
    assert auto_balance(owners, weights, 2) == owners
    assert member_weights(auto_balance(owners, weights, 2, enabled=True), weights, 2) == [104, 104]


def test_auto_balance_never_overshoots_beyond_the_cushion() -> None:
    # the only gaining swap (1000 for 1) would move 999 bytes of a 500-byte excess: NCache leaves it
    weights = [1] * 9 + [1000]
    owners = (0,) * 5 + (1,) * 5
    assert overloaded(owners, weights, 2) == [1]
    assert auto_balance(owners, weights, 2, enabled=True) == owners


def test_auto_balance_swaps_buckets_into_the_band() -> None:
    weights = [1, 2, 3, 4, 50, 60, 70, 80]
    owners = (0, 0, 0, 0, 1, 1, 1, 1)
    balanced = auto_balance(owners, weights, 2, enabled=True)
    load = member_weights(balanced, weights, 2)
    assert [balanced.count(x) for x in range(2)] == [4, 4]  # counts unchanged: swaps only
    assert max(load) < max(member_weights(owners, weights, 2))
    assert overloaded(balanced, weights, 2) == []


def test_auto_balance_on_a_skewed_cluster_lowers_the_peak() -> None:
    weights = skewed(seed=3)
    owners = joined(weights, 8, BIG)
    heavy = [b for b, o in enumerate(owners) if o == 0][:60]
    weights = [w * 20 if b in heavy else w for b, w in enumerate(weights)]  # member 0's data grows
    assert overloaded(owners, weights, 8) == [0]
    balanced = auto_balance(owners, weights, 8, enabled=True)
    assert max(member_weights(balanced, weights, 8)) < max(member_weights(owners, weights, 8))
    assert [balanced.count(x) for x in range(8)] == [owners.count(x) for x in range(8)]


def test_boundaries_one_bucket_and_no_data() -> None:
    assert join((0,), [0], 1, 1) == (1,)  # share 1 // 2 = 0: the only bucket goes to the joiner
    assert join((0,), [5], 1, 1) == (1,)
    empty = joined([0] * 10, 3, 1)  # no data: below any threshold, shuffled by bucket number
    assert sorted(empty.count(x) for x in range(3)) == [3, 3, 4]
    assert auto_balance(empty, [0] * 10, 3, enabled=True) == empty


def test_bad_maps_are_refused() -> None:
    with pytest.raises(ValueError, match="owners but"):
        member_weights((0, 0), [1], 1)
    with pytest.raises(ValueError, match="negative"):
        member_weights((0,), [-1], 1)
    with pytest.raises(ValueError, match="cache size"):
        join((0,), [1], 1, 0)
