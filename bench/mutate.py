"""Mutation campaign: the share of single-point faults in impl/ modules that conformance catches.

    python bench/mutate.py                                        # impl/counter.py, every mutant
    python bench/mutate.py --module impl/cluster.py --module impl/pme.py
    python bench/mutate.py --sample 20 --seed 3 --no-tests --jobs 2 --json runs/mutate/counter.json
    python bench/mutate.py --rescore runs/mutate/counter.json     # a saved run, survivors classified anew
    python bench/mutate.py --again runs/mutate/pme.json --json runs/mutate/pme-again.json

For each module TLC dumps its standard models' state graphs once; the unmutated module replays them
first (recording which of its lines run), then each mutant replays them in a fresh interpreter until the
first mismatch (conformance/mutation/campaign.py). A mutant whose code the replay never runs survives without
being run ("unreached"). Prints the score per module and every survivor, with the unit test that exposes
it and the explanation in conformance/mutation/survivors.py; killed mutants print nothing.

--again measures a saved run's survivors once more on the module's models now (after a model was added),
keeping its kills: far cheaper than measuring every mutant again (conformance/mutation/campaign.py,
`measure_again`).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from pydantic import TypeAdapter, ValidationError

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mutation.campaign import (
    TARGETS,
    Children,
    ModuleScore,
    MutantResult,
    measure_again,
    run_module,
)
from tidemark.conformance.mutation.points import mutants
from tidemark.conformance.mutation.survivors import SURVIVORS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--module", action="append", choices=sorted(TARGETS), help="default: impl/counter.py")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    parser.add_argument("--sample", type=int, help="a seeded sample of this many mutants per module")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--key", action="append", default=[], help="also measure the mutant with this key (repeatable)"
    )
    parser.add_argument(
        "--no-tests", action="store_true", help="do not look for a unit test exposing survivors"
    )
    parser.add_argument("--work", type=Path, default=Path("runs/mutate"), help="where the state graphs go")
    parser.add_argument("--json", type=Path, help="write every result to this file")
    parser.add_argument(
        "--rescore",
        type=Path,
        help="print a saved run (--json) with its survivors classified by the registry now",
    )
    parser.add_argument(
        "--again",
        type=Path,
        help="measure a saved run's survivors (--json) again on the models now, keeping its kills",
    )
    args = parser.parse_args(argv)
    if args.rescore is not None:
        return _rescore(args.rescore)
    saved = _saved(args.again) if args.again is not None else []
    if saved is None:
        return 2
    children = Children()

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    scores = []
    try:
        for earlier in saved:
            started = time.monotonic()
            score = measure_again(
                earlier,
                TARGETS[earlier.path],
                args.work,
                children,
                jobs=args.jobs,
                tests=not args.no_tests,
                on_result=_progress,
            )
            scores.append(score)
            _print(score, time.monotonic() - started)
        for module in args.module or ([] if saved else ["impl/counter.py"]):
            started = time.monotonic()
            target = TARGETS[module]
            chosen = mutants(target.path)
            if args.sample is not None or args.key:
                picked = random.Random(args.seed).sample(chosen, min(args.sample or 0, len(chosen)))
                keyed = [m for m in chosen if m.key in args.key and m not in picked]
                chosen = sorted(picked + keyed, key=lambda m: m.index)
            score = run_module(
                target,
                args.work,
                children,
                chosen=chosen,
                jobs=args.jobs,
                tests=not args.no_tests,
                on_result=_progress,
            )
            scores.append(score)
            _print(score, time.monotonic() - started)
    except TidemarkError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        children.stop()
        return 130
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        partial = args.json.with_name(args.json.name + ".partial")
        partial.write_text(json.dumps([s.model_dump(mode="json") for s in scores], indent=1) + "\n")
        partial.replace(args.json)
    return 0


def _saved(path: Path) -> list[ModuleScore] | None:
    """A run written by --json, None (the error printed) if it is not one."""
    try:
        scores = TypeAdapter(list[ModuleScore]).validate_json(path.read_bytes())
    except (OSError, ValidationError) as error:
        print(f"error: {path}: expected a run written by --json: {error}", file=sys.stderr)
        return None
    unknown = [s.path for s in scores if s.path not in TARGETS]
    if unknown:
        print(f"error: {path}: modules {unknown}: expected some of {sorted(TARGETS)}", file=sys.stderr)
        return None
    return scores


def _rescore(path: Path) -> int:
    scores = _saved(path)
    if scores is None:
        return 2
    for score in scores:
        score.classify()
        _print(score, None)
    return 0


def _progress(result: MutantResult) -> None:
    """One line per mutant as it ends, so that an interrupted campaign still shows what it measured."""
    where = f" by {result.model}" if result.model else ""
    print(
        f"{result.status}{where} in {result.seconds:.0f} s: L{result.line} {result.key}",
        file=sys.stderr,
        flush=True,
    )


def _print(score: ModuleScore, seconds: float | None) -> None:
    killed = score.count(lambda r: r.killed)
    print(
        f"\n{score.path}: conformance kills {killed}/{score.protocol} of the mutants that change the "
        f"protocol's behaviour ({100 * score.protocol_score:.1f} %), {killed}/{score.killable} of all "
        f"non-equivalent ones ({100 * score.score:.1f} %)"
    )
    statuses = ("killed", "timeout", "survived", "unreached", "stillborn")
    counts = ", ".join(f"{score.count(lambda r, s=s: r.status == s)} {s}" for s in statuses)
    listed = ", ".join(
        f"{score.count(lambda r, c=c: r.category == c)} {c}" for c in ("equivalent", "outside", "unreached")
    )
    print(f"  {len(score.results)} mutants: {counts}; survivors listed as {listed}")
    print(
        f"  models {', '.join(score.models)}; control replay {score.control_seconds:.0f} s"
        + (f", campaign {seconds:.0f} s" if seconds is not None else "")
    )
    if score.measured_again is not None:
        print(f"  {score.measured_again} survivors of an earlier run measured again; its other results kept")
    kinds: dict[str, list[int]] = {}
    for r in score.results:
        of_kind = kinds.setdefault(r.kind, [0, 0])
        of_kind[0] += r.killed
        of_kind[1] += r.status != "stillborn" and r.category not in ("equivalent", "outside")
    by_kind = ", ".join(f"{kind} {a}/{b}" for kind, (a, b) in sorted(kinds.items()))
    print(f"  killed, by kind, of the protocol's mutants: {by_kind}")
    for r in score.results:
        if not r.survived:
            continue
        print(f"  {r.status} L{r.line}: {r.key}")
        if r.explanation:
            print(f"      [{r.category}] {r.explanation}")
        if score.tests_run:
            print(f"      exposed by {r.test}" if r.test else "      no unit test exposes it")
        if not r.explanation:
            print("      UNEXPLAINED")
    registry = SURVIVORS.get(score.path, {})
    for r in score.results:
        if r.key in registry and not r.survived:
            print(f"  listed as a survivor but killed: {r.key}")


if __name__ == "__main__":
    sys.exit(main())
