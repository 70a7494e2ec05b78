"""Trace files: implementation runs abstracted to spec states, one ITF trace per line (JSON Lines).

Each line is a trace in the Informal Trace Format (ITF) of Apalache and Quint, so any line can be cut
out and read by ITF tools::

    {"#meta": {"format": "ITF", "id": "walk-7", "spec": "UpdateCounter", "config": "spec/UpdateCounter.cfg"},
     "vars": ["action", "committed", "counter", ...],
     "states": [{"#meta": {"index": 0}, "action": {"name": "Init"}, "committed": {"#set": []}, ...}, ...]}

- ``#meta.id`` names the trace in reports (unique in a file); ``#meta.spec`` is the spec module's name
  (``spec/<spec>.tla`` unless the command is told otherwise); ``#meta.config`` optionally names the TLC
  model whose constants the trace was recorded under. Other ``#meta`` keys are kept for the reader.
- ``vars`` lists the spec's variables; every state binds exactly these (plus an optional ``#meta``),
  values in ITF (records as objects, ``{"#set": [...]}``, ``{"#map": [[k, v], ...]}``, ...).
- ``states[0]`` must be an initial state of the spec and each next state one step of it.

The JSON Schema (conformance/schemas/trace.schema.json) is generated from ``ItfTrace``:
``python -m tidemark.conformance.traces`` rewrites it; a test keeps it in sync.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints, ValidationError

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import State
from tidemark.conformance.tlc.values import JSON, from_itf, state_to_itf

SCHEMA_PATH = Path(__file__).parent / "schemas" / "trace.schema.json"

_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


class TraceMeta(BaseModel):
    """The trace's ``#meta`` object: who it is and which spec and model it claims to follow."""

    model_config = ConfigDict(extra="allow")

    format: Literal["ITF"] = "ITF"
    id: str = Field(min_length=1, description="names the trace in reports; unique in a file")
    spec: str = Field(pattern=_IDENTIFIER, description="the spec module, e.g. UpdateCounter")
    config: str | None = Field(
        default=None, description="the TLC model config the trace was recorded under, e.g. spec/X.cfg"
    )


class ItfTrace(BaseModel):
    """One line of a trace file: an ITF trace."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, title="tidemark trace (one ITF trace)")

    meta: TraceMeta = Field(alias="#meta")
    vars: list[Annotated[str, StringConstraints(pattern=_IDENTIFIER)]] = Field(
        min_length=1, description="the spec's variables, each bound in every state"
    )
    states: list[dict[str, JsonValue]] = Field(
        min_length=1, description="ITF states: variable -> ITF value (plus an optional #meta)"
    )


@dataclass(frozen=True)
class Trace:
    """A trace in memory: states as TLA+ values; `source`/`line` say where it was read from, if anywhere."""

    id: str
    spec: str
    states: tuple[State, ...]
    config: str | None = None
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    def location(self, path: str = "") -> str | None:
        """Where this trace (or a field of it) is in its file, for errors."""
        parts = [f"line {self.line}" if self.line is not None else None, path or None]
        return ", ".join(p for p in parts if p) or None


def trace_schema() -> dict[str, Any]:
    return ItfTrace.model_json_schema(by_alias=True)


def schema_text() -> str:
    return json.dumps(trace_schema(), indent=2, sort_keys=True) + "\n"


def _loc_path(loc: Iterable[int | str]) -> str:
    """A pydantic error location as a field path: ('states', 2, 'counter') -> states[2].counter."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path


def _states(model: ItfTrace, source: str, line: int) -> tuple[State, ...]:
    """The states as TLA+ values, each binding exactly `vars`; errors name the state and variable."""
    expected = set(model.vars)
    states = []
    for index, itf in enumerate(model.states):
        names = {name for name in itf if not name.startswith("#")}
        if missing := sorted(expected - names):
            raise TidemarkError(
                f"state {index} lacks variable {missing[0]!r}",
                source=source,
                location=f"line {line}, states[{index}]",
                expected=f"a binding for each of vars: {sorted(expected)}",
            )
        if extra := sorted(names - expected):
            raise TidemarkError(
                f"state {index} binds {extra[0]!r}, which is not in vars",
                source=source,
                location=f"line {line}, states[{index}].{extra[0]}",
                expected=f"only the variables in vars: {sorted(expected)}",
            )
        state: State = {}
        for name in model.vars:
            try:
                state[name] = from_itf(itf[name])
            except ValueError as error:
                raise TidemarkError(
                    str(error), source=source, location=f"line {line}, states[{index}].{name}", expected="ITF"
                ) from error
        states.append(state)
    return tuple(states)


