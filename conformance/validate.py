"""`tidemark validate`: is each implementation trace a behavior of the spec? TLC decides.

TLC 2.15 has no trace-validation mode of its own, so the traces become part of a generated module that
EXTENDS the spec, in a temporary directory next to copies of the spec's modules (2.15 resolves EXTENDS
and -config against the main module's directory):

    TmV0 == [p |-> [lwm |-> 0, ...], ...]                  \\* each distinct variable value, once
    TmS0 == [counter |-> TmV0, pending |-> TmV1, ...]      \\* each distinct state, once
    TmTraces == << <<TmS0, TmS1, ...>>, ... >>             \\* every trace, a sequence of states
    TmInit == /\\ tmTrace \\in 1..Len(TmTraces) /\\ tmCursor = 1
              /\\ Init /\\ counter = TmTraces[tmTrace][1].counter /\\ ...
    TmNext == /\\ tmCursor < Len(TmTraces[tmTrace])
              /\\ (Next \\/ UNCHANGED <<counter, ...>>)
              /\\ counter' = TmTraces[tmTrace][tmCursor + 1].counter /\\ ...
              /\\ tmCursor' = tmCursor + 1 /\\ tmTrace' = tmTrace

The spec's Init and Next assign the variables first; the equalities after them only filter, so TLC
reaches state k of trace t exactly when states 0..k are a behavior of the spec (stuttering steps
included, as in Init /\\ [][Next]_vars). One breadth-first run covers a whole batch of traces; its state
graph (-dump dot) holds one state per matched prefix, so the deepest cursor per trace says how far each
got. For each rejected trace a second run explains the first step that does not match: it starts from
the last matched state and lists the spec's successors (or the spec's initial states), which are
compared with the recorded state. Model values in traces become CONSTANTS of the generated module,
assigned the model value of the same name in the generated .cfg (beside the model's own constants).

Steps are indices into a trace's states: a rejection at step 0 means the first state is not initial,
at step k that no step of the spec leads from state k-1 to state k. Init and Next are the config's
INIT and NEXT, else the spec's `Init` and `Next` (a SPECIFICATION formula is not taken apart).

Not covered: variables declared in modules the spec INSTANCEs (only VARIABLES of the spec and the
modules it EXTENDS from its own directory are read); the model's state constraints (a behavior
beyond them is still a behavior of the spec). The model's INVARIANTS are checked on every state of
every trace, accepted or not: the same run starts from each distinct state once more (as `tmTrace` 0,
which takes no step) and records the invariants it breaks; a trace is reported at its first such state.
A trace value of another type than the spec's (a string where it has an integer) makes TLC stop with an
evaluation error, reported as an error of the whole run; integers beyond TLC's 32 bits are refused before
TLC runs, naming the trace, state and variable.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.mappings import State
from tidemark.conformance.replay import state_diff
from tidemark.conformance.resources import resource
from tidemark.conformance.scratch import scratch_dir
from tidemark.conformance.tlc.config import ModelConfig, read_config
from tidemark.conformance.tlc.dot import read_dot
from tidemark.conformance.tlc.output import Outcome, TlcResult, parse_output, tlc_failure
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.tlc.values import (
    JSON,
    TLC_INT_MAX,
    TLC_INT_MIN,
    Function,
    ModelValue,
    Record,
    Value,
    format_value,
    integers_beyond_tlc,
    state_from_itf,
)
from tidemark.conformance.traces import Trace

# Traces per TLC run: one JVM start is ~1 s, and the generated module grows with the batch.
BATCH_SIZE = 500

# The generated modules' own variables; the names avoid the spec's (TLC reports a clash as a parse error).
TRACE, CURSOR = "tmTrace", "tmCursor"
CASE, STEP, BROKEN = "tmCase", "tmStep", "tmBroken"


class Rejection(BaseModel):
    id: str
    step: int = Field(description="index in states of the first state that does not match (0: the initial)")
    action: str | None = Field(description="the name of the action recorded in that state, if any")
    reason: str
    diff: list[str] = Field(
        default_factory=list, description="path: expected (spec) vs recorded, for the spec's closest state"
    )


class Broken(BaseModel):
    id: str
    step: int = Field(description="index in states of the first state that breaks an invariant")
    invariants: list[str] = Field(description="the model's invariants that state breaks")


class ValidationReport(BaseModel):
    spec: str
    config: str
    traces: int
    accepted: int
    rejected: list[Rejection] = Field(default_factory=list)
    broken: list[Broken] = Field(
        default_factory=list, description="traces with a state that breaks one of the model's INVARIANTS"
    )
    tlc_seconds: float = 0.0
    tlc_runs: int = 0

    @property
    def holds(self) -> bool:
        return not self.rejected and not self.broken


# ---------------------------------------------------------------------------------------------------------
# The spec's modules and variables.

_BLOCK_COMMENT = re.compile(r"\(\*.*?\*\)", re.S)
_LINE_COMMENT = re.compile(r"\\\*.*")
_NAME_LIST = r"\s+((?:\w+\s*,\s*)*\w+)"
_VARIABLES = re.compile(r"\bVARIABLES?\b" + _NAME_LIST)
_EXTENDS = re.compile(r"\bEXTENDS\b" + _NAME_LIST)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",")]


def spec_variables(spec: Path) -> list[str]:
    """The variables the spec declares, with those of the modules it EXTENDS from its own directory."""
    variables: list[str] = []
    seen: set[Path] = set()
    pending = [spec]
    while pending:
        module = pending.pop()
        if module in seen or not module.is_file():
            continue  # a standard module (Naturals, ...) or one already read
        seen.add(module)
        text = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub(" ", module.read_text(encoding="utf-8")))
        for match in _VARIABLES.finditer(text):
            variables += [v for v in _names(match.group(1)) if v not in variables]
        for match in _EXTENDS.finditer(text):
            pending += [module.parent / f"{name}.tla" for name in _names(match.group(1))]
    return variables


def resolve_model(traces: Sequence[Trace], spec: Path | None, config: Path | None) -> tuple[Path, Path]:
    """The spec and model config to validate against: given, else named by the traces' #meta."""
    first = traces[0]
    name = spec.stem if spec is not None else first.spec
    for trace in traces:
        if trace.spec != name:
            raise TidemarkError(
                f"trace {trace.id!r} is a trace of {trace.spec}, not of {name}",
                source=trace.source,
                location=trace.location("#meta.spec"),
                expected=f"every trace in the file for spec {name}",
            )
    spec = spec if spec is not None else resource(f"spec/{name}.tla")
    if config is not None:
        return spec, config
    configs = {trace.config for trace in traces}
    if len(configs) > 1:
        raise TidemarkError(
            f"the traces name different model configs: {sorted(map(str, configs))}",
            source=first.source,
            expected="one model config for the file, or --config",
        )
    named = configs.pop()
    return spec, Path(named) if named is not None else spec.with_suffix(".cfg")


