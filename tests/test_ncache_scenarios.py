"""Scenario files of protocol ncache (impl/ncache.py): the seed's pictures hold, a wrong expectation fails
where it is, a step that is not enabled stops the run, malformed files are refused naming the field, and
the diagram draws the writes, pulls and replications."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_scenario import _run, _write

from tidemark.conformance.cli.main import main
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios import load_scenario, run_scenario
from tidemark.conformance.scenarios.views.diagram import mermaid_diagram

JOIN = Path("scenarios/ncache-three-nodes-join.json")
LEAVE = Path("scenarios/ncache-node-leaves-replica-serves.json")
REPLAYED = Path("scenarios/ncache-write-during-transfer-replayed.json")
LOST = Path("scenarios/ncache-async-abrupt-leave-loses-write.json")
EXITS = ("node-comes-back", "timeout", "second-failure")
MAINTENANCE = [Path(f"scenarios/ncache-maintenance-{exit}.json") for exit in EXITS]
SPLIT = Path("scenarios/ncache-split-brain-loser-discarded.json")
SPLIT_TWO = Path("scenarios/ncache-split-brain-two-cut-rejoin.json")
NCACHE_SCENARIOS = sorted(
    p
    for p in Path("scenarios").glob("*.json")
    if json.loads(p.read_text(encoding="utf-8")).get("protocol") == "ncache"
)


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_the_seeds_pictures_are_shipped() -> None:
    assert sorted([JOIN, LEAVE, REPLAYED, LOST, *MAINTENANCE, SPLIT, SPLIT_TWO]) == NCACHE_SCENARIOS


@pytest.mark.parametrize("path", NCACHE_SCENARIOS, ids=lambda p: p.stem)
def test_the_shipped_scenarios_hold(path: Path) -> None:
    result = run_scenario(load_scenario(path))
    assert result.passed, [c for c in result.checks if not c.holds] or result.failure
    assert len(result.checks) >= 8 and result.protocol == "ncache"


def test_a_wrong_expectation_fails_where_it_is(tmp_path: Path) -> None:
    data = _load(LOST)
    data["expect"]["n2"]["entries"]["active"] = {"0": 1}  # the acknowledged write is gone
    result = _run(_write(tmp_path, data))
    assert result.failure is None and not result.passed
    assert [c.path for c in result.checks if not c.holds] == ["expect.n2.entries.active"]


def test_a_step_that_is_not_enabled_stops_the_run(tmp_path: Path) -> None:
    data = _load(REPLAYED)
    data["steps"].insert(1, {"step": "EndTransfer", "bucket": 0})  # not started yet
    result = _run(_write(tmp_path, data))
    assert not result.passed and result.failure is not None
    assert result.failure.startswith("steps[1]: EndTransfer(bucket=0) is not enabled here")


@pytest.mark.parametrize(
    ("damage", "location", "message"),
    [
        (lambda d: d["steps"][2].pop("graceful"), "steps[2].graceful", "Leave needs graceful"),
        (lambda d: d["steps"][1].update(bucket=0), "steps[1].bucket", "Write takes no bucket"),
        (lambda d: d["expect"]["n2"].update(versions={"map1": [1]}), "expect.n2.versions", "no version"),
        (lambda d: d["expect"]["n2"]["entries"].update(map1={}), "expect.n2.entries.map1", "unknown store"),
        (lambda d: d["cluster"].update(backups=1), "cluster", "one replica per member"),
    ],
)
def test_malformed_ncache_scenarios_are_refused(
    damage: Any, location: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = copy.deepcopy(_load(LOST))
    damage(data)
    path = _write(tmp_path, data)
    with pytest.raises(TidemarkError) as caught:
        load_scenario(path)
    assert caught.value.location == location and message in caught.value.message
    assert main(["scenario", str(path)]) == 2
    assert location in capsys.readouterr().err


def test_other_protocols_refuse_ncache_knobs(tmp_path: Path) -> None:
    data = _load(Path("scenarios/figure1-backup-reordering.json"))
    data["cluster"]["sync"] = False
    with pytest.raises(TidemarkError, match="has no replication mode"):
        load_scenario(_write(tmp_path, data))


def test_the_diagram_draws_writes_pulls_and_replication() -> None:
    replayed = mermaid_diagram(run_scenario(load_scenario(REPLAYED)))
    assert "c1->>n1: 2. write 0=1 (bucket 0)" in replayed
    assert "n1->>n2: 3. bucket 0: log (0) replayed, owner switched" in replayed
    leave = mermaid_diagram(run_scenario(load_scenario(LEAVE)))
    assert "n3->>n1: 12. bucket 2 from the replica" in leave
    assert "WAL kept" not in leave


def test_maintenance_exit_without_its_member_is_refused(tmp_path: Path) -> None:
    data = _load(MAINTENANCE[0])
    rejoin = next(i for i, s in enumerate(data["steps"]) if s["step"] == "MaintenanceRejoin")
    data["steps"][rejoin]["node"] = "n1"  # n2 is the member stopped for maintenance
    result = _run(_write(tmp_path, data))
    assert not result.passed and result.failure is not None
    assert result.failure.startswith(f"steps[{rejoin}]: MaintenanceRejoin(node=n1) is not enabled here")


def test_the_second_failure_loses_what_only_the_stopped_member_held() -> None:
    result = run_scenario(load_scenario(MAINTENANCE[2]))
    assert result.passed
    diagram = mermaid_diagram(result)
    assert "n2->>n1: 10. stopped for maintenance: state transfer halted" in diagram
    assert "c1->>n3: 11. write 2147483647=3 (bucket 2)" in diagram  # served from n2's replica on n3
