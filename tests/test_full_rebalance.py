"""A full rebalance sends every entry of the partition, the smallest key (0) included.

The model once bounded a full rebalance by an exclusive "keys above `after`" that started at 0, so key 0
was never supplied and the demander owned the partition without it. These tests pin the boundary on the
implementation's supply step and on the shipped scenario, and show that the off-by-one (the bug zoo's
`full-rebalance-skips-key-0` mutant) loses the entry.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.conformance.scenarios import load_scenario, run_scenario
from tidemark.conformance.zoo.mutants import PME_MUTANTS
from tidemark.impl.pme import Demand, Mode, PmeCluster, PmeConfig, Supply
from tidemark.impl.wal import Entry

SCENARIO = Path("scenarios/full-rebalance-sends-key-0.json")


def _config(batch_size: int) -> PmeConfig:
    return PmeConfig(
        servers=("s1", "s2"),
        owners={0: ("s1", "s2")},
        transactions={"t1": frozenset({0}), "t2": frozenset({1})},
        batch_size=batch_size,
    )


def _supplier_with_keys_0_and_1(config: PmeConfig, cls: type[PmeCluster]) -> PmeCluster:
    """s1 holds keys 0 and 1 and s2 demands the partition in full mode, as the exchange would ask."""
    cluster = cls.initial(config)
    cluster.nodes["s1"].data.update({0: Entry("t1", 1), 1: Entry("t2", 2)})
    cluster.rebal = frozenset({Demand(0, "s2", "s1", Mode.FULL, cls.FULL_FIRST, 2)})
    return cluster


def _supplied_keys(cluster: PmeCluster) -> list[int]:
    """Supply batches until the last one; the keys in the order they were sent."""
    keys: list[int] = []
    while True:
        cluster = cluster.supply("s1", 0, "s2")
        (reply,) = (m for m in cluster.rebal if isinstance(m, Supply))
        keys += sorted(e.key for e in reply.entries)
        if reply.last:
            return keys
        cluster.rebal = frozenset({Demand(0, "s2", "s1", Mode.FULL, reply.first, reply.upto)})


@pytest.mark.parametrize("batch_size", [1, 2, 3])
def test_a_full_supply_starts_at_key_0_and_sends_each_key_once(batch_size: int) -> None:
    cluster = _supplier_with_keys_0_and_1(_config(batch_size), PmeCluster)
    assert _supplied_keys(cluster) == [0, 1]


def test_the_off_by_one_mutant_never_sends_key_0() -> None:
    mutant = PME_MUTANTS["full-rebalance-skips-key-0"]
    assert _supplied_keys(_supplier_with_keys_0_and_1(_config(1), mutant)) == [1]


def test_the_key_0_scenario_holds() -> None:
    result = run_scenario(load_scenario(SCENARIO))
    assert result.passed, [c for c in result.checks if not c.holds]
    assert result.idle_verify is not None and result.idle_verify.clean


def test_the_key_0_scenario_fails_with_the_off_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the full rebalance starting after key 0, the first batch (key 1) is the last: the rejoined
    copy owns the partition with the old value of key 0 while its counter covers the update, and
    idle_verify reports the hash conflict on s3."""
    monkeypatch.setattr(PmeCluster, "FULL_FIRST", PME_MUTANTS["full-rebalance-skips-key-0"].FULL_FIRST)
    result = run_scenario(load_scenario(SCENARIO))
    assert not result.passed
    assert {c.path for c in result.checks if not c.holds} >= {"steps[20].expect.s3.data"}
    assert {k: e.value for k, e in result.nodes["s3"].data.items()} == {0: "a0", 1: "a1"}
    assert result.nodes["s3"].partitions == {0: "OWNING"}
    assert result.idle_verify is not None and not result.idle_verify.clean
    assert set(result.idle_verify.hash_conflicts[0]) == {"s1", "s2", "s3"}
