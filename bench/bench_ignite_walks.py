"""The random-walk campaign on real Ignite: walks of spec/PME.tla's model (spec/PME-ignite.cfg by default)
run side by side on tidemark's implementation and on a real Ignite cluster, fanned out as Spark tasks (one
harness JVM per task; local[2]: two at a time), every observation compared.

Prints walks/min, the differences Ignite's known behaviours explain (by kind), the walks that stopped after
one of them (diverged), and every unexplained difference, each shrunk to a minimal scenario file
(OUT/shrunk/*.json: `tidemark scenario FILE --system ignite` shows it side by side). Writes every walk's
record to OUT/walks.jsonl. Not a test (minutes to an hour); tests/test_ignite_walks.py runs a seeded handful.

    .venv/bin/python bench/bench_ignite_walks.py [--walks 300] [--steps 30] [--seed 0] [--master local[2]]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios.compare import side_by_side
from tidemark.conformance.spark import spark_session
from tidemark.conformance.systems.ignite import DEFAULT_VERSION, build_harness
from tidemark.conformance.systems.ignite_walks import (
    DEFAULT_MODEL,
    WalkModel,
    as_scenario,
    run_walks_on_spark,
    shrink,
    signatures,
    walk_steps,
    walk_trace,
)
from tidemark.conformance.validate import validate_traces


def shrink_all(
    model: WalkModel, records: list[dict], seed: int, steps: int, budget: int, out: Path, version: str
) -> list[dict]:
    """Each unexplained signature's shortest walk, cut down to a minimal scenario that still shows it."""
    from tidemark.conformance.scenarios.adapters.ignite import shared_harness
    from tidemark.conformance.systems.ignite_differences import explain

    found: dict[str, dict] = {}
    for record in sorted(records, key=lambda r: r["steps"]):
        for sig in record["signatures"]:
            if sig != "harness error":  # no difference to shrink: the walk's record holds the error
                found.setdefault(sig, record)
    shrunk = []
    with shared_harness(version):
        for sig, record in sorted(found.items()):
            taken = walk_steps(model, seed, record["index"], steps)

            def shows(candidate: list, sig: str = sig) -> bool:
                scenario = as_scenario(model, "shrinking", candidate)
                return sig in signatures(side_by_side(scenario, "ignite", explain))

            started = time.monotonic()
            minimal = shrink(model, taken, shows, budget) if shows(taken) else taken
            slug = re.sub(r"[^A-Za-z0-9]+", "-", sig).strip("-")
            scenario = as_scenario(model, f"walk-{seed}-{record['index']}-{slug}", minimal)
            path = out / "shrunk" / f"{slug}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(scenario.model_dump_json(by_alias=True, exclude_defaults=True, indent=1) + "\n")
            shrunk.append(
                {
                    "signature": sig,
                    "walk": record["walk"],
                    "walks": sum(sig in r["signatures"] for r in records),
                    "steps": f"{len(taken)} -> {len(minimal)}",
                    "seconds": round(time.monotonic() - started, 1),
                    "file": str(path),
                }
            )
    return shrunk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--walks", type=int, default=300)
    parser.add_argument("--steps", type=int, default=30, help="steps per walk at most (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", type=Path, default=DEFAULT_MODEL, help="the walks' model (spec/PME.tla)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2]: two JVMs)")
    parser.add_argument("--shrink-budget", type=int, default=30, help="runs per shrunk difference")
    parser.add_argument("--out", type=Path, default=Path("runs/ignite-walks"))
    parser.add_argument("--ignite-version", default=DEFAULT_VERSION)
    args = parser.parse_args()
    try:
        build_harness(args.ignite_version)  # once, before the tasks start theirs
        model = WalkModel.read(args.config)
        started = time.monotonic()
        with spark_session(args.master, "tidemark-ignite-walks") as spark:
            records = run_walks_on_spark(
                spark,
                args.config,
                count=args.walks,
                steps=args.steps,
                seed=args.seed,
                version=args.ignite_version,
                spool=(args.out / "spool").resolve(),
            )
        elapsed = time.monotonic() - started
        impl_started = time.monotonic()
        for r in records:  # the same walks on the implementation alone, for the ratio
            model.initial().run(walk_steps(model, args.seed, r["index"], args.steps))
        impl_elapsed = time.monotonic() - impl_started
        drawn = [(r["walk"], walk_steps(model, args.seed, r["index"], args.steps)) for r in records]
        traces = [walk_trace(model, name, steps) for name, steps in drawn]
        validation = validate_traces(traces, Path("spec/PME.tla"), args.config)
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / "walks.jsonl").open("w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        total_steps = sum(r["steps"] for r in records)
        kinds: Counter[str] = Counter()
        for r in records:
            kinds.update(r["differences"])
        model_name = args.config.name
        print(f"walks: {len(records)} of up to {args.steps} steps ({total_steps} steps), model {model_name}")
        print(
            f"TLC: {validation.accepted}/{validation.traces} walks are behaviors of spec/PME.tla "
            f"({validation.tlc_seconds:.0f} s)"
        )
        print(
            f"time: {elapsed:.0f} s on {args.master}: {len(records) / elapsed * 60:.1f} walks/min, "
            f"{total_steps / elapsed:.1f} steps/s (impl alone: {total_steps / impl_elapsed:.0f} steps/s, "
            f"{impl_elapsed / elapsed * 100:.2f}% of the time)"
        )
        print("differences by kind (observations after a step):")
        for kind, n in kinds.most_common():
            print(f"  {kind:20} {n:7}")
        diverged = Counter(r["diverged"] for r in records if r["diverged"])
        print(f"walks that stopped after a known difference: {sum(diverged.values())} {dict(diverged)}")
        sigs = Counter(s for r in records for s in r["signatures"])
        clean = sum(not r["signatures"] for r in records)
        print(f"walks with nothing unexplained: {clean}; unexplained signatures: {len(sigs)}")
        for sig, n in sigs.most_common():
            print(f"  {sig:40} in {n} walks")
        if sigs and args.shrink_budget > 0:
            shrunk = shrink_all(
                model, records, args.seed, args.steps, args.shrink_budget, args.out, args.ignite_version
            )
            for s in shrunk:
                print(f"  shrunk {s['signature']}: {s['steps']} steps ({s['seconds']} s) -> {s['file']}")
            (args.out / "shrunk.json").write_text(json.dumps(shrunk, indent=1) + "\n")
    except TidemarkError as error:
        print(f"error: {error.describe()}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
