"""tidemark's affinity against Ignite's RendezvousAffinityFunction, over random case sets.

    .venv/bin/python bench/bench_ignite_affinity.py [--cases 1000000] [--seed 1] [--ignite-version 2.18.0]

A case is one partition's owner list or one key's partition. Each case set draws a configuration
(partition count incl. powers of two and not, 1-40 nodes with string or UUID consistent ids, hosts and
racks, backups 0-3 or replicated, a rack backup filter or exclNeighbors) and 200 keys (int, long, string
incl. surrogates, UUID); Ignite's function runs in a JVM of the harness, tidemark's (tidemark.impl.affinity,
vectorized) here. Prints cases/s for both sides and every difference (zero expected).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tidemark.conformance.systems.affinity_check import compare, random_case_set
from tidemark.conformance.systems.ignite import DEFAULT_VERSION, AffinityOracle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keys", type=int, default=200, help="keys per case set")
    parser.add_argument("--ignite-version", default=DEFAULT_VERSION)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    done = sets = 0
    ignite_s = tidemark_s = 0.0
    differences: list[str] = []
    with AffinityOracle(args.ignite_version) as oracle:
        while done < args.cases:
            case = random_case_set(rng, args.keys)
            t0 = time.perf_counter()
            answer = oracle.ask(case.request)
            t1 = time.perf_counter()
            diffs = compare(case, answer)
            tidemark_s += time.perf_counter() - t1
            ignite_s += t1 - t0
            differences += [f"case set {sets} ({case.config}): {d}" for d in diffs[:5]]
            done += case.cases
            sets += 1
    print(f"cases: {done:,} in {sets:,} case sets (seed {args.seed}, Ignite {args.ignite_version})")
    print(
        f"ignite (JVM incl. JSON): {done / ignite_s:,.0f} cases/s; tidemark: {done / tidemark_s:,.0f} cases/s"
    )
    print(f"differences: {len(differences)}")
    for d in differences[:50]:
        print("  " + d)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
