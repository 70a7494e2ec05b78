"""Mutation campaign: the share of single-point faults in impl/ modules that conformance catches.

    python bench/mutate.py                               # impl/counter.py, every mutant
    python bench/mutate.py --module impl/cluster.py --module impl/pme.py
    python bench/mutate.py --sample 20 --seed 3 --no-tests --jobs 2

For each module: TLC dumps its standard models' state graphs once; each mutant then replays them in a
fresh interpreter until the first mismatch (conformance/mutation.py). Prints the score per module and
every survivor with the unit test that exposes it or the argument that it is equivalent
(conformance/mutation_survivors.py); killed mutants print nothing. --json writes every result.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from conformance.errors import TidemarkError
from conformance.mutation import TARGETS, MutantResult, run_module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", choices=sorted(TARGETS), help="default: impl/counter.py")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    parser.add_argument("--sample", type=int, help="a seeded sample of this many mutants per module")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-tests", action="store_true", help="do not look for a unit test exposing survivors")
    parser.add_argument("--work", type=Path, default=Path("runs/mutate"), help="where the state graphs go")
    parser.add_argument("--json", type=Path, help="write every result to this file")
    args = parser.parse_args(argv)
    scores = []
    try:
        for module in args.module or ["impl/counter.py"]:
            started = time.monotonic()

            def progress(result: MutantResult) -> None:
                if result.status == "survived":
                    print(f"  survived: {result.key}", file=sys.stderr, flush=True)

            score = run_module(
                TARGETS[module],
                args.work,
                jobs=args.jobs,
                sample=args.sample,
                seed=args.seed,
                tests=not args.no_tests,
                on_result=progress,
            )
            scores.append(score)
            _print(score, time.monotonic() - started)
    except TidemarkError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    if args.json:
        args.json.write_text(json.dumps([s.model_dump(mode="json") for s in scores], indent=1))
    return 0


def _print(score, seconds: float) -> None:  # type: ignore[no-untyped-def]
    killable = score.mutants - score.stillborn - score.equivalent
    print(f"\n{score.path}: {score.killed}/{killable} non-equivalent mutants killed by conformance "
          f"({100 * score.score:.1f} %) on {', '.join(score.models)}")
    print(f"  {score.mutants} mutants, {score.stillborn} stillborn, {score.survived} survived "
          f"({score.equivalent} equivalent); control replay {score.control_seconds:.1f} s, campaign {seconds:.0f} s")
    kinds: dict[str, list[int]] = {}
    for r in score.results:
        counts = kinds.setdefault(r.kind, [0, 0])
        counts[0] += r.status in ("killed", "timeout")
        counts[1] += r.status != "stillborn" and not r.equivalent
    print("  by kind: " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in sorted(kinds.items())))
    for r in score.results:
        if r.status == "survived":
            why = r.explanation or (f"exposed by {r.test}" if r.test else "UNEXPLAINED: no unit test exposes it")
            tag = "equivalent" if r.equivalent else "survivor"
            print(f"  {tag} L{r.line} {r.key}\n      {why}" + (f" (exposed by {r.test})" if r.test and r.explanation else ""))


if __name__ == "__main__":
    sys.exit(main())
