"""Conformance cost on a model: TLC alone, TLC with the state-graph dump, graph loading, and replay
in this process (the baseline) vs Spark local[1] and local[2], all measured in the same run.

    python bench/bench_conform.py [--spec spec/UpdateCounter.tla] [--config CFG] [--skip-spark]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from conformance.conform import dump_graph, replay_locally, replay_with_spark
from conformance.spark import spark_session
from conformance.tlc.config import read_config
from conformance.tlc.output import parse_output
from conformance.tlc.runner import TlcOptions, run_tlc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=Path("spec/UpdateCounter.tla"))
    parser.add_argument("--config", type=Path)
    parser.add_argument("--skip-spark", action="store_true")
    args = parser.parse_args()
    config = args.config or args.spec.with_suffix(".cfg")
    constants = read_config(config).constants
    options = TlcOptions(workers=1)

    check = parse_output(run_tlc(args.spec, config, options))
    print(f"model: {args.spec} with {config}")
    print(f"  TLC check:            {check.seconds:7.1f} s  ({check.distinct_states:,} distinct states)")
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-") as scratch:
        graph = Path(scratch)
        dump = dump_graph(args.spec, config, graph, options, None)
        tlc, summary, load_seconds = dump.tlc, dump.graph, dump.load_seconds
        assert summary is not None, tlc.error
        print(f"  TLC check + dot dump: {tlc.seconds:7.1f} s  ({summary.edges:,} edges)")
        rate = summary.states / load_seconds
        print(f"  dot -> Parquet:       {load_seconds:7.1f} s  ({rate:,.0f} states/s)")

        started = time.monotonic()
        local = replay_locally(graph, args.spec.stem, constants, None)
        local_seconds = time.monotonic() - started
        assert local.mismatches == 0 and local.edges_replayed == summary.edges
        print(
            f"  replay, one process:  {local_seconds:7.1f} s  ({summary.edges / local_seconds:,.0f} edges/s)"
            f"  replay/TLC-check = {local_seconds / check.seconds:.2f}"
        )
        if args.skip_spark:
            return
        for master in ("local[1]", "local[2]"):
            with spark_session(master) as spark:
                replay_with_spark(spark, graph, args.spec.stem, constants, None)  # warm the workers
                started = time.monotonic()
                result = replay_with_spark(spark, graph, args.spec.stem, constants, None)
                seconds = time.monotonic() - started
            assert result.edges_replayed == summary.edges
            print(
                f"  replay, Spark {master}: {seconds:6.1f} s  ({summary.edges / seconds:,.0f} edges/s)"
                f"  vs one process x{local_seconds / seconds:.2f}"
                f"  replay/TLC-check = {seconds / check.seconds:.2f}"
            )


if __name__ == "__main__":
    main()
