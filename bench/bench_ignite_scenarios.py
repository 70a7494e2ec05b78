"""Scenario steps per second: tidemark's implementation and a real Ignite cluster, on the shipped scenarios.

For each scenario that runs on Ignite: the run on impl (run_scenario, its expectations checked) and the run
on Ignite (one harness JVM for all, a fresh cluster each), both timed from the initial state to the last
step (the cluster's start is timed apart), steps per second each and the ratio. Not a test;
tests/test_ignite_scenarios.py checks the same runs' results.

    .venv/bin/python bench/bench_ignite_scenarios.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios import load_scenario, run_scenario
from tidemark.conformance.scenarios.adapters.ignite import shared_harness
from tidemark.conformance.scenarios.format import ScenarioFile
from tidemark.conformance.scenarios.real import cannot_run
from tidemark.conformance.systems.ignite import DEFAULT_VERSION


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3, help="impl runs per scenario (best kept)")
    parser.add_argument("--ignite-version", default=DEFAULT_VERSION)
    args = parser.parse_args()
    rows = []
    try:
        with shared_harness(args.ignite_version):
            for path in sorted(Path("scenarios").glob("*.json")):
                scenario = load_scenario(path)
                if cannot_run(scenario, "ignite"):
                    continue
                impl = min(_steps_time(scenario, "impl")[0] for _ in range(args.repeat))
                real, start = _steps_time(scenario, "ignite")
                rows.append((scenario.name, len(scenario.steps), impl, real, start))
    except TidemarkError as error:
        print(f"error: {error.describe()}", file=sys.stderr)
        return error.exit_code
    head = ("scenario", "steps", "impl steps/s", "Ignite steps/s", "ratio", "start s")
    print(f"{head[0]:42} {head[1]:>5} {head[2]:>13} {head[3]:>15} {head[4]:>7} {head[5]:>8}")
    for name, steps, impl, real, start in rows:
        speeds = f"{steps / impl:13.0f} {steps / real:15.2f} {real / impl:7.0f}"
        print(f"{name:42} {steps:5} {speeds} {start:8.1f}")
    total = sum(r[1] for r in rows)
    impl_s, real_s = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(f"{'all':42} {total:5} {total / impl_s:13.0f} {total / real_s:15.2f} {real_s / impl_s:7.0f}")
    return 0


def _steps_time(scenario: ScenarioFile, system: str) -> tuple[float, float]:
    """Seconds from the initial state to the last step, and before it (the system's start)."""
    marks: list[float] = []
    started = time.monotonic()
    run_scenario(scenario, system, watch=lambda index, run: marks.append(time.monotonic()))
    return marks[-1] - marks[0], marks[0] - started


if __name__ == "__main__":
    sys.exit(main())
