"""tidemark's rendezvous affinity equals Ignite's RendezvousAffinityFunction on a seeded sample (the
million-case run is bench/bench_ignite_affinity.py)."""

from __future__ import annotations

import random

import pytest

from tidemark.conformance.systems.affinity_check import compare, random_case_set
from tidemark.conformance.systems.ignite import AffinityOracle

pytestmark = pytest.mark.ignite


def test_seeded_sample_has_no_difference() -> None:
    rng = random.Random(20)
    cases = 0
    kinds = set()
    with AffinityOracle() as oracle:
        while cases < 30_000:
            case = random_case_set(rng, 100)
            small = case.config.partitions <= 128 and len(case.nodes) <= 10
            assert compare(case, oracle.ask(case.request), reference=small) == []
            cases += case.cases
            kinds.add((case.config.backup_filter is not None, case.config.exclude_neighbors))
    assert kinds == {(False, False), (True, False), (False, True)}, "the sample must reach every mode"
