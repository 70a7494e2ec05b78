"""Conformance cost on a model: TLC alone, TLC with the state-graph dump (the run that produces the
graph), graph loading, and replay without Spark in one process (the baseline) and on one process per
core (what `conform` picks below its Spark threshold) vs Spark local[1] and local[2], and `conform` on
Spark with the session's start overlapped with TLC, all measured in the same run, with the ratio
replay/TLC, the peak memory (resident set high-water mark) of the driver, the Spark JVM and its Python
workers, and the graph size above which Spark pays off (from Spark's fixed cost, measured on the spec's
small test model). Each replay runs in a fresh process (and JVM), so each pays the cold start a
`tidemark conform` run pays.

    python bench/bench_conform.py [--spec spec/UpdateCounter.tla] [--config CFG] [--small CFG] [--skip-spark]
    python bench/bench_conform.py --spec spec/PME.tla                      # the composed protocol
    python bench/bench_conform.py --config spec/UpdateCounter-large.cfg    # about 2.5 million edges

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from tidemark.conformance.conform import (
    conform,
    dump_graph,
    local_processes,
    replay_locally,
    replay_with_spark,
)
from tidemark.conformance.spark import spark_session
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc


def _descendants() -> dict[int, str]:
    """pid -> command name of every process below this one (Linux /proc)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(fields[1])
                names[int(entry.name)] = (entry / "comm").read_text().strip()
            except (OSError, IndexError):
                continue
    found, frontier = {}, [os.getpid()]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found[child] = names[child]
                frontier.append(child)
    return found


def _high_water_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


@contextmanager
def peak_memory(driver: int) -> Iterator[dict[str, float]]:
    """Samples the processes below this one twice a second; yields {kind: peak MB} filled at exit:
    'driver' (process `driver`), 'jvm' (the largest java process) and 'workers' (the sum over the
    other Python processes: Spark's Python workers)."""
    peaks = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            jvm = workers = 0.0
            for pid, name in _descendants().items():
                try:
                    mb = _high_water_mb(pid)
                except OSError:
                    continue
                if pid == driver:
                    peaks["driver"] = max(peaks["driver"], mb)
                elif name == "java":
                    jvm = max(jvm, mb)
                elif name.startswith("python"):
                    workers += mb
            peaks["jvm"] = max(peaks["jvm"], jvm)
            peaks["workers"] = max(peaks["workers"], workers)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peaks
    finally:
        stop.set()
        sampler.join()


def _memory(peaks: dict[str, float]) -> str:
    return ", ".join(f"{kind} {mb:,.0f} MB" for kind, mb in peaks.items() if mb)


class Replay(NamedTuple):
    session: float  # Spark session start (0 for one process)
    seconds: float  # the replay, the first in its process (and JVM)
    warm: float  # the same replay again in the same session (= seconds for one process)
    peaks: dict[str, float]


def replay_in_new_process(mode: str, graph: Path, spec: Path, config: Path) -> Replay:
    """Replay `graph` in a fresh Python process (and, for Spark, a fresh JVM): every measurement pays
    the same cold start `tidemark conform` pays, whatever ran before it."""
    command = [sys.executable, __file__, "--replay", mode, "--graph", str(graph), "--spec", str(spec)]
    child = subprocess.Popen([*command, "--config", str(config)], stdout=subprocess.PIPE, text=True)
    with peak_memory(child.pid) as peaks:
        out, _ = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"replay {mode} failed (exit {child.returncode})")
    figures = json.loads(out.strip().splitlines()[-1])
    return Replay(figures["session"], figures["seconds"], figures["warm"], peaks)


