"""What real Ignite 2.18 settled (docs/findings/), pinned on impl/pme.py: each finding's scenario holds, and
fails on the zoo mutant that brings the old behaviour back; the scenarios where Ignite loses data break
an invariant on Ignite's protocol and none with the proposed fixes; a checkpoint persists what an
exchange's absolute update did; the exchange reports what Ignite logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tidemark.conformance.invariants import violations
from tidemark.conformance.scenarios import load_scenario, run_scenario
from tidemark.conformance.scenarios.adapters.pme import PmeSystem
from tidemark.conformance.scenarios.format import ScenarioFile, step_text
from tidemark.impl.cluster import Fix, StepNotEnabled, parse_step
from tidemark.impl.pme import Copy, PartState, PmeCluster, PmeConfig

SCENARIOS = Path("scenarios")

# A finding's scenario and the mutant that puts back what tidemark did before the finding.
PINNED = {
    "join-merged-with-left": "merged-left-finalizes-joiner",
    "moving-renting-moving": "renting-keeps-counter",
    "wal-threshold-strict": "wal-threshold-inclusive",
    "all-owners-fail-reactivation": "activation-without-demotion",
}
# The scenarios where Ignite's protocol loses data, and the invariant that says so first.
LOSSES = {
    "rollback-range-reused": "UniqueCounters",
    "merged-left-keeps-gaps": "PrimaryHwmCovers",
    "activation-keeps-gaps": "IdleVerifyClean",
}


def _load(name: str, **changes: Any) -> ScenarioFile:
    data = json.loads((SCENARIOS / f"{name}.json").read_text(encoding="utf-8"))
    return ScenarioFile.model_validate({**data, **changes})


@pytest.mark.parametrize(("name", "mutant"), PINNED.items())
def test_a_finding_holds_and_its_old_behaviour_breaks_it(name: str, mutant: str) -> None:
    assert run_scenario(load_scenario(SCENARIOS / f"{name}.json")).passed
    broken = run_scenario(_load(name, mutant=mutant))
    assert not broken.passed
    assert any(not c.holds for c in broken.checks)


def _first_violations(scenario: ScenarioFile) -> tuple[int, list[str]]:
    """Run the scenario's steps on its cluster: the first step after which an invariant fails, and which
    (-1 and [] when none does; a step the cluster refuses ends the run)."""
    cluster = PmeSystem(scenario).cluster
    for index, entry in enumerate(scenario.steps):
        if entry.refused:
            continue
        step = parse_step(step_text(entry))
        try:
            before, cluster = cluster, cluster.apply(step)
        except StepNotEnabled:
            return -1, []
        assert isinstance(cluster, PmeCluster)
        found = violations(cluster, before, step)
        if found:
            return index, found
    return -1, []


@pytest.mark.parametrize(("name", "invariant"), LOSSES.items())
def test_ignites_protocol_loses_data_and_the_fixes_do_not(name: str, invariant: str) -> None:
    index, found = _first_violations(_load(name))
    assert index >= 0 and found[0].startswith(invariant + ":"), found
    fixed = _load(name, fixes=[f.value for f in Fix])
    assert _first_violations(fixed) == (-1, [])
    assert not run_scenario(fixed).passed  # the fixed cluster no longer ends where Ignite's does


def test_a_checkpoint_keeps_what_an_absolute_update_did() -> None:
    """update(max) moves LWM without a WAL record: a restart finds it only in a checkpoint's meta."""
    config = PmeConfig(servers=("s1", "s2"), owners={0: ("s1", "s2")}, transactions={"t1": frozenset({0})})
    cluster = PmeCluster.initial(config)
    cluster.nodes["s2"].counters[0].update_lwm(3)  # as a full message does
    checkpointed = cluster.apply(parse_step("Checkpoint(node=s2)"))
    assert parse_step("Checkpoint(node=s2)") not in checkpointed.enabled()  # nothing new to persist
    for start, lwm in ((cluster, 0), (checkpointed, 3)):
        restarted = start.apply(parse_step("NodeFail(node=s2)")).apply(parse_step("Restart(node=s2)"))
        assert restarted.nodes["s2"].counters[0].lwm == lwm


def test_a_primary_with_a_moving_copy_locks_nothing() -> None:
    config = PmeConfig(servers=("s1", "s2"), owners={0: ("s1", "s2")}, transactions={"t1": frozenset({0})})
    cluster = PmeCluster.initial(config).apply(parse_step("TxStart(tx=t1)"))
    assert parse_step("Lock(tx=t1, node=s1)") in cluster.enabled()
    moving = cluster.copy()
    moving.states["s1"][0] = Copy(PartState.MOVING, 0)
    assert parse_step("Lock(tx=t1, node=s1)") not in moving.enabled()


def test_the_exchange_reports_what_ignite_logs() -> None:
    merged = run_scenario(load_scenario(SCENARIOS / "merged-left-keeps-gaps.json"))
    failed = [c for c in merged.checks if ".exchange." in c.path]
    assert failed and all(c.holds for c in failed)
    assert any(c.path.endswith("update_failures") and c.actual == {"0": ["s3"]} for c in failed)
