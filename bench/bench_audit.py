"""`tidemark audit` throughput: records (snapshot rows, one per entry per copy) per second on generated
snapshots of 3 copies x 1024 partitions, in one process (pyarrow + numpy: the single-process baseline)
and on Spark local[1] and local[2], all measured in the same run, with the peak memory (resident high
water mark) of the driver, the Spark JVM and its Python workers. Each measurement runs in a fresh process
(and JVM) and audits twice, cold then warm (on Spark in the same session); rows/s are the warm run's.
Every audit must find exactly the injected divergences.

    python bench/bench_audit.py [--rows 1000000 10000000] [--skip-spark] [--keep DIR]

Prints figures only; nothing is asserted beyond the audit's findings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_conform import peak_memory

from tidemark.conformance.audit.audit import AuditReport, audit_snapshots
from tidemark.conformance.audit.generate import Expected, GenerateConfig, generate
from tidemark.conformance.audit.kernel import KernelOptions
from tidemark.conformance.audit.snapshot import open_snapshot
from tidemark.conformance.spark import spark_session

COPIES, PARTITIONS = 3, 1024


def _findings(report: AuditReport) -> dict[str, list[list[Any]]]:
    def where(flag: str) -> list[list[Any]]:
        return sorted([p.group, p.partition] for p in report.partitions if getattr(p, flag))

    return {
        "counter_conflicts": where("counter_conflict"),
        "hash_conflicts": where("hash_conflict"),
        "moving": where("moving"),
        "lost": where("lost"),
    }


def _child(mode: str, directory: Path) -> None:
    """In a fresh process: audit directory/snapshot (on Spark: cold, then warm), check the findings,
    print the times as JSON."""
    snapshot = open_snapshot(directory / "snapshot")
    options = KernelOptions(snapshot.key_type)
    expected = Expected.model_validate_json((directory / "expected.json").read_text())
    wanted = {
        k: [list(x) for x in v] for k, v in expected.model_dump(exclude={"injections", "not_idle"}).items()
    }
    figures: dict[str, float] = {}
    if mode == "local":
        for run in ("cold", "warm"):
            started = time.monotonic()
            report = audit_snapshots(snapshot, None, options)
            figures[run] = time.monotonic() - started
    else:
        started = time.monotonic()
        with spark_session(mode) as spark:
            spark.sparkContext.parallelize(range(8), 8).count()  # the Python workers started
            figures["session"] = time.monotonic() - started
            for run in ("cold", "warm"):
                started = time.monotonic()
                report = audit_snapshots(snapshot, None, options, spark, mode)
                figures[run] = time.monotonic() - started
    assert _findings(report) == wanted, (_findings(report), wanted)
    print(json.dumps({**figures, "rows": report.rows}))


def _measure(mode: str, directory: Path) -> tuple[dict[str, float], dict[str, float]]:
    command = [sys.executable, __file__, "--child", mode, "--keep", str(directory)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    with peak_memory(child.pid) as peaks:
        out, _ = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"audit {mode} failed (exit {child.returncode})")
    return json.loads(out.strip().splitlines()[-1]), peaks


def _memory(peaks: dict[str, float]) -> str:
    return ", ".join(f"{kind} {mb:,.0f} MB" for kind, mb in peaks.items() if mb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument(
        "--keep", type=Path, help="generate into (or reuse) DIR/ROWS instead of a temporary one"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.keep)
        return
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-") as scratch:
        root = args.keep or Path(scratch)
        for rows in args.rows:
            directory = root / str(rows)
            if not (directory / "expected.json").exists():
                started = time.monotonic()
                config = GenerateConfig(
                    entries=rows // COPIES, copies=COPIES, partitions=PARTITIONS, divergences=8
                )
                generate(config, directory)
                print(f"{rows:,} rows generated in {time.monotonic() - started:.1f} s", flush=True)
            size = sum(f.stat().st_size for f in (directory / "snapshot").iterdir()) / 2**20
            print(f"{rows:,} rows ({size:,.0f} MB of Parquet), {COPIES} copies x {PARTITIONS} partitions:")
            base, peaks = _measure("local", directory)
            print(
                f"  one process (pyarrow): cold {base['cold']:6.1f} s, warm {base['warm']:6.1f} s"
                f"  {rows / base['warm']:>12,.0f} rows/s"
                f"   peak: {_memory(peaks)}",
                flush=True,
            )
            for master in () if args.skip_spark else ("local[1]", "local[2]"):
                run, peaks = _measure(master, directory)
                print(
                    f"  Spark {master}: cold {run['cold']:6.1f} s, warm {run['warm']:6.1f} s"
                    f"  {rows / run['warm']:>12,.0f} rows/s"
                    f"  (x{base['warm'] / run['warm']:.2f} the one process;"
                    f" session start {run['session']:.1f} s)   peak: {_memory(peaks)}",
                    flush=True,
                )
            print(f"  load average now: {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
