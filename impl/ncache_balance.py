"""NCache's data-size balancing of the distribution map: which buckets a member gives a joiner, by their
bytes, and the automatic data load balancing of a member whose data leaves the band (off by default).

A map here is `owners`: per bucket the index of its owner (members 0..n-1 in join order); `weights`: per
bucket its data size in bytes, as the members share them in their bucket statistics. impl/ncache.py's
`NCacheCluster` (the spec's state machine) counts entries and always picks lightest first; this module is
the map-level choice NCache's coordinator makes, used by the distribution lab.

Join (NCache's `DistributeHashMap.BalanceBuckets`): the share is buckets // (n + 1) and each member gives
the joiner what it holds beyond the share, so the joiner gets every member's excess and may end above the
share (55 buckets where the share is 15 when the 64th member joins: 55 members hold 16). A member lays
its buckets out as a matrix: sorted by weight (then number), in rows of `give` = held - share columns.
Below the threshold - no member holds more than 10 % of the cluster's configured cache size (the size per
member x the members) - the data is too small to weigh and the member gives one bucket per column along
a diagonal of the matrix (NCache's "shuffle": the given buckets spread over the weight ranks, where the
reference notes say "at random"). Above it, a member gives away its part of the joiner's due: the joiner
should get total / (n + 1) bytes, each member giving in proportion to the data it holds. A single row
within a cushion of 10 % of that target is given whole; else rows are combined by pairs (a row with a
prefix of another's columns swapped in) and the combination closest to the target wins.

Automatic load balancing (NCache's `BalanceNodeMgr.BalanceNodes`, run periodically when enabled): a
member whose data exceeds the average by more than the threshold (60 %) is the donor; each member below
the average takes a part of the excess in proportion to what it misses, by swapping buckets with the donor
(the donor's heaviest for the taker's lightest, only when that gains) until the part is met within a 10 %
cushion. Bucket counts do not change, only which buckets each member holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from math import ceil

WEIGHT_THRESHOLD_PERCENT = 10  # of the cache size: below it a join does not weigh the buckets
CUSHION_PERCENT = 10  # a selection within 10 % of its target is good enough
AUTO_BALANCE_PERCENT = 60  # above the average data per member by more than this: rebalance

Owners = tuple[int, ...]


def member_weights(owners: Sequence[int], weights: Sequence[int], members: int) -> list[int]:
    """Bytes per member."""
    if len(owners) != len(weights):
        raise ValueError(f"{len(owners)} owners but {len(weights)} weights")
    if any(w < 0 for w in weights):
        raise ValueError("weights must not be negative")
    load = [0] * members
    for owner, weight in zip(owners, weights, strict=True):
        load[owner] += weight
    return load


def _rows(held: list[int], weights: Sequence[int], give: int) -> list[list[int]]:
    """The member's buckets by weight (then number), in rows of `give` columns; the last may be short."""
    ranked = sorted(held, key=lambda b: (weights[b], b))
    return [ranked[i : i + give] for i in range(0, len(ranked), give)]


def shuffle_select(rows: list[list[int]], give: int) -> list[int]:
    """One bucket per column along the diagonal, row 0 again after the last row or a short row's gap."""
    chosen: list[int] = []
    row = 0
    for col in range(give):
        if row == len(rows) or col >= len(rows[row]):
            row = 0
        chosen.append(rows[row][col])
        row += 1
    return chosen


def weight_select(rows: list[list[int]], weights: Sequence[int], give: int, target: int) -> list[int]:
    """`give` buckets whose weight is closest to `target`: a whole row within the cushion, else the best
    row with a prefix of another row's columns swapped in (a short row's gaps filled from row 0)."""
    full = [row + rows[0][len(row) : give] for row in rows]
    cushion = ceil(target * CUSHION_PERCENT / 100)
    for row in full:
        if abs(sum(weights[b] for b in row) - target) <= cushion:
            return row
    best, distance = full[0], abs(sum(weights[b] for b in full[0]) - target)
    for a, b in combinations(range(len(full)), 2):
        for prefix in range(1, give + 1):
            candidate = full[b][:prefix] + full[a][prefix:]
            if len(set(candidate)) < give:
                continue
            gap = abs(sum(weights[x] for x in candidate) - target)
            if gap < distance:
                best, distance = candidate, gap
    return best


