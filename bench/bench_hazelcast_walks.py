"""The random-walk campaign on real Hazelcast 5.7 members and tidemark's model with the same inputs
(conformance/systems/hazelcast_walks.py), compared at every observation; one harness JVM, fresh members per
walk. Prints walks/min, the steps taken, the differences explained by the sync retry of a migrating
partition (docs/real-hazelcast.md) and every unexplained one; writes each walk's record to OUT as it ends
(JSON lines), so a campaign cut short keeps what it did. Not a test (about an hour for 300 walks);
tests/test_hazelcast_claims.py runs a seeded handful.

    .venv/bin/python bench/bench_hazelcast_walks.py [--walks 300] [--length 10] [--seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from tidemark.conformance.systems.hazelcast import HazelcastHarness
from tidemark.conformance.systems.hazelcast_walks import walk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walks", type=int, default=300)
    parser.add_argument("--length", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("reports/hazelcast-walks.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    steps: Counter[str] = Counter()
    explained = retries = deferred = 0
    unexplained: list[str] = []
    started = time.monotonic()
    with HazelcastHarness() as h, args.out.open("w") as out:
        for i in range(args.walks):
            w = walk(h, args.seed + i, args.length)
            out.write(json.dumps(w.record()) + "\n")
            out.flush()
            steps.update(w.steps)
            explained += w.explained
            retries += w.retries
            deferred += w.deferred
            unexplained += [f"walk {w.seed}: {d}" for d in w.unexplained]
    minutes = (time.monotonic() - started) / 60
    rate = args.walks / minutes
    print(f"{args.walks} walks of {args.length} steps in {minutes:.1f} min ({rate:.1f} walks/min)")
    print("steps:", dict(sorted(steps.items())))
    print(f"sync retries on the members: {retries}; differences they explain: {explained}")
    print(f"rounds that waited for a sync being prepared on the owner: {deferred}")
    print(f"unexplained differences: {len(unexplained)}")
    for d in unexplained:
        print("   ", d)


if __name__ == "__main__":
    main()
