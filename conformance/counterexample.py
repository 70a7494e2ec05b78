"""Counterexamples a person can read and other tools can load.

A counterexample is a path of spec states from an initial state: TLC's error trace for `check`, or, for
a conformance mismatch, the shortest path in TLC's state graph from an initial state to the edge the
implementation got wrong. Each step shows the action with its parameters (the spec's `action`
variable) and the state, with the variables the step changed highlighted, as TLC's Toolbox does; the
violated invariant is shown with its definition from the spec. Every path can be written as an ITF
trace (the JSON format of Apalache and Quint, through the itf-py library) and replayed on the
implementation step by step with `tidemark explain`.
"""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import itf_py
import pyarrow.parquet as pq
from pydantic import BaseModel, Field
from rich.console import Console
from rich.markup import escape

from tidemark.conformance.conform import default_run_dir
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.replay import value_changes
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import TlcResult, TraceStep
from tidemark.conformance.tlc.values import (
    Record,
    Value,
    format_value,
    from_itf,
    state_from_itf,
    state_from_json,
    state_to_itf,
    to_itf,
)

State = dict[str, Value]
ITF_SUFFIX = ".itf.json"


class Counterexample(BaseModel):
    """A path of spec states from an initial state, and what it is a counterexample of."""

    states: list[dict[str, Any]] = Field(description="ITF states, the first an initial state")
    what: str = Field(description="e.g. 'invariant UniqueCounters violated'")
    meta: dict[str, Any] = Field(default_factory=dict, description="spec, config, constants, mismatch")
    loop: int | None = Field(default=None, description="lasso: the state index the path returns to")
    labels: list[str] = Field(
        default_factory=list, description="TLC's name of each step, for specs without an `action` variable"
    )

    def values(self) -> list[State]:
        return [state_from_itf(s) for s in self.states]


def action_text(action: Value | None) -> str:
    """`Commit(copy=b, delta=1, start=2)` for the record [name |-> "Commit", copy |-> "b", ...]
    (`Init` without parameters); anything else in TLA+ syntax."""
    if isinstance(action, Record) and isinstance(action.get("name"), str):
        params = ", ".join(f"{k}={_plain(v)}" for k, v in action.items() if k != "name")
        return f"{action['name']}({params})" if params else str(action["name"])
    return "?" if action is None else format_value(action)


def _plain(value: Value) -> str:
    # Copies and nodes are strings: unquoted they read as the names they are.
    return value if isinstance(value, str) else format_value(value)


def from_tlc(
    trace: Sequence[TraceStep], what: str, meta: Mapping[str, Any], loop: int | None
) -> Counterexample:
    return Counterexample(
        states=[step.state for step in trace],
        what=what,
        meta=dict(meta),
        loop=loop,
        labels=[step.action for step in trace],
    )


def model_meta(spec: Path, config: Path | None, mutant: str | None = None) -> dict[str, Any]:
    """What `explain` needs to replay a path of this model: the spec, the config and its constants."""
    config = config or spec.with_suffix(".cfg")
    constants = {name: to_itf(v) for name, v in read_config(config).constants.items()}
    meta: dict[str, Any] = {"spec": str(spec), "config": str(config), "constants": constants}
    return meta | ({"mutant": mutant} if mutant else {})


def violation_path(result: TlcResult, spec: Path, config: Path | None) -> Counterexample:
    """TLC's counterexample as a path."""
    violation = result.violation
    assert violation is not None
    what = f"{violation.kind}" + (f": {violation.invariant}" if violation.invariant else "")
    return from_tlc(violation.trace, what, model_meta(spec, config), violation.loops_back_to)


def first_mismatch_path(
    result: Any, spec: Path, config: Path | None, run_dir: Path | None, mutant: str | None
) -> Counterexample | None:
    """`result`: a ConformResult. The shortest path to its first mismatch, None when every edge replays."""
    if not result.examples:
        return None
    graph = run_dir or default_run_dir(spec, config or spec.with_suffix(".cfg"))
    searched = _searched(graph)
    # The mismatch nearest an initial state: the implementation follows its path up to the last step.
    nearest = min(result.examples, key=lambda m: searched.get(m.src, (None, 1 << 62))[1])
    return mismatch_path(graph, nearest, model_meta(spec, config, mutant), searched)


