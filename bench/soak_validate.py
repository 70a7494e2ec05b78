"""Soak test of runs side by side: many `tidemark validate` runs, N at a time, on the same traces.

Every run validates the same implementation walks of the standard counter model and must give the
result a run alone gives (exit 0, the same report apart from timings). Before the fix of
docs/concurrency.md, about one run in six failed this way on two cores, with a "parse error" from TLC.

    .venv/bin/python bench/soak_validate.py [--runs 500] [--parallel 8] [--walks 25]

The runs see a private temporary directory ($TMPDIR, and java.io.tmpdir through JAVA_TOOL_OPTIONS for
any JVM not given its own): whatever a run leaves there is counted, undisturbed by other programs that
use the system's temporary directory meanwhile. Prints failures (0 expected), runs/min side by side and
one at a time (the baseline, measured first in the same run), and the temporary entries left (0
expected). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.traces import write_traces
from tidemark.conformance.validate import initial_states
from tidemark.conformance.walks import random_walks

ROOT = Path(__file__).resolve().parent.parent
SPEC = Path("spec/UpdateCounter.tla")
CONFIG = Path("spec/UpdateCounter.cfg")


def _result(stdout: str) -> dict[str, object]:
    """The report without its timings: what must be the same whether the run is alone or not."""
    report: dict[str, object] = json.loads(stdout)
    report.pop("tlc_seconds", None)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=500, help="validate runs side by side (default 500)")
    parser.add_argument("--parallel", type=int, default=8, help="runs at a time (default 8)")
    parser.add_argument("--serial", type=int, default=8, help="runs one at a time first (default 8)")
    parser.add_argument("--walks", type=int, default=25, help="walks in the trace file (default 25)")
    parser.add_argument("--steps", type=int, default=30, help="steps per walk at most (default 30)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="soak-"))
    private = work / "tmp"
    private.mkdir()
    traces = work / "walks.jsonl"
    mapping = mapping_for(SPEC.stem, read_config(CONFIG).constants)
    walks = random_walks(
        mapping, initial_states(SPEC, CONFIG), count=args.walks, steps=args.steps, seed=1, config=str(CONFIG)
    )
    write_traces(traces, walks)
    env = {
        **os.environ,
        "TMPDIR": str(private),
        "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={private}",
        "PYTHONPATH": str(ROOT),
    }
    command = [
        sys.executable,
        "-m",
        "tidemark.conformance.cli.main",
        "validate",
        str(traces),
        "--json",
        "--heap",
        "256m",
    ]

    def run(_: int) -> tuple[int, str, str]:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr

    started = time.monotonic()
    serial = [run(i) for i in range(args.serial)]
    serial_seconds = time.monotonic() - started
    code, stdout, stderr = serial[0]
    if code != 0:
        print(f"a run alone fails (exit {code}): {stderr.strip()}")
        return 1
    expected = _result(stdout)
    accepted = expected["accepted"]
    print(
        f"{args.walks} walks of up to {args.steps} steps on {SPEC} with {CONFIG}: {accepted} accepted alone"
    )

    failures: list[str] = []
    started = time.monotonic()
    with ThreadPoolExecutor(args.parallel) as pool:
        for code, stdout, stderr in [*serial, *pool.map(run, range(args.runs))]:
            if code != 0 or _result(stdout) != expected:
                failures.append(f"exit {code}: {(stderr.strip() or stdout.strip())[-300:]}")
    seconds = time.monotonic() - started
    left = sorted(p.name for p in private.iterdir())

    serial_rate = args.serial / serial_seconds * 60
    rate = args.runs / seconds * 60
    print(f"failures: {len(failures)} of {args.runs + args.serial} runs")
    for failure in failures[:5]:
        print(f"  {failure}")
    print(f"one at a time: {args.serial} runs in {serial_seconds:.1f} s, {serial_rate:.1f} runs/min")
    print(
        f"{args.parallel} at a time: {args.runs} runs in {seconds:.1f} s, {rate:.1f} runs/min"
        f" ({rate / serial_rate:.2f}x one at a time)"
    )
    print(f"temporary entries left: {len(left)}" + (f" ({', '.join(left[:10])})" if left else ""))
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
