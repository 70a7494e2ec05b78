"""The random-walk campaign: seeded and deterministic, silent on the fixed protocol, it finds Ignite's
data-loss paths without the fixes and each zoo entry of issue 20 in its mutant, shrinks a failure to a
scenario that replays it, and runs the same walks on Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_output_schema

from tidemark.conformance.campaign import CampaignReport, Shape, run_campaign, write_scenario
from tidemark.conformance.cli import main as cli
from tidemark.conformance.reach import BOUNDARIES
from tidemark.conformance.scenarios import load_scenario, run_scenario

NEW_ENTRIES = [
    "wal-threshold-inclusive",
    "activation-without-demotion",
    "renting-keeps-counter",
    "merged-left-finalizes-joiner",
]


def _without_timing(report: CampaignReport) -> CampaignReport:
    return report.model_copy(update={"seconds": 0.0, "master": None})


def test_the_same_seed_gives_the_same_walks() -> None:
    first = run_campaign(walks=40, steps=60, seed=7)
    assert _without_timing(first) == _without_timing(run_campaign(walks=40, steps=60, seed=7))
    assert first.walks == 40 and first.steps > 40 * 10 and first.corpus > 10
    assert set(first.reached) == set(BOUNDARIES)
    assert first != run_campaign(walks=40, steps=60, seed=8)


def test_the_fixed_protocol_breaks_no_invariant() -> None:
    report = run_campaign(walks=150, steps=100, seed=1)
    assert report.holds and report.first_failure is None
    # The walks reach the situations issue 20 is about.
    assert all(report.reached[b] > 0 for b in BOUNDARIES), report.reached


def test_drawn_configurations_alone_reach_them_too_but_rarely() -> None:
    report = run_campaign(walks=150, steps=100, seed=1, corpus=(), shape=Shape(baseline_changes=1.0))
    assert report.holds and report.corpus == 0
    assert report.reached["two failures"] > report.reached["merged join+left"] > 0


@pytest.mark.parametrize("mutant", NEW_ENTRIES)
def test_each_new_zoo_entry_is_caught(mutant: str) -> None:
    report = run_campaign(walks=1500, steps=120, mutant=mutant, until_failure=100)
    assert report.failures > 0 and report.first_failure is not None, mutant
    assert report.walks < 1500


def test_ignites_protocol_loses_data_and_the_failure_shrinks_to_a_scenario(tmp_path: Path) -> None:
    report = run_campaign(walks=200, steps=100, seed=0, fixes=(), until_failure=50)
    failure = report.first_failure
    assert failure is not None and report.fixes == []
    path = write_scenario(report, tmp_path)
    data = json.loads(path.read_text())
    assert len(data["steps"]) <= len(failure.steps) and data["fixes"] == []
    assert data["steps"][-1]["note"].startswith("breaks " + failure.violation.split(":")[0])
    # The shrunk scenario replays the failing run exactly: its expectations are what the run ended with.
    result = run_scenario(load_scenario(path))
    assert result.passed, [c for c in result.checks if not c.holds]


def test_cli_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["campaign", "--walks", "30", "--steps", "50", "--local", "--json", "--out", str(tmp_path)]
    assert cli.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["walks"], report["failures"], report["scenario"]) == (30, 0, None)
    assert report["holds"] is True and report["exit_code"] == 0
    assert_output_schema("campaign", report)
    assert cli.main([*argv[:-3], "--mutant", "nope"]) == 2


@pytest.mark.spark
def test_the_walks_are_the_same_on_spark() -> None:
    from tidemark.conformance.spark import spark_session

    with spark_session() as spark:
        on_spark = run_campaign(walks=30, steps=50, seed=3, spark=spark)
    assert on_spark.master is not None
    assert _without_timing(on_spark) == _without_timing(run_campaign(walks=30, steps=50, seed=3))
