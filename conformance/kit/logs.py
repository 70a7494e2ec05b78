"""`tidemark validate LOG --mapping MAP.json`: is a system's event log explained by the spec? TLC decides.

A running system logs events, not spec states: each line of the log (JSON Lines) is one event, naming an
operation, perhaps its arguments and result, and a few values the node printed. A mapping file (JSON,
conformance/schemas/log-mapping.schema.json) says, per kind of event, which spec action it is (the
fields of the spec's `action` record it fixes) and which parts of which variables it observes; every
other variable is left free. Templates refer to the event's fields: ``"$node"`` is the event's `node`
(required), ``"$start?"`` its `start` if the event has one (else the constraint is dropped: a parameter
not logged). Kinds of event without an `action` are observations: the state does not change.

As in the etcd and CCF trace-validation work, TLC searches for a behavior of the spec consistent with the
log. The generated module EXTENDS the spec:

    TmLog == << [step |-> TRUE, act |-> [name |-> "Commit", copy |-> "b"],
                 obs |-> << <<"counter", <<"b", "lwm">>, 1>> >>], ... >>
    TmInit == tmCursor = 0 /\\ tmSkipped = 0 /\\ Init
    TmNext == \\/ tmCursor < Len(TmLog) /\\ Next /\\ TmActs(tmCursor + 1) /\\ TmObserved(...) ...
              \\/ ... an observation: UNCHANGED vars, the observations hold
              \\/ ... an internal step: Next, action'.name \\in TmInternal, at most max_internal in a row

The state graph (-dump dot) holds one state per (spec state, events explained): the deepest cursor is
the longest prefix of the log the spec explains; the states at that depth are the candidates (the
states the system may be in). If the log is not explained, a second run lists the candidates'
successors, and the first unexplained event is compared with them: no successor takes its action, or
the closest one observes other values (`counter.b.lwm: the spec has 0, the log says 2`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints, ValidationError

from tidemark.conformance.counterexample import action_text
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import State
from tidemark.conformance.resources import resource
from tidemark.conformance.tlc.runner import TlcOptions
from tidemark.conformance.tlc.values import (
    Function,
    Record,
    Value,
    format_value,
    from_itf,
    integers_beyond_tlc,
    state_from_itf,
    state_to_itf,
)
from tidemark.conformance.validate import (
    Definitions,
    TraceModel,
    load_model,
    run_traces,
    spec_steps,
    trace_config,
    trace_module,
)

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "log-mapping.schema.json"

CURSOR, SKIPPED = "tmCursor", "tmSkipped"
# States shown per rejection, and candidates whose successors are searched to explain it.
SHOWN, EXPLAINED = 3, 500

_Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class Observation(BaseModel):
    """One value an event observes: `variable` at `path` (record fields, function keys) equals `value`."""

    model_config = ConfigDict(extra="forbid")

    variable: _Identifier = Field(description="a spec variable, e.g. counter")
    path: list[JsonValue] = Field(
        default_factory=list, description='fields and keys into it, templates allowed, e.g. ["$node", "lwm"]'
    )
    value: JsonValue = Field(description='an ITF value or a template, e.g. "$lwm"')


class EventMapping(BaseModel):
    """What one kind of event is in the spec's terms."""

    model_config = ConfigDict(extra="forbid")

    action: dict[_Identifier, JsonValue] | None = Field(
        default=None,
        description="fields of the spec's `action` record the step has, e.g."
        ' {"name": "Commit", "copy": "$node"}; absent: an observation, no step',
    )
    observe: list[Observation] = Field(default_factory=list, description="the values the event shows")


class LogMapping(BaseModel):
    """A mapping file: how a log's events map to the spec's actions and variables."""

    model_config = ConfigDict(extra="forbid", title="tidemark log mapping")

    spec: _Identifier = Field(description="the spec module, e.g. UpdateCounter (spec/UpdateCounter.tla)")
    config: str | None = Field(
        default=None, description="the TLC model whose constants apply (default: SPEC.cfg)"
    )
    kind: str = Field(default="event", min_length=1, description="the event field that names its kind")
    internal: list[str] = Field(
        default_factory=list, description="spec actions a system takes without logging them, e.g. Replay"
    )
    max_internal: int = Field(default=2, ge=0, le=8, description="unlogged steps allowed before an event")
    events: dict[str, EventMapping] = Field(min_length=1, description="kind of event -> its meaning")


@dataclass(frozen=True)
class Event:
    """One line of the log in the spec's terms."""

    line: int
    kind: str
    action: Record | None  # the fields of `action` the step fixes; None: an observation
    observed: tuple[tuple[str, tuple[Value, ...], Value], ...]  # (variable, path, value)


