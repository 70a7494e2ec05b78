"""Scenario files: the shipped scenarios hold, bad files are refused naming the field, the outputs (timeline,
Mermaid diagram, HTML page) say what happened, and the page renders in headless chromium."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from conftest import headless_chromium

from tidemark.conformance.cli.main import main
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios import load_scenario, run_scenario, write_outputs
from tidemark.conformance.scenarios.adapters import SYSTEMS
from tidemark.conformance.scenarios.adapters.cluster import NAMED_ERRORS
from tidemark.conformance.scenarios.format import (
    SCHEMA_PATH,
    STEP_MODELS,
    HazelcastStep,
    NCacheStep,
    schema_text,
)
from tidemark.conformance.scenarios.protocols import HAZELCAST_STEPS, NCACHE_STEPS, PROTOCOLS
from tidemark.conformance.scenarios.result import ScenarioResult
from tidemark.conformance.scenarios.views.diagram import mermaid_diagram
from tidemark.conformance.scenarios.vocabulary import CounterName, ErrorName, ProtocolName
from tidemark.conformance.zoo.mutants import CLUSTER_COUNTERS, COUNTER_MUTANTS
from tidemark.impl.cluster import STEPS
from tidemark.impl.counter import PartitionUpdateCounter
from tidemark.impl.pme import PME_STEPS

SCENARIOS = sorted(Path("scenarios").glob("*.json"))
FIGURE1 = Path("scenarios/figure1-backup-reordering.json")
NO_TRACKING = Path("scenarios/no-tracking-loses-updates.json")
ALL_KEYS = {"1": "v1", "2": "v2", "3": "v3", "4": "v4", "5": "v5"}


def _run(path: Path) -> ScenarioResult:
    return run_scenario(load_scenario(path))


def _write(tmp_path: Path, data: dict[str, Any], name: str = "scenario.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _figure1() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIGURE1.read_text(encoding="utf-8"))
    return data


def _counter(result: ScenarioResult, row: int, node: str) -> tuple[int, int, list[tuple[int, int]]]:
    view = result.timeline[row].nodes[node].counters[0]
    return view.lwm, view.hwm, view.items


# --- the shipped scenarios --------------------------------------------------------------------------------


def test_scenarios_are_shipped() -> None:
    names = {p.stem for p in SCENARIOS}
    assert {"figure1-backup-reordering", "no-tracking-loses-updates", "tracking-keeps-updates"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_shipped_scenario_holds(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run(path)
    assert result.failure is None
    assert [c.path for c in result.checks if not c.holds] == []
    assert len(result.checks) >= 10 and result.passed
    assert main(["scenario", str(path), "--out", str(tmp_path / "flow.mmd")]) == 0
    assert f"{result.name} (counter {result.counter}): holds" in capsys.readouterr().out


def test_figure1_shows_the_gap_on_the_reordered_backup_and_lwm_catching_up() -> None:
    result = _run(FIGURE1)
    rows = {row.step: i for i, row in enumerate(result.timeline)}
    t2_first = rows["BackupCommit(tx=t2, node=s2)"]
    t1_late = rows["BackupCommit(tx=t1, node=s2)"]
    assert t2_first < t1_late
    # Updates 4, 5 applied above the hole 1..3: LWM stays 0 and the item (3, 2) records them.
    assert _counter(result, t2_first, "s2") == (0, 0, [(3, 2)])
    assert _counter(result, t1_late - 1, "s2") == (0, 0, [(3, 2)])
    assert _counter(result, t1_late, "s2") == (5, 0, [])
    # The in-order backup never has an item; the primary reserved 1..5 at prepare.
    assert all(not row.nodes["s3"].counters[0].items for row in result.timeline)
    assert _counter(result, rows["Prepare(tx=t2, node=s1)"], "s1") == (0, 5, [])
    assert {n: v.data[4].cntr for n, v in result.nodes.items()} == {"s1": 4, "s2": 4, "s3": 4}


def test_without_tracking_the_restarted_primary_looks_complete_but_lost_updates() -> None:
    lost = _run(NO_TRACKING)
    s1, s2 = lost.nodes["s1"], lost.nodes["s2"]
    assert s1.state == "restarted" and s1.counters[0].lwm == s2.counters[0].lwm == 5
    assert {k: e.value for k, e in s1.data.items()} == {4: "v4", 5: "v5"}
    assert {k: e.value for k, e in s2.data.items()} == {int(k): v for k, v in ALL_KEYS.items()}
    # Equal LWMs: the rejoining copy stays OWNING and nothing rebalances the missing 1..3.
    assert s1.partitions == {0: "OWNING"}


def test_the_same_schedule_with_tracking_keeps_the_gap_and_fails_the_loss_expectations() -> None:
    scenario = load_scenario(NO_TRACKING)
    tracked = run_scenario(scenario.model_copy(update={"counter": "tracking"}))
    s1 = tracked.nodes["s1"]
    assert (s1.counters[0].lwm, s1.counters[0].items) == (0, [(3, 2)])
    assert s1.partitions == {0: "MOVING"}
    assert not tracked.passed and tracked.failure is None
    failing = {c.path for c in tracked.checks if not c.holds}
    assert failing == {
        "steps[16].expect.s1.counters[0].lwm",
        "steps[16].expect.s1.counters[0].items",
        "expect.s1.counters[0].lwm",
        "expect.s1.counters[0].items",
        "expect.s1.partitions[0]",
    }


# --- the format and its errors ----------------------------------------------------------------------------


def test_the_schema_file_is_generated_from_the_model() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "run: python -m tidemark.conformance.scenarios"
    )


def test_the_step_models_take_exactly_the_steps_and_parameters_of_both_protocols() -> None:
    taken: dict[str, tuple[str, ...]] = {}
    for model in STEP_MODELS:
        if model in (HazelcastStep, NCacheStep):
            continue
        params = tuple(p for p in ("tx", "node", "part", "peer") if p in model.model_fields)
        taken.update((tag, params) for tag in get_args(model.model_fields["step"].annotation))
    assert taken == {**STEPS, **PME_STEPS}
    # A step both protocols take has the same parameters in each.
    assert all(PME_STEPS[name] == STEPS[name] for name in STEPS.keys() & PME_STEPS.keys())
    # Hazelcast's steps (their parameters are checked per step by the loader); Join is pme's step model.
    assert set(get_args(HazelcastStep.model_fields["step"].annotation)) | {"Join"} == set(HAZELCAST_STEPS)
    assert set(get_args(NCacheStep.model_fields["step"].annotation)) | {"Join"} == set(NCACHE_STEPS)


def test_the_counter_choices_are_tracking_and_every_counter_mutant() -> None:
    assert get_args(CounterName) == ("tracking", *COUNTER_MUTANTS)
    assert set(CLUSTER_COUNTERS) == set(COUNTER_MUTANTS)


def _set(path: list[str | int], value: object) -> Callable[[dict[str, Any]], None]:
    def damage(data: dict[str, Any]) -> None:
        target: Any = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return damage


def _drop(path: list[str | int]) -> Callable[[dict[str, Any]], None]:
    def damage(data: dict[str, Any]) -> None:
        target: Any = data
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return damage


@pytest.mark.parametrize(
    ("damage", "location", "message"),
    [
        (_drop(["steps", 3, "node"]), "steps[3].node", "Field required"),
        (_set(["steps", 2, "step"], "Teleport"), "steps[2].step", "Input tag 'Teleport' found using 'step'"),
        (_drop(["steps", 2, "step"]), "steps[2].step", "Unable to extract tag using discriminator 'step'"),
        (_set(["steps", 4, "node"], "s1"), "steps[4].node", "Extra inputs are not permitted"),
        (_set(["steps", 2, "node"], "s9"), "steps[2].node", "unknown server 's9'"),
        (_set(["steps", 5, "tx"], "t9"), "steps[5].tx", "unknown transaction 't9'"),
        (_set(["steps", 1, "tx"], "t1"), "steps[1].tx", "transaction 't1' already started at steps[0]"),
        (_set(["steps", 0, "keys"], {"k1": "v1"}), "steps[0].keys.k1", "Input should be a valid integer"),
        (_set(["steps", 2, "node"], "s-1"), "steps[2].node", "String should match pattern"),
        (_set(["cluster", "clients"], ["c1", "c2"]), "cluster.clients", "List should have at most 1 item"),
        (_set(["cluster", "backups"], 3), "cluster.backups", "3 backups need 4 servers"),
        (
            _set(["cluster", "owners"], {"0": ["s1", "s9", "s3"]}),
            "cluster.owners[0][1]",
            "unknown server 's9'",
        ),
        (_set(["counter"], "sloppy"), "counter", "Input should be 'tracking' or 'no-out-of-order-tracking'"),
        (
            _set(["expect", "s2", "counters", "0", "lwm"], -1),
            "expect.s2.counters[0].lwm",
            "greater than or equal",
        ),
        (_set(["expect", "s2", "counters", "0"], {}), "expect.s2.counters[0]", "give at least one of lwm"),
        (_set(["expect", "s9"], {"state": "alive"}), "expect.s9", "unknown node 's9'"),
        (_set(["expect", "c1", "data"], {}), "expect.c1.data", "the client holds only transactions"),
        (
            _set(["expect", "s1", "txs", "t1"], "locking"),
            "expect.s1.txs.t1",
            "no state of a transaction here",
        ),
        (
            _set(["steps", 19, "expect", "s2", "partitions"], {"1": "OWNING"}),
            "steps[19].expect.s2.partitions[1]",
            "s2 holds no copy of partition 1",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_field(
    damage: Callable[[dict[str, Any]], None], location: str, message: str, tmp_path: Path
) -> None:
    data = copy.deepcopy(_figure1())
    damage(data)
    path = _write(tmp_path, data)
    with pytest.raises(TidemarkError) as error:
        load_scenario(path)
    assert (error.value.source, error.value.location) == (str(path), location)
    assert message in error.value.message
    assert error.value.expected


def test_keys_of_a_transaction_must_share_one_primary(tmp_path: Path) -> None:
    data = _figure1()
    data["cluster"].update(partitions=2, owners={"0": ["s1", "s2", "s3"], "1": ["s2", "s3", "s1"]})
    path = _write(tmp_path, data)  # t1 writes keys 1, 2, 3: partitions 1, 0, 1
    with pytest.raises(TidemarkError, match="one primary") as error:
        load_scenario(path)
    assert error.value.location == "steps[0].keys"


def test_a_bad_file_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x",\n "cluster": ', encoding="utf-8")
    out = tmp_path / "out" / "flow.mmd"
    assert main(["scenario", str(path), "--out", str(out)]) == 2
    assert f"{path}: Invalid JSON: EOF while parsing" in capsys.readouterr().err
    assert not out.parent.exists()


# --- running ----------------------------------------------------------------------------------------------


def test_a_step_that_is_not_enabled_stops_the_run_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _figure1()
    # Commit on the primary before the client decided: no finish request is in flight.
    data["steps"].insert(14, {"step": "Commit", "tx": "t1", "node": "s1"})
    result = _run(_write(tmp_path, data))
    assert not result.passed and len(result.timeline) == 15  # the initial state and steps 0..13
    assert result.failure == (
        "steps[14]: Commit(tx=t1, node=s1) is not enabled here; enabled: TxCommit(tx=t1), TxCommit(tx=t2),"
        " TxRollback(tx=t1), TxRollback(tx=t2), NodeFail(node=s1), NodeFail(node=s2), NodeFail(node=s3),"
        " Checkpoint(node=s1), Checkpoint(node=s2), Checkpoint(node=s3)"
    )
    assert not any(c.path.startswith("expect.") for c in result.checks)  # the final ones never ran
    assert main(["scenario", str(tmp_path / "scenario.json"), "--out", str(tmp_path / "f.mmd")]) == 1
    assert "steps[14]: Commit(tx=t1, node=s1) is not enabled here" in capsys.readouterr().out


def test_a_failing_expectation_exits_1_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _figure1()
    data["steps"][19]["expect"]["s2"]["counters"]["0"]["lwm"] = 3  # as if LWM ignored the hole
    path = _write(tmp_path, data)
    assert main(["scenario", str(path), "--out", str(tmp_path / "f.mmd")]) == 1
    assert "steps[19].expect.s2.counters[0].lwm: expected 3, got 0" in capsys.readouterr().out


def test_json_gives_the_final_counters_data_and_states(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "f.mmd"
    assert main(["scenario", str(NO_TRACKING), "--json", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["passed"], report["failure"], report["counter"]) == (
        True,
        None,
        "no-out-of-order-tracking",
    )
    s1 = report["nodes"]["s1"]
    assert s1["counters"] == {"0": {"lwm": 5, "hwm": 5, "items": []}}
    assert {k: e["value"] for k, e in s1["data"].items()} == {"4": "v4", "5": "v5"}
    assert (s1["state"], s1["partitions"]) == ("restarted", {"0": "OWNING"})
    assert report["txs"] == {"t1": "committed", "t2": "committed"}
    assert (report["diagram"], report["page"]) == (str(out), str(out.with_suffix(".html")))


def test_initial_data_is_committed_on_every_owner_before_the_first_step(tmp_path: Path) -> None:
    data = {
        "name": "preloaded",
        "cluster": {
            "servers": ["a", "b", "c"],
            "clients": ["cl"],
            "partitions": 2,
            "backups": 1,
            "initial_data": {"0": "x", "2": "y", "1": "z"},
        },
        "steps": [
            {"step": "TxStart", "tx": "t", "keys": {"4": "new", "5": "w"}},
            {"step": "Lock", "tx": "t", "node": "a"},
            {"step": "TxPrepare", "tx": "t"},
            {"step": "Prepare", "tx": "t", "node": "a"},
            {"step": "NodeFail", "node": "b"},
            {"step": "Restart", "node": "b"},
        ],
        "expect": {
            "a": {"counters": {"0": {"lwm": 2, "hwm": 3}, "1": {"lwm": 1, "hwm": 2}}},
            "b": {
                "state": "restarted",
                "data": {"0": "x", "1": "z", "2": "y"},
                "counters": {"0": {"lwm": 2}},
            },
            "c": {"state": "alive", "data": {}},
        },
    }
    result = _run(_write(tmp_path, data))
    assert result.passed, [c for c in result.checks if not c.holds]
    prepare = result.timeline[4]
    # One reservation per partition, above the initial counters: keys 4 (p0) and 5 (p1).
    assert [m.label for m in prepare.messages if m.kind == "sent"] == [
        "DhtPrepareRequest t p0 (2, 1) p1 (1, 1)"
    ]


# --- the outputs ------------------------------------------------------------------------------------------

_PARTICIPANT = re.compile(r"^    participant (\w+)(?: as .+)?$")
# Text in a message or note: ';' and '#' only as entities (#59;), else Mermaid ends the statement there.
_TEXT = r"((?:[^;#]|#\d+;)+)"
_ARROW = re.compile(r"^    (\w+)(->>|-x)(\w+): (\d+)\. " + _TEXT + "$")
_NOTE = re.compile(r"^    Note over (\w+)(?:,(\w+))?: " + _TEXT + "$")


def _mermaid_structure(text: str) -> tuple[list[str], list[tuple[str, str, str, int, str]], list[str]]:
    """Participants, arrows (sender, arrow, receiver, step, label) and notes; fails on any other line."""
    lines = text.splitlines()
    assert lines[0] == "sequenceDiagram"
    participants: list[str] = []
    arrows: list[tuple[str, str, str, int, str]] = []
    notes: list[str] = []
    for line in lines[1:]:
        if match := _PARTICIPANT.match(line):
            assert not arrows and not notes, "participants come first"
            participants.append(match.group(1))
        elif match := _ARROW.match(line):
            sender, arrow, to, step, label = match.groups()
            assert {sender, to} <= set(participants), line
            arrows.append((sender, arrow, to, int(step), label))
        elif match := _NOTE.match(line):
            assert {n for n in match.groups()[:2] if n} <= set(participants), line
            notes.append(match.group(3))
        else:
            pytest.fail(f"not a participant, message or note: {line!r}")
    return participants, arrows, notes


def test_the_diagram_draws_each_message_when_it_is_delivered() -> None:
    participants, arrows, notes = _mermaid_structure(mermaid_diagram(_run(FIGURE1)))
    assert participants == ["c1", "s1", "s2", "s3"]
    to_s2 = [(step, label) for sender, _, to, step, label in arrows if (sender, to) == ("s1", "s2")]
    assert to_s2[-2:] == [(19, "DhtFinishRequest t2 commit"), (21, "DhtFinishRequest t1 commit")]
    assert ("s1", "->>", "s2", 8, "DhtPrepareRequest t1 p0 (0, 3)") in arrows
    assert [step for *_, step, _ in arrows] == sorted(step for *_, step, _ in arrows)
    assert "p0 lwm=0 hwm=0 (3,2)" in notes and "backup reordering: s2 applies t2 before t1" in notes


def test_the_diagram_marks_lost_messages_crashes_and_restarts() -> None:
    _, arrows, notes = _mermaid_structure(mermaid_diagram(_run(NO_TRACKING)))
    assert ("c1", "-x", "s1", 17, "FinishRequest t1 commit (lost)") in arrows
    assert "crashed: memory lost, WAL kept" in notes
    assert "restarted from its WAL: p0 lwm=5 hwm=5" in notes


def test_outputs_are_deterministic_and_escaped(tmp_path: Path) -> None:
    data = _figure1()
    data["steps"][19]["note"] = "s2 applies t2 first; #2 before #1"
    result = _run(_write(tmp_path, data))
    first = write_outputs(result, tmp_path / "a" / "flow.mmd")
    again = write_outputs(_run(_write(tmp_path, data)), tmp_path / "b" / "flow.mmd")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    assert "Note over c1,s3: s2 applies t2 first#59; #35;2 before #35;1" in first[0].read_text()
    _mermaid_structure(first[0].read_text())
    assert sorted(p.name for p in first[0].parent.iterdir()) == ["flow.html", "flow.mmd", "mermaid.min.js"]


def test_the_timeline_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    _, page = write_outputs(_run(FIGURE1), tmp_path / "figure1.mmd")
    screenshot = tmp_path / "page.png"
    # The virtual time budget lets Mermaid (written beside the page) draw before the capture.
    budget = "--virtual-time-budget=10000"
    headless_chromium(page, tmp_path / "profile", budget, f"--screenshot={screenshot}", window=(1400, 1000))
    assert screenshot.stat().st_size > 20_000, "a near-empty screenshot"
    dom = headless_chromium(page, tmp_path / "profile", budget, "--dump-dom", window=(1400, 1000))
    text = " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", dom, flags=re.S)).split())
    assert "scenario figure1-backup-reordering: holds" in text
    assert "BackupCommit(tx=t2, node=s2) backup reordering: s2 applies t2 before t1" in text
    assert "lwm=0 hwm=0 (3,2)" in text and "in s1-&gt;s2 DhtFinishRequest t2 commit" in text
    # Drawn as a sequence diagram, not left as source: its message labels are SVG text.
    assert 'aria-roledescription="sequence"' in dom and "sequenceDiagram" not in text
    assert re.search(r"<text[^>]*>2\. LockRequest t1 ver 1\.0</text>", dom)


# --- docs/twophase.md shows what the code produces --------------------------------------------------------

DOC = Path("docs/twophase.md")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_docs_diagram_is_the_generated_one() -> None:
    assert _blocks("mermaid") == [mermaid_diagram(_run(FIGURE1))], "paste the new figure 1 diagram"


def test_the_docs_example_scenario_holds(tmp_path: Path) -> None:
    [example] = _blocks("json")
    path = tmp_path / "example.json"
    path.write_text(example, encoding="utf-8")
    result = _run(path)
    assert result.passed and len(result.checks) == 8


# --- every size has a range -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "location", "expected"),
    [
        (_set(["cluster", "partitions"], 10**9), "cluster.partitions", "1..1024 partitions"),
        (_set(["cluster", "partitions"], 70_000), "cluster.partitions", "1..1024 partitions"),
        (_set(["cluster", "servers"], [f"s{i}" for i in range(17)]), "cluster.servers", "(1..16)"),
        (_set(["cluster", "backups"], 16), "cluster.backups", "below the servers"),
        (_set(["steps", 0, "keys"], {"2147483648": "v"}), "steps[0].keys[2147483648]", "0..2147483647"),
        (_set(["steps", 0, "keys"], {str(k): "v" for k in range(1025)}), "steps[0].keys", "(1..1024)"),
        (
            _set(["cluster", "initial_data"], {str(k): "v" for k in range(10_001)}),
            "cluster.initial_data",
            "10000",
        ),
        (_set(["expect", "s2", "counters", "0", "lwm"], 2**63), "expect.s2.counters[0].lwm", "0..2^63-1"),
        (_set(["steps", 2, "node"], "s" * 65), "steps[2].node", "at most 64 characters"),
        (_set(["steps", 2, "note"], "n" * 501), "steps[2].note", "at most 500 characters"),
        (_set(["description"], "d" * 4001), "description", "at most 4000 characters"),
        (_set(["steps"], [{"step": "Checkpoint", "node": "s1"}] * 100_001), "steps", "(1..100000)"),
        (
            _set(["cluster", "partitions"], 1024),
            "steps",
            "at most 1000000 cells ((steps + 1) x servers x partitions)",
        ),
    ],
)
def test_every_size_is_bounded_with_its_range_named(
    damage: Callable[[dict[str, Any]], None], location: str, expected: str, tmp_path: Path
) -> None:
    data = _figure1()
    if location == "steps" and "cells" in expected:
        data["steps"] += [{"step": "Checkpoint", "node": "s1"}] * 310  # 332 steps x 3 servers x 1024
        data["expect"] = {}
    damage(data)
    path = _write(tmp_path, data)
    with pytest.raises(TidemarkError) as error:
        load_scenario(path)
    assert (error.value.source, error.value.location) == (str(path), location)
    assert expected in (error.value.expected or "")


def test_a_huge_partition_count_exits_2_at_once_writing_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _figure1()
    data["cluster"]["partitions"] = 10**9
    path = _write(tmp_path, data)
    out = tmp_path / "out" / "flow.mmd"
    assert main(["scenario", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path}, cluster.partitions: Input should be less than or equal to 1024" in err
    assert "Traceback" not in err and not out.parent.exists()


def test_a_file_above_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, _figure1())
    monkeypatch.setattr("tidemark.conformance.scenarios.load.MAX_FILE_BYTES", 1000)
    with pytest.raises(TidemarkError, match=f"the file has {path.stat().st_size} bytes") as error:
        load_scenario(path)
    assert error.value.expected == "at most 1000 bytes"


# --- one output per format ----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".mmd", ".html"])
def test_out_names_both_outputs_by_suffix_and_neither_clobbers_the_other(
    suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"flow{suffix}"
    assert main(["scenario", str(FIGURE1), "--json", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    diagram, page = tmp_path / "flow.mmd", tmp_path / "flow.html"
    assert (report["diagram"], report["page"]) == (str(diagram), str(page))
    assert diagram.read_text(encoding="utf-8") == mermaid_diagram(_run(FIGURE1))
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flow.html", "flow.mmd", "mermaid.min.js"]


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("flow.txt", "flow.txt names neither the diagram nor the page"),
        ("taken.mmd/flow.mmd", "cannot write under"),
        ("flow.html", "flow.html is a directory"),
    ],
)
def test_a_bad_out_exits_2_before_the_run_writing_nothing(
    out: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken.mmd").write_text("a file, not a directory", encoding="utf-8")
    (tmp_path / "flow.html").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["scenario", str(FIGURE1), "--out", str(tmp_path / out)]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# --- a step expected to fail with a named error -------------------------------------------------------------


def _gaps(error_at: int | None) -> dict[str, Any]:
    """Six one-key transactions (counters 1..6) prepared on s1 and s2 and committed on s1; s2 then applies
    t2, t4 (two gaps), t6 (a third), t1, t6 again, t3, t5. `error_at` = the step expected to fail."""
    steps: list[dict[str, Any]] = []
    txs = [f"t{i}" for i in range(1, 7)]
    steps += [{"step": "TxStart", "tx": t, "keys": {str(i): f"v{i}"}} for i, t in enumerate(txs, 1)]
    for name in ("Lock", "TxPrepare", "Prepare", "BackupPrepare", "Prepared", "TxCommit", "Commit"):
        node = {"BackupPrepare": "s2"}.get(name, "s1")
        steps += [{"step": name, "tx": t} | ({} if name.startswith("Tx") else {"node": node}) for t in txs]
    steps += [
        {"step": "BackupCommit", "tx": t, "node": "s2"} for t in ("t2", "t4", "t6", "t1", "t6", "t3", "t5")
    ]
    if error_at is not None:
        steps[error_at]["error"] = "TooManyGapsError"
    return {
        "name": "too-many-gaps",
        "cluster": {"servers": ["s1", "s2"], "clients": ["c1"], "backups": 1},
        "steps": steps,
        "expect": {"s2": {"counters": {"0": {"lwm": 6, "items": []}}}},
    }


def test_an_expected_error_holds_leaves_the_state_as_it_was_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ignite queues at most 10,000 out-of-order ranges; two keep the scenario small.
    # The cluster builds its counters with the default limit: make the default 2 for this test.
    monkeypatch.setitem(PartitionUpdateCounter.__init__.__kwdefaults__, "max_missed_updates", 2)
    result = _run(_write(tmp_path, _gaps(error_at=50)))
    assert result.failure is None and result.passed
    [outcome] = [c for c in result.checks if c.path == "steps[50].error"]
    assert (outcome.expected, outcome.actual, outcome.holds) == ("TooManyGapsError", "TooManyGapsError", True)
    row = result.timeline[51]
    assert row.step == "BackupCommit(tx=t6, node=s2) failed: TooManyGapsError" and row.messages == []
    assert row.nodes == result.timeline[50].nodes
    assert _counter(result, 50, "s2") == (0, 0, [(1, 1), (3, 1)])
    # Once t1 fills the first gap, t6 fits: the same step, taken again later, succeeds.
    assert result.timeline[53].step == "BackupCommit(tx=t6, node=s2)"


def test_an_expected_error_that_does_not_come_fails_and_the_step_is_taken(tmp_path: Path) -> None:
    result = _run(_write(tmp_path, _gaps(error_at=50)))  # Ignite's limit: no error here
    assert result.failure is not None  # taken, so its repeat at steps[52] is no longer possible
    [outcome] = [c for c in result.checks if c.path == "steps[50].error"]
    assert (outcome.actual, outcome.holds) == ("no error", False)
    assert result.timeline[51].step == "BackupCommit(tx=t6, node=s2) did NOT fail (taken)"


def test_an_unexpected_named_error_stops_the_run_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cluster builds its counters with the default limit: make the default 2 for this test.
    monkeypatch.setitem(PartitionUpdateCounter.__init__.__kwdefaults__, "max_missed_updates", 2)
    result = _run(_write(tmp_path, _gaps(error_at=None)))
    assert not result.passed and len(result.timeline) == 51
    assert (result.failure or "").startswith(
        "steps[50]: BackupCommit(tx=t6, node=s2) failed: TooManyGapsError: Too many gaps"
    )


def test_a_step_cannot_be_both_refused_and_expected_to_fail(tmp_path: Path) -> None:
    data = _gaps(error_at=50)
    data["steps"][50]["refused"] = True
    with pytest.raises(TidemarkError, match="either refused or fails with an error") as error:
        load_scenario(_write(tmp_path, data))
    assert error.value.location == "steps[50]"


def test_the_named_errors_are_the_implementations() -> None:
    assert set(get_args(ErrorName)) == {e.__name__ for e in NAMED_ERRORS}


def test_every_protocol_has_its_rules_and_an_implementation() -> None:
    assert set(get_args(ProtocolName)) == set(PROTOCOLS) == set(SYSTEMS["impl"])
    assert {name: rules.steps for name, rules in PROTOCOLS.items()} == {
        "2pc": STEPS,
        "pme": PME_STEPS,
        "hazelcast": HAZELCAST_STEPS,
        "ncache": NCACHE_STEPS,
    }
