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
from collections.abc import Sequence

from conformance.mappings import SpecMapping, State
from conformance.tlc.values import canonical_json, state_to_itf, value_sort_key
from conformance.traces import Trace


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
    starts = sorted(initial, key=lambda s: canonical_json(state_to_itf(s)))
    traces = []
    for index in range(count):
        rng = random.Random(f"tidemark-walk:{seed}:{index}")
        states = random_walk(mapping, rng.choice(starts), steps, rng)
        traces.append(
            Trace(id=f"walk-{seed}-{index}", spec=mapping.spec, states=tuple(states), config=config)
        )
    return traces
