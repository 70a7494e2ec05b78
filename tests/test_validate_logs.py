"""`tidemark validate LOG --mapping MAP`: event logs that observe only part of the state, checked by TLC.

The logs are written by the Java update counter of examples/java (no code shared with impl/), mapped by
examples/java/events.mapping.json: a correct run is explained, a run of a broken variant is not, and the
event named is the first one where its log departs from the correct run's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.kit.logs import SCHEMA_PATH, read_log, read_mapping, schema_text, validate_log
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import to_itf

MAPPING = Path("examples/java/events.mapping.json")
JAVA = "examples/java/run"
SEED = 3  # a run in which two ranges are committed out of order, where no-out-of-order-tracking shows


def test_the_committed_schema_is_the_mappings() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "run python -m tidemark.conformance.kit.logs"
    )


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_an_event_without_a_field_the_mapping_needs_names_the_line_and_the_mapping_place(
    tmp_path: Path,
) -> None:
    log = _write(tmp_path / "log.jsonl", [{"event": "restart", "node": "b", "lwm": 0}, {"event": "commit"}])
    with pytest.raises(TidemarkError) as error:
        read_log(log, read_mapping(MAPPING), str(MAPPING))
    assert error.value.location == "line 2"
    assert "events.commit.action.copy" in error.value.message


def test_optional_fields_drop_their_constraint(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", [{"event": "commit", "node": "b", "start": 0, "delta": 1, "lwm": 1}])
    [event] = read_log(log, read_mapping(MAPPING), str(MAPPING))
    assert event.action is not None and "result" not in event.action  # "$result?": not logged here
    assert event.observed == (("counter", ("b", "lwm"), 1),)


def test_an_unknown_kind_of_event_is_bad_input(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", [{"event": "split-brain"}])
    with pytest.raises(TidemarkError, match="'split-brain' is not in the mapping") as error:
        read_log(log, read_mapping(MAPPING), str(MAPPING))
    assert error.value.location == "line 1, event"


@pytest.mark.parametrize(
    ("mapping", "location"),
    [
        ({"spec": "UpdateCounter", "events": {}}, "events"),
        (
            {"spec": "UpdateCounter", "events": {"a": {"observe": [{"variable": "counter"}]}}},
            "events.a.observe[0].value",
        ),
        (
            {"spec": "UpdateCounter", "events": {"a": {"observe": [{"variable": "cnt", "value": 1}]}}},
            "events.a.observe[0].variable",
        ),
        ({"spec": "UpdateCounter", "events": {"a": {"action": {"copy": "p"}}}}, "events.a.action"),
    ],
)
def test_a_bad_mapping_is_reported_at_its_place(
    tmp_path: Path, mapping: dict[str, object], location: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "map.json"
    path.write_text(json.dumps(mapping), encoding="utf-8")
    log = _write(tmp_path / "log.jsonl", [{"event": "a"}])
    assert main(["validate", str(log), "--mapping", str(path)]) == 2
    assert f"{path}, {location}:" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# Logs of the Java implementation, validated by TLC.

needs_java = pytest.mark.skipif(shutil.which("javac") is None, reason="the Java example needs javac (a JDK)")


def _java_log(path: Path, bug: str | None = None, steps: int = 40) -> Path:
    constants = read_config(Path(read_mapping(MAPPING).config or "")).constants
    command = [JAVA, "--events", str(steps), "--seed", str(SEED), "--constants"]
    command += [json.dumps({name: to_itf(value) for name, value in constants.items()})]
    command += ["--bug", bug] if bug else []
    path.write_bytes(subprocess.run(command, check=True, capture_output=True, timeout=120).stdout)
    return path


@pytest.fixture(scope="module")
def correct(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _java_log(tmp_path_factory.mktemp("logs") / "correct.jsonl")


@pytest.mark.tlc
@needs_java
def test_a_log_of_the_java_implementation_is_explained(correct: Path) -> None:
    report = validate_log(correct, MAPPING)
    lines = correct.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 20
    assert report.holds and report.explained == report.events == len(lines)


@pytest.mark.tlc
@needs_java
def test_a_log_of_a_broken_variant_is_rejected_where_it_departs(correct: Path, tmp_path: Path) -> None:
    broken = _java_log(tmp_path / "broken.jsonl", bug="no-out-of-order-tracking")
    ours, theirs = correct.read_text().splitlines(), broken.read_text().splitlines()
    departs = next(n for n, (a, b) in enumerate(zip(ours, theirs, strict=False), start=1) if a != b)
    report = validate_log(broken, MAPPING)
    assert report.rejection is not None and report.explained == departs - 1
    assert report.rejection.line == departs and report.rejection.candidates >= 1
    event = json.loads(theirs[departs - 1])
    assert f"counter.{event['node']}.lwm" in report.rejection.diff[0]
    assert f"the log says {event['lwm']}" in report.rejection.diff[0]


@pytest.mark.tlc
@needs_java
def test_a_log_with_one_event_altered_is_rejected_at_that_event(
    correct: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.loads(line) for line in correct.read_text().splitlines()]
    altered = max(n for n, line in enumerate(lines) if line["event"] in ("commit", "rollback"))
    lines[altered]["lwm"] += 1
    log = _write(tmp_path / "altered.jsonl", lines)
    assert main(["validate", str(log), "--mapping", str(MAPPING), "--json"]) == 1
    output = json.loads(capsys.readouterr().out)
    assert output["explained"] == altered and output["rejection"]["line"] == altered + 1
    assert output["rejection"]["candidate_states"], "the states the system may be in are shown"


@pytest.mark.tlc
def test_an_observation_takes_no_step(tmp_path: Path) -> None:
    mapping = json.loads(MAPPING.read_text(encoding="utf-8"))
    mapping["events"]["report"] = {
        "observe": [{"variable": "counter", "path": ["$node", "hwm"], "value": "$hwm"}]
    }
    path = tmp_path / "map.json"
    path.write_text(json.dumps(mapping), encoding="utf-8")
    reserve = {"event": "reserve", "node": "p", "start": 0, "delta": 1, "hwm": 1}
    good = _write(tmp_path / "good.jsonl", [reserve, {"event": "report", "node": "p", "hwm": 1}])
    assert validate_log(good, path).holds
    bad = _write(tmp_path / "bad.jsonl", [reserve, {"event": "report", "node": "b", "hwm": 1}])
    report = validate_log(bad, path)
    assert report.explained == 1 and report.rejection is not None
    assert report.rejection.reason == "no candidate state shows what the event observes"
    assert report.rejection.diff == ["counter.b.hwm: the spec has 0, the log says 1"]
