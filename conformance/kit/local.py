"""Driver replay on this machine: edge by edge, the graph's states split into contiguous shares, each
replayed in a forked process through drivers of its own (as a Spark task replays its partition,
kit/spark.py). tidemark's side of a driver replay - parsing each answer, printing its state canonically -
is Python and runs on one core per process: in a single process the drivers would wait for it. Walks
(`--walk`, or a driver without `load`) need the whole graph and run in this process."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tidemark.conformance.conform import DriverOptions, GraphTables, write_results
from tidemark.conformance.kit.driver import Driver, probe
from tidemark.conformance.kit.replay import DriverRun, replay_with_driver
from tidemark.conformance.parallel import PARALLEL_EDGES, cores, in_shares
from tidemark.conformance.replay import ReplaySummary
from tidemark.conformance.tlc.values import Value


def replay_with_drivers(
    graph: Path, spec: str, constants: Mapping[str, Value], options: DriverOptions
) -> tuple[ReplaySummary, DriverRun]:
    """The replay of the run directory's graph through `options.processes` drivers; the results table is
    written into `graph`. Above PARALLEL_EDGES edges, one forked process per core, the drivers divided
    among them."""
    tables = GraphTables(graph)
    rows = list(tables.rows())
    initial = [(fp, tables.digests[fp]) for fp in tables.initial]

    def make() -> Driver:
        return Driver(options.command, spec, constants, timeout=options.timeout)

    count = min(options.processes, cores())
    edges = sum(len(out) for _, _, out in rows)
    if options.walk or count < 2 or edges < PARALLEL_EDGES or "load" not in probe(make).capabilities:
        results, run = replay_with_driver(rows, initial, make, processes=options.processes, walk=options.walk)
        return write_results(graph, tables, results), run
    per_share = -(-options.processes // count)
    parts = in_shares(
        rows,
        count,
        lambda _, start, stop: replay_with_driver(rows[start:stop], initial, make, processes=per_share),
    )
    runs = [run for _, run in parts]
    run = runs[0].model_copy(
        update={
            "processes": per_share * len(parts),
            "restarts": sum(r.restarts for r in runs),
            "steps": sum(r.steps for r in runs),
        }
    )
    return write_results(graph, tables, (r for results, _ in parts for r in results)), run
