"""The driver protocol's messages: one JSON object per line, tidemark asks, the driver answers.

Every message is a pydantic model; its JSON Schema is committed under conformance/schemas/ (regenerate
with `python -m tidemark.conformance.kit.protocol`; a test keeps the files current). An answer is validated on
receipt against the answers its request allows: anything else is a finding about the driver, reported
with the output line and what was expected.

Values (constants, states, actions) are ITF values, as in tidemark's traces and state graphs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

PROTOCOL = 1
SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
# Requests one batch message may carry: a batch is one line, and a driver reads it whole.
MAX_BATCH = 512

Capability = Literal["load", "enabled", "batch"]
ItfState = Annotated[dict[str, Any], Field(description="an ITF state: one key per spec variable")]


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- requests (tidemark -> driver) --------------------------------------------------------------------


class Hello(_Message):
    """The first message: the protocol version tidemark speaks and the spec it checks."""

    type: Literal["hello"] = "hello"
    protocol: int = PROTOCOL
    spec: str = Field(description="the spec module's name, e.g. UpdateCounter")


class Init(_Message):
    """Configure the model (its constants, ITF values by name) and reset to the initial state."""

    type: Literal["init"] = "init"
    constants: dict[str, Any]


class Step(_Message):
    """Take one spec action (an ITF value, usually a record with `name` and parameters)."""

    type: Literal["step"] = "step"
    action: Any


class Load(_Message):
    """Put the implementation into the given abstract state (capability `load`)."""

    type: Literal["load"] = "load"
    state: ItfState


class Enabled(_Message):
    """List the actions enabled in the current state (capability `enabled`)."""

    type: Literal["enabled"] = "enabled"


Request = Annotated[Init | Step | Load | Enabled, Field(discriminator="type")]


class Batch(_Message):
    """Several requests in one line, answered by one line (capability `batch`)."""

    type: Literal["batch"] = "batch"
    requests: list[Request]


# --- answers (driver -> tidemark) ---------------------------------------------------------------------


class HelloAnswer(_Message):
    type: Literal["hello"]
    protocol: int
    spec: str
    implementation: str = Field(description="a name and version for reports, e.g. java-counter 1.0")
    capabilities: list[Capability] = Field(default_factory=list)


class StateAnswer(_Message):
    """The abstract state after init or step."""

    type: Literal["state"]
    state: ItfState


class NotEnabled(_Message):
    """The step's action is not enabled in the current state; the state is unchanged."""

    type: Literal["not_enabled"]
    reason: str | None = None


class Ok(_Message):
    type: Literal["ok"]


class EnabledAnswer(_Message):
    type: Literal["enabled"]
    actions: list[Any] = Field(description="ITF values, in any order")


class ErrorAnswer(_Message):
    """The implementation failed on this request (an exception, an assertion): a finding."""

    type: Literal["error"]
    message: str


Answer = Annotated[StateAnswer | NotEnabled | Ok | EnabledAnswer | ErrorAnswer, Field(discriminator="type")]


class BatchAnswer(_Message):
    """The answers to a batch's requests, in order."""

    type: Literal["batch"]
    answers: list[Answer]


def request_text(kind: str, body: str = "") -> str:
    """A request's line built from JSON texts (`body`: its fields after `type`, e.g. '"action":{...}'):
    replay sends the graph's ITF texts as they are, without parsing them into objects first."""
    return f'{{"type":"{kind}"{"," + body if body else ""}}}'


def batch_text(requests: Sequence[str]) -> str:
    return '{"type":"batch","requests":[' + ",".join(requests) + "]}"


# What each request may be answered with (an `error` answer always).
ALLOWED: dict[str, tuple[str, ...]] = {
    "init": ("state", "error"),
    "step": ("state", "not_enabled", "error"),
    "load": ("ok", "error"),
    "enabled": ("enabled", "error"),
}

_HELLO = TypeAdapter(HelloAnswer)
_ANSWER: TypeAdapter[Any] = TypeAdapter(Answer)
_BATCH = TypeAdapter(BatchAnswer)


