"""Every Hazelcast scenario on real Hazelcast 5.7 members, side by side with tidemark's implementation: it
passes there (each expectation holds on the members or the file's notes say why not, each difference from
impl is one of Hazelcast's known behaviours). One harness JVM for all of them (fresh members each): about
one minute. Also the command's JSON and a bad command's clear error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.scenarios import load_scenario
from tidemark.conformance.scenarios.adapters.hazelcast_real import shared_harness
from tidemark.conformance.scenarios.compare import side_by_side
from tidemark.conformance.systems.hazelcast import HazelcastHarness, HazelcastInputError
from tidemark.conformance.systems.hazelcast_differences import explain

pytestmark = pytest.mark.hazelcast

SCENARIOS = sorted(Path("scenarios").glob("hazelcast-*.json"))


@pytest.fixture(scope="module")
def harness() -> Iterator[HazelcastHarness]:
    with shared_harness() as h:
        yield h


def test_there_are_hazelcast_scenarios() -> None:
    assert len(SCENARIOS) >= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_hazelcast_scenario_passes_on_real_members(path: Path, harness: HazelcastHarness) -> None:
    scenario = load_scenario(path)
    result = side_by_side(scenario, "hazelcast", explain)
    failing = [f"{c.path}: expected {c.expected!r}, Hazelcast {c.actual!r}" for c in result.failing_checks]
    unexplained = [f"{d.where}: impl {d.impl!r}, Hazelcast {d.real!r}" for d in result.unexplained]
    assert result.real.failure is None, result.real.failure
    assert not failing, "\n".join(failing)
    assert not unexplained, "\n".join(unexplained)
    assert result.passed
    assert result.real.system == "hazelcast" and len(result.observed) == len(scenario.steps) + 1


def test_the_command_shows_both_runs_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], harness: HazelcastHarness
) -> None:
    out = tmp_path / "ae.mmd"
    path = "scenarios/hazelcast-anti-entropy-repairs-dropped-backups.json"
    code = main(["scenario", path, "--system", "hazelcast", "--json", "--out", str(out)])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["passed"] and answer["run"] and answer["holds"] and answer["exit_code"] == 0
    assert answer["impl"]["system"] == "impl" and answer["hazelcast"]["system"] == "hazelcast"
    last = answer["observed"][-1]["hazelcast"]["m3"]
    assert last["map1"]["versions"][:2] == [0, 3] and last["map1"]["dirty"] is False
    # the owner's permit comes back as it takes the sync request: a known difference, not a finding
    assert "offloaded replication" in answer["first_difference"]["why"]
    assert Path(answer["diagram"]).exists() and Path(answer["page"]).exists()


def test_a_command_the_harness_refuses_is_bad_input(harness: HazelcastHarness) -> None:
    with pytest.raises(HazelcastInputError) as error:
        harness.call("put", ns="map1")
    assert error.value.exit_code == 2
