"""Parsing TLC's tool-mode output (-tool) into a TlcResult.

In tool mode every message is framed as ``@!@!@STARTMSG code:level @!@!@ ... @!@!@ENDMSG code @!@!@``;
messages nest (an evaluation error wraps the Assert message), and SANY's parse errors are plain text
outside any frame. Codes are TLC 2.15's (tlc2.output.EC).

Every run ends in one Outcome, and each outcome is of one class (OUTCOME_CLASS): a verdict (ok or a
violation), bad input (the spec, the model config or a trace is wrong; TLC names the file and line) or a
failure of TLC or its JVM (out of memory, a JVM that did not start, an exception inside TLC).
`tlc_failure` turns the last two into the error the command stops with, carrying TLC's own words.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.tlc.parse import TlaValueError, parse_state
from tidemark.conformance.tlc.runner import TlcRun
from tidemark.conformance.tlc.values import TLC_INT_MAX, TLC_INT_MIN, Record, Value, state_to_itf

_FRAME = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\n?|@!@!@ENDMSG (\d+) @!@!@\n?")

# Message codes (tlc2.output.EC) this parser reads.
OUT_OF_MEMORY_CODES = {1001, 1002, 1003}  # SYSTEM_OUT_OF_MEMORY (while computing init, liveness)
VERSION = 2262  # the first message of every run: its absence means the JVM did not start TLC
ASSUMPTION_FALSE = 2104
INVARIANT_VIOLATED_INITIAL = 2107
INVARIANT_VIOLATED = 2110
ACTION_PROPERTY_VIOLATED = 2112
DEADLOCK = 2114
TEMPORAL_VIOLATED = 2116
BEHAVIOR_FOLLOWS = 2121
BACK_TO_STATE = 2122
ASSERT_FAILED = 2132
ERROR_POSITIONS = 2103
SUCCESS = 2193
STATS = 2199
SEARCH_DEPTH = 2194
STATE = 2217
STUTTERING = 2218
SIMULATION_PROGRESS = 2209
INTEGER_TOO_BIG = 2265
ARITHMETIC_OVERFLOW = 2178
# Errors reading the model config (CFG_*: can't read it, a syntax error "at line N") and its content
# (TLC_CONFIG_*: an undefined invariant, an unassigned constant, ...).
CONFIG_FILE_ERRORS = set(range(5001, 5007))
CONFIG_ERRORS = CONFIG_FILE_ERRORS | set(range(2222, 2246)) | {2257, 2280, 2281}
SANY_FAILED = 3002


class Outcome(StrEnum):
    OK = "ok"
    INVARIANT_VIOLATED = "invariant violated"
    DEADLOCK = "deadlock"
    PROPERTY_VIOLATED = "property violated"
    PARSE_ERROR = "parse error"
    CONFIG_ERROR = "config error"
    ASSUMPTION_FALSE = "assumption false"
    EVALUATION_ERROR = "evaluation error"
    NUMBER_TOO_BIG = "number too big"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out of memory"
    JVM_ERROR = "JVM did not start"
    TLC_FAILED = "TLC failed"


OutcomeClass = Literal["verdict", "input", "environment"]

# What each outcome says about the run. A timeout is the user's --timeout (or model size): bad usage.
OUTCOME_CLASS: dict[Outcome, OutcomeClass] = {
    Outcome.OK: "verdict",
    Outcome.INVARIANT_VIOLATED: "verdict",
    Outcome.DEADLOCK: "verdict",
    Outcome.PROPERTY_VIOLATED: "verdict",
    Outcome.PARSE_ERROR: "input",
    Outcome.CONFIG_ERROR: "input",
    Outcome.ASSUMPTION_FALSE: "input",
    Outcome.EVALUATION_ERROR: "input",
    Outcome.NUMBER_TOO_BIG: "input",
    Outcome.TIMEOUT: "input",
    Outcome.OUT_OF_MEMORY: "environment",
    Outcome.JVM_ERROR: "environment",
    Outcome.TLC_FAILED: "environment",
}


class Message(BaseModel):
    code: int
    level: int
    body: str
    parent: int | None = None  # the index of the message this one is nested in


class TraceStep(BaseModel):
    """One state of a counterexample: the action that led to it and the state as ITF JSON."""

    index: int
    action: str
    state: dict[str, Any]


class Violation(BaseModel):
    kind: Outcome
    invariant: str | None = Field(default=None, description="the violated invariant or property")
    trace: list[TraceStep] = Field(default_factory=list)
    loops_back_to: int | None = Field(default=None, description="lasso: the state index the trace returns to")


class ErrorLocation(BaseModel):
    """Where TLC places an error: a module of the spec (by name) or, with `module` None, the model config."""

    module: str | None = None
    line: int | None = None
    column: int | None = None
    message: str = Field(description="TLC's (or SANY's) words about what is wrong there")


class TlcResult(BaseModel):
    outcome: Outcome
    tlc_exit_code: int = Field(description="TLC's own exit code (tidemark's is in the command's JSON)")
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None
    seconds: float
    violation: Violation | None = None
    location: ErrorLocation | None = Field(default=None, description="where TLC says the error is")
    error: str | None = Field(default=None, description="TLC's own words for an error outcome")
    warnings: list[str] = Field(default_factory=list)


def split_messages(output: str) -> tuple[list[Message], str]:
    """The framed messages in order of their start, each with its own text (nested ones cut out),
    and the plain text outside any frame."""
    messages: list[Message] = []
    stack: list[tuple[int, int, list[str]]] = []
    plain: list[str] = []
    position = 0
    for match in _FRAME.finditer(output):
        text = output[position : match.start()]
        (stack[-1][2] if stack else plain).append(text)
        position = match.end()
        if match.group(1) is not None:
            stack.append((len(messages), int(match.group(1)), []))
            parent = stack[-2][0] if len(stack) > 1 else None
            messages.append(
                Message(code=int(match.group(1)), level=int(match.group(2)), body="", parent=parent)
            )
        elif stack:
            index, _, parts = stack.pop()
            messages[index].body = "".join(parts).strip()
    (stack[-1][2] if stack else plain).append(output[position:])
    for index, _, parts in stack:  # a run cut off mid-message
        messages[index].body = "".join(parts).strip()
    return messages, "".join(plain)


# "1: <Initial predicate>", "2: <Next line 3, col 1 to ... of module M>", "3: Stuttering", "Back to state".
_STEP_HEAD = re.compile(r"^(\d+): (?:<(\w+)(?: predicate| line \d+.*)?>|(Stuttering)|Back to state.*)$")


def parse_trace_step(body: str, *, source: str) -> TraceStep:
    head, _, rest = body.partition("\n")
    match = _STEP_HEAD.match(head.strip())
    if match is None:
        raise TlaValueError(source=source, line=1, column=1, expected="'N: <Action line ...>'", found=head)
    label = match.group(2) or match.group(3) or "Back"
    state: dict[str, Value] = parse_state(rest, source=source, line_offset=1) if rest.strip() else {}
    action = state.get("action")
    if label == "Initial":
        label = "Init"
    if isinstance(action, Record) and isinstance(action.get("name"), str):  # specs that record `action`
        label = str(action["name"])
    return TraceStep(index=int(match.group(1)), action=label, state=state_to_itf(state))


_STATS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
_SIM_STATS = re.compile(r"([\d,]+) states generated, -1 distinct")
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_INVARIANT = re.compile(r"Invariant (\w+) is violated")
_PROPERTY = re.compile(r"(?:Action property|Temporal property) (\w+)")
_PARSE_AT = re.compile(r"at line (\d+), column (\d+)")
# "line 6, col 14 to line 6, col 17 of module M" (SANY, assumptions, fingerprints) and
# "0. Line 6, column 9 to line 6, column 52 in M" (the positions of an evaluation error).
_SPAN_AT = re.compile(r"[Ll]ine (\d+), col(?:umn)? (\d+) to line \d+, col(?:umn)? \d+ (?:of module|in) (\w+)")
_CONFIG_LINE = re.compile(r"configuration file at line (\d+)")
_MODULE = re.compile(r"(?:Could not parse module|In module) (\w+)")
# An exception of Java itself (not SANY's AbortException): the parser or TLC broke, not the input.
_JAVA_EXCEPTION = re.compile(r"\bjava\.[\w.]+(?:Exception|Error)\b")
_OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|Java heap space|GC overhead limit exceeded")
_NUMBER = re.compile(r'For input string: "(-?\d+)"|can\'t handle a number this big\.\s*(-?\d+)')

_EXIT_OUTCOMES = {
    0: Outcome.OK,
    10: Outcome.ASSUMPTION_FALSE,
    11: Outcome.DEADLOCK,
    12: Outcome.INVARIANT_VIOLATED,
    13: Outcome.PROPERTY_VIOLATED,
    75: Outcome.EVALUATION_ERROR,
    150: Outcome.PARSE_ERROR,
    151: Outcome.CONFIG_ERROR,
}


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _parse_error(plain: str) -> ErrorLocation:
    """SANY's report (plain text): a syntax error "at line L, column C", a semantic error with its span,
    or an abort message ("Cannot find source file for module ...")."""
    lines = [
        line.strip()
        for line in plain.splitlines()
        if line.strip() and not line.startswith(("Parsing file", "Semantic processing"))
    ]
    semantic = _SPAN_AT.search(plain)
    if semantic:
        after = plain[semantic.end() :].strip().splitlines()
        return ErrorLocation(
            module=semantic.group(3),
            line=int(semantic.group(1)),
            column=int(semantic.group(2)),
            message=after[0].strip() if after else lines[0],
        )
    at = _PARSE_AT.search(plain)
    module = _MODULE.search(plain)
    if (expecting := re.search(r"Was expecting .*|\*\*\*Parse Error\*\*\*.*", plain)) is not None:
        message = " ".join(plain[expecting.start() :].split("\n")[:3])
    elif "*** Abort messages" in plain:  # the message follows its (possibly unknown) location
        aborts = plain[plain.index("*** Abort messages") :].splitlines()[1:]
        skipped = ("Unknown location", "In module")
        message = next((a.strip() for a in aborts if a.strip() and not a.startswith(skipped)), "")
    else:
        message = " ".join(lines[:4])
    return ErrorLocation(
        module=module.group(1) if module else None,
        line=int(at.group(1)) if at else None,
        column=int(at.group(2)) if at else None,
        message=message,
    )


def _trace_step(body: str, run: TlcRun, source: str) -> TraceStep | None:
    """A counterexample state; None for the last one of a run killed mid-print (the timeout says it)."""
    try:
        return parse_trace_step(body, source=f"{source}: trace state")
    except TlaValueError:
        if run.timed_out:
            return None
        raise


def _outcome(run: TlcRun, messages: list[Message], plain: str) -> Outcome:
    """The run's outcome from its exit code, refined by the messages where TLC 2.15's exit code is a
    catch-all (255: "unexpected exception", also for config syntax errors and numbers too big)."""
    codes = {message.code for message in messages}
    errors = "\n".join([plain, *(m.body for m in messages if m.level == 1)])
    outcome = _EXIT_OUTCOMES.get(run.exit_code)
    if run.timed_out:
        return Outcome.TIMEOUT
    if VERSION not in codes:
        return Outcome.JVM_ERROR
    if outcome in (None, Outcome.EVALUATION_ERROR) and (
        codes & OUT_OF_MEMORY_CODES or _OUT_OF_MEMORY.search(errors)
    ):
        return Outcome.OUT_OF_MEMORY
    if outcome == Outcome.PARSE_ERROR and _JAVA_EXCEPTION.search(plain):
        return Outcome.TLC_FAILED  # SANY itself failed (e.g. a standard module overwritten meanwhile)
    if outcome is not None:
        return outcome
    if codes & CONFIG_FILE_ERRORS:
        return Outcome.CONFIG_ERROR
    if INTEGER_TOO_BIG in codes or "NumberFormatException" in errors:
        return Outcome.NUMBER_TOO_BIG
    return Outcome.TLC_FAILED


# The preamble of TLC's "unexpected exception" message (1000): what follows it is the useful part.
_PREAMBLE = re.compile(
    r"TLC threw an unexpected exception\.\s*This was probably caused by an error in the spec or model\.\s*"
    r"See the User Output or TLC Console for clues to what happened\.\s*"
    r"The exception was an? ([\w.$]+)\s*:\s*"
)


def _error_text(messages: list[Message]) -> str | None:
    """TLC's words: its error messages (level 1) and the messages nested in them (e.g. "Attempted to
    check if the value ... is an element of Nat" inside an evaluation error), in order; the preamble of an
    unexpected exception shortened to the exception's name."""
    nested = {ASSERT_FAILED, INTEGER_TOO_BIG, ARITHMETIC_OVERFLOW, *CONFIG_ERRORS}

    def told(m: Message) -> bool:
        inside_error = m.parent is not None and messages[m.parent].level == 1
        return m.level == 1 or m.code in nested or inside_error

    bodies = [m.body for m in messages if m.body and told(m)]
    text = "\n".join(bodies)
    return _PREAMBLE.sub(lambda m: f"{m.group(1)}: ", text).strip() or None