def _check_integers(traces: Iterable[Trace]) -> None:
    """Refuse integers beyond TLC's 32 bits here, where the trace, state and variable are known."""
    for trace in traces:
        for index, state in enumerate(trace.states):
            for name, value in state.items():
                for path, number in integers_beyond_tlc(value, name):
                    raise TidemarkError(
                        f"trace {trace.id!r}: {number} is beyond TLC's integers",
                        source=trace.source,
                        location=trace.location(f"states[{index}].{path}"),
                        expected=f"an integer from {TLC_INT_MIN} to {TLC_INT_MAX}",
                    )


def _check_variables(traces: Iterable[Trace], variables: Sequence[str], spec: str) -> None:
    expected = set(variables)
    for trace in traces:
        bound = set(trace.states[0])
        if missing := sorted(expected - bound):
            raise TidemarkError(
                f"trace {trace.id!r} lacks variable {missing[0]!r} of spec {spec}",
                source=trace.source,
                location=trace.location("vars"),
                expected=f"the spec's variables {sorted(expected)}",
            )
        if extra := sorted(bound - expected):
            raise TidemarkError(
                f"trace {trace.id!r} binds {extra[0]!r}, which is not a variable of spec {spec}",
                source=trace.source,
                location=trace.location("vars"),
                expected=f"the spec's variables {sorted(expected)}",
            )


