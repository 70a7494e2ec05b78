"""TLC's own diagnostics reach the user, run for real: each kind of error TLC reports ends `tidemark` with
exit 2 naming the file and line TLC names (bad input), or exit 3 with TLC's or the JVM's own words (TLC
or its JVM failed). tests/test_tlc_output.py parses recordings of the same runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.tlc.output import shown_path

pytestmark = pytest.mark.tlc

FIXTURES = Path(__file__).parent / "fixtures" / "tlc"
SPEC = Path("spec/UpdateCounter.tla")
SMALL = Path("tests/models/UpdateCounter-small.cfg")


def _check(capsys: pytest.CaptureFixture[str], spec: str, *args: str) -> tuple[int, str]:
    code = main(["check", str(FIXTURES / spec), "--heap", "256m", "--timeout", "120", *args])
    captured = capsys.readouterr()
    assert captured.out == ""  # no verdict: nothing on stdout
    assert "Traceback" not in captured.err
    return code, " ".join(captured.err.split())


# spec, config, the error's file and place, TLC's words
BAD_INPUT = {
    "config syntax (5006)": ("Ok.tla", "ConfigSyntax.cfg", "ConfigSyntax.cfg, line 5: config error",
                             "It was expecting }, but did not find it."),
    "assumption false": ("Assumption.tla", "Assumption.cfg", "Assumption.cfg: assumption false",
                         "Assumption line 5, col 8 to line 5, col 12 of module Assumption is false."),
    "big constant": ("Assumption.tla", "BigConstant.cfg", "BigConstant.cfg, line 2: number too big",
                     "3000000000 is outside TLC's"),
    "big literal": ("BigLiteral.tla", "BigLiteral.cfg", "BigLiteral.tla, line 5: number too big",
                    "TLC can't handle a number this big."),
    "overflow": ("Overflow.tla", "Overflow.cfg", "Overflow.tla, line 6, column 14: evaluation error",
                 "Overflow when computing 2000000000+2000000000"),
    "missing module": ("MissingModule.tla", "MissingModule.cfg", "MissingModule.tla: parse error",
                       "Cannot find source file for module NoSuchModule imported in module MissingModule."),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_an_error_in_the_input_exits_2_at_its_place(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec, config, where, words = BAD_INPUT[case]
    code, err = _check(capsys, spec, "--config", str(FIXTURES / config))
    assert code == 2, err
    file = where.split(",")[0].split(":")[0]
    assert f"error: {shown_path(FIXTURES / file)}{where[len(file) :]}: " in err
    assert words in err


def test_tlc_out_of_memory_exits_3_with_its_words(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _check(capsys, "Hog.tla", "--heap", "64m")
    assert code == 3, err
    assert f"error: TLC on {shown_path(FIXTURES / 'Hog.tla')}: out of memory: Java heap space" in err
    assert "expected a larger --heap" in err


def test_a_jvm_that_cannot_start_tlc_exits_3_with_its_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jar = tmp_path / "tla2tools.jar"
    jar.write_text("not a jar", encoding="utf-8")
    monkeypatch.setenv("TLA2TOOLS_JAR", str(jar))
    code, err = _check(capsys, "Ok.tla")
    assert code == 3, err
    assert "JVM did not start: Error: Could not find or load main class tlc2.TLC" in err


def test_a_timeout_exits_2_naming_the_option_and_the_time(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", str(FIXTURES / "Unbounded.tla"), "--heap", "256m", "--timeout", "2.5"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    # The timeout as given, not rounded (it once printed "(1 s)" for 0.5), and the time TLC ran.
    assert "error: --timeout: TLC did not finish within its timeout of 2.5 s: stopped after 2." in err


# --- validate: traces TLC cannot take ---------------------------------------------------------------------


def _walk(tmp_path: Path) -> dict[str, object]:
    """A real two-step walk of the small model, as ITF (from `tidemark verify`'s walk machinery)."""
    from tidemark.conformance.mappings import mapping_for
    from tidemark.conformance.tlc.config import read_config
    from tidemark.conformance.traces import trace_to_itf
    from tidemark.conformance.validate import initial_states
    from tidemark.conformance.walks import random_walks

    mapping = mapping_for("UpdateCounter", read_config(SMALL).constants)
    [walk] = random_walks(mapping, initial_states(SPEC, SMALL), count=1, steps=2, seed=3)
    return trace_to_itf(walk)


def _validate(
    tmp_path: Path, trace: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(trace) + "\n", encoding="utf-8")
    code = main(["validate", str(path), "--spec", str(SPEC), "--config", str(SMALL), "--heap", "256m"])
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    return code, " ".join(captured.err.split())


def test_validate_refuses_an_integer_beyond_tlc_naming_the_state_and_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _walk(tmp_path)
    states = trace["states"]
    assert isinstance(states, list)
    states[1]["counter"]["b"]["lwm"] = 2**31
    code, err = _validate(tmp_path, trace, capsys)
    assert code == 2, err
    assert f"{tmp_path / 'traces.jsonl'}, line 1, states[1].counter.b.lwm:" in err
    assert "2147483648 is beyond TLC's integers" in err


def test_validate_names_the_trace_file_for_a_value_tlc_cannot_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _walk(tmp_path)
    states = trace["states"]
    assert isinstance(states, list)
    states[1]["counter"]["b"]["lwm"] = "x"
    code, err = _validate(tmp_path, trace, capsys)
    assert code == 2, err
    assert f"error: {tmp_path / 'traces.jsonl'}: TLC cannot evaluate the spec on these traces" in err
    # TLC's own words come first (the model's invariants are checked on every state of the traces, so
    # TypeOK meets the string first), and the list of nested positions it prints is left out.
    assert 'Attempted to check if the value: "x" is an element of Nat.' in err
    assert "nested expressions" not in err and "UpdateCounter, line 321, column 12" in err
