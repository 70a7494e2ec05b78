"""Trace validation: random walks of impl/counter.py are behaviors of spec/UpdateCounter.tla (TLC decides);
tampered traces are rejected at exactly the step that was changed; bad trace files are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_output_schema

from tidemark.conformance.cli.main import main
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import SpecMapping, State, mapping_for
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import Record, Value, format_value
from tidemark.conformance.traces import (
    SCHEMA_PATH,
    Trace,
    read_itf_trace,
    read_traces,
    schema_text,
    trace_to_itf,
    write_traces,
)
from tidemark.conformance.validate import (
    Rejection,
    initial_states,
    resolve_model,
    spec_variables,
    validate_traces,
)
from tidemark.conformance.walks import random_walks

SPEC = Path("spec/UpdateCounter.tla")
SMALL = Path("tests/models/UpdateCounter-small.cfg")
VARIABLES = ["counter", "pending", "done", "committed", "rolledBack", "rejoined", "primary", "action"]

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def initial() -> list[State]:
    return initial_states(SPEC, SMALL)


@pytest.fixture(scope="module")
def mapping() -> SpecMapping:
    return mapping_for("UpdateCounter", read_config(SMALL).constants)


@pytest.fixture(scope="module")
def walks(mapping: SpecMapping, initial: list[State]) -> list[Trace]:
    return random_walks(mapping, initial, count=100, steps=30, seed=7)


def _action_name(action: Value) -> str:
    assert isinstance(action, Record)
    return str(action["name"])


def _name(state: State) -> str:
    return _action_name(state["action"])


def _with_counter_field(state: State, copy: str, field: str, value: Value) -> State:
    counter = state["counter"]
    assert isinstance(counter, Record)
    own = counter[copy]
    assert isinstance(own, Record)
    return {**state, "counter": Record({**counter, copy: Record({**own, field: value})})}


def _field(state: State, copy: str, field: str) -> int:
    counter = state["counter"]
    assert isinstance(counter, Record)
    own = counter[copy]
    assert isinstance(own, Record)
    value = own[field]
    assert isinstance(value, int)
    return value


def _tampered(trace: Trace, suffix: str, states: list[State]) -> Trace:
    return Trace(id=f"{trace.id}-{suffix}", spec=trace.spec, states=tuple(states))


# --- the spec's initial state and the walks -------------------------------------------------------------


def test_the_spec_variables_are_read_from_the_module() -> None:
    assert spec_variables(SPEC) == VARIABLES


def test_the_initial_state_comes_from_tlc(initial: list[State]) -> None:
    assert len(initial) == 1
    [state] = initial
    assert _name(state) == "Init"
    assert state["committed"] == frozenset()
    assert _field(state, "p", "lwm") == _field(state, "b", "hwm") == 0


def test_walks_are_deterministic_for_a_seed(
    mapping: SpecMapping, initial: list[State], walks: list[Trace]
) -> None:
    assert random_walks(mapping, initial, count=100, steps=30, seed=7) == walks
    assert random_walks(mapping, initial, count=100, steps=30, seed=8) != walks
    assert len({t.id for t in walks}) == 100
    names = {_name(s) for t in walks for s in t.states}
    assert names == {
        "Init",
        "Reserve",
        "Commit",
        "Rollback",
        "Drop",
        "Replay",
        "Restart",
        "Exchange",
        "JoinExchange",
    }


# --- validation -------------------------------------------------------------------------------------------


def test_a_hundred_walks_are_accepted_in_one_tlc_run(walks: list[Trace]) -> None:
    report = validate_traces(walks, SPEC, SMALL)
    assert (report.traces, report.accepted, report.rejected) == (100, 100, [])
    assert report.tlc_runs == 1
    assert report.holds


def test_tampered_traces_are_rejected_at_the_tampered_step(mapping: SpecMapping, walks: list[Trace]) -> None:
    walk = walks[0]
    states = list(walk.states)
    assert len(states) == 31
    lwm = _field(states[10], "p", "lwm")
    raised_lwm = [*states[:10], _with_counter_field(states[10], "p", "lwm", lwm + 1), *states[11:]]
    reserve = next(k for k in range(1, 30) if _name(states[k]) == "Reserve")
    # Removing a reservation: the next state holds its range, which no single step from before adds.
    without_reserve = states[:reserve] + states[reserve + 1 :]
    moved_start = [_with_counter_field(states[0], "p", "hwm", 1), *states[1:]]
    impossible = {**states[5], "action": Record(name="Exchange", lwm=0)}
    not_enabled = [*states[:5], impossible, *states[6:]]
    stuttering = [*states[:6], *states[5:]]  # a repeated state is a stuttering step: still a behavior
    tampered = [
        _tampered(walk, "stutter", stuttering),
        _tampered(walk, "lwm", raised_lwm),
        _tampered(walk, "removed", without_reserve),
        _tampered(walk, "initial", moved_start),
        _tampered(walk, "exchange", not_enabled),
    ]
    report = validate_traces([walks[1], *tampered, walks[2]], SPEC, SMALL)
    assert (report.traces, report.accepted, report.tlc_runs) == (7, 3, 2)
    exchange = '[lwm |-> 0, name |-> "Exchange"]'  # TLC prints record fields sorted
    assert report.rejected[0] == Rejection(
        id="walk-7-0-lwm",
        step=10,
        action=_name(states[10]),
        reason=f"the spec's {format_value(states[10]['action'])} from state 9 leads to another state",
        diff=[f"counter.p.lwm: expected {lwm}, got {lwm + 1}"],
    )
    assert (report.rejected[1].id, report.rejected[1].step) == ("walk-7-0-removed", reserve)
    assert report.rejected[1].action == _name(states[reserve + 1])
    assert report.rejected[2] == Rejection(
        id="walk-7-0-initial",
        step=0,
        action="Init",
        reason="state 0 is not an initial state of the spec",
        diff=["counter.p.hwm: expected 0, got 1"],
    )
    # What the spec can take in state 4 is what the implementation enables there (conformance).
    enabled = sorted({_action_name(a) for a in mapping.enabled(mapping.concretize(states[4]))})
    assert report.rejected[3] == Rejection(
        id="walk-7-0-exchange",
        step=5,
        action="Exchange",
        reason=f"the spec cannot take {exchange} in state 4 (it can take: {', '.join(enabled)})",
    )
    # The model's invariants are checked on every state, accepted or not: the raised LWM breaks those that
    # say 1..lwm is durable and the counter exact; the state claiming an exchange breaks HwmCoversLwm
    # (right after an exchange every copy's HWM covers its LWM, and the backup's does not).
    by_id = {b.id: b for b in report.broken}
    assert sorted(by_id) == ["walk-7-0-exchange", "walk-7-0-lwm"]
    assert by_id["walk-7-0-lwm"].step == 10
    assert {"CounterIsExact", "LwmIsDurable"} <= set(by_id["walk-7-0-lwm"].invariants)
    assert (by_id["walk-7-0-exchange"].step, by_id["walk-7-0-exchange"].invariants) == (5, ["HwmCoversLwm"])


def test_an_invariant_a_behavior_breaks_names_its_first_state(walks: list[Trace], tmp_path: Path) -> None:
    """A trace can be a behavior of the spec and still break an invariant (one the spec does not keep)."""
    (tmp_path / SPEC.name).write_text(SPEC.read_text(encoding="utf-8"), encoding="utf-8")
    spec = tmp_path / "UpdateCounterNoCommit.tla"
    spec.write_text(
        "---- MODULE UpdateCounterNoCommit ----\nEXTENDS UpdateCounter\n"
        'NoCommit == action.name # "Commit"\n====\n',
        encoding="utf-8",
    )
    config = tmp_path / "UpdateCounterNoCommit.cfg"
    config.write_text(SMALL.read_text(encoding="utf-8") + "\nINVARIANT NoCommit\n", encoding="utf-8")
    chosen = [w for w in walks if any(_name(s) == "Commit" for s in w.states)][:3]
    report = validate_traces(chosen, spec, config)
    assert report.accepted == len(chosen) and not report.holds
    assert [(b.id, b.step, b.invariants) for b in report.broken] == [
        (w.id, next(k for k, s in enumerate(w.states) if _name(s) == "Commit"), ["NoCommit"]) for w in chosen
    ]


def test_batches_split_the_traces_over_runs(walks: list[Trace]) -> None:
    report = validate_traces(walks[:5], SPEC, SMALL, batch_size=3)
    assert (report.accepted, report.tlc_runs) == (5, 2)


# --- trace files ------------------------------------------------------------------------------------------


def test_the_schema_file_is_generated_from_the_model() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "run: python -m tidemark.conformance.traces"
    )


def test_trace_files_round_trip(walks: list[Trace], tmp_path: Path) -> None:
    path = tmp_path / "walks.jsonl"
    write_traces(path, walks[:3])
    assert read_traces(path) == walks[:3]
    assert [t.line for t in read_traces(path)] == [1, 2, 3]
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize(
    ("damage", "location", "message"),
    [
        (lambda t: t.pop("vars"), "line 2, vars", "Field required"),
        (lambda t: t["#meta"].pop("id"), "line 2, #meta.id", "Field required"),
        (lambda t: t["states"][3].pop("done"), "line 2, states[3]", "state 3 lacks variable 'done'"),
        (
            lambda t: t["states"][1].update(extra=1),
            "line 2, states[1].extra",
            "'extra', which is not in vars",
        ),
        (lambda t: t["states"][2].update(done={"#set": 3}), "line 2, states[2].done", "#set must hold"),
        (lambda t: t.update(loop=0), "line 2, loop", "Extra inputs are not permitted"),
    ],
)
def test_a_bad_line_is_refused_naming_the_line_and_field(
    walks: list[Trace], tmp_path: Path, damage: object, location: str, message: str
) -> None:
    bad = json.loads(json.dumps(trace_to_itf(walks[1])))
    damage(bad)  # type: ignore[operator]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(trace_to_itf(walks[0])) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(TidemarkError) as error:
        read_traces(path)
    assert (error.value.source, error.value.location) == (str(path), location)
    assert message in error.value.message


def test_invalid_json_and_repeated_ids_are_refused(walks: list[Trace], tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n{not json\n", encoding="utf-8")
    with pytest.raises(TidemarkError, match="line 2"):
        read_traces(path)
    line = json.dumps(trace_to_itf(walks[0]))
    path.write_text(f"{line}\n{line}\n", encoding="utf-8")
    with pytest.raises(TidemarkError, match=r"line 2, #meta\.id: trace id 'walk-7-0' already used on line 1"):
        read_traces(path)


def test_a_trace_without_a_spec_variable_is_refused_before_tlc_runs(
    walks: list[Trace], tmp_path: Path
) -> None:
    path = tmp_path / "partial.jsonl"
    itf = json.loads(json.dumps(trace_to_itf(walks[0])))
    itf["vars"].remove("done")
    for state in itf["states"]:
        del state["done"]
    path.write_text(json.dumps(itf) + "\n", encoding="utf-8")
    traces = read_traces(path)
    with pytest.raises(TidemarkError) as error:
        validate_traces(traces, SPEC, SMALL)
    assert error.value.describe() == (
        f"{path}, line 1, vars: trace 'walk-7-0' lacks variable 'done' of spec UpdateCounter"
        f" (expected the spec's variables {sorted(VARIABLES)})"
    )


def test_the_model_comes_from_the_traces_unless_given(walks: list[Trace]) -> None:
    named = [Trace(id="a", spec="UpdateCounter", states=walks[0].states, config=str(SMALL))]
    assert resolve_model(named, None, None) == (SPEC, SMALL)
    assert resolve_model(walks[:1], None, None) == (SPEC, SPEC.with_suffix(".cfg"))
    with pytest.raises(TidemarkError, match="not of Other"):
        resolve_model(walks[:1], Path("spec/Other.tla"), None)


# --- the command ------------------------------------------------------------------------------------------


def test_the_command_reports_rejections_as_json(
    walks: list[Trace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    states = list(walks[3].states)
    lwm = _field(states[4], "b", "lwm")
    tampered = _tampered(
        walks[3], "lwm", [*states[:4], _with_counter_field(states[4], "b", "lwm", lwm + 7), *states[5:]]
    )
    path = tmp_path / "traces.jsonl"
    write_traces(path, [walks[2], tampered])
    assert main(["validate", str(path), "--config", str(SMALL), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert_output_schema("validate", report)
    assert (report["traces"], report["accepted"]) == (2, 1)
    assert [(r["id"], r["step"], r["action"]) for r in report["rejected"]] == [
        ("walk-7-3-lwm", 4, _name(states[4]))
    ]
    assert report["rejected"][0]["diff"] == [f"counter.b.lwm: expected {lwm}, got {lwm + 7}"]
    assert report["tlc_seconds"] > 0


def test_the_command_accepts_good_traces_and_refuses_bad_files(
    walks: list[Trace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.jsonl"
    write_traces(path, walks[:2])
    assert main(["validate", str(path), "--config", str(SMALL)]) == 0
    assert "2/2 traces accepted" in capsys.readouterr().out
    path.write_text('{"vars": []}\n', encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    assert f"{path}, line 1, #meta: Field required" in capsys.readouterr().err


# --- ITF traces written by other tools --------------------------------------------------------------------

APALACHE = Path("tests/fixtures/itf/apalache-shape-UpdateCounter.itf.json")


def test_an_itf_trace_in_apalaches_shape_is_validated(capsys: pytest.CaptureFixture[str]) -> None:
    # The spec comes from the trace's #meta.source; integers as #bigint, tuples as #tup, maps as #map.
    assert main(["validate", str(APALACHE), "--config", str(SMALL), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["spec"], report["traces"], report["accepted"], report["broken"]) == (str(SPEC), 1, 1, [])


def test_an_altered_itf_trace_is_rejected_at_the_altered_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    itf = json.loads(APALACHE.read_text(encoding="utf-8"))
    counters = dict(itf["states"][2]["counter"]["#map"])
    assert counters["b"]["lwm"] == {"#bigint": "1"}
    counters["b"]["lwm"] = {"#bigint": "0"}  # the commit on b that does not move its LWM
    path = tmp_path / "altered.itf.json"
    path.write_text(json.dumps(itf), encoding="utf-8")
    assert main(["validate", str(path), "--config", str(SMALL), "--json"]) == 1
    [rejection] = json.loads(capsys.readouterr().out)["rejected"]
    assert (rejection["id"], rejection["step"], rejection["action"]) == ("altered", 2, "Commit")
    assert rejection["diff"] == ["counter.b.lwm: expected 1, got 0"]


def test_an_itf_trace_that_names_no_spec_needs_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    itf = json.loads(APALACHE.read_text(encoding="utf-8"))
    del itf["#meta"]["source"]
    path = tmp_path / "anonymous.itf.json"
    path.write_text(json.dumps(itf), encoding="utf-8")
    assert main(["validate", str(path), "--config", str(SMALL)]) == 2
    assert f"{path}, #meta: the trace does not say which spec it follows" in capsys.readouterr().err
    assert main(["validate", str(path), "--spec", str(SPEC), "--config", str(SMALL), "--json"]) == 0


def test_an_itf_trace_written_by_tidemark_names_its_spec_and_model(tmp_path: Path) -> None:
    itf = json.loads(APALACHE.read_text(encoding="utf-8"))
    itf["#meta"] = {"format": "ITF", "spec": str(SPEC), "config": str(SMALL)}  # as write_itf records them
    path = tmp_path / "mismatch.itf.json"
    path.write_text(json.dumps(itf), encoding="utf-8")
    trace = read_itf_trace(path)
    assert (trace.id, trace.spec, trace.config, len(trace.states)) == (
        "mismatch",
        "UpdateCounter",
        str(SMALL),
        4,
    )
    assert resolve_model([trace], None, None) == (SPEC, SMALL)