def definition(spec: Path, name: str) -> str | None:
    """The text of definition `name` (with the comment lines right above it) in the spec or a module
    beside it, or None when no module there defines it."""
    head = re.compile(rf"^{re.escape(name)}\b[^=\n]*==")
    modules = [spec, *sorted(p for p in spec.parent.glob("*.tla") if p != spec)]
    for module in modules:
        try:
            lines = module.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for at, line in enumerate(lines):
            if head.match(line):
                start = at
                while start > 0 and lines[start - 1].startswith(r"\*"):
                    start -= 1
                end = at + 1
                while end < len(lines) and lines[end].strip() and lines[end][:1] in (" ", "\t"):
                    end += 1
                return "\n".join(lines[start:end])
    return None


def render(console: Console, path: Counterexample, invariant_text: str | None = None) -> None:
    """Each step: its number, the action with its parameters, then the state: every variable of the
    initial state; afterwards what the step changed, field by field (highlighted, with the value before),
    and the unchanged variables by name."""
    console.print(f"[red]{escape(path.what)}[/] after {len(path.states)} states")
    if invariant_text:
        console.print(f"[dim]{escape(invariant_text)}[/]", highlight=False)
    previous: State | None = None
    for index, state in enumerate(path.values(), start=1):
        loop = " [magenta](the lasso returns here)[/]" if path.loop == index - 1 else ""
        action = state.get("action")
        label = path.labels[index - 1] if action is None and index <= len(path.labels) else None
        console.print(f"[bold cyan]{index}. {escape(label or action_text(action))}[/]{loop}")
        unchanged = []
        for name in sorted(state):
            if name == "action":
                continue
            value = state[name]
            if previous is None:
                console.print(f"    {name} = {escape(format_value(value))}", highlight=False)
            elif name not in previous:
                console.print(f"  [bold yellow]* {name} = {escape(format_value(value))}[/]", highlight=False)
            elif previous[name] != value:
                for at, before, after in value_changes(previous[name], value, name):
                    change = f"{at} = {format_value(after)}"
                    console.print(
                        f"  [bold yellow]* {escape(change)}[/] [dim](was {escape(format_value(before))})[/]",
                        highlight=False,
                    )
            else:
                unchanged.append(name)
        if unchanged:
            console.print(f"    [dim]unchanged: {', '.join(unchanged)}[/]")
        previous = state
    if "mismatch" in path.meta:
        for line in path.meta["mismatch"]:
            console.print(f"  [red]{escape(line)}[/]", highlight=False)


