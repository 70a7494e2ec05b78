"""Random walks of the implementation through a spec mapping, recorded as traces of spec states.

A walk starts from one of the spec's initial states (concretized; `validate.initial_states` asks TLC
for them, so no initial state is restated in Python), then repeatedly picks one of the actions the
implementation enables, applies it and abstracts the result. The randomness lives here, never in impl/:
each walk has its own random.Random seeded from (seed, walk index), and actions are chosen from a
canonically sorted list, so the same seed gives the same traces.

Walks stay inside the model: `enabled` offers only actions the model's constants allow (the counter
mapping bounds reservations by MaxCounter and Deltas), which is what lets TLC validate them under those
constants. A walk ends early where nothing is enabled.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from tidemark.conformance.mappings import SpecMapping, State, mapping_for
from tidemark.conformance.tlc.values import Value, canonical_json, state_to_itf, value_sort_key
from tidemark.conformance.traces import Trace


def random_walk(mapping: SpecMapping, start: State, steps: int, rng: random.Random) -> list[State]:
    """The spec states the implementation passes through in up to `steps` random steps from `start`."""
    impl = mapping.concretize(start)
    states = [mapping.abstract(impl)]
    for _ in range(steps):
        enabled = sorted(mapping.enabled(impl), key=value_sort_key)
        if not enabled:
            break
        impl = mapping.apply(impl, rng.choice(enabled))
        states.append(mapping.abstract(impl))
    return states


def _ordered(initial: Sequence[State]) -> list[State]:
    return sorted(initial, key=lambda s: canonical_json(state_to_itf(s)))


def walk_trace(
    mapping: SpecMapping, starts: Sequence[State], *, index: int, steps: int, seed: int, config: str | None
) -> Trace:
    """Walk number `index` of the seed: the same walk wherever and in whatever order it is computed."""
    rng = random.Random(f"tidemark-walk:{seed}:{index}")
    states = random_walk(mapping, rng.choice(starts), steps, rng)
    return Trace(id=f"walk-{seed}-{index}", spec=mapping.spec, states=tuple(states), config=config)


def random_walks(
    mapping: SpecMapping,
    initial: Sequence[State],
    *,
    count: int,
    steps: int,
    seed: int,
    config: str | None = None,
) -> list[Trace]:
    """`count` walks of up to `steps` steps, ids walk-<seed>-<i>, each from one of the `initial` states."""
    starts = _ordered(initial)
    return [walk_trace(mapping, starts, index=i, steps=steps, seed=seed, config=config) for i in range(count)]


def _walk_partition(
    spec: str,
    constants: Mapping[str, Value],
    mutant: str | None,
    starts: list[State],
    steps: int,
    seed: int,
    config: str | None,
    indices: Iterator[int],
) -> Iterator[Trace]:
    mapping = mapping_for(spec, constants, mutant)
    for index in indices:
        yield walk_trace(mapping, starts, index=index, steps=steps, seed=seed, config=config)


def random_walks_on_spark(
    spark: Any,
    spec: str,
    constants: Mapping[str, Value],
    mutant: str | None,
    initial: Sequence[State],
    *,
    count: int,
    steps: int,
    seed: int,
    config: str | None = None,
) -> list[Trace]:
    """The same walks as `random_walks`, generated in parallel as a Spark job (in walk order)."""
    slices = max(1, min(count, spark.sparkContext.defaultParallelism * 4))
    job = partial(_walk_partition, spec, dict(constants), mutant, _ordered(initial), steps, seed, config)
    walks: list[Trace] = spark.sparkContext.parallelize(range(count), slices).mapPartitions(job).collect()
    return walks