class MalformedAnswer(Exception):
    """A driver's line that is not the answer its request allows."""

    def __init__(self, line: int, problem: str, expected: str, text: str) -> None:
        self.line, self.problem, self.expected, self.text = line, problem, expected, text
        shown = text if len(text) <= 200 else text[:200] + "..."
        super().__init__(f"driver output line {line}: {problem} (expected {expected}); the line: {shown}")


def _first_problem(error: ValidationError, union: bool) -> str:
    detail = error.errors(include_url=False)[0]
    # pydantic names the union's member (the `type` tag) after a union's place: not part of the JSON path
    parts = list(detail["loc"])
    tags = [
        i for i, part in enumerate(parts) if (i == 0 and union) or (i > 0 and isinstance(parts[i - 1], int))
    ]
    where = ".".join(str(part) for i, part in enumerate(parts) if i not in tags or not isinstance(part, str))
    return f"{where}: {detail['msg']}" if where else str(detail["msg"])


def _parse(adapter: TypeAdapter[Any], text: str, line: int, expected: str) -> Any:
    """Parsed and validated in one pass (pydantic's JSON parser: a replay's answers are its largest input)."""
    try:
        return adapter.validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        if first["type"] == "json_invalid":
            reason = first.get("ctx", {}).get("error", first["msg"])
            raise MalformedAnswer(line, f"not JSON ({reason})", expected, text) from None
        raise MalformedAnswer(line, _first_problem(error, adapter is _ANSWER), expected, text) from None


def _expected(kind: str) -> str:
    return " or ".join(f"a `{answer}` answer" for answer in ALLOWED[kind]) + f" to `{kind}`"


def parse_hello(text: str, line: int) -> HelloAnswer:
    answer: HelloAnswer = _parse(_HELLO, text, line, "a `hello` answer (docs/driver-protocol.md)")
    return answer


def parse_answer(kind: str, text: str, line: int) -> Any:
    """The answer to one request of type `kind`, or MalformedAnswer."""
    expected = _expected(kind)
    answer = _parse(_ANSWER, text, line, expected)
    if answer.type not in ALLOWED[kind]:
        raise MalformedAnswer(line, f"a `{answer.type}` answer", expected, text)
    return answer


def parse_batch(kinds: Sequence[str], text: str, line: int) -> list[Any]:
    """The answers to a batch of requests of types `kinds`, one per request in order, or MalformedAnswer."""
    expected = f"a `batch` answer with {len(kinds)} answers"
    batch: BatchAnswer = _parse(_BATCH, text, line, expected)
    if len(batch.answers) != len(kinds):
        raise MalformedAnswer(line, f"{len(batch.answers)} answers", expected, text)
    for index, (kind, answer) in enumerate(zip(kinds, batch.answers, strict=True)):
        if answer.type not in ALLOWED[kind]:
            problem = f"answers.{index}: a `{answer.type}` answer"
            raise MalformedAnswer(line, problem, _expected(kind), text)
    return batch.answers


# The schema files: one per message, named driver-<direction>-<type>.schema.json.
MESSAGES: dict[str, type[BaseModel]] = {
    "request-hello": Hello,
    "request-init": Init,
    "request-step": Step,
    "request-load": Load,
    "request-enabled": Enabled,
    "request-batch": Batch,
    "answer-hello": HelloAnswer,
    "answer-state": StateAnswer,
    "answer-not_enabled": NotEnabled,
    "answer-ok": Ok,
    "answer-enabled": EnabledAnswer,
    "answer-error": ErrorAnswer,
    "answer-batch": BatchAnswer,
}


def schema_text(name: str) -> str:
    schema = MESSAGES[name].model_json_schema()
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"driver-{name}", **schema}
    return json.dumps(schema, indent=2) + "\n"


def schema_path(name: str) -> Path:
    return SCHEMAS / f"driver-{name}.schema.json"


def main() -> int:
    for name in MESSAGES:
        schema_path(name).write_text(schema_text(name))
    print(f"wrote {len(MESSAGES)} schemas to {SCHEMAS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
