"""`--junit FILE`: the verdicts as JUnit XML that a JUnit reader (junitparser) parses, one test case per
spec, zoo entry or expectation, failures where a verdict does not hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from tidemark.conformance.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "UpdateCounter.tla"
SMALL = ROOT / "tests" / "models" / "UpdateCounter-small.cfg"
SCENARIO = ROOT / "scenarios" / "figure2-outdated-node-rejoins.json"


def cases(path: Path) -> dict[str, list[str]]:
    """Each test case's name -> the messages of its failures."""
    xml = JUnitXml.fromfile(str(path))
    return {
        case.name: [r.message for r in case.result if isinstance(r, Failure)]
        for suite in xml
        for case in suite
    }


def test_scenario_expectations_are_test_cases(tmp_path: Path) -> None:
    junit = tmp_path / "scenario.xml"
    assert main(["scenario", str(SCENARIO), "--out", str(tmp_path / "s.mmd"), "--junit", str(junit)]) == 0
    found = cases(junit)
    expectations = sum(len(step.get("expect", {})) > 0 for step in json.loads(SCENARIO.read_text())["steps"])
    assert "steps" in found and len(found) > expectations >= 1
    assert all(not failures for failures in found.values())


def test_a_failing_expectation_is_a_failure(tmp_path: Path) -> None:
    scenario = json.loads(SCENARIO.read_text())
    step = next(s for s in scenario["steps"] if s.get("expect", {}).get("s1", {}).get("counters"))
    step["expect"]["s1"]["counters"]["0"]["lwm"] = 99  # no counter of the figure reaches it
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(scenario))
    junit = tmp_path / "broken.xml"
    code = main(["scenario", str(broken), "--out", str(tmp_path / "b.mmd"), "--junit", str(junit)])
    failed = {name: messages for name, messages in cases(junit).items() if messages}
    assert code == 1
    [(name, [message])] = failed.items()
    at = scenario["steps"].index(step)
    assert name == f"steps[{at}].expect.s1.counters[0].lwm" and "expected 99" in message


@pytest.mark.tlc
@pytest.mark.parametrize(("mutant", "holds"), [(None, True), ("no-out-of-order-tracking", False)])
def test_conform_is_one_test_case(tmp_path: Path, mutant: str | None, holds: bool) -> None:
    junit = tmp_path / "conform.xml"
    argv = ["conform", str(SPEC), "--config", str(SMALL), "--local", "--run-dir", str(tmp_path / "run")]
    argv += ["--junit", str(junit), "--heap", "256m", *(["--mutant", mutant] if mutant else [])]
    assert main(argv) == (0 if holds else 1)
    [(name, failures)] = cases(junit).items()
    assert name == "conform"
    assert (failures == []) is holds
    assert holds or "edge mismatches" in failures[0]


def test_junit_must_be_a_file_in_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", str(SCENARIO), "--junit", str(tmp_path / "nowhere" / "x.xml")]) == 2
    assert "not a writable directory" in capsys.readouterr().err
