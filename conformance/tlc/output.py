"""Parsing TLC's tool-mode output (-tool) into a TlcResult.

In tool mode every message is framed as ``@!@!@STARTMSG code:level @!@!@ ... @!@!@ENDMSG code @!@!@``;
messages nest (an evaluation error wraps the Assert message), and SANY's parse errors are plain text
outside any frame. Codes are TLC 2.15's (tlc2.output.EC).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from conformance.tlc.runner import TlcRun
from conformance.tlc.values import Record, TlaValueError, Value, parse_state, state_to_itf

_FRAME = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\n?|@!@!@ENDMSG (\d+) @!@!@\n?")

# Message codes (tlc2.output.EC) this parser reads.
GENERAL = 1000
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
CONFIG_FILE_ERROR = 5001
CONFIG_ERRORS = {
    CONFIG_FILE_ERROR,
    2222,
    2229,
    2230,
    2231,
    2232,
    2233,
    2234,
    2235,
    2236,
    2237,
    2238,
    2239,
    2240,
}
SANY_FAILED = 3002


class Outcome(StrEnum):
    OK = "ok"
    INVARIANT_VIOLATED = "invariant violated"
    DEADLOCK = "deadlock"
    PROPERTY_VIOLATED = "property violated"
    PARSE_ERROR = "parse error"
    CONFIG_ERROR = "config error"
    EVALUATION_ERROR = "evaluation error"
    TIMEOUT = "timeout"
    TLC_BUG = "TLC bug"


class Message(BaseModel):
    code: int
    level: int
    body: str


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


class ParseErrorLocation(BaseModel):
    module: str | None
    line: int | None
    column: int | None
    message: str


class TlcResult(BaseModel):
    outcome: Outcome
    exit_code: int
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None
    seconds: float
    violation: Violation | None = None
    parse_error: ParseErrorLocation | None = None
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
            messages.append(Message(code=int(match.group(1)), level=int(match.group(2)), body=""))
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
_SEMANTIC_AT = re.compile(r"line (\d+), col (\d+) to line \d+, col \d+ of module (\w+)")
_MODULE = re.compile(r"(?:Could not parse module|In module) (\w+)")

_EXIT_OUTCOMES = {
    0: Outcome.OK,
    11: Outcome.DEADLOCK,
    12: Outcome.INVARIANT_VIOLATED,
    13: Outcome.PROPERTY_VIOLATED,
    75: Outcome.EVALUATION_ERROR,
    150: Outcome.PARSE_ERROR,
    151: Outcome.CONFIG_ERROR,
}


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _parse_error(plain: str) -> ParseErrorLocation:
    lines = [
        line.strip() for line in plain.splitlines() if line.strip() and not line.startswith("Parsing file")
    ]
    detail = next((line for line in lines if not line.startswith("Semantic processing")), "")
    semantic = _SEMANTIC_AT.search(plain)
    if semantic:
        after = plain[semantic.end() :].strip().splitlines()
        return ParseErrorLocation(
            module=semantic.group(3),
            line=int(semantic.group(1)),
            column=int(semantic.group(2)),
            message=after[0].strip() if after else detail,
        )
    at = _PARSE_AT.search(plain)
    module = _MODULE.search(plain)
    expecting = re.search(r"Was expecting .*|\*\*\*Parse Error\*\*\*.*", plain)
    return ParseErrorLocation(
        module=module.group(1) if module else None,
        line=int(at.group(1)) if at else None,
        column=int(at.group(2)) if at else None,
        message=" ".join(lines[:4])
        if not expecting
        else " ".join(plain[expecting.start() :].split("\n")[:3]),
    )


def _trace_step(body: str, run: TlcRun, source: str) -> TraceStep | None:
    """A counterexample state; None for the last one of a run killed mid-print (the timeout says it)."""
    try:
        return parse_trace_step(body, source=f"{source}: trace state")
    except TlaValueError:
        if run.timed_out:
            return None
        raise


def parse_output(run: TlcRun, *, source: str = "TLC output") -> TlcResult:
    """Turn a finished TLC run into a TlcResult (outcome, figures, counterexample)."""
    messages, plain = split_messages(run.output)
    outcome = Outcome.TIMEOUT if run.timed_out else _EXIT_OUTCOMES.get(run.exit_code, Outcome.TLC_BUG)
    result = TlcResult(outcome=outcome, exit_code=run.exit_code, seconds=run.seconds)
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
        elif code == ASSERT_FAILED or code in CONFIG_ERRORS or (code == GENERAL and message.level == 1):
            result.error = "\n".join(filter(None, [result.error, body]))
        elif message.level == 3:
            result.warnings.append(body)
    if outcome == Outcome.TLC_BUG and any(m.code == CONFIG_FILE_ERROR for m in messages):
        result.outcome = outcome = Outcome.CONFIG_ERROR
    if outcome == Outcome.PROPERTY_VIOLATED and violation is None:
        violation = Violation(kind=Outcome.PROPERTY_VIOLATED)
    if violation is not None and outcome in (
        Outcome.INVARIANT_VIOLATED,
        Outcome.PROPERTY_VIOLATED,
        Outcome.DEADLOCK,
    ):
        violation.kind = outcome
        result.violation = violation
    if outcome == Outcome.PARSE_ERROR:
        result.parse_error = _parse_error(plain)
        result.error = result.parse_error.message
    if outcome == Outcome.TIMEOUT:
        result.error = f"TLC did not finish within its timeout ({run.seconds:.0f} s)"
    return result
