"""Tests for conformance.tlc.output: TLC's tool-mode output parsed from recordings of real TLC 2.15 runs.

The recordings (tests/fixtures/tlc/*.tool-output.txt) were made by tests/fixtures/tlc/record.sh on the
tiny specs beside them; RECORDINGS holds the exit code of each run. No TLC runs here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.conformance.errors import TidemarkError, ToolError, exit_code
from tidemark.conformance.tlc.output import (
    OUTCOME_CLASS,
    ErrorLocation,
    Message,
    Outcome,
    TlcResult,
    TraceStep,
    parse_output,
    parse_trace_step,
    shown_path,
    split_messages,
    tlc_failure,
)
from tidemark.conformance.tlc.parse import TlaValueError
from tidemark.conformance.tlc.runner import TlcRun

FIXTURES = Path(__file__).parent / "fixtures" / "tlc"

# Recording name -> the exit code TLC returned when it was recorded (record.sh prints them).
RECORDINGS = {
    "ok": 0,
    "invariant_violation": 12,
    "init_violation": 12,
    "deadlock": 11,
    "temporal_violation": 13,
    "stuttering_violation": 13,
    "action_property_violation": 13,
    "assert_failed": 75,
    "syntax_error": 150,
    "unknown_operator": 150,
    "unknown_invariant": 151,
    "missing_config": 255,
    "config_syntax_error": 255,
    "assumption_false": 10,
    "big_constant": 255,
    "big_literal": 255,
    "overflow": 75,
    "missing_module": 150,
    "out_of_memory": 75,
}
# A JVM that did not start TLC (-Xmx1m): no tool-mode message at all, the JVM's exit code 1.
JVM_ERROR = "jvm_error"

# Library bug (conformance/tlc/output.py, _STEP_HEAD): TLC 2.15 heads the first state of every trace
# with "1: <Initial predicate>", which the pattern `<(\w+)(?: line \d+.*)?>` does not match (a space,
# no "line"), so parse_trace_step raises TlaValueError and parse_output fails on every counterexample.
NOTE = "a note long enough to make TLC wrap the value"
LOG_ENTRY_0 = {"note": NOTE, "step": 0}
LOG_ENTRY_1 = {"note": NOTE, "step": 1}


def recording(name: str) -> str:
    return (FIXTURES / f"{name}.tool-output.txt").read_text(encoding="utf-8")


def recorded_run(
    name: str, *, output: str | None = None, exit_code: int | None = None, timed_out: bool = False
) -> TlcRun:
    return TlcRun(
        command=["java", "tlc2.TLC", "-tool"],
        exit_code=RECORDINGS.get(name, 1) if exit_code is None else exit_code,
        output=recording(name) if output is None else output,
        seconds=3.0,
        timed_out=timed_out,
    )


def parsed(name: str) -> TlcResult:
    return parse_output(recorded_run(name), source=f"recording {name}")


def bodies(name: str, code: int) -> list[str]:
    messages, _ = split_messages(recording(name))
    return [message.body for message in messages if message.code == code]


# ---------------------------------------------------------------------------------------------------------
# The recordings themselves and split_messages.


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recordings_are_tool_mode_output_of_tlc_2_15(name: str) -> None:
    messages, _ = split_messages(recording(name))
    assert messages[0].code == 2262
    assert messages[0].body.startswith("TLC2 Version 2.15 ")
    assert messages[-1].code == 2186  # "Finished in ...": every recorded run ran to its end
    assert all("@!@!@" not in message.body for message in messages)


def test_split_messages_of_a_successful_run() -> None:
    messages, plain = split_messages(recording("ok"))
    assert [m.code for m in messages] == [
        2262,
        2187,
        2220,
        2219,
        2185,
        2189,
        2190,
        2193,
        2200,
        2199,
        2194,
        2268,
        2186,
    ]
    assert all(m.level == 0 for m in messages)
    assert messages[9] == Message(
        code=2199, level=0, body="14 states generated, 9 distinct states found, 0 states left on queue."
    )
    # SANY's lines are the only text outside the frames.
    sany = plain.strip().splitlines()
    assert sany[0].startswith("Parsing file /")
    assert sany[0].endswith("/tests/fixtures/tlc/Ok.tla")  # recorded with its absolute path
    assert sany[1:] == [
        "Parsing file /src/Naturals.tla",
        "Semantic processing of module Naturals",
        "Semantic processing of module Ok",
    ]


def test_split_messages_cuts_nested_messages_out_of_their_parent() -> None:
    messages, _ = split_messages(recording("assert_failed"))
    codes = [m.code for m in messages]
    general = codes.index(1000)
    assert codes[general : general + 3] == [1000, 2132, 2103]
    assert messages[general].level == 1
    assert messages[general].body == (
        "TLC threw an unexpected exception.\n"
        "This was probably caused by an error in the spec or model.\n"
        "See the User Output or TLC Console for clues to what happened.\n"
        "The exception was a tlc2.tool.EvalException\n"
        ":"
    )
    assert messages[general + 1] == Message(
        code=2132,
        level=0,
        body='The first argument of Assert evaluated to FALSE; the second argument was:\n"x got too big"',
        parent=general,  # nested in the general error
    )
    assert messages[general].parent is None and messages[general + 2].parent is None


def test_split_messages_keeps_sanys_parse_error_as_plain_text() -> None:
    messages, plain = split_messages(recording("syntax_error"))
    assert 3002 in [m.code for m in messages]
    assert "***Parse Error***" in plain
    assert "Could not parse module SyntaxError from file SyntaxError.tla" in plain
    assert all("Parse Error" not in m.body for m in messages)


# ---------------------------------------------------------------------------------------------------------
# Outcomes.


def test_success_figures() -> None:
    result = parsed("ok")
    assert result.outcome == Outcome.OK
    assert result.tlc_exit_code == 0
    assert (result.distinct_states, result.generated_states, result.depth) == (9, 14, 5)
    assert result.seconds == 3.0
    assert result.violation is None
    assert result.location is None
    assert result.error is None
    assert result.warnings == []


def test_invariant_violated() -> None:
    result = parsed("invariant_violation")
    assert result.outcome == Outcome.INVARIANT_VIOLATED
    assert result.tlc_exit_code == 12
    assert (result.distinct_states, result.generated_states, result.depth) == (9, 9, 4)
    violation = result.violation
    assert violation is not None
    assert violation.kind == Outcome.INVARIANT_VIOLATED
    assert violation.invariant == "LogShort"
    assert violation.loops_back_to is None
    assert violation.trace == [
        TraceStep(index=1, action="Init", state={"log": [], "n": 0}),
        TraceStep(index=2, action="Write", state={"log": [LOG_ENTRY_0], "n": 1}),
        TraceStep(index=3, action="Write", state={"log": [LOG_ENTRY_0, LOG_ENTRY_1], "n": 2}),
        TraceStep(index=4, action="Tick", state={"log": [LOG_ENTRY_0, LOG_ENTRY_1], "n": 3}),
    ]


def test_trace_state_with_a_value_wrapped_over_two_lines() -> None:
    body = bodies("invariant_violation", 2217)[2]
    assert "],\n   [step |-> 1" in body  # TLC really wrapped the value in the recording
    step = parse_trace_step(body, source="recording")
    assert step == TraceStep(index=3, action="Write", state={"log": [LOG_ENTRY_0, LOG_ENTRY_1], "n": 2})


def test_trace_state_of_a_one_variable_spec() -> None:
    body = bodies("deadlock", 2217)[3]
    assert body == "4: <Step line 6, col 9 to line 6, col 27 of module Deadlock>\nx = 3"
    assert parse_trace_step(body, source="recording") == TraceStep(index=4, action="Step", state={"x": 3})


def test_trace_state_of_the_initial_predicate() -> None:
    body = bodies("deadlock", 2217)[0]
    assert body == "1: <Initial predicate>\nx = 0"
    assert parse_trace_step(body, source="recording") == TraceStep(index=1, action="Init", state={"x": 0})


def test_bad_trace_state_head_is_an_error_naming_the_source() -> None:
    with pytest.raises(TlaValueError) as caught:
        parse_trace_step("x = 0", source="recording X")
    assert caught.value.source == "recording X"
    assert caught.value.location == "line 1, column 1"


def test_invariant_violated_in_the_initial_state() -> None:
    result = parsed("init_violation")
    assert bodies("init_violation", 2107) == ["Invariant Positive is violated by the initial state:\nx = 0"]
    assert result.outcome == Outcome.INVARIANT_VIOLATED
    assert result.tlc_exit_code == 12
    assert result.violation is not None
    assert result.violation.invariant == "Positive"
    assert result.violation.kind == Outcome.INVARIANT_VIOLATED
    # TLC stops before its statistics: no figures.
    assert (result.distinct_states, result.generated_states, result.depth) == (None, None, None)


def test_invariant_violated_in_the_initial_state_has_that_state_as_trace() -> None:
    result = parsed("init_violation")
    assert result.violation is not None
    assert result.violation.trace == [TraceStep(index=1, action="Init", state={"x": 0})]


def test_deadlock() -> None:
    result = parsed("deadlock")
    assert result.outcome == Outcome.DEADLOCK
    assert result.tlc_exit_code == 11
    assert (result.distinct_states, result.generated_states, result.depth) == (4, 4, 4)
    violation = result.violation
    assert violation is not None
    assert violation.kind == Outcome.DEADLOCK
    assert violation.invariant is None
    assert [step.action for step in violation.trace] == ["Init", "Step", "Step", "Step"]
    assert [step.state for step in violation.trace] == [{"x": 0}, {"x": 1}, {"x": 2}, {"x": 3}]


def test_temporal_property_violated_with_a_lasso() -> None:
    result = parsed("temporal_violation")
    assert result.outcome == Outcome.PROPERTY_VIOLATED
    assert result.tlc_exit_code == 13
    assert (result.distinct_states, result.generated_states, result.depth) == (3, 4, None)
    violation = result.violation
    assert violation is not None
    assert violation.kind == Outcome.PROPERTY_VIOLATED
    assert violation.invariant is None  # TLC 2.15 says "Temporal properties were violated." without a name
    assert violation.trace == [
        TraceStep(index=1, action="Init", state={"x": 0}),
        TraceStep(index=2, action="Step", state={"x": 1}),
        TraceStep(index=3, action="Step", state={"x": 2}),
    ]
    assert violation.loops_back_to == 1


def test_temporal_property_violated_by_stuttering() -> None:
    result = parsed("stuttering_violation")
    assert result.outcome == Outcome.PROPERTY_VIOLATED
    violation = result.violation
    assert violation is not None
    assert violation.trace == [
        TraceStep(index=1, action="Init", state={"x": 0}),
        TraceStep(index=2, action="Stuttering", state={}),
    ]
    assert violation.loops_back_to is None


def test_stuttering_step() -> None:
    [body] = bodies("stuttering_violation", 2218)
    assert parse_trace_step(body, source="recording") == TraceStep(index=2, action="Stuttering", state={})


def test_back_to_state_message() -> None:
    [body] = bodies("temporal_violation", 2122)
    assert body == "1: Back to state: <Step line 6, col 9 to line 6, col 24 of module Liveness>"


def test_action_property_violated() -> None:
    result = parsed("action_property_violation")
    assert result.outcome == Outcome.PROPERTY_VIOLATED
    assert result.tlc_exit_code == 13
    assert (result.distinct_states, result.generated_states, result.depth) == (3, 4, 3)
    violation = result.violation
    assert violation is not None
    assert violation.invariant == "NeverDecreases"
    assert [step.action for step in violation.trace] == ["Init", "Up", "Up", "Up"]
    assert [step.state["x"] for step in violation.trace] == [0, 1, 2, 0]


def test_evaluation_error_keeps_the_nested_assert_message() -> None:
    result = parsed("assert_failed")
    assert result.outcome == Outcome.EVALUATION_ERROR
    assert result.tlc_exit_code == 75
    assert result.violation is None
    assert (result.distinct_states, result.generated_states, result.depth) == (3, 3, None)
    assert result.error is not None
    assert result.error.startswith(  # TLC's preamble shortened to the exception's name
        "tlc2.tool.EvalException: The first argument of Assert evaluated to FALSE;"
        ' the second argument was:\n"x got too big"\n'
    )
    # The innermost of the nested positions TLC lists is the expression that failed.
    assert result.location is not None
    assert (result.location.module, result.location.line, result.location.column) == ("AssertFails", 6, 9)


def test_syntax_error_location() -> None:
    result = parsed("syntax_error")
    assert result.outcome == Outcome.PARSE_ERROR
    assert result.tlc_exit_code == 150
    where = result.location
    assert where is not None
    # SANY reports where it gave up: the module's closing line, after the unclosed parenthesis of line 6.
    assert (where.module, where.line, where.column) == ("SyntaxError", 7, 1)
    assert where.message.rstrip() == (
        '***Parse Error*** Encountered "' + "=" * 74 + '" at line 7, column 1 and token "1"'
    )
    assert result.error == where.message
    assert result.violation is None


def test_semantic_error_location() -> None:
    result = parsed("unknown_operator")
    assert result.outcome == Outcome.PARSE_ERROR
    where = result.location
    assert where is not None
    assert (where.module, where.line, where.column) == ("UnknownOperator", 6, 14)
    assert where.message == "Unknown operator: `Bump'."
    assert result.error == "Unknown operator: `Bump'."


def test_config_error_unknown_invariant() -> None:
    result = parsed("unknown_invariant")
    assert result.outcome == Outcome.CONFIG_ERROR
    assert result.tlc_exit_code == 151
    assert result.error == (
        "The invariant NoSuchInvariant specified in the configuration file\n"
        "is not defined in the specification."
    )
    assert result.location == ErrorLocation(module=None, line=None, column=None, message=result.error)


def test_config_error_missing_config_file() -> None:
    # TLC exits with 255 (an unexpected exception) here: the nested message 5001 makes it a config error.
    assert [m.code for m in split_messages(recording("missing_config"))[0]][2:4] == [1000, 5001]
    result = parsed("missing_config")
    assert result.outcome == Outcome.CONFIG_ERROR
    assert result.tlc_exit_code == 255
    assert result.error is not None
    assert result.error == (
        "tlc2.tool.ConfigFileException: "
        "TLC encountered the following error when trying to read the configuration file NoSuchConfig.cfg:\n"
        "File not found."
    )


def test_unknown_exit_code_without_config_message_is_a_failure_of_tlc() -> None:
    result = parse_output(recorded_run("ok", exit_code=255))
    assert result.outcome == Outcome.TLC_FAILED
    assert result.distinct_states == 9
    assert result.error is not None and result.error.startswith("TLC exited with code 255")


# ---------------------------------------------------------------------------------------------------------
# Truncated output: the run was killed while TLC was printing.


def _cut_in(name: str, code: int, keep: str) -> str:
    """The recording cut inside message `code`, right after the text `keep` of its body."""
    text = recording(name)
    start = text.index(f"@!@!@STARTMSG {code}:")
    return text[: text.index(keep, start) + len(keep)]


def test_truncated_output_keeps_the_open_message() -> None:
    cut = _cut_in("ok", 2199, "14 states gen")
    messages, plain = split_messages(cut)
    assert messages[-1] == Message(code=2199, level=0, body="14 states gen")
    assert [m.code for m in messages][-3:] == [2193, 2200, 2199]
    assert "@!@!@" not in plain


def test_truncated_output_of_a_timed_out_run() -> None:
    cut = _cut_in("ok", 2199, "14 states gen")
    result = parse_output(recorded_run("ok", output=cut, exit_code=-9, timed_out=True))
    assert result.outcome == Outcome.TIMEOUT
    assert result.tlc_exit_code == -9
    assert (result.distinct_states, result.generated_states, result.depth) == (None, None, None)
    assert result.error == "TLC did not finish within its timeout: stopped after 3.0 s"


def test_truncated_output_of_a_killed_run_is_a_failure_of_tlc() -> None:
    cut = _cut_in("ok", 2199, "14 states gen")
    result = parse_output(recorded_run("ok", output=cut, exit_code=-9))
    assert result.outcome == Outcome.TLC_FAILED
    assert result.error is not None and result.error.startswith("TLC exited with code -9")


def test_truncated_in_the_middle_of_a_trace_state() -> None:
    cut = _cut_in("invariant_violation", 2217, "/\\ log = << [step |-> 0, note |-> ")
    result = parse_output(recorded_run("invariant_violation", output=cut, exit_code=-9, timed_out=True))
    assert result.outcome == Outcome.TIMEOUT
    assert result.violation is None


# ---------------------------------------------------------------------------------------------------------
# Runs without a verdict: each recorded TLC diagnostic is bad input (exit 2, naming the file and line TLC
# names) or a failure of TLC or its JVM (exit 3, with TLC's own words).

# recording -> (spec, config, outcome, the error's source file, its location, words of TLC's it carries)
DIAGNOSTICS = {
    "syntax_error": ("SyntaxError.tla", "SyntaxError.cfg", Outcome.PARSE_ERROR,
                     "SyntaxError.tla", "line 7, column 1", "***Parse Error***"),
    "unknown_operator": ("UnknownOperator.tla", "UnknownOperator.cfg", Outcome.PARSE_ERROR,
                         "UnknownOperator.tla", "line 6, column 14", "Unknown operator: `Bump'."),
    "missing_module": ("MissingModule.tla", "MissingModule.cfg", Outcome.PARSE_ERROR,
                       "MissingModule.tla", None, "Cannot find source file for module NoSuchModule"),
    "unknown_invariant": ("UnknownInvariant.tla", "UnknownInvariant.cfg", Outcome.CONFIG_ERROR,
                          "UnknownInvariant.cfg", None, "The invariant NoSuchInvariant specified"),
    "config_syntax_error": ("Ok.tla", "ConfigSyntax.cfg", Outcome.CONFIG_ERROR,
                            "ConfigSyntax.cfg", "line 5", "It was expecting }, but did not find it."),
    "missing_config": ("Ok.tla", "NoSuchConfig.cfg", Outcome.CONFIG_ERROR,
                       "NoSuchConfig.cfg", None, "File not found."),
    "assumption_false": ("Assumption.tla", "Assumption.cfg", Outcome.ASSUMPTION_FALSE,
                         "Assumption.cfg", None, "Assumption line 5, col 8 to line 5, col 12 of module"),
    "big_constant": ("Assumption.tla", "BigConstant.cfg", Outcome.NUMBER_TOO_BIG,
                     "BigConstant.cfg", "line 2", 'For input string: "3000000000"'),
    "big_literal": ("BigLiteral.tla", "BigLiteral.cfg", Outcome.NUMBER_TOO_BIG,
                    "BigLiteral.tla", "line 5", "TLC can't handle a number this big."),
    "overflow": ("Overflow.tla", "Overflow.cfg", Outcome.EVALUATION_ERROR,
                 "Overflow.tla", "line 6, column 14", "Overflow when computing 2000000000+2000000000"),
    "assert_failed": ("AssertFails.tla", "AssertFails.cfg", Outcome.EVALUATION_ERROR,
                      "AssertFails.tla", "line 6, column 9", '"x got too big"'),
    "out_of_memory": ("Hog.tla", "Hog.cfg", Outcome.OUT_OF_MEMORY, None, None, "Java heap space"),
    JVM_ERROR: ("Ok.tla", "Ok.cfg", Outcome.JVM_ERROR, None, None, "Too small maximum heap"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DIAGNOSTICS))
def test_each_diagnostic_is_bad_input_or_a_failure_of_tlc(name: str) -> None:
    spec, config, outcome, source, location, words = DIAGNOSTICS[name]
    result = parsed(name)
    assert result.outcome == outcome
    error = tlc_failure(result, FIXTURES / spec, FIXTURES / config)
    assert error is not None
    assert words in error.message
    if OUTCOME_CLASS[outcome] == "environment":
        assert isinstance(error, ToolError) and exit_code(error) == 3
        assert error.source == f"TLC on {shown_path(FIXTURES / spec)}"
    else:
        assert not isinstance(error, ToolError) and exit_code(error) == 2
        assert error.source == shown_path(FIXTURES / source)
        assert error.location == location


def test_verdicts_are_not_errors() -> None:
    for name in ("ok", "invariant_violation", "deadlock", "temporal_violation"):
        assert tlc_failure(parsed(name), FIXTURES / "Ok.tla", FIXTURES / "Ok.cfg") is None


def test_a_timeout_is_bad_usage_naming_the_option() -> None:
    result = parse_output(recorded_run("ok", output=_cut_in("ok", 2199, "14"), exit_code=-9, timed_out=True))
    error = tlc_failure(result, FIXTURES / "Ok.tla", FIXTURES / "Ok.cfg")
    assert isinstance(error, TidemarkError) and exit_code(error) == 2
    assert error.source == "--timeout"
    assert "stopped after 3.0 s" in error.message


def test_a_parser_that_crashes_is_a_failure_of_tlc_not_a_parse_error() -> None:
    # Concurrent TLC processes overwriting each other's standard modules make SANY itself fail
    # (tlaplus issue 688): a Java exception where a parse error would name its place.
    output = recording("syntax_error").replace(
        "tla2sany.semantic.AbortException",
        'java.lang.NullPointerException: Cannot invoke "String.length()" because "str" is null',
    )
    result = parse_output(recorded_run("syntax_error", output=output))
    assert result.outcome == Outcome.TLC_FAILED
    assert result.error is not None and "java.lang.NullPointerException: Cannot invoke" in result.error
    assert exit_code(tlc_failure(result, FIXTURES / "SyntaxError.tla", FIXTURES / "SyntaxError.cfg")) == 3