def _replay_here(mode: str, graph: Path, spec: Path, config: Path) -> None:
    """The child's side: replay (on Spark twice: cold, then warm), check that every edge conforms, print
    the times as JSON."""
    constants = read_config(config).constants
    if mode.startswith("local:"):  # without Spark: local:0 as conform picks, local:N on N processes
        started = time.monotonic()
        result = replay_locally(graph, spec.stem, constants, None, int(mode[6:]) or None)
        seconds = time.monotonic() - started
        figures = {"session": 0.0, "seconds": seconds, "warm": seconds}
    elif mode == "conform":  # the whole command on Spark, its start overlapped with TLC
        run = conform(spec, config, local=False, run_dir=graph, options=TlcOptions(workers=1))
        assert run.holds, run
        print(json.dumps({"session": run.tlc_seconds, "seconds": run.replay_seconds, "warm": 0.0}))
        return
    else:
        started = time.monotonic()
        with spark_session(mode) as spark:
            spark.sparkContext.parallelize(range(8), 8).count()  # start the Python workers first
            figures = {"session": time.monotonic() - started}
            for run in ("seconds", "warm"):
                started = time.monotonic()
                result = replay_with_spark(spark, graph, spec.stem, constants, None)
                figures[run] = time.monotonic() - started
    assert result.mismatches == 0 and result.edges_replayed == result.edges, result
    print(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=Path("spec/UpdateCounter.tla"))
    parser.add_argument("--config", type=Path)
    parser.add_argument(
        "--small", type=Path, help="a small model of the same spec, to measure Spark's fixed cost"
    )
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--replay", help=argparse.SUPPRESS)  # the child process of replay_in_new_process
    parser.add_argument("--graph", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    config = args.config or args.spec.with_suffix(".cfg")
    if args.replay:
        _replay_here(args.replay, args.graph, args.spec, config)
        return
    options = TlcOptions(workers=1)

    check = parse_output(run_tlc(args.spec, config, options))
    print(f"model: {args.spec} with {config}", flush=True)
    print(f"  TLC check:            {check.seconds:7.1f} s  ({check.distinct_states:,} distinct states)")
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-") as scratch:
        graph = Path(scratch) / "graph"
        dump = dump_graph(args.spec, config, graph, options, None)
        tlc, summary, load_seconds = dump.tlc, dump.graph, dump.load_seconds
        assert summary is not None, tlc.error
        print(
            f"  TLC check + dot dump: {tlc.seconds:7.1f} s  ({summary.edges:,} edges)  <- produced the graph"
        )
        rate = summary.states / load_seconds
        print(f"  dot -> Parquet:       {load_seconds:7.1f} s  ({rate:,.0f} states/s)", flush=True)

        def ratios(seconds: float) -> str:
            dumped, checked = seconds / tlc.seconds, seconds / check.seconds
            return f"replay/TLC-dump = {dumped:.2f}, replay/TLC-check = {checked:.2f}"

        one = replay_in_new_process("local:1", graph, args.spec, config)
        print(
            f"  replay, one process:  {one.seconds:7.1f} s  ({summary.edges / one.seconds:,.0f} edges/s)"
            f"  {ratios(one.seconds)}   peak: {_memory(one.peaks)}",
            flush=True,
        )
        processes = local_processes(summary.edges)
        local = replay_in_new_process("local:0", graph, args.spec, config) if processes > 1 else one
        print(
            f"  replay, {processes} process(es) (conform without Spark): {local.seconds:7.1f} s"
            f"  {ratios(local.seconds)}   x{one.seconds / local.seconds:.2f} one process"
            f"   peak: {_memory(local.peaks)}",
            flush=True,
        )
        if args.skip_spark:
            return
        spark = {}
        for master in ("local[1]", "local[2]"):
            run = spark[master] = replay_in_new_process(master, graph, args.spec, config)
            print(
                f"  replay, Spark {master}: cold {run.seconds:6.1f} s  {ratios(run.seconds)}"
                f"   (session start {run.session:.1f} s before it)\n"
                f"                          warm {run.warm:6.1f} s  {ratios(run.warm)}"
                f"   ({summary.edges / run.warm:,.0f} edges/s,"
                f" vs without Spark x{local.seconds / run.warm:.2f})"
                f"   peak: {_memory(run.peaks)}",
                flush=True,
            )
        first, two = spark["local[1]"], spark["local[2]"]
        print(
            f"  Spark local[2] over local[1]: cold x{first.seconds / two.seconds:.2f},"
            f" warm x{first.warm / two.warm:.2f}"
        )
        _overlap(args.spec, config, Path(scratch) / "conform", two)
        small = args.small or Path("tests/models") / f"{args.spec.stem}-small.cfg"
        if small.is_file():
            _crossover(
                args.spec, small, Path(scratch) / "small", options, summary.edges, local, spark["local[2]"]
            )


def _overlap(spec: Path, config: Path, run_dir: Path, alone: Replay) -> None:
    """`conform` on Spark local[*] in a fresh process: the session starts and warms while TLC runs, so
    what it costs after TLC is compared with a session started after it (start plus cold replay)."""
    run = replay_in_new_process("conform", run_dir, spec, config)
    print(
        f"  conform on Spark, start hidden behind TLC: TLC {run.session:.1f} s, then {run.seconds:.1f} s"
        f" to the verdict; started after TLC: {alone.session:.1f} s start + {alone.seconds:.1f} s cold"
        f" replay = {alone.session + alone.seconds:.1f} s   peak: {_memory(run.peaks)}",
        flush=True,
    )


def _crossover(
    spec: Path, small: Path, graph: Path, options: TlcOptions, edges: int, local: Replay, spark: Replay
) -> None:
    """Spark's fixed cost (its cold replay time on a small graph, in a new JVM) and the graph size above
    which a new local[2] session beats one process: fixed cost plus the warm rate per edge."""
    dump = dump_graph(spec, small, graph, options, None)
    assert dump.graph is not None, dump.tlc.error
    fixed = replay_in_new_process("local[2]", graph, spec, small).seconds
    print(f"  Spark local[2] on {small} ({dump.graph.edges:,} edges): {fixed:.1f} s cold, its fixed cost")
    per_edge_local, per_edge_spark = local.seconds / edges, spark.warm / edges
    if per_edge_spark >= per_edge_local:
        print("  Spark local[2] does not pay off at any graph size on this machine")
    else:
        print(f"  Spark local[2] pays off above about {fixed / (per_edge_local - per_edge_spark):,.0f} edges")


if __name__ == "__main__":
    main()