def write_itf(path: Counterexample, target: Path) -> Path:
    """The path as an ITF trace, written whole (a temporary file renamed) through itf-py."""
    labels = path.labels or [""] * len(path.states)
    states = [
        itf_py.state_from_json({"#meta": {"index": i, **({"action": label} if label else {})}, **s})
        for i, (s, label) in enumerate(zip(path.states, labels, strict=True))
    ]
    variables = sorted({name for s in path.states for name in s})
    meta = {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html"}
    trace = itf_py.Trace(
        meta={**meta, "description": path.what, **path.meta},
        params=[],
        vars=variables,
        states=states,
        loop=path.loop,
    )
    temporary = target.with_name(target.name + ".part")
    temporary.write_text(json.dumps(itf_py.trace_to_json(trace), indent=1) + "\n", encoding="utf-8")
    temporary.replace(target)
    return target


def read_itf(source: Path) -> Counterexample:
    """An ITF trace (tidemark's, Apalache's or Quint's) read through itf-py; exit 2 naming the file and
    the place when it is not one."""
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except OSError as error:
        raise TidemarkError(f"cannot read the trace: {error.strerror}", source=str(source)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        line = getattr(error, "lineno", None)
        raise TidemarkError(
            f"not JSON: {error}",
            source=str(source),
            location=f"line {line}" if line else None,
            expected="an ITF trace (JSON)",
        ) from None
    try:
        trace = itf_py.trace_from_json(raw)
        states = [state_to_itf(state_from_itf(itf_py.state_to_json(state))) for state in trace.states]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise TidemarkError(
            f"not an ITF trace: {error}", source=str(source), expected='{"vars": [...], "states": [...]}'
        ) from None
    if not states:
        raise TidemarkError("the trace has no states", source=str(source), expected="at least one state")
    meta = dict(trace.meta)
    what = str(meta.pop("description", f"trace {source.name}"))
    labels = [str(state.meta.get("action", "")) for state in trace.states]
    return Counterexample(
        states=states, what=what, meta=meta, loop=trace.loop, labels=labels if any(labels) else []
    )


def _searched(graph: Path) -> dict[int, tuple[int | None, int]]:
    """A breadth-first search of a dumped state graph (states.parquet, edges.parquet) from its initial
    states (their `action` is Init): each reached state -> (its parent on a shortest path, its depth)."""
    states = pq.read_table(graph / "states.parquet", columns=["fp", "action"]).to_pydict()
    edges = pq.read_table(graph / "edges.parquet", columns=["src", "dst"]).to_pydict()
    initial = [
        fp for fp, action in zip(states["fp"], states["action"], strict=True) if _is_init(json.loads(action))
    ]
    successors: dict[int, list[int]] = {}
    for src, dst in zip(edges["src"], edges["dst"], strict=True):
        successors.setdefault(src, []).append(dst)
    found: dict[int, tuple[int | None, int]] = dict.fromkeys(initial, (None, 0))
    queue = deque(initial)
    while queue:
        fp = queue.popleft()
        for dst in successors.get(fp, ()):
            if dst not in found:
                found[dst] = (fp, found[fp][1] + 1)
                queue.append(dst)
    return found


def states_by_depth(graph: Path) -> list[int]:
    """Distinct states at each breadth-first level of a dumped state graph, from its initial states
    (level 0) to the deepest; their sum is the graph's states reachable from an initial state."""
    depths = Counter(depth for _, depth in _searched(graph).values())
    return [depths[level] for level in range(max(depths, default=-1) + 1)]


def shortest_path(
    graph: Path, target: int, searched: dict[int, tuple[int | None, int]] | None = None
) -> list[int]:
    """The fingerprints on a shortest path in a dumped state graph from an initial state to `target`."""
    found = _searched(graph) if searched is None else searched
    if target not in found:
        raise TidemarkError(
            "the state is not reachable in the stored graph",
            source=str(graph),
            expected="a state of the graph",
        )
    path: list[int] = []
    at: int | None = target
    while at is not None:
        path.append(at)
        at = found[at][0]
    return path[::-1]


def _is_init(action: object) -> bool:
    return isinstance(action, dict) and action.get("name") == "Init"


def graph_states(graph: Path, fps: Iterable[int]) -> dict[int, dict[str, Any]]:
    wanted = list(fps)
    table = pq.read_table(graph / "states.parquet", columns=["fp", "state"], filters=[("fp", "in", wanted)])
    return {
        fp: json.loads(text)
        for fp, text in zip(table.column("fp").to_pylist(), table.column("state").to_pylist(), strict=True)
    }


def mismatch_path(
    graph: Path,
    mismatch: Any,
    meta: Mapping[str, Any],
    searched: dict[int, tuple[int | None, int]] | None = None,
) -> Counterexample:
    """The shortest path from an initial state to a conformance mismatch: to its source state, then the
    spec's step the implementation got wrong (for an edge mismatch)."""
    fps = shortest_path(graph, mismatch.src, searched)
    if mismatch.kind == "edge" and mismatch.dst is not None:
        fps.append(mismatch.dst)
    texts = graph_states(graph, fps)
    lines = [*mismatch.diff, *([mismatch.error] if mismatch.error else [])]
    if mismatch.kind == "enabledness":
        lines += [
            f"spec takes, implementation does not enable: {action_text(from_itf(a))}"
            for a in mismatch.missing
        ]
        lines += [
            f"implementation enables, spec does not take: {action_text(from_itf(a))}" for a in mismatch.extra
        ]
    what = (
        f"the implementation's step {len(fps)} differs from the spec's"
        if mismatch.kind == "edge"
        else f"the implementation enables other actions than the spec after step {len(fps)}"
    )
    return Counterexample(
        states=[state_to_itf(state_from_json(json.dumps(texts[fp]))) for fp in fps],
        what=what,
        meta={**meta, "mismatch": lines},
    )
