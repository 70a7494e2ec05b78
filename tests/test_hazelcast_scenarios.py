"""Scenario files of protocol hazelcast (impl/hazelcast.py): Hazelcast's own correctness tests in small
hold, a wrong expectation fails where it is, a step naming no message in flight stops the run, malformed
files are refused naming the field, and the diagram draws the messages and the promoted versions."""

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

DROPPED = Path("scenarios/hazelcast-anti-entropy-repairs-dropped-backups.json")
SYNC_OFF = Path("scenarios/hazelcast-reordered-backups-sync-disabled.json")
SHIFTED = Path("scenarios/hazelcast-owner-killed-versions-shifted.json")
HAZELCAST_SCENARIOS = sorted(
    p
    for p in Path("scenarios").glob("*.json")
    if json.loads(p.read_text(encoding="utf-8")).get("protocol") == "hazelcast"
)


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("path", HAZELCAST_SCENARIOS, ids=lambda p: p.stem)
def test_the_shipped_scenarios_hold(path: Path) -> None:
    result = run_scenario(load_scenario(path))
    assert result.passed, [c for c in result.checks if not c.holds] or result.failure
    assert len(result.checks) >= 15 and result.protocol == "hazelcast"


def test_five_scenarios_cover_hazelcasts_tests() -> None:
    assert [p.stem for p in HAZELCAST_SCENARIOS] == [
        "hazelcast-anti-entropy-repairs-dropped-backups",
        "hazelcast-destroyed-map-leaves-version-tables",
        "hazelcast-owner-killed-versions-shifted",
        "hazelcast-reordered-backups-sync-disabled",
        "hazelcast-reordered-backups-sync-enabled",
    ]


def test_a_wrong_expectation_fails_where_it_is(tmp_path: Path) -> None:
    data = _load(SYNC_OFF)
    data["expect"]["m2"]["dirty"] = {"map1": False}  # without permits the flag never clears
    result = _run(_write(tmp_path, data))
    assert result.failure is None and not result.passed
    assert [c.path for c in result.checks if not c.holds] == ["expect.m2.dirty.map1"]


def test_a_step_naming_no_message_in_flight_stops_the_run(tmp_path: Path) -> None:
    data = _load(DROPPED)
    data["steps"].insert(4, {"step": "Backup", "node": "m2", "ns": "map1", "put": 1})  # dropped just before
    result = _run(_write(tmp_path, data))
    assert not result.passed and result.failure is not None
    assert result.failure.startswith("steps[4]: Backup(node=m2, ns=map1, put=1) is not enabled here")


@pytest.mark.parametrize(
    ("damage", "location", "message"),
    [
        (lambda d: d["steps"][0].pop("key"), "steps[0].key", "Put needs key"),
        (lambda d: d["steps"][0].update(put=3), "steps[0].put", "Put takes no put"),
        (lambda d: d["steps"][0].update(ns="map9"), "steps[0]", "unknown namespace 'map9'"),
        (lambda d: d["expect"]["m2"].update(counters={"0": {"lwm": 1}}), "expect.m2.counters", "no counters"),
        (lambda d: d["expect"]["m2"]["versions"].update(map1=[3]), "expect.m2.versions.map1", "1 versions"),
        (lambda d: d["cluster"].update(backups=3), "cluster.backups", "3 backups"),
    ],
)
def test_malformed_hazelcast_scenarios_are_refused(
    damage: Any, location: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = copy.deepcopy(_load(DROPPED))
    damage(data)
    path = _write(tmp_path, data)
    with pytest.raises(TidemarkError) as caught:
        load_scenario(path)
    assert caught.value.location == location and message in caught.value.message
    assert main(["scenario", str(path)]) == 2
    assert location in capsys.readouterr().err


def test_ignite_protocols_refuse_hazelcast_expectations(tmp_path: Path) -> None:
    data = _load(Path("scenarios/figure1-backup-reordering.json"))
    data["expect"]["s2"]["permits"] = 1
    with pytest.raises(TidemarkError, match="has no replica sync permits"):
        load_scenario(_write(tmp_path, data))


def test_the_diagram_draws_lost_backups_and_the_promoted_versions() -> None:
    dropped = mermaid_diagram(run_scenario(load_scenario(DROPPED)))
    assert "m1-xm3: 8. Backup r2 map1[2]=3 v(3,3) (lost)" in dropped
    assert "m3->>m1: 15. SyncRequest r2 {map1}" in dropped
    shifted = mermaid_diagram(run_scenario(load_scenario(SHIFTED)))
    assert "replica 2, permits 10 map1 v(0,2) {0: 2} → owner, permits 10 map1 v(2,2) {0: 2}" in shifted
    assert "crashed: memory lost" in shifted and "WAL kept" not in shifted
