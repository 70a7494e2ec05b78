"""Conformance cost on a model: TLC alone, TLC with the state-graph dump (the run that produces the
graph), graph loading, and replay in this process (the baseline) vs Spark local[1] and local[2], all
measured in the same run, with the ratio replay/TLC, the peak memory (resident set high-water mark) of
this process, the Spark driver JVM and its Python workers, and the graph size above which Spark pays off
(from Spark's fixed cost, measured on the spec's small test model).

    python bench/bench_conform.py [--spec spec/UpdateCounter.tla] [--config CFG] [--small CFG] [--skip-spark]
    python bench/bench_conform.py --spec spec/PME.tla                      # the composed protocol
    python bench/bench_conform.py --config spec/UpdateCounter-large.cfg    # about 1.15 million edges

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conformance.conform import dump_graph, replay_locally, replay_with_spark
from conformance.spark import spark_session
from conformance.tlc.config import read_config
from conformance.tlc.output import parse_output
from conformance.tlc.runner import TlcOptions, run_tlc
from conformance.tlc.values import Value


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
def peak_memory() -> Iterator[dict[str, float]]:
    """Samples the processes below this one twice a second; yields {kind: peak MB} filled at exit:
    'driver (python)', 'jvm' (the largest java child) and 'workers' (the sum over Python workers)."""
    peaks = {"this process (lifetime)": 0.0, "jvm": 0.0, "workers": 0.0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            jvm = workers = 0.0
            for pid, name in _descendants().items():
                try:
                    mb = _high_water_mb(pid)
                except OSError:
                    continue
                if name == "java":
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
        peaks["this process (lifetime)"] = _high_water_mb(os.getpid())


def _memory(peaks: dict[str, float]) -> str:
    return ", ".join(f"{kind} {mb:,.0f} MB" for kind, mb in peaks.items() if mb)


def _replay_spark(
    master: str, graph: Path, spec: str, constants: dict[str, Value]
) -> tuple[float, float, dict[str, float]]:
    """(session start s, replay s, peak memory) on a new session of `master`."""
    with peak_memory() as peaks:
        started = time.monotonic()
        with spark_session(master) as spark:
            spark.sparkContext.parallelize(range(8), 8).count()  # start the Python workers first
            session = time.monotonic() - started
            started = time.monotonic()
            result = replay_with_spark(spark, graph, spec, constants, None)
            seconds = time.monotonic() - started
    assert result.mismatches == 0 and result.edges_replayed == result.edges
    return session, seconds, peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=Path("spec/UpdateCounter.tla"))
    parser.add_argument("--config", type=Path)
    parser.add_argument(
        "--small", type=Path, help="a small model of the same spec, to measure Spark's fixed cost"
    )
    parser.add_argument("--skip-spark", action="store_true")
    args = parser.parse_args()
    config = args.config or args.spec.with_suffix(".cfg")
    constants = read_config(config).constants
    options = TlcOptions(workers=1)

    check = parse_output(run_tlc(args.spec, config, options))
    print(f"model: {args.spec} with {config}")
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
        print(f"  dot -> Parquet:       {load_seconds:7.1f} s  ({rate:,.0f} states/s)")

        def ratios(seconds: float) -> str:
            dumped, checked = seconds / tlc.seconds, seconds / check.seconds
            return f"replay/TLC-dump = {dumped:.2f}, replay/TLC-check = {checked:.2f}"

        with peak_memory() as peaks:
            started = time.monotonic()
            local = replay_locally(graph, args.spec.stem, constants, None)
            local_seconds = time.monotonic() - started
        assert local.mismatches == 0 and local.edges_replayed == summary.edges
        print(
            f"  replay, one process:  {local_seconds:7.1f} s  ({summary.edges / local_seconds:,.0f} edges/s)"
            f"  {ratios(local_seconds)}   peak: {_memory(peaks)}"
        )
        if args.skip_spark:
            return
        spark_seconds = {}
        for master in ("local[1]", "local[2]"):
            session, seconds, peaks = _replay_spark(master, graph, args.spec.stem, constants)
            spark_seconds[master] = seconds
            print(
                f"  replay, Spark {master}: {seconds:6.1f} s  ({summary.edges / seconds:,.0f} edges/s)"
                f"  vs one process x{local_seconds / seconds:.2f}  {ratios(seconds)}"
                f"   (session start {session:.1f} s)   peak: {_memory(peaks)}"
            )
        print(f"  Spark local[2] over local[1]: x{spark_seconds['local[1]'] / spark_seconds['local[2]']:.2f}")
        small = args.small or Path("tests/models") / f"{args.spec.stem}-small.cfg"
        if small.is_file():
            _crossover(
                args.spec,
                small,
                Path(scratch) / "small",
                options,
                summary.edges,
                local_seconds,
                spark_seconds["local[2]"],
            )


def _crossover(
    spec: Path,
    small: Path,
    graph: Path,
    options: TlcOptions,
    edges: int,
    local_seconds: float,
    spark_seconds: float,
) -> None:
    """Spark's fixed cost (its replay time on a small graph) and the graph size above which local[2]
    beats one process, assuming both grow linearly in edges from there."""
    dump = dump_graph(spec, small, graph, options, None)
    assert dump.graph is not None, dump.tlc.error
    _, fixed, _ = _replay_spark("local[2]", graph, spec.stem, read_config(small).constants)
    print(f"  Spark local[2] on {small} ({dump.graph.edges:,} edges): {fixed:.1f} s, its fixed cost")
    per_edge_local, per_edge_spark = local_seconds / edges, max(spark_seconds - fixed, 0.0) / edges
    if per_edge_spark >= per_edge_local:
        print("  Spark local[2] does not pay off at any graph size on this machine")
    else:
        print(f"  Spark local[2] pays off above about {fixed / (per_edge_local - per_edge_spark):,.0f} edges")


if __name__ == "__main__":
    main()