def _error_location(outcome: Outcome, messages: list[Message], error: str) -> ErrorLocation | None:
    """Where TLC says the error is, for the outcomes that are bad input."""
    if outcome == Outcome.CONFIG_ERROR:
        line = _CONFIG_LINE.search(error)
        return ErrorLocation(module=None, line=int(line.group(1)) if line else None, message=error)
    if outcome in (Outcome.EVALUATION_ERROR, Outcome.ASSUMPTION_FALSE):
        positions = "\n".join([error, *(m.body for m in messages if m.code == ERROR_POSITIONS)])
        spans = list(_SPAN_AT.finditer(positions))  # outermost expression first: the last is the culprit
        if spans:
            span = spans[-1]
            return ErrorLocation(
                module=span.group(3), line=int(span.group(1)), column=int(span.group(2)), message=error
            )
    return None


def _plain_text(output: str) -> str:
    """The first lines of text outside TLC's messages (the JVM's, or SANY's), its progress left out."""
    progress = ("Parsing file", "Semantic processing")
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith(progress)]
    return "\n".join(lines[:6]) or "no output"


def parse_output(run: TlcRun, *, source: str = "TLC output") -> TlcResult:
    """Turn a finished TLC run into a TlcResult (outcome, figures, counterexample, TLC's error text)."""
    messages, plain = split_messages(run.output)
    outcome = _outcome(run, messages, plain)
    result = TlcResult(outcome=outcome, tlc_exit_code=run.exit_code, seconds=run.seconds)
    violation: Violation | None = None
    for message in messages:
        code, body = message.code, message.body
        if code == STATS and (match := _STATS.search(body)):
            result.generated_states, result.distinct_states = _number(match.group(1)), _number(match.group(2))
        elif code == SIMULATION_PROGRESS and (match := _SIM_STATS.search(body)):
            result.generated_states = _number(match.group(1))
        elif code == SEARCH_DEPTH and (match := _DEPTH.search(body)):
            result.depth = int(match.group(1))
        elif code in (INVARIANT_VIOLATED, INVARIANT_VIOLATED_INITIAL):
            match = _INVARIANT.search(body)
            violation = Violation(
                kind=Outcome.INVARIANT_VIOLATED, invariant=match.group(1) if match else None
            )
            _head, _, initial_state = body.partition("\n")
            if code == INVARIANT_VIOLATED_INITIAL and initial_state.strip():  # the state is in the message
                step = _trace_step(f"1: <Initial predicate>\n{initial_state}", run, source)
                violation.trace.extend([step] if step else [])
        elif code in (ACTION_PROPERTY_VIOLATED, TEMPORAL_VIOLATED):
            match = _PROPERTY.search(body)
            violation = Violation(kind=Outcome.PROPERTY_VIOLATED, invariant=match.group(1) if match else None)
        elif code == DEADLOCK:
            violation = Violation(kind=Outcome.DEADLOCK)
        elif code in (STATE, STUTTERING) and violation is not None:
            step = _trace_step(body, run, source)
            if step is not None:
                violation.trace.append(step)
        elif code == BACK_TO_STATE and violation is not None:
            match = re.match(r"(\d+)", body)
            violation.loops_back_to = int(match.group(1)) if match else None
        elif message.level == 3:
            result.warnings.append(body)
    if outcome == Outcome.PROPERTY_VIOLATED and violation is None:
        violation = Violation(kind=Outcome.PROPERTY_VIOLATED)
    if violation is not None and outcome in (
        Outcome.INVARIANT_VIOLATED,
        Outcome.PROPERTY_VIOLATED,
        Outcome.DEADLOCK,
    ):
        violation.kind = outcome
        result.violation = violation
    if OUTCOME_CLASS[outcome] == "verdict":
        return result
    result.error = _error_text(messages)
    if outcome == Outcome.PARSE_ERROR:
        result.location = _parse_error(plain)
        result.error = result.location.message
    elif outcome == Outcome.TIMEOUT:
        given = f" of {run.timeout:g} s" if run.timeout is not None else ""
        result.error = f"TLC did not finish within its timeout{given}: stopped after {run.seconds:.1f} s"
    elif outcome == Outcome.JVM_ERROR:
        result.error = _plain_text(run.output)
    elif outcome == Outcome.TLC_FAILED and (exception := _JAVA_EXCEPTION.search(plain)) is not None:
        # The parser's own failure: the line of its exception, after what it was parsing.
        line = plain[plain.rfind("\n", 0, exception.start()) + 1 :].split("\n", 1)[0].strip()
        fatal = re.search(r"Fatal errors while parsing .*", plain)
        result.error = "\n".join(filter(None, [fatal.group(0) if fatal else None, line]))
    elif outcome == Outcome.TLC_FAILED and result.error is None:
        result.error = f"TLC exited with code {run.exit_code}: " + _plain_text(plain)
    elif outcome == Outcome.NUMBER_TOO_BIG and (number := _NUMBER.search(result.error or "")):
        result.error = (
            f"{number.group(1) or number.group(2)} is outside TLC's integers"
            f" [{TLC_INT_MIN}, {TLC_INT_MAX}]: {result.error}"
        )
    else:
        result.location = _error_location(outcome, messages, result.error or "")
    return result


