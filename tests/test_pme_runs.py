"""impl/pme.py's `runs`: counters as maximal ranges (start, delta), the shape of the gaps an exchange
closes. The standard models never close a hole of two consecutive counters (docs/mutation.md), so the
merging is pinned here."""

from __future__ import annotations

import pytest

from tidemark.impl.pme import runs


@pytest.mark.parametrize(
    ("counters", "expected"),
    [
        (set(), []),
        ({1}, [(0, 1)]),
        ({3, 4, 6}, [(2, 2), (5, 1)]),
        ({5, 3, 4, 7, 8, 9}, [(2, 3), (6, 3)]),
        ({1, 3, 5}, [(0, 1), (2, 1), (4, 1)]),
    ],
)
def test_counters_become_maximal_ranges_in_order(counters: set[int], expected: list[tuple[int, int]]) -> None:
    assert runs(counters) == expected
