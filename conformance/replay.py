"""Replaying a spec's state graph against the implementation: the per-state, per-edge checks.

For a state s with outgoing edges s --a--> s' (a is the `action` recorded in s'):
- edge check: apply(concretize(s), a) must succeed and abstract to s';
- enabledness: enabled(concretize(s)) must equal the set of actions on s's outgoing edges.
Pure functions over ITF JSON text: the Spark job maps them over partitions, the local runner calls
them in a loop, and the tests call them directly.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from conformance.mappings import ReplayError, SpecMapping, State, mapping_for
from conformance.tlc.values import (
    Function,
    Record,
    Value,
    canonical_state_json,
    format_value,
    from_itf,
    state_from_itf,
    to_itf,
    value_sort_key,
)

# Mismatches kept per partition in full (all are counted); enough to debug, bounded in memory.
EXAMPLES_PER_PARTITION = 50


class Mismatch(BaseModel):
    kind: Literal["edge", "enabledness"]
    src: int
    dst: int | None = None
    action: Any = Field(default=None, description="the spec's action (ITF)")
    source_state: dict[str, Any]
    diff: list[str] = Field(default_factory=list, description="path: expected (spec) vs actual (impl)")
    error: str | None = None
    missing: list[Any] = Field(default_factory=list, description="actions the spec takes, impl not enabled")
    extra: list[Any] = Field(default_factory=list, description="actions the impl enables, spec does not take")


class ReplaySummary(BaseModel):
    states: int = 0
    edges: int = 0
    edges_replayed: int = 0
    mismatches: int = 0
    enabledness_mismatches: int = 0
    coverage: dict[str, int] = Field(default_factory=dict, description="edges replayed per action name")
    examples: list[Mismatch] = Field(default_factory=list)

    def merge(self, other: ReplaySummary) -> ReplaySummary:
        coverage = Counter(self.coverage)
        coverage.update(other.coverage)
        examples = sorted(self.examples + other.examples, key=lambda m: (m.src, m.dst or 0, m.kind))
        return ReplaySummary(
            states=self.states + other.states,
            edges=self.edges + other.edges,
            edges_replayed=self.edges_replayed + other.edges_replayed,
            mismatches=self.mismatches + other.mismatches,
            enabledness_mismatches=self.enabledness_mismatches + other.enabledness_mismatches,
            coverage=dict(sorted(coverage.items())),
            examples=examples,
        )


def value_diff(expected: Value, actual: Value, path: str = "") -> list[str]:
    """Where two values differ, as 'path: expected X, got Y' lines at the deepest differing field."""
    if expected == actual:
        return []
    both_maps = isinstance(expected, Record | Function) and isinstance(actual, Record | Function)
    if both_maps and set(expected) == set(actual):  # type: ignore[arg-type]
        lines: list[str] = []
        for key in sorted(expected, key=value_sort_key):  # type: ignore[arg-type]
            name = key if isinstance(key, str) else format_value(key)
            lines += value_diff(expected[key], actual[key], f"{path}.{name}" if path else name)  # type: ignore[index]
        return lines
    return [f"{path or 'value'}: expected {format_value(expected)}, got {format_value(actual)}"]


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


def replay_state(
    mapping: SpecMapping, fp: int, state_json: str, outgoing: Iterable[tuple[int, str, str]]
) -> ReplaySummary:
    """Check one state and every edge leaving it.

    `outgoing` holds (dst fingerprint, dst state, dst action), all canonical ITF JSON text: the
    implementation's successor is compared as canonical text, and parsed only to explain a mismatch.
    """
    source_itf = json.loads(state_json)
    source = state_from_itf(source_itf)
    summary = ReplaySummary(states=1)
    taken: set[Value] = set()
    coverage: Counter[str] = Counter()
    try:
        impl = mapping.concretize(source)
    except (ReplayError, ValueError) as error:
        summary.mismatches = 1
        summary.examples.append(
            Mismatch(kind="edge", src=fp, source_state=source_itf, error=f"concretize: {error}")
        )
        return summary
    for dst, dst_json, action_json in outgoing:
        summary.edges += 1
        action = _parse_action(action_json)
        taken.add(action)
        try:
            actual = mapping.abstract(mapping.apply(impl, action))
        except (ReplayError, ValueError, AssertionError, RuntimeError) as error:
            summary.mismatches += 1
            summary.examples.append(
                Mismatch(
                    kind="edge",
                    src=fp,
                    dst=dst,
                    action=to_itf(action),
                    source_state=source_itf,
                    error=f"{type(error).__name__}: {error}",
                )
            )
            continue
        summary.edges_replayed += 1
        coverage[_action_name(action)] += 1
        if canonical_state_json(actual) != dst_json:
            diff = state_diff(state_from_itf(json.loads(dst_json)), actual) or ["canonical texts differ"]
            summary.mismatches += 1
            summary.examples.append(
                Mismatch(
                    kind="edge", src=fp, dst=dst, action=to_itf(action), source_state=source_itf, diff=diff
                )
            )
    enabled = mapping.enabled(impl)
    if enabled != taken:
        summary.enabledness_mismatches = 1
        summary.examples.append(
            Mismatch(
                kind="enabledness",
                src=fp,
                source_state=source_itf,
                missing=[to_itf(a) for a in sorted(taken - enabled, key=value_sort_key)],
                extra=[to_itf(a) for a in sorted(enabled - taken, key=value_sort_key)],
            )
        )
    summary.coverage = dict(coverage)
    return summary


def replay_states(
    spec: str,
    constants: Mapping[str, Value],
    mutant: str | None,
    rows: Iterable[tuple[int, str, Iterable[tuple[int, str, str]] | None]],
) -> ReplaySummary:
    """Replay a batch of (fp, state JSON, outgoing edges) rows; one summary for the batch."""
    mapping = mapping_for(spec, constants, mutant)
    total = ReplaySummary()
    for fp, state_json, outgoing in rows:
        result = replay_state(mapping, fp, state_json, outgoing or ())
        total = _accumulate(total, result)
    total.examples = total.examples[:EXAMPLES_PER_PARTITION]
    return total


def _accumulate(total: ReplaySummary, result: ReplaySummary) -> ReplaySummary:
    # Cheaper than merge(): one state's result folded into a running total.
    total.states += result.states
    total.edges += result.edges
    total.edges_replayed += result.edges_replayed
    total.mismatches += result.mismatches
    total.enabledness_mismatches += result.enabledness_mismatches
    for name, count in result.coverage.items():
        total.coverage[name] = total.coverage.get(name, 0) + count
    if len(total.examples) < EXAMPLES_PER_PARTITION:
        total.examples += result.examples
    return total


def replay_arrow_batches(
    spec: str, constants: Mapping[str, Value], mutant: str | None, batches: Iterator[Any]
) -> Iterator[Any]:
    """Spark mapInArrow body: batches of (fp, state, out=[{dst, dst_state, dst_action}]) -> one summary.

    The whole partition is folded into a single summary row (JSON text), so what travels back to the
    driver is small whatever the graph's size.
    """
    import pyarrow as pa

    def rows() -> Iterator[tuple[int, str, list[tuple[int, str, str]]]]:
        for batch in batches:
            columns = batch.to_pydict()
            for fp, state, out in zip(columns["fp"], columns["state"], columns["out"], strict=True):
                edges = [(e["dst"], e["dst_state"], e["dst_action"]) for e in out] if out else []
                yield fp, state, edges

    summary = replay_states(spec, constants, mutant, rows())
    yield pa.RecordBatch.from_pydict({"summary": [summary.model_dump_json()]})