# ---------------------------------------------------------------------------------------------------------
# The error a command stops with when TLC gave no verdict.


def shown_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    absolute = path.resolve()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _literal_line(number: str, files: list[Path]) -> tuple[Path, int] | None:
    """The first file and line holding `number` as a literal: TLC names the number, not its place."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(number)}(?![\w.])")
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for index, line in enumerate(lines, start=1):
            if pattern.search(line.split("\\*")[0]):
                return path, index
    return None


def _modules(spec: Path) -> list[Path]:
    return [spec, *sorted(p for p in spec.parent.glob("*.tla") if p != spec)]


def tlc_failure(result: TlcResult, spec: Path, config: Path) -> TidemarkError | None:
    """The error for a run that ended without a verdict, None for a verdict (ok or a violation).

    Bad input (exit 2) names the file and line TLC names: the model `config`, or the module of `spec`'s
    directory; a failure of TLC or its JVM (exit 3) carries TLC's own text."""
    kind = OUTCOME_CLASS[result.outcome]
    if kind == "verdict":
        return None
    text = f"{result.outcome}: {result.error or 'TLC gave no details'}"
    if kind == "environment":
        hint = {
            Outcome.OUT_OF_MEMORY: "a larger --heap, or a smaller model",
            Outcome.JVM_ERROR: "a Java 17+ runtime able to start TLC with these JVM options",
        }.get(result.outcome)  # TLC failing is nothing the user can change
        return ToolError(text, source=f"TLC on {shown_path(spec)}", expected=hint)
    if result.outcome == Outcome.TIMEOUT:
        return TidemarkError(
            f"{result.error} ({shown_path(spec)} with {shown_path(config)})",
            source="--timeout",
            expected="more seconds, or a smaller model",
        )
    source, location = shown_path(spec), None
    where = result.location
    if result.outcome in (Outcome.CONFIG_ERROR, Outcome.ASSUMPTION_FALSE):
        # An assumption is false of the config's constants; TLC's text names the ASSUME.
        source, where = shown_path(config), where if result.outcome == Outcome.CONFIG_ERROR else None
    elif where is not None and where.module is not None:
        module = spec.parent / f"{where.module}.tla"
        source = shown_path(module) if module.is_file() else f"module {where.module}"
    if where is not None and where.line is not None:
        location = f"line {where.line}" + (f", column {where.column}" if where.column else "")
    if result.outcome == Outcome.NUMBER_TOO_BIG and (number := _NUMBER.search(result.error or "")):
        found = _literal_line(number.group(1) or number.group(2), [config, *_modules(spec)])
        if found is not None:
            source, location = shown_path(found[0]), f"line {found[1]}"
    expected = "integers TLC can represent" if result.outcome == Outcome.NUMBER_TOO_BIG else None
    return TidemarkError(text, source=source, location=location, expected=expected)