# ---------------------------------------------------------------------------------------------------------
# Generating and running the modules.


@dataclass(frozen=True)
class TraceModel:
    """What every generated module needs: the spec, its variables and the model's constants."""

    spec: Path
    config: ModelConfig
    variables: tuple[str, ...]
    options: TlcOptions
    traces: str = "the traces"  # their file, for errors

    @property
    def init(self) -> str:
        return self.config.init or "Init"

    @property
    def next(self) -> str:
        return self.config.next or "Next"


def _model_values(values: Iterable[Value]) -> set[str]:
    """Model values inside these values: the generated module declares them as constants."""
    found: set[str] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, ModelValue):
            found.add(value.name)
        elif isinstance(value, tuple | frozenset):
            stack.extend(value)
        elif isinstance(value, Record):
            stack.extend(value.values())
        elif isinstance(value, Function):
            stack.extend(value.keys())
            stack.extend(value.values())
    return found


def _sequence(items: Iterable[str]) -> str:
    return "<<\n" + ",\n".join(items) + "\n>>"


class Definitions:
    """The states of a generated module as shared definitions (TmS3 == [counter |-> TmV1, ...]).

    Walks share most of their states and nearly all variable values (100 walks of 30 steps of the
    small UpdateCounter model: 3,100 states, 550 distinct, 161 distinct values): defining each once
    keeps the module small, and SANY parses about 200 KB/s.
    """

    def __init__(self, variables: Sequence[str]) -> None:
        self.variables = variables
        self.lines: list[str] = []
        self.model_values: set[str] = set()
        self._names: dict[str, str] = {}  # keyed by TLA+ text: Python's 1 == True must not merge names

    def _define(self, prefix: str, text: str) -> str:
        name = self._names.get(text)
        if name is None:
            name = self._names[text] = f"{prefix}{len(self._names)}"
            self.lines.append(f"{name} == {text}")
        return name

    def value(self, value: Value) -> str:
        """The name of a definition of `value`."""
        text = format_value(value)
        if text not in self._names:
            self.model_values |= _model_values([value])
        return self._define("TmV", text)

    def state(self, state: State) -> str:
        """The name of a definition of `state` as a record of the variables."""
        fields = ", ".join(f"{v} |-> {self.value(state[v])}" for v in self.variables)
        return self._define("TmS", f"[{fields}]")


def trace_module(
    model: TraceModel, name: str, own: tuple[str, ...], definitions: Definitions, body: str
) -> str:
    """A module extending the spec with variables `own`, the definitions (states) and `body`."""
    model_values = sorted(definitions.model_values)
    is_state = " /\\ ".join(f"{v} = s.{v}" for v in model.variables)
    becomes = " /\\ ".join(f"{v}' = s.{v}" for v in model.variables)
    return "\n".join(
        [
            f"---- MODULE {name} ----",
            f"EXTENDS {model.spec.stem}, Naturals, Sequences, TLC",
            *([f"CONSTANTS {', '.join(model_values)}"] if model_values else []),
            f"VARIABLES {', '.join(own)}",
            f"TmVars == <<{', '.join(model.variables)}>>",
            f"TmIs(s) == {is_state}",
            f"TmBecomes(s) == {becomes}",
            *definitions.lines,
            body,
            "====",
            "",
        ]
    )


def trace_config(model: TraceModel, definitions: Definitions) -> str:
    """The model's constants (and the model values the states use), TmInit and TmNext."""
    lines = ["CONSTANTS"]
    lines += [f"    {name} = {format_value(value)}" for name, value in model.config.constants.items()]
    lines += [f"    {name} <- {definition}" for name, definition in model.config.substitutions.items()]
    lines += [f"    {name} = {name}" for name in sorted(definitions.model_values)]
    return "\n".join([*lines, "INIT TmInit", "NEXT TmNext", ""])


