"""Hazelcast's correctness claims over many seeds, and the convergence lab, on real Hazelcast 5.7 members and
tidemark's model with the same inputs (conformance/systems/hazelcast_claims.py).

Claims: `--seeds` runs of each (65 % dropped backups; reordered backups without sync; 1, 3 and 6 members
killed): how often each holds on the members and on the model, and every difference between them.

Lab: anti-entropy rounds to convergence after the last put, versus the drop rate and the anti-entropy
interval (puts per partition and namespace between two rounds, the same load of `--load` puts in all), real
and model on one plot (--plot, default docs/img/hazelcast-convergence.png). Not a test (a few minutes);
tests/test_hazelcast_claims.py runs each claim once.

    .venv/bin/python bench/bench_hazelcast_lab.py [--seeds 10] [--lab-seeds 3] [--load 4] [--plot PNG]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

from tidemark.conformance.systems import hazelcast_claims as claims
from tidemark.conformance.systems.hazelcast import HazelcastHarness

DROPS = (0.2, 0.4, 0.65, 0.9)
INTERVALS = (1, 2, 4)


def run_claims(h: HazelcastHarness, seeds: int) -> None:
    kinds = {
        "dropped 65 %": lambda s: claims.dropped_backups(h, seed=s),
        "reordered, no sync": lambda s: claims.reordered_backups(h, seed=s),
        "1 killed": lambda s: claims.killed_members(h, kills=1, seed=s),
        "3 killed": lambda s: claims.killed_members(h, kills=3, seed=s),
        "6 killed": lambda s: claims.killed_members(h, kills=6, seed=s),
    }
    print(f"{'claim':<20} {'runs':>4} {'real holds':>10} {'model holds':>11} {'differ':>6} {'s/run':>6}")
    for name, play in kinds.items():
        started = time.monotonic()
        runs = [play(s) for s in range(seeds)]
        took = (time.monotonic() - started) / seeds
        real = sum(r.real_holds for r in runs)
        model = sum(r.model_holds for r in runs)
        differ = [d for r in runs for d in r.differences]
        print(f"{name:<20} {seeds:>4} {real:>10} {model:>11} {len(differ):>6} {took:>6.1f}")
        for d in differ[:5]:
            print("   ", d)


def run_lab(
    h: HazelcastHarness, seeds: int, load: int
) -> dict[tuple[float, int], tuple[list[int], list[int]]]:
    """(drop, interval) -> rounds after the last put until convergence, per seed: members, model."""
    out: dict[tuple[float, int], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    print(f"\n{'drop':>5} {'interval':>8} {'real rounds':>18} {'model rounds':>18} {'differ':>6}")
    for drop in DROPS:
        for interval in INTERVALS:
            differ = 0
            for seed in range(seeds):
                run = claims.dropped_backups(
                    h, drop=drop, per_partition=interval, batches=load // interval, rounds=12, seed=seed
                )
                real, model = run.rounds_real, run.rounds_model
                out[drop, interval][0].append(-1 if real is None else real)
                out[drop, interval][1].append(-1 if model is None else model)
                differ += len(run.differences)
            r, m = out[drop, interval]
            print(f"{drop:>5} {interval:>8} {r!s:>18} {m!s:>18} {differ:>6}")
    return out


def plot(lab: dict[tuple[float, int], tuple[list[int], list[int]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, interval in enumerate(INTERVALS):
        color = f"C{i}"
        real = [statistics.mean(lab[d, interval][0]) for d in DROPS]
        model = [statistics.mean(lab[d, interval][1]) for d in DROPS]
        ax.plot(DROPS, real, "o-", color=color, label=f"Hazelcast, {interval} put(s) between rounds")
        ax.plot(DROPS, model, "x--", color=color, label=f"model, {interval} put(s) between rounds")
    ax.set_xlabel("fraction of backups dropped")
    ax.set_ylabel("anti-entropy rounds after the last put")
    ax.set_title("Rounds to convergence: real Hazelcast 5.7 and tidemark's model, same inputs")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"\nplot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--lab-seeds", type=int, default=3)
    parser.add_argument(
        "--load", type=int, default=4, help="puts per partition and namespace (a multiple of 4)"
    )
    parser.add_argument("--plot", type=Path, default=Path("docs/img/hazelcast-convergence.png"))
    args = parser.parse_args()
    with HazelcastHarness() as h:
        if args.seeds:
            run_claims(h, args.seeds)
        if args.lab_seeds:
            plot(run_lab(h, args.lab_seeds, args.load), args.plot)


if __name__ == "__main__":
    main()
