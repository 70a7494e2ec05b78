"""`tidemark simulate`: for models too large to check exhaustively, TLC's random simulation produces
traces (-simulate num=N, -depth D) and each is replayed on the implementation from its initial state.

Unlike edge replay, the implementation state is carried along the trace (never rebuilt from the spec
state), so a divergence that only shows after many steps is found too. At every step the spec's action
must be enabled in the implementation, and the implementation's successor must abstract to the spec's.
Traces are replayed as a Spark job, or in this process.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import ReplayError, SpecMapping, mapping_for
from tidemark.conformance.replay import state_diff
from tidemark.conformance.scratch import scratch_dir
from tidemark.conformance.spark import spark_session
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome, TlcResult, parse_output, tlc_failure
from tidemark.conformance.tlc.parse import TlaValueError, parse_state
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.tlc.values import (
    Value,
    canonical_json,
    canonical_state_json,
    state_from_itf,
    state_to_itf,
    to_itf,
)

_STATE_HEAD = re.compile(r"^STATE_(\d+) ==\s*$", re.M)
_MODULE_END = re.compile(r"^={4,}\s*$", re.M)


class TraceMismatch(BaseModel):
    trace: int
    step: int = Field(description="index of the state the implementation failed to reach (0 = initial)")
    action: Any = Field(default=None, description="the spec's action at that step (ITF)")
    reason: str
    diff: list[str] = Field(default_factory=list)


class SimulationResult(BaseModel):
    spec: str
    config: str
    outcome: Outcome = Field(description="TLC's outcome while simulating")
    traces: int = 0
    steps: int = 0
    steps_replayed: int = 0
    mismatches: int = 0
    coverage: dict[str, int] = Field(default_factory=dict)
    examples: list[TraceMismatch] = Field(default_factory=list)
    tlc_seconds: float = 0.0
    replay_seconds: float = 0.0
    master: str | None = None
    tlc: TlcResult | None = None

    @property
    def holds(self) -> bool:
        return self.outcome == Outcome.OK and self.mismatches == 0 and self.steps_replayed == self.steps


def read_trace_module(path: Path) -> list[str]:
    """The states of a trace TLC wrote with -simulate file=: `STATE_i ==` definitions, as ITF JSON text."""
    text = path.read_text(encoding="utf-8")
    heads = list(_STATE_HEAD.finditer(text))
    if not heads:
        raise TidemarkError(
            "no STATE_i definitions", source=str(path), expected="a TLC simulation trace module"
        )
    states = []
    closing = _MODULE_END.search(text, heads[-1].end())
    ends = [head.start() for head in heads[1:]] + [closing.start() if closing else len(text)]
    for head, end in zip(heads, ends, strict=True):
        body = text[head.end() : end].strip()
        try:
            state = parse_state(body, source=str(path), line_offset=text[: head.end()].count("\n"))
        except TlaValueError as error:
            raise TidemarkError(
                f"STATE_{head.group(1)} does not parse: {error.message}", source=str(path)
            ) from error
        states.append(canonical_json(state_to_itf(state)))
    return states


def replay_trace(
    mapping: SpecMapping, number: int, states: list[str]
) -> tuple[int, dict[str, int], TraceMismatch | None]:
    """Replay one trace from its initial state; (steps replayed, per-action counts, first mismatch)."""
    coverage: dict[str, int] = {}
    impl = mapping.concretize(state_from_itf(json.loads(states[0])))
    if canonical_state_json(mapping.abstract(impl)) != states[0]:
        return (
            0,
            coverage,
            TraceMismatch(trace=number, step=0, reason="the initial state does not round-trip"),
        )
    for step, expected_json in enumerate(states[1:], start=1):
        expected = state_from_itf(json.loads(expected_json))
        action: Value = expected["action"]
        mismatch = partial(TraceMismatch, trace=number, step=step, action=to_itf(action))
        if action not in mapping.enabled(impl):
            return step - 1, coverage, mismatch(reason="the implementation does not enable the spec's action")
        try:
            impl = mapping.apply(impl, action)
        except (ReplayError, ValueError, AssertionError, RuntimeError) as error:
            return step - 1, coverage, mismatch(reason=f"{type(error).__name__}: {error}")
        actual = mapping.abstract(impl)
        if canonical_state_json(actual) != expected_json:
            return step - 1, coverage, mismatch(reason="successor differs", diff=state_diff(expected, actual))
        name = str(action["name"]) if isinstance(action, Mapping) else "?"
        coverage[name] = coverage.get(name, 0) + 1
    return len(states) - 1, coverage, None


def replay_traces(
    spec: str, constants: Mapping[str, Value], mutant: str | None, traces: Iterable[tuple[int, list[str]]]
) -> Iterator[str]:
    """Replay a batch of (number, states) traces; one summary (JSON text) for the batch."""
    mapping = mapping_for(spec, constants, mutant)
    total = SimulationResult(spec=spec, config="", outcome=Outcome.OK)
    for number, states in traces:
        replayed, coverage, mismatch = replay_trace(mapping, number, states)
        total.traces += 1
        total.steps += len(states) - 1
        total.steps_replayed += replayed
        for name, count in coverage.items():
            total.coverage[name] = total.coverage.get(name, 0) + count
        if mismatch is not None:
            total.mismatches += 1
            total.examples.append(mismatch)
    yield total.model_dump_json(
        include={"traces", "steps", "steps_replayed", "mismatches", "coverage", "examples"}
    )


def _merge(result: SimulationResult, part: SimulationResult) -> None:
    result.traces += part.traces
    result.steps += part.steps
    result.steps_replayed += part.steps_replayed
    result.mismatches += part.mismatches
    for name, count in part.coverage.items():
        result.coverage[name] = result.coverage.get(name, 0) + count
    result.examples = sorted([*result.examples, *part.examples], key=lambda m: (m.trace, m.step))[:20]


def simulate(
    spec: Path,
    config: Path | None = None,
    *,
    traces: int = 100,
    depth: int = 50,
    seed: int = 1,
    master: str | None = None,
    local: bool = False,
    mutant: str | None = None,
    options: TlcOptions | None = None,
    on_line: Callable[[str], None] | None = None,
) -> SimulationResult:
    config = config or spec.with_suffix(".cfg")
    constants = read_config(config).constants
    mapping_for(spec.stem, constants, mutant)  # bad spec, constants or mutant: fail before TLC runs
    with scratch_dir("simulate-") as trace_dir:
        settings = {
            "mode": "simulate",
            "traces": traces,
            "depth": depth,
            "seed": seed,
            "trace_dir": trace_dir,
        }
        try:  # validated: 0 traces or depth 0 are refused, not run as TLC's defaults
            sim = TlcOptions.model_validate({**(options or TlcOptions()).model_dump(), **settings})
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            raise TidemarkError(
                f"{first['loc'][0]}: {first['msg']}", source="simulation options", expected="positive counts"
            ) from error
        tlc = parse_output(run_tlc(spec, config, sim, on_line), source=f"TLC simulating {spec}")
        if (failure := tlc_failure(tlc, spec, config)) is not None:
            raise failure
        result = SimulationResult(
            spec=spec.stem, config=str(config), outcome=tlc.outcome, tlc_seconds=tlc.seconds, tlc=tlc
        )
        if tlc.outcome != Outcome.OK:
            return result
        files = sorted(trace_dir.glob("trace_*"), key=lambda p: [int(n) for n in re.findall(r"\d+", p.name)])
        batch = [(number, read_trace_module(path)) for number, path in enumerate(files)]
    started = time.monotonic()
    if local:
        parts = list(replay_traces(spec.stem, constants, mutant, batch))
    else:
        with spark_session(master) as spark:
            result.master = spark.sparkContext.master
            slices = max(spark.sparkContext.defaultParallelism * 4, 8)
            rdd = spark.sparkContext.parallelize(batch, min(slices, max(len(batch), 1)))
            parts = rdd.mapPartitions(partial(replay_traces, spec.stem, dict(constants), mutant)).collect()
    for part in parts:
        _merge(result, _part(part))
    result.replay_seconds = round(time.monotonic() - started, 3)
    return result


def _part(text: str) -> SimulationResult:
    """A batch summary from replay_traces as a SimulationResult (the batch has no spec or outcome)."""
    return SimulationResult.model_validate(
        {**json.loads(text), "spec": "", "config": "", "outcome": Outcome.OK}
    )