class LogRejection(BaseModel):
    event: int = Field(description="1-based index of the first event the spec cannot explain")
    line: int = Field(description="its line in the log")
    kind: str
    reason: str
    diff: list[str] = Field(default_factory=list, description="what the closest spec state has instead")
    candidates: int = Field(description="spec states consistent with the events before it")
    candidate_states: list[dict[str, Any]] = Field(default_factory=list, description=f"up to {SHOWN}, ITF")


class LogReport(BaseModel):
    log: str
    mapping: str
    spec: str
    config: str
    events: int
    explained: int = Field(description="the longest prefix of the log the spec explains")
    rejection: LogRejection | None = None
    tlc_seconds: float = 0.0

    @property
    def holds(self) -> bool:
        return self.rejection is None


def schema_text() -> str:
    return json.dumps(LogMapping.model_json_schema(), indent=2, sort_keys=True) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Reading the mapping and the log.


def _path_text(loc: Sequence[int | str]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def read_mapping(path: Path) -> LogMapping:
    try:
        return LogMapping.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise TidemarkError(f"cannot read the mapping: {error.strerror}", source=str(path)) from None
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise TidemarkError(
            first["msg"],
            source=str(path),
            location=_path_text(first["loc"]) or None,
            expected="a mapping as in conformance/schemas/log-mapping.schema.json",
        ) from None


def _check_mapping(mapping: LogMapping, variables: Sequence[str], source: str) -> None:
    """Every variable the mapping names is the spec's; `action` and `internal` need the spec's `action`."""
    for kind, event in mapping.events.items():
        for index, observation in enumerate(event.observe):
            if observation.variable not in variables:
                raise TidemarkError(
                    f"{observation.variable!r} is not a variable of spec {mapping.spec}",
                    source=source,
                    location=f"events.{kind}.observe[{index}].variable",
                    expected=f"one of {sorted(variables)}",
                )
        if event.action is not None and "action" not in variables:
            raise TidemarkError(
                f"spec {mapping.spec} records no `action`: events cannot name its steps",
                source=source,
                location=f"events.{kind}.action",
                expected="observations only",
            )
        if event.action is not None and not isinstance(event.action.get("name"), str):
            raise TidemarkError(
                "the action has no name",
                source=source,
                location=f"events.{kind}.action",
                expected='a "name" field with the spec action\'s name, e.g. "Commit"',
            )
    if mapping.internal and "action" not in variables:
        raise TidemarkError(
            f"spec {mapping.spec} records no `action`: internal steps cannot be named",
            source=source,
            location="internal",
            expected="an empty list",
        )


_ABSENT = object()


class _Filler:
    """Templates filled from one event; a missing required field names the log line and the mapping place."""

    def __init__(self, event: dict[str, Any], line: int, log: str, mapping: str) -> None:
        self.event, self.line, self.log, self.mapping = event, line, log, mapping

    def fill(self, template: JsonValue, where: str) -> Any:
        if not (isinstance(template, str) and template.startswith("$")) or template.startswith("$$"):
            return template[1:] if isinstance(template, str) and template.startswith("$$") else template
        name, optional = template[1:].removesuffix("?"), template.endswith("?")
        if name in self.event:
            return self.event[name]
        if optional:
            return _ABSENT
        raise TidemarkError(
            f"the event has no field {name!r}, which the mapping's {where} refers to",
            source=self.log,
            location=f"line {self.line}",
            expected=f"a field {name!r} (or {template}? in {self.mapping} if it is not always logged)",
        )

    def value(self, template: JsonValue, where: str) -> Value | object:
        raw = self.fill(template, where)
        if raw is _ABSENT:
            return raw
        try:
            value = from_itf(raw)
        except ValueError as error:
            raise TidemarkError(
                f"{error}", source=self.log, location=f"line {self.line} ({where})", expected="an ITF value"
            ) from None
        for path, number in integers_beyond_tlc(value, where):
            raise TidemarkError(
                f"{number} is beyond TLC's integers", source=self.log, location=f"line {self.line}, {path}"
            )
        return value


def _event(raw: dict[str, Any], line: int, mapping: LogMapping, log: str, source: str) -> Event:
    kind = raw.get(mapping.kind)
    if not isinstance(kind, str) or kind not in mapping.events:
        raise TidemarkError(
            f"event kind {kind!r} is not in the mapping",
            source=log,
            location=f"line {line}, {mapping.kind}",
            expected=f"one of {sorted(mapping.events)} (the mapping {source})",
        )
    spec = mapping.events[kind]
    filler = _Filler(raw, line, log, source)
    action = None
    if spec.action is not None:
        fields: dict[str, Value] = {}
        for name, template in spec.action.items():
            value = filler.value(template, f"events.{kind}.action.{name}")
            if value is not _ABSENT:
                fields[name] = value  # type: ignore[assignment]
        action = Record(fields)
    observed = []
    for index, observation in enumerate(spec.observe):
        where = f"events.{kind}.observe[{index}]"
        path = [filler.value(part, f"{where}.path") for part in observation.path]
        value = filler.value(observation.value, f"{where}.value")
        if value is not _ABSENT and _ABSENT not in path:
            observed.append((observation.variable, tuple(path), value))
    return Event(line, kind, action, tuple(observed))  # type: ignore[arg-type]


def read_log(path: Path, mapping: LogMapping, mapping_source: str) -> list[Event]:
    log = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TidemarkError(f"cannot read the log: {error}", source=log) from None
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise TidemarkError(
                f"not JSON: {error.msg}",
                source=log,
                location=f"line {number}, column {error.colno}",
                expected="one JSON object per line",
            ) from None
        if not isinstance(raw, dict):
            raise TidemarkError(
                "not an object", source=log, location=f"line {number}", expected="a JSON object"
            )
        events.append(_event(raw, number, mapping, log, mapping_source))
    if not events:
        raise TidemarkError("the log holds no events", source=log, expected="one JSON event per line")
    return events


# ---------------------------------------------------------------------------------------------------------
# The search.


def _tuple(items: Sequence[str]) -> str:
    return "<<" + ", ".join(items) + ">>"


def _log_module(
    model: TraceModel, events: Sequence[Event], internal: Sequence[str], most: int
) -> tuple[str, str, str]:
    """The generated module's name, text and config."""
    name = f"{model.spec.stem}_TidemarkLog"
    definitions = Definitions(model.variables)
    entries = []
    for event in events:
        action = definitions.value(event.action) if event.action is not None else "<<>>"
        observed = [
            _tuple([json.dumps(v), definitions.value(tuple(path)), definitions.value(value)])
            for v, path, value in event.observed
        ]
        step = "TRUE" if event.action is not None else "FALSE"
        entries.append(f"[step |-> {step}, act |-> {action}, obs |-> {_tuple(observed)}]")
    acts = (
        "TmActs(k) == \\A f \\in DOMAIN TmLog[k].act : f \\in DOMAIN action' /\\ action'[f] = TmLog[k].act[f]"
        if "action" in model.variables
        else "TmActs(k) == TRUE"  # no event names a step (the mapping was checked)
    )
    primed = " [] ".join(f'n = "{v}" -> {v}\'' for v in model.variables)
    ahead = f"{CURSOR} < Len(TmLog)"
    steps = [
        f"""/\\ {ahead} /\\ TmLog[{CURSOR} + 1].step
       /\\ {model.next} /\\ TmActs({CURSOR} + 1) /\\ TmObserved({CURSOR} + 1)
       /\\ {CURSOR}' = {CURSOR} + 1 /\\ {SKIPPED}' = 0""",
        f"""/\\ {ahead} /\\ ~TmLog[{CURSOR} + 1].step
       /\\ UNCHANGED TmVars /\\ TmObserved({CURSOR} + 1)
       /\\ {CURSOR}' = {CURSOR} + 1 /\\ {SKIPPED}' = 0""",
    ]
    if internal:  # without internal steps `action` need not exist
        names = "{" + ", ".join(json.dumps(n) for n in internal) + "}"
        steps.append(
            f"""/\\ {ahead} /\\ {SKIPPED} < {most}
       /\\ {model.next} /\\ action'.name \\in {names}
       /\\ {SKIPPED}' = {SKIPPED} + 1 /\\ UNCHANGED {CURSOR}"""
        )
    body = f"""TmLog == <<
{("," + chr(10)).join(entries)}
>>
TmPrimed(n) == CASE {primed}
\\* IF, not \\/: in a step TLC takes each disjunct as a branch of its own.
RECURSIVE TmHas(_, _)
TmHas(v, p) == IF p = <<>> THEN TRUE ELSE Head(p) \\in DOMAIN v /\\ TmHas(v[Head(p)], Tail(p))
RECURSIVE TmAt(_, _)
TmAt(v, p) == IF p = <<>> THEN v ELSE TmAt(v[Head(p)], Tail(p))
TmObserved(k) == \\A i \\in 1..Len(TmLog[k].obs) :
    LET o == TmLog[k].obs[i] IN TmHas(TmPrimed(o[1]), o[2]) /\\ TmAt(TmPrimed(o[1]), o[2]) = o[3]
{acts}
TmInit == {CURSOR} = 0 /\\ {SKIPPED} = 0 /\\ {model.init}
TmNext ==
""" + "\n".join(f"    \\/ {step}" for step in steps)
    module = trace_module(model, name, (CURSOR, SKIPPED), definitions, body)
    return name, module, trace_config(model, definitions)


def _at(value: Value, path: Sequence[Value]) -> Value | None:
    """The value at `path` (record fields, function keys, sequence indices from 1), None if there is none."""
    for key in path:
        if isinstance(value, Record | Function) and key in value:
            value = value[key]  # type: ignore[index]  # a Record's keys are strings: `in` checked it
        elif isinstance(value, tuple) and isinstance(key, int) and 1 <= key <= len(value):
            value = value[key - 1]
        else:
            return None
    return value


def _label(variable: str, path: Sequence[Value]) -> str:
    return ".".join([variable, *(p if isinstance(p, str) else format_value(p) for p in path)])


def _differences(event: Event, state: State) -> list[str]:
    lines = []
    for variable, path, value in event.observed:
        have = _at(state[variable], path)
        if have != value:
            shown = "nothing" if have is None else format_value(have)
            lines.append(
                f"{_label(variable, path)}: the spec has {shown}, the log says {format_value(value)}"
            )
    return lines


def _takes(event: Event, state: State) -> bool:
    action = state.get("action")
    assert event.action is not None
    return isinstance(action, Record) and all(action.get(f) == v for f, v in event.action.items())


def _explain(model: TraceModel, event: Event, candidates: list[State]) -> tuple[str, list[str], float]:
    """Why `event` follows no candidate: its action is never taken, or what the closest state differs in."""
    if event.action is None:
        diff = min((_differences(event, s) for s in candidates), key=len)
        return "no candidate state shows what the event observes", diff, 0.0
    _, successors, seconds = spec_steps(model, candidates[:EXPLAINED], initial=False)
    after = [s for each in successors for s in each]
    taking = [s for s in after if _takes(event, s)]
    wanted = action_text(event.action)
    if not taking:
        names = sorted({action_text(s.get("action")).split("(")[0] for s in after})
        taken = ", ".join(names) or "nothing"
        return f"the spec takes no step {wanted} from any candidate state (it can take: {taken})", [], seconds
    diff = min((_differences(event, s) for s in taking), key=lambda d: (len(d), d))
    return f"after {wanted} the spec's state is not what the event observes", diff, seconds


def validate_log(
    log: Path,
    mapping_path: Path,
    spec: Path | None = None,
    config: Path | None = None,
    options: TlcOptions | None = None,
) -> LogReport:
    mapping = read_mapping(mapping_path)
    spec = spec if spec is not None else resource(f"spec/{mapping.spec}.tla")
    config = config or (Path(mapping.config) if mapping.config else spec.with_suffix(".cfg"))
    model = load_model(spec, config, options, str(log))
    _check_mapping(mapping, model.variables, str(mapping_path))
    events = read_log(log, mapping, str(mapping_path))
    name, module, cfg = _log_module(model, events, mapping.internal, mapping.max_internal)
    reached, seconds = run_traces(model, module, cfg, name)
    deepest = max(int(str(s[CURSOR])) for s in reached) if reached else -1
    report = LogReport(
        log=str(log),
        mapping=str(mapping_path),
        spec=str(spec),
        config=str(config),
        events=len(events),
        explained=max(deepest, 0),
        tlc_seconds=seconds,
    )
    if deepest == len(events):
        return report
    if deepest < 0:  # not even an initial state: TLC found no state (the spec's Init is empty here)
        candidates: list[State] = []
    else:
        found = {json.dumps(s, sort_keys=True): s for s in reached if s[CURSOR] == deepest}
        candidates = []
        for key in sorted(found):
            state = state_from_itf(found[key])
            del state[CURSOR], state[SKIPPED]
            if state not in candidates:
                candidates.append(state)
    event = events[deepest] if deepest >= 0 else events[0]
    reason, diff, more = (
        _explain(model, event, candidates) if candidates else ("the spec has no initial state", [], 0.0)
    )
    report.tlc_seconds = round(seconds + more, 3)
    report.rejection = LogRejection(
        event=report.explained + 1,
        line=event.line,
        kind=event.kind,
        reason=reason,
        diff=diff,
        candidates=len(candidates),
        candidate_states=[state_to_itf(s) for s in candidates[:SHOWN]],
    )
    return report


if __name__ == "__main__":
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
