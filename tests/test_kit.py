"""The conformance kit: the driver protocol's messages and schemas, walks that cover a graph, and real
driver processes (impl/ behind the protocol, and drivers that misbehave on purpose) replaying real TLC
state graphs."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.conform import ConformResult, DriverOptions, conform
from tidemark.conformance.kit.protocol import (
    MESSAGES,
    MalformedAnswer,
    parse_answer,
    parse_batch,
    schema_path,
    schema_text,
)
from tidemark.conformance.kit.python_driver import Session, serve
from tidemark.conformance.kit.replay import plan_walks
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import from_itf, state_from_itf

SPEC = Path("spec/UpdateCounter.tla")
SMALL = Path("tests/models/UpdateCounter-small.cfg")
TINY = Path("tests/models/UpdateCounter-tiny.cfg")
FAULTY = Path("tests/fixtures/faulty_driver.py")
PYTHON_DRIVER = [sys.executable, "-m", "tidemark.conformance.kit.python_driver"]


# --- messages -------------------------------------------------------------------------------------------


def test_the_committed_schemas_are_the_messages_schemas() -> None:
    for name in MESSAGES:
        assert schema_path(name).read_text() == schema_text(name), (
            "run python -m tidemark.conformance.kit.protocol"
        )


def test_an_answer_the_request_does_not_allow_names_the_line_and_what_was_expected() -> None:
    with pytest.raises(MalformedAnswer) as error:
        parse_answer("step", '{"type":"ok"}', 5)
    assert "driver output line 5" in str(error.value)
    assert "`state` answer or a `not_enabled` answer or a `error` answer to `step`" in str(error.value)
    with pytest.raises(MalformedAnswer, match=r"line 2: state: Field required"):
        parse_answer("init", '{"type":"state"}', 2)
    with pytest.raises(MalformedAnswer, match=r"line 1: not JSON"):
        parse_answer("enabled", "enabled: none", 1)
    with pytest.raises(MalformedAnswer, match=r"1 answers \(expected a `batch` answer with 2 answers\)"):
        parse_batch(["load", "step"], '{"type":"batch","answers":[{"type":"ok"}]}', 3)
    with pytest.raises(MalformedAnswer, match=r"answers.1: a `ok` answer"):
        parse_batch(["load", "step"], '{"type":"batch","answers":[{"type":"ok"},{"type":"ok"}]}', 3)
    answers = parse_batch(
        ["load", "enabled"], '{"type":"batch","answers":[{"type":"ok"},{"type":"enabled","actions":[]}]}', 1
    )
    assert [a.type for a in answers] == ["ok", "enabled"]


def test_the_python_driver_answers_every_request() -> None:
    requests = [
        {"type": "hello", "protocol": 1, "spec": "UpdateCounter"},
        {
            "type": "init",
            "constants": {
                "Copies": {"#set": ["b", "p"]},
                "Primary": "p",
                "MaxCounter": 1,
                "Deltas": {"#set": [1]},
                "MaxMissedUpdates": 1,
            },
        },
        {"type": "step", "action": {"name": "Reserve", "copy": "p", "start": 0, "delta": 1}},
        {"type": "enabled"},
        {
            "type": "batch",
            "requests": [
                {"type": "step", "action": {"name": "Reserve", "copy": "p", "start": 0, "delta": 1}}
            ],
        },
        {"type": "load", "state": {"nothing": 1}},
        {"type": "teleport"},
    ]
    out = io.StringIO()
    serve(Session("UpdateCounter", None), io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answers[0]["capabilities"] == ["load", "enabled", "batch"]
    assert answers[1]["state"]["counter"]["p"] == {"first": True, "hwm": 0, "items": [], "lwm": 0}
    assert answers[2]["state"]["counter"]["p"]["hwm"] == 1
    assert answers[2]["state"]["pending"]["b"] == {"#set": [[0, 1]]}
    commit = {"name": "Commit", "copy": "b", "start": 0, "delta": 1, "result": "applied"}
    assert commit in answers[3]["actions"]
    assert not any(a["name"] == "Reserve" for a in answers[3]["actions"])  # MaxCounter reached
    assert answers[4]["answers"][0]["type"] == "error"  # reserve() hands out 1 now, not 0
    assert answers[5]["type"] == "error"
    assert answers[6]["type"] == "error" and "not a request" in answers[6]["message"]


# --- walks ----------------------------------------------------------------------------------------------


def _graph() -> dict[int, list[tuple[int, int, str]]]:
    # 1 -> 2 -> 3 -> 1, 2 -> 4 (a dead end), 3 -> 3, 4 unreachable from 5; 5 is another initial state
    edges = {1: [2], 2: [3, 4], 3: [1, 3], 5: [4]}
    return {src: [(dst, dst, f'"{src}->{dst}"') for dst in dsts] for src, dsts in edges.items()}


def test_walks_cover_every_edge_reachable_from_the_start_and_follow_edges() -> None:
    outgoing = _graph()
    walks = plan_walks([1, 2, 3, 4, 5], outgoing, 1)
    covered = set()
    for walk in walks:
        at = 1
        for src, index in walk.steps:
            assert src == at  # a walk is a path from the start
            covered.add((src, index))
            at = outgoing[src][index][0]
    assert covered == {(1, 0), (2, 0), (2, 1), (3, 0), (3, 1)}  # 5 -> 4 is not reachable from 1
    checked = [walk.checks for walk in walks]
    assert sum(len(c) for c in checked) == 4  # each of 1, 2, 3, 4 once


def test_walks_are_cut_at_their_length_limit() -> None:
    outgoing = _graph()
    walks = plan_walks([1, 2, 3, 4], outgoing, 1, max_steps=2)
    assert all(len(w.steps) <= 3 for w in walks)  # a prefix to the next state, then at most 2 more
    assert {e for w in walks for e in w.steps} == {(1, 0), (2, 0), (2, 1), (3, 0), (3, 1)}


# --- real drivers on real graphs ------------------------------------------------------------------------

pytestmark_tlc = pytest.mark.tlc


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[ConformResult, Path]:
    run_dir = tmp_path_factory.mktemp("kit-tiny")
    return conform(SPEC, TINY, local=True, run_dir=run_dir), run_dir


def _faulty(
    tiny: tuple[ConformResult, Path], mode: str, trigger: str = "Drop", **options: object
) -> ConformResult:
    command = [sys.executable, str(FAULTY), mode, trigger]
    return conform(SPEC, TINY, run_dir=tiny[1], driver=DriverOptions(command=command, **options))  # type: ignore[arg-type]


def _reached(path: list[Any]) -> dict[str, Any]:
    """The state the in-process implementation reaches along `path` from the initial state."""
    mapping = mapping_for("UpdateCounter", read_config(TINY).constants)
    impl = mapping.initial()  # type: ignore[attr-defined]
    for action in path:
        impl = mapping.apply(impl, from_itf(action))
    return mapping.abstract(impl)


def _drops(result: ConformResult) -> int:
    return result.coverage["Drop"]


@pytest.mark.tlc
@pytest.mark.parametrize("walk", [False, True])
def test_the_python_driver_gives_the_in_process_results(tiny: tuple[ConformResult, Path], walk: bool) -> None:
    local, run_dir = tiny
    through = conform(
        SPEC,
        TINY,
        run_dir=run_dir,
        driver=DriverOptions(command=[*PYTHON_DRIVER, "UpdateCounter"], walk=walk),
    )
    assert through.holds and local.holds
    assert through.driver is not None and through.driver.mode == ("paths" if walk else "load")
    assert through.driver.restarts == 0
    for field in ("states", "edges", "edges_replayed", "mismatches", "enabledness_mismatches", "coverage"):
        assert getattr(through, field) == getattr(local, field), field


@pytest.mark.tlc
@pytest.mark.parametrize("walk", [False, True])
def test_a_crashing_driver_is_a_finding_with_its_path_and_is_restarted(
    tiny: tuple[ConformResult, Path], walk: bool
) -> None:
    drops = _drops(tiny[0])
    result = _faulty(tiny, "crash", walk=walk)
    assert not result.holds
    assert result.driver is not None and result.driver.restarts >= 1
    faults = [m for m in result.examples if m.kind == "driver"]
    assert faults and all("exited with code 7" in (m.error or "") for m in faults)
    for fault in faults:
        assert fault.path is not None and fault.path[-1]["name"] == "Drop"
        assert _reached(fault.path[:-1]) == state_from_itf(fault.source_state)
    if not walk:  # edge by edge, every other edge still replays
        assert result.edges_replayed == result.edges - drops
        assert result.mismatches == drops


@pytest.mark.tlc
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("hang", "did not answer within 5 s"),
        ("garbage", "not JSON"),
        ("missing", "expected a `batch` answer"),
    ],
)
def test_a_driver_that_hangs_or_answers_malformed_output_is_a_finding(
    tiny: tuple[ConformResult, Path], mode: str, expected: str
) -> None:
    # Only the hang waits out the timeout; the others answer at once, however loaded the machine is.
    result = _faulty(tiny, mode, timeout=5.0 if mode == "hang" else 60.0)
    faults = [m for m in result.examples if m.kind == "driver"]
    assert not result.holds and len(faults) == _drops(tiny[0])
    assert all(expected in (m.error or "") for m in faults)
    assert result.edges_replayed == result.edges - _drops(tiny[0])


@pytest.mark.tlc
@pytest.mark.parametrize("walk", [False, True])
def test_a_driver_starting_elsewhere_is_a_mismatch_at_the_initial_state(
    tiny: tuple[ConformResult, Path], walk: bool
) -> None:
    result = _faulty(tiny, "elsewhere", walk=walk)
    assert not result.holds and result.mismatches == 1
    [example] = result.examples
    assert example.error == "init: the implementation's initial state is none of the spec's"
    assert example.actual_state is not None and example.actual_state["counter"]["b"]["hwm"] == 1
    if not walk:  # loading each state, every edge still replays (and agrees)
        assert result.edges_replayed == result.edges


@pytest.mark.tlc
def test_a_refused_step_is_an_edge_mismatch(tiny: tuple[ConformResult, Path]) -> None:
    result = _faulty(tiny, "refuse")
    assert result.mismatches == _drops(tiny[0])
    assert all(
        m.kind == "edge" and "not enabled: refused on purpose" in (m.error or "") for m in result.examples
    )


@pytest.mark.tlc
@pytest.mark.parametrize(
    ("mode", "code", "words"),
    [("mute", 3, "did not answer hello"), ("wrong-spec", 2, "implements TxCounters")],
)
def test_a_driver_that_cannot_serve_the_spec_is_no_finding(
    tiny: tuple[ConformResult, Path], capsys: pytest.CaptureFixture[str], mode: str, code: int, words: str
) -> None:
    command = f"{sys.executable} {FAULTY} {mode} Drop"
    assert (
        main(["conform", str(SPEC), "--config", str(TINY), "--run-dir", str(tiny[1]), "--driver", command])
        == code
    )
    captured = capsys.readouterr()
    assert words in captured.err and captured.out == ""


@pytest.mark.tlc
def test_no_driver_process_outlives_the_run(
    tiny: tuple[ConformResult, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "children"
    monkeypatch.setenv("FAULTY_CHILDREN", str(pids))
    result = _faulty(tiny, "child")
    assert result.holds
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == result.driver.processes if result.driver else False
    deadline = time.monotonic() + 5
    while (
        any(Path(f"/proc/{pid}").exists() and _alive(pid) for pid in started) and time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in started)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