def run_traces(model: TraceModel, module: str, config: str, name: str) -> tuple[list[dict[str, JSON]], float]:
    """Run TLC on a generated module (next to copies of the spec's modules); the states it reached."""
    with scratch_dir("validate-") as workdir:
        for tla in model.spec.parent.glob("*.tla"):
            shutil.copy(tla, workdir / tla.name)
        main = workdir / f"{name}.tla"
        main.write_text(module, encoding="utf-8")
        (workdir / f"{name}.cfg").write_text(config, encoding="utf-8")
        dot = workdir / "states.dot"
        options = model.options.model_copy(update={"mode": "check", "check_deadlock": False, "dump_dot": dot})
        run = run_tlc(main, workdir / f"{name}.cfg", options)
        result = parse_output(run, source=f"TLC on the traces of {model.spec}")
        if result.outcome != Outcome.OK:
            raise _failure(model, name, result)
        with dot.open(encoding="utf-8") as handle:
            states = [
                json.loads(str(row[2])) for kind, row in read_dot(handle, source=str(dot)) if kind == "state"
            ]
        return states, run.seconds


# TLC's list of the nested expressions it was evaluating: "0. Line 37, column 11 to line 45, column 61 in M".
_POSITIONS = re.compile(
    r"The error occurred when TLC was evaluating the nested\s+expressions at the following positions:\s*"
    r"(?:\d+\. Line \d+, column \d+ to line \d+, column \d+ in \w+\s*)*"
)


def _headline(error: str | None) -> str:
    """TLC's own words on an evaluation error, without the behaviour it prints and without the list of
    nested positions (which may come before the words, as for an invariant evaluated on a trace's state)."""
    text = (error or "no details").split("\nThe behavior up to this point")[0]
    text = _POSITIONS.sub("", text)
    return " ".join(line.strip() for line in text.splitlines() if line.strip()) or "no details"


def _failure(model: TraceModel, module: str, result: TlcResult) -> TidemarkError:
    """The error for a run on a generated module. A value TLC cannot evaluate is the traces' (a string
    where the spec has an integer, ...); an error TLC places in the spec or its config is theirs; one in
    the generated module itself is tidemark's (exit 3); a failure of TLC is exit 3 as everywhere."""
    where = result.location
    error = tlc_failure(result, model.spec, model.config.path)
    if result.outcome == Outcome.NUMBER_TOO_BIG and error is not None and error.location is not None:
        return error  # a constant of the model: tlc_failure found its line
    if result.outcome in (Outcome.EVALUATION_ERROR, Outcome.NUMBER_TOO_BIG):
        stopped = (
            f" (TLC stopped in {where.module}, line {where.line}, column {where.column})"
            if where is not None and where.module not in (None, module)
            else ""
        )
        return TidemarkError(
            f"TLC cannot evaluate the spec on these traces{stopped}: {_headline(result.error)}",
            source=model.traces,
            expected="values of the spec's types (an integer where the spec has one, ...)",
        )
    if error is not None and (where is None or where.module != module):
        return error
    return ToolError(
        f"TLC could not validate the traces: {result.outcome}: {result.error or 'no details'}",
        source=f"TLC on {module}, generated from {model.spec.name}",
    )