def parse_trace_line(text: str, *, source: str, line: int) -> Trace:
    """One line of a trace file as a Trace, or a TidemarkError naming the line and the field."""
    try:
        model = ItfTrace.model_validate_json(text)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        path = _loc_path(first["loc"])
        raise TidemarkError(
            first["msg"],
            source=source,
            location=f"line {line}" + (f", {path}" if path else ""),
            expected="a trace as in conformance/schemas/trace.schema.json",
        ) from error
    if len(set(model.vars)) != len(model.vars):
        raise TidemarkError(
            "a variable is listed twice",
            source=source,
            location=f"line {line}, vars",
            expected="unique names",
        )
    return Trace(
        id=model.meta.id,
        spec=model.meta.spec,
        config=model.meta.config,
        states=_states(model, source, line),
        source=source,
        line=line,
    )


def read_traces(path: Path) -> list[Trace]:
    """All traces in a JSON Lines file (blank lines skipped). Trace ids must be unique."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TidemarkError(f"cannot read the trace file: {error}", source=source) from error
    traces: list[Trace] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        trace = parse_trace_line(line, source=source, line=number)
        if trace.id in seen:
            raise TidemarkError(
                f"trace id {trace.id!r} already used on line {seen[trace.id]}",
                source=source,
                location=f"line {number}, #meta.id",
                expected="unique trace ids",
            )
        seen[trace.id] = number
        traces.append(trace)
    if not traces:
        raise TidemarkError("the file holds no traces", source=source, expected="one ITF trace per line")
    return traces


def read_itf_trace(path: Path, spec: str | None = None) -> Trace:
    """One ITF trace in a file of its own, as Apalache (``--out-itf``) and Quint (``--out-itf``) write it
    and tidemark writes counterexamples: read through itf-py. Its spec is `spec`, else its ``#meta.spec``,
    else the module its ``#meta.source`` names (Apalache: ``UpdateCounter.tla``)."""
    from tidemark.conformance.counterexample import read_itf  # pyarrow and the rest only when needed

    itf = read_itf(path)
    source = str(itf.meta.get("source", ""))
    named = Path(str(itf.meta.get("spec", ""))).stem  # tidemark writes the spec's path
    name = spec or named or (Path(source).stem if source.endswith(".tla") else "")
    if not name:
        raise TidemarkError(
            "the trace does not say which spec it follows",
            source=str(path),
            location="#meta",
            expected="--spec SPEC.tla, or #meta.spec or a .tla #meta.source",
        )
    config = itf.meta.get("config")
    return Trace(
        id=path.name.removesuffix(".itf.json"),
        spec=name,
        states=tuple(itf.values()),
        config=str(config) if config is not None else None,
        source=str(path),
    )


def trace_to_itf(trace: Trace) -> dict[str, JSON]:
    """The ITF object of one trace (the inverse of parse_trace_line)."""
    meta: dict[str, JSON] = {"format": "ITF", "id": trace.id, "spec": trace.spec}
    if trace.config is not None:
        meta["config"] = trace.config
    variables: list[JSON] = [*sorted(trace.states[0])]
    states: list[JSON] = [
        {"#meta": {"index": index}, **state_to_itf(state)} for index, state in enumerate(trace.states)
    ]
    return {"#meta": meta, "vars": variables, "states": states}


def write_traces(path: Path, traces: Iterable[Trace]) -> None:
    """Write traces as JSON Lines; the file appears complete or not at all."""
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as handle:
            for trace in traces:
                handle.write(json.dumps(trace_to_itf(trace), sort_keys=True, separators=(",", ":")) + "\n")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


if __name__ == "__main__":
    SCHEMA_PATH.parent.mkdir(exist_ok=True)
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