def join(owners: Sequence[int], weights: Sequence[int], members: int, cache_size: int) -> Owners:
    """The map after member `members` (the next index) joins a cluster of `members` members whose
    configured cache size per member is `cache_size` bytes."""
    if members < 1 or cache_size < 1:
        raise ValueError("need at least one member and a positive cache size")
    load = member_weights(owners, weights, members)
    total = sum(load)
    share = len(owners) // (members + 1)
    # the threshold is 10 % of the cluster's configured size (cache size per member x members)
    weigh = any(w > cache_size * members * WEIGHT_THRESHOLD_PERCENT // 100 for w in load)
    result = list(owners)
    for x in range(members):
        held = [b for b, o in enumerate(owners) if o == x]
        give = len(held) - share
        if give <= 0:
            continue
        rows = _rows(held, weights, give)
        if weigh:
            # the joiner's due, total / (n + 1), taken from each member in proportion to its data
            target = ceil(total / (members + 1) * load[x] / total)
            chosen = weight_select(rows, weights, give, target)
        else:
            chosen = shuffle_select(rows, give)
        for b in chosen:
            result[b] = members
    return tuple(result)


def joined(weights: Sequence[int], members: int, cache_size: int) -> Owners:
    """The map after members 0..members-1 joined one by one, the data (`weights`) already loaded."""
    owners: Owners = (0,) * len(weights)
    for n in range(1, members):
        owners = join(owners, weights, n, cache_size)
    return owners


def overloaded(
    owners: Sequence[int], weights: Sequence[int], members: int, percent: int = AUTO_BALANCE_PERCENT
) -> list[int]:
    """Members whose data exceeds the average per member by more than `percent`, heaviest first."""
    load = member_weights(owners, weights, members)
    average = sum(load) // members
    if average == 0:
        return []
    above = [x for x in range(members) if (load[x] - average) * 100 // average > percent]
    return sorted(above, key=lambda x: (-load[x], x))


def _swap(donor: list[int], taker: list[int], weights: Sequence[int], due: int) -> None:
    """Swap buckets in place: the taker's lightest for the donor's heaviest while it gains, until `due`
    bytes moved within the cushion."""
    cushion = due * CUSHION_PERCENT // 100
    moved = 0
    used: set[int] = set()
    donor.sort(key=lambda b: (weights[b], b))
    taker.sort(key=lambda b: (weights[b], b))
    for i, light in enumerate(taker):
        for j in range(len(donor) - 1, -1, -1):
            gain = weights[donor[j]] - weights[light]
            if gain <= 0 or j in used or moved + gain - due > cushion:
                continue
            moved += gain
            taker[i], donor[j] = donor[j], light
            used.add(j)
            break
        if abs(due - moved) <= cushion:
            return


def auto_balance(
    owners: Sequence[int],
    weights: Sequence[int],
    members: int,
    enabled: bool = False,
    percent: int = AUTO_BALANCE_PERCENT,
) -> Owners:
    """One run of automatic data load balancing (off by default: the map as it was): the heaviest member
    out of the band shares its excess with the members below the average."""
    donors = overloaded(owners, weights, members, percent) if enabled else []
    if not donors:
        return tuple(owners)
    load = member_weights(owners, weights, members)
    average = sum(load) // members
    donor = donors[0]
    held = {x: [b for b, o in enumerate(owners) if o == x] for x in range(members)}
    takers = [x for x in range(members) if load[x] < average]
    missing = sum(average - load[x] for x in takers)
    excess = load[donor] - average
    for x in takers:
        _swap(held[donor], held[x], weights, excess * (average - load[x]) // missing)
    result = list(owners)
    for x, buckets in held.items():
        for b in buckets:
            result[b] = x
    return tuple(result)