def _batches(items: Sequence[Trace], size: int) -> Iterator[Sequence[Trace]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ---------------------------------------------------------------------------------------------------------
# Following the traces.


def _follow(model: TraceModel, traces: Sequence[Trace]) -> tuple[list[int], list[Broken], float]:
    """How many states of each trace TLC matched (0: not even the initial one), and the first state of
    each trace that breaks one of the model's invariants. Each distinct state of the traces is also an
    initial state of trace 0, which takes no step: there TLC evaluates the invariants."""
    name = f"{model.spec.stem}_TidemarkTraces"
    definitions = Definitions(model.variables)
    invariants = model.config.invariants
    names = [[definitions.state(s) for s in trace.states] for trace in traces]
    states = list(dict.fromkeys(name for trace in names for name in trace))
    holds = "CASE " + " [] ".join(f'n = "{i}" -> {i}' for i in invariants) if invariants else "TRUE"
    body = f"""TmTraces == {_sequence(_sequence(trace) for trace in names)}
TmStates == {_sequence(states)}
TmHolds(n) == {holds}
TmInvariants == {{{", ".join(json.dumps(i) for i in invariants)}}}
TmInit == \\/ /\\ {TRACE} \\in 1..Len(TmTraces)
             /\\ {CURSOR} = 1
             /\\ {model.init}
             /\\ TmIs(TmTraces[{TRACE}][1])
             /\\ {BROKEN} = {{}}
          \\/ /\\ {TRACE} = 0
             /\\ {CURSOR} \\in 1..Len(TmStates)
             /\\ TmIs(TmStates[{CURSOR}])
             /\\ {BROKEN} = {{n \\in TmInvariants : ~TmHolds(n)}}
TmNext == /\\ {TRACE} > 0
          /\\ {CURSOR} < Len(TmTraces[{TRACE}])
          /\\ ({model.next} \\/ UNCHANGED TmVars)
          /\\ TmBecomes(TmTraces[{TRACE}][{CURSOR} + 1])
          /\\ {CURSOR}' = {CURSOR} + 1
          /\\ {TRACE}' = {TRACE}
          /\\ {BROKEN}' = {{}}"""
    module = trace_module(model, name, (TRACE, CURSOR, BROKEN), definitions, body)
    reached, seconds = run_traces(model, module, trace_config(model, definitions), name)
    matched = [0] * len(traces)
    breaks: dict[str, list[str]] = {}
    for state in reached:
        index, cursor = state[TRACE], state[CURSOR]
        assert isinstance(index, int) and isinstance(cursor, int)
        if index == 0:
            broken = state_from_itf({BROKEN: state[BROKEN]})[BROKEN]
            assert isinstance(broken, frozenset)
            breaks[states[cursor - 1]] = sorted(map(str, broken))
        else:
            matched[index - 1] = max(matched[index - 1], cursor)
    found = []
    for trace, trace_names in zip(traces, names, strict=True):
        step = next((i for i, name in enumerate(trace_names) if breaks.get(name)), None)
        if step is not None:
            found.append(Broken(id=trace.id, step=step, invariants=breaks[trace_names[step]]))
    return matched, found, seconds


# ---------------------------------------------------------------------------------------------------------
# Explaining rejections: the spec's initial states and successors of the last matched states.


def spec_steps(
    model: TraceModel, sources: Sequence[State], initial: bool
) -> tuple[list[State], list[list[State]], float]:
    """The spec's initial states (if `initial`) and each source state's successors under its Next."""
    name = f"{model.spec.stem}_TidemarkSteps"
    definitions = Definitions(model.variables)
    init = f"({CASE} = 0 /\\ {STEP} = 1 /\\ {model.init})" if initial else "FALSE"
    body = f"""TmCases == {_sequence(definitions.state(s) for s in sources)}
TmInit == \\/ {init}
          \\/ ({CASE} \\in 1..Len(TmCases) /\\ {STEP} = 0 /\\ TmIs(TmCases[{CASE}]))
TmNext == {STEP} = 0 /\\ {model.next} /\\ {STEP}' = 1 /\\ {CASE}' = {CASE}"""
    module = trace_module(model, name, (CASE, STEP), definitions, body)
    reached, seconds = run_traces(model, module, trace_config(model, definitions), name)
    initial_states: list[State] = []
    successors: list[list[State]] = [[] for _ in sources]
    for itf in reached:
        state = state_from_itf(itf)
        case, step = state.pop(CASE), state.pop(STEP)
        if case == 0:
            initial_states.append(state)
        elif step == 1:
            assert isinstance(case, int)
            successors[case - 1].append(state)
    return initial_states, successors, seconds


def _action_name(state: State) -> str | None:
    action = state.get("action")
    if isinstance(action, Record) and isinstance(action.get("name"), str):
        return str(action["name"])
    return None if action is None else format_value(action)


def _closest(candidates: Iterable[State], recorded: State) -> list[str] | None:
    """The differences from the candidate closest to the recorded state (None if there is none)."""
    diffs = [state_diff(candidate, recorded) for candidate in candidates]
    return min(diffs, key=lambda diff: (len(diff), diff), default=None)


def _explain_initial(trace: Trace, initial: Sequence[State]) -> Rejection:
    recorded = trace.states[0]
    diff = _closest(initial, recorded)
    reason = "state 0 is not an initial state of the spec"
    if diff is None:
        reason += " (the spec has no initial state under these constants)"
    return Rejection(id=trace.id, step=0, action=_action_name(recorded), reason=reason, diff=diff or [])


def _explain_step(trace: Trace, step: int, successors: Sequence[State]) -> Rejection:
    """Why state `step` does not follow state `step - 1`: compared with the spec's step of the same action."""
    recorded = trace.states[step]
    rejection = Rejection(id=trace.id, step=step, action=_action_name(recorded), reason="", diff=[])
    if "action" not in recorded:  # a spec that does not record its steps: compare with every successor
        diff = _closest(successors, recorded)
        rejection.reason = f"no step of the spec leads from state {step - 1} to state {step}"
        rejection.diff = diff or []
        return rejection
    same = [s for s in successors if s["action"] == recorded["action"]]
    if not same:
        names = sorted({_action_name(s) or "?" for s in successors})
        rejection.reason = (
            f"the spec cannot take {format_value(recorded['action'])} in state {step - 1}"
            f" (it can take: {', '.join(names) or 'nothing'})"
        )
        return rejection
    rejection.reason = (
        f"the spec's {format_value(recorded['action'])} from state {step - 1} leads to another state"
    )
    rejection.diff = _closest(same, recorded) or []
    return rejection


def _explain(model: TraceModel, failures: Sequence[tuple[Trace, int]]) -> tuple[list[Rejection], float]:
    """One rejection per (trace, first unmatched step), in the order given; one TLC run."""
    stepping = [(trace, step) for trace, step in failures if step > 0]
    initial, successors, seconds = spec_steps(
        model, [trace.states[step - 1] for trace, step in stepping], initial=len(stepping) < len(failures)
    )
    next_successors = iter(successors)  # in the order of `stepping`, a subsequence of `failures`
    rejections = [
        _explain_step(trace, step, next(next_successors)) if step > 0 else _explain_initial(trace, initial)
        for trace, step in failures
    ]
    return rejections, seconds


# ---------------------------------------------------------------------------------------------------------
# Entry points.


def load_model(spec: Path, config: Path, options: TlcOptions | None, traces: str | None = None) -> TraceModel:
    if not spec.is_file():
        raise TidemarkError("no such spec", source=str(spec), expected="a .tla file")
    variables = spec_variables(spec)
    if not variables:
        raise TidemarkError("the spec declares no VARIABLES", source=str(spec))
    return TraceModel(
        spec.resolve(), read_config(config), tuple(variables), options or TlcOptions(), traces or "the traces"
    )


def validate_traces(
    traces: Sequence[Trace],
    spec: Path,
    config: Path,
    options: TlcOptions | None = None,
    *,
    batch_size: int = BATCH_SIZE,
) -> ValidationReport:
    """Validate every trace against the spec under the model's constants: one TLC run per batch of
    traces, plus one per batch that has rejections (to explain them)."""
    model = load_model(spec, config, options, traces[0].source if traces else None)
    _check_variables(traces, model.variables, spec.stem)
    _check_integers(traces)
    report = ValidationReport(spec=str(spec), config=str(config), traces=len(traces), accepted=0)
    for batch in _batches(traces, batch_size):
        matched, broken, seconds = _follow(model, batch)
        report.broken += broken
        report.tlc_seconds += seconds
        report.tlc_runs += 1
        failures = [(t, n) for t, n in zip(batch, matched, strict=True) if n < len(t.states)]
        report.accepted += len(batch) - len(failures)
        if failures:
            rejections, seconds = _explain(model, failures)
            report.rejected += rejections
            report.tlc_seconds += seconds
            report.tlc_runs += 1
    report.tlc_seconds = round(report.tlc_seconds, 3)
    return report


def initial_states(spec: Path, config: Path, options: TlcOptions | None = None) -> list[State]:
    """The spec's initial states under the model's constants, computed by TLC (where walks start)."""
    initial, _, _ = spec_steps(load_model(spec, config, options), [], initial=True)
    return initial
