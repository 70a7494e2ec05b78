"""parse_state speed on small TLC-style states, against json.loads on the same states as ITF (figures only).

Run: .venv/bin/python bench/bench_values.py [--states N] [--repeats R]

Everything runs in this one process (one core) on the same states, timed in CPU seconds of the process
so that other work on the machine does not count, and each result is dropped once built (a last line
shows the cost of keeping them all, which is mostly the cyclic GC re-scanning them). The baselines are
the C-coded `json` module reading the equivalent ITF text: alone it builds plain dicts and lists, a
bound no Python parser reaches; followed by `state_from_itf` it builds the same values as
`parse_state` (checked first).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from tidemark.conformance.tlc.parse import parse_state
from tidemark.conformance.tlc.values import canonical_json, state_from_itf, state_to_itf


def _pairs(rng: random.Random, most: int) -> str:
    return ", ".join(f"<<{rng.randint(0, 20)}, {rng.randint(1, 3)}>>" for _ in range(rng.randint(0, most)))


def _numbers(rng: random.Random) -> str:
    return ", ".join(map(str, sorted(rng.sample(range(1, 30), rng.randint(0, 4)))))


def _state_text(rng: random.Random) -> str:
    """A state shaped like a 2PC counter step: an action record and three per-copy functions."""
    name = rng.choice(["Commit", "Prepare", "Rollback", "Apply"])
    action = f'[name |-> "{name}", copy |-> "{rng.choice("bp")}", start |-> {rng.randint(0, 99)}, '
    action += f"delta |-> {rng.randint(1, 5)}]"
    lwm_b, lwm_p = rng.randint(0, 9), rng.randint(0, 9)
    first = rng.choice(["TRUE", "FALSE"])
    copy_b = f"[lwm |-> {lwm_b}, hwm |-> {lwm_b + rng.randint(0, 5)}, items |-> <<{_pairs(rng, 3)}>>, "
    copy_b += f"first |-> {first}]"
    copy_p = f"[lwm |-> {lwm_p}, hwm |-> {lwm_p + rng.randint(0, 5)}, items |-> <<>>, first |-> FALSE]"
    return "\n".join(
        [
            f"/\\ action = {action}",
            f'/\\ counter = ("b" :> {copy_b} @@ "p" :> {copy_p})',
            f'/\\ pending = ("b" :> {{{_pairs(rng, 2)}}} @@ "p" :> {{}})',
            f'/\\ done = ("b" :> {{{_numbers(rng)}}} @@ "p" :> {{{_numbers(rng)}}})',
        ]
    )


def _best_times(repeats: int, runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Fewest CPU seconds of each run; the runs take turns so that a busy spell on the machine hits all."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for label, run in runs.items():
            start = time.process_time()
            run()
            best[label] = min(best[label], time.process_time() - start)
    return best


def _each(parse: Callable[[str], object], texts: list[str]) -> Callable[[], object]:
    def run() -> None:
        for text in texts:
            parse(text)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    texts = [_state_text(rng) for _ in range(args.states)]
    itf_texts = [canonical_json(state_to_itf(parse_state(text))) for text in texts]
    # The figures compare like with like only if both sides produce the same states.
    pairs = zip(texts, itf_texts, strict=True)
    mismatches = sum(parse_state(text) != state_from_itf(json.loads(itf)) for text, itf in pairs)
    if mismatches:
        raise SystemExit(f"{mismatches} states differ between parse_state and json.loads + state_from_itf")

    ours = "parse_state (TLC text -> values)"
    times = _best_times(
        args.repeats,
        {
            ours: _each(parse_state, texts),
            "baseline: json.loads (ITF text -> dicts/lists only)": _each(json.loads, itf_texts),
            "baseline: json.loads + state_from_itf (-> same values)": _each(
                lambda itf: state_from_itf(json.loads(itf)), itf_texts
            ),
            "parse_state, keeping all results alive (GC included)": lambda: [parse_state(t) for t in texts],
        },
    )

    n = len(texts)
    chars = sum(map(len, texts)) / n
    print(f"{n} states of {chars:.0f} characters on average; best of {args.repeats} runs; CPU time, one core")
    for label, seconds in times.items():
        ratio = (
            f"   parse_state is {seconds / times[ours]:.2f}x as fast" if label.startswith("baseline") else ""
        )
        print(f"  {label:<56} {n / seconds:9,.0f} states/s {seconds / n * 1e6:7.1f} us/state{ratio}")


if __name__ == "__main__":
    main()
