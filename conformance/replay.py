"""Replaying a spec's state graph against the implementation: the per-state, per-edge checks.

For a state s with outgoing edges s --a--> s' (a is the `action` recorded in s'):
- edge check: apply(concretize(s), a) must succeed and abstract to s' (compared by `state_digest` of
  the canonical text: the graph carries 8 bytes per edge, not the target's text);
- enabledness: enabled(concretize(s)) must equal the set of actions on s's outgoing edges.
Each state gives one `StateResult`, a row of the results table (RESULTS_SCHEMA); `ReplaySummary` folds
them. Pure functions over ITF JSON text: the Spark job maps them over Arrow batches, the local runner
calls them in a loop, and the tests call them directly.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import pyarrow as pa
from pydantic import BaseModel, Field

from tidemark.conformance.mappings import ReplayError, SpecMapping, State, mapping_for
from tidemark.conformance.tlc.values import (
    Function,
    Record,
    Value,
    canonical_state_json,
    canonical_text,
    format_value,
    from_itf,
    state_digest,
    state_from_itf,
    state_from_json,
    to_itf,
    value_sort_key,
)

# Mismatch examples a summary keeps in full (all are counted, and all are in the results table).
EXAMPLES = 50

# One row per replayed state; `missing`/`extra` hold actions as ITF JSON text, `examples` the state's
# mismatches as a JSON list (null when it has none).
RESULTS_SCHEMA = pa.schema(
    [
        ("fp", pa.int64()),
        ("edges", pa.int32()),
        ("edges_replayed", pa.int32()),
        ("edge_mismatches", pa.int32()),
        ("spec_actions", pa.int32()),
        ("impl_enabled", pa.int32()),
        ("missing", pa.list_(pa.string())),
        ("extra", pa.list_(pa.string())),
        ("coverage", pa.map_(pa.string(), pa.int32())),
        ("examples", pa.string()),
    ]
)
RESULTS_DDL = (
    "fp bigint, edges int, edges_replayed int, edge_mismatches int, spec_actions int, impl_enabled int,"
    " missing array<string>, extra array<string>, coverage map<string,int>, examples string"
)


class Mismatch(BaseModel):
    kind: Literal["edge", "enabledness", "driver"] = Field(
        description="driver: the driver process failed (exited, timed out, answered malformed output)"
    )
    src: int
    dst: int | None = None
    action: Any = Field(default=None, description="the spec's action (ITF)")
    source_state: dict[str, Any]
    actual_state: dict[str, Any] | None = Field(default=None, description="the impl's successor (ITF)")
    diff: list[str] = Field(default_factory=list, description="path: expected (spec) vs actual (impl)")
    error: str | None = None
    missing: list[Any] = Field(default_factory=list, description="actions the spec takes, impl not enabled")
    extra: list[Any] = Field(default_factory=list, description="actions the impl enables, spec does not take")
    path: list[Any] | None = Field(
        default=None, description="the actions (ITF) from an initial state to `src`, then the failing one"
    )


@dataclass
class StateResult:
    """What replaying one state and its outgoing edges found."""

    fp: int
    edges: int = 0
    edges_replayed: int = 0
    edge_mismatches: int = 0
    spec_actions: int = 0
    impl_enabled: int = 0
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    coverage: Counter[str] = field(default_factory=Counter)
    examples: list[Mismatch] = field(default_factory=list)


class ReplaySummary(BaseModel):
    states: int = 0
    edges: int = 0
    edges_replayed: int = 0
    mismatches: int = 0
    enabledness_mismatches: int = 0
    coverage: dict[str, int] = Field(default_factory=dict, description="edges replayed per action name")
    examples: list[Mismatch] = Field(default_factory=list)

    def add_rows(self, batch: pa.RecordBatch) -> None:
        """Fold a batch of results-table rows into this summary (keeping the first EXAMPLES examples)."""
        columns = batch.to_pydict()
        self.states += batch.num_rows
        self.edges += sum(columns["edges"])
        self.edges_replayed += sum(columns["edges_replayed"])
        self.mismatches += sum(columns["edge_mismatches"])
        self.enabledness_mismatches += sum(
            bool(missing or extra)
            for missing, extra in zip(columns["missing"], columns["extra"], strict=True)
        )
        for pairs in columns["coverage"]:
            for name, count in pairs:
                self.coverage[name] = self.coverage.get(name, 0) + count
        for examples in columns["examples"]:
            if examples is not None and len(self.examples) < EXAMPLES:
                self.examples += [Mismatch.model_validate(m) for m in json.loads(examples)]


def value_changes(expected: Value, actual: Value, path: str = "") -> Iterator[tuple[str, Value, Value]]:
    """Where two values differ: (path, expected, actual) at the deepest differing field."""
    if expected == actual:
        return
    both_maps = isinstance(expected, Record | Function) and isinstance(actual, Record | Function)
    if both_maps and set(expected) == set(actual):  # type: ignore[arg-type]
        for key in sorted(expected, key=value_sort_key):  # type: ignore[arg-type]
            name = key if isinstance(key, str) else format_value(key)
            yield from value_changes(expected[key], actual[key], f"{path}.{name}" if path else name)  # type: ignore[index]
        return
    yield path or "value", expected, actual


def value_diff(expected: Value, actual: Value, path: str = "") -> list[str]:
    """Where two values differ, as 'path: expected X, got Y' lines at the deepest differing field."""
    return [
        f"{at}: expected {format_value(e)}, got {format_value(a)}"
        for at, e, a in value_changes(expected, actual, path)
    ]


def state_diff(expected: State, actual: State) -> list[str]:
    lines: list[str] = []
    for variable in sorted(set(expected) | set(actual)):
        if variable not in actual:
            lines.append(f"{variable}: missing in the implementation's state")
        elif variable not in expected:
            lines.append(f"{variable}: not a spec variable")
        else:
            lines += value_diff(expected[variable], actual[variable], variable)
    return lines


@lru_cache(maxsize=4096)
def _parse_action(action_json: str) -> Value:
    # A model has few distinct actions and every edge names one: parse each once.
    return from_itf(json.loads(action_json))


def _action_name(action: Value) -> str:
    if isinstance(action, Record) and isinstance(action.get("name"), str):
        return str(action["name"])
    return "?"


class NotReplayed(Exception):
    """A `check_state` successor that was never asked for (a driver's path ended before it): the edge
    counts as not replayed, not as a mismatch."""


def replay_state(
    mapping: SpecMapping, fp: int, state_json: str, outgoing: Iterable[tuple[int, int, str]]
) -> StateResult:
    """Check one state and every edge leaving it on the in-process implementation (`check_state`)."""
    try:
        impl = mapping.concretize(state_from_json(state_json))
    except (ReplayError, ValueError) as error:
        result = StateResult(fp=fp, edges=sum(1 for _ in outgoing), edge_mismatches=1)
        result.examples.append(
            Mismatch(kind="edge", src=fp, source_state=json.loads(state_json), error=f"concretize: {error}")
        )
        return result
    return check_state(
        fp,
        state_json,
        outgoing,
        lambda action: canonical_state_json(mapping.abstract(mapping.apply(impl, action))),
        lambda: mapping.enabled(impl),
    )


def check_state(
    fp: int,
    state_json: str,
    outgoing: Iterable[tuple[int, int, str]],
    successor: Callable[[Value], str],
    enabled: Callable[[], set[Value]] | None,
) -> StateResult:
    """Check one state and every edge leaving it, given the implementation's answers.

    `outgoing` holds (dst fingerprint, dst digest, dst action as canonical ITF JSON text); `successor`
    gives the implementation's state after an action from this state as canonical text (compared by
    digest; a mismatch keeps it as `actual_state` so that `explain` can diff it against the spec's), or
    raises ReplayError (or another error an implementation raises) when it refuses the step; `enabled`
    the actions the implementation enables here (None: not compared), or raises ReplayError.
    """
    result = StateResult(fp=fp)
    taken: set[Value] = set()
    for dst, dst_digest, action_json in outgoing:
        result.edges += 1
        action = _parse_action(action_json)
        taken.add(action)
        try:
            actual = successor(action)
        except NotReplayed:
            continue
        except (ReplayError, ValueError, AssertionError, RuntimeError) as error:
            result.edge_mismatches += 1
            result.examples.append(
                Mismatch(
                    kind="edge",
                    src=fp,
                    dst=dst,
                    action=json.loads(action_json),
                    source_state=json.loads(state_json),
                    error=f"{type(error).__name__}: {error}",
                )
            )
            continue
        result.edges_replayed += 1
        result.coverage[_action_name(action)] += 1
        if state_digest(actual) != dst_digest:
            result.edge_mismatches += 1
            result.examples.append(
                Mismatch(
                    kind="edge",
                    src=fp,
                    dst=dst,
                    action=json.loads(action_json),
                    source_state=json.loads(state_json),
                    actual_state=json.loads(actual),
                )
            )
    if enabled is None:
        return result
    problem = None
    try:
        found = enabled()
    except ReplayError as failure:  # a driver that could not answer: nothing counts as enabled
        found, problem = set(), f"enabled: {failure}"
    result.spec_actions, result.impl_enabled = len(taken), len(found)
    if found != taken or problem:
        missing = sorted(taken - found, key=value_sort_key)
        extra = sorted(found - taken, key=value_sort_key)
        result.missing, result.extra = list(map(canonical_text, missing)), list(map(canonical_text, extra))
        result.examples.append(
            Mismatch(
                kind="enabledness",
                src=fp,
                source_state=json.loads(state_json),
                missing=[to_itf(a) for a in missing],
                extra=[to_itf(a) for a in extra],
                error=problem,
            )
        )
    return result


def explain(mismatch: Mismatch, expected_json: str) -> Mismatch:
    """The edge mismatch with its diff against the spec's successor (the target state's text)."""
    if mismatch.actual_state is None:
        return mismatch
    expected = state_from_json(expected_json)
    actual = state_from_itf(mismatch.actual_state)
    return mismatch.model_copy(update={"diff": state_diff(expected, actual) or ["canonical texts differ"]})


def replay_states(
    spec: str,
    constants: Mapping[str, Value],
    mutant: str | None,
    rows: Iterable[tuple[int, str, Iterable[tuple[int, int, str]]]],
) -> Iterator[StateResult]:
    """Replay (fp, state JSON, outgoing edges) rows, one result per state."""
    mapping = mapping_for(spec, constants, mutant)
    for fp, state_json, outgoing in rows:
        yield replay_state(mapping, fp, state_json, outgoing)


def results_batch(results: list[StateResult]) -> pa.RecordBatch:
    """Results as a batch of the results table."""
    return pa.RecordBatch.from_pydict(
        {
            "fp": [r.fp for r in results],
            "edges": [r.edges for r in results],
            "edges_replayed": [r.edges_replayed for r in results],
            "edge_mismatches": [r.edge_mismatches for r in results],
            "spec_actions": [r.spec_actions for r in results],
            "impl_enabled": [r.impl_enabled for r in results],
            "missing": [r.missing for r in results],
            "extra": [r.extra for r in results],
            "coverage": [sorted(r.coverage.items()) for r in results],
            "examples": [
                json.dumps([m.model_dump(mode="json") for m in r.examples]) if r.examples else None
                for r in results
            ],
        },
        schema=RESULTS_SCHEMA,
    )


def results_batches(results: Iterable[StateResult], rows: int = 4096) -> Iterator[pa.RecordBatch]:
    """Results as batches of the results table, `rows` states each."""
    pending: list[StateResult] = []
    for result in results:
        pending.append(result)
        if len(pending) >= rows:
            yield results_batch(pending)
            pending = []
    if pending:
        yield results_batch(pending)


def arrow_rows(batches: Iterator[Any]) -> Iterator[tuple[int, str, list[tuple[int, int, str]]]]:
    # Columns, not to_pydict(): building a dict per edge was a large part of the hand-over's cost.
    for batch in batches:
        out = batch.column("out")
        lengths = out.value_lengths().fill_null(0).to_pylist()
        flat = out.flatten()
        dsts = flat.field("dst").to_pylist()
        digests = flat.field("dst_digest").to_pylist()
        actions = flat.field("dst_action").to_pylist()
        at = 0
        for fp, state, n in zip(
            batch.column("fp").to_pylist(), batch.column("state").to_pylist(), lengths, strict=True
        ):
            yield (
                fp,
                state,
                list(zip(dsts[at : at + n], digests[at : at + n], actions[at : at + n], strict=True)),
            )
            at += n


def replay_arrow_batches(
    spec: str, constants: Mapping[str, Value], mutant: str | None, batches: Iterator[Any]
) -> Iterator[pa.RecordBatch]:
    """Spark mapInArrow body: batches of (fp, state, out=[{dst, dst_digest, dst_action}]) -> results rows."""
    yield from results_batches(replay_states(spec, constants, mutant, arrow_rows(batches)))
