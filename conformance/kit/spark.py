"""Driver replay on Spark: each task replays its partition of the state graph through a driver pool of
its own, started in the executor (the driver's command must run there: on a cluster, installed on every
worker at the same path). Edge by edge only: walks from the initial state need the whole graph, so a
driver without `load` replays in this process (conformance/kit/replay.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tidemark.conformance.conform import DriverOptions, GraphTables, replay_partitions
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.kit.driver import Driver, probe
from tidemark.conformance.kit.replay import DriverRun, replay_with_driver
from tidemark.conformance.replay import ReplaySummary, arrow_rows, results_batches
from tidemark.conformance.tlc.values import Value

if TYPE_CHECKING:
    from pyspark import Accumulator


def replay_arrow_with_drivers(
    spec: str,
    constants: Mapping[str, Value],
    options: DriverOptions,
    initial: list[tuple[int, int]],
    restarts: Accumulator[int],
    batches: Iterator[Any],
) -> Iterator[pa.RecordBatch]:
    """Spark mapInArrow body: a partition's (fp, state, out) rows -> results rows, through
    `options.processes` drivers started here."""
    rows = list(arrow_rows(batches))
    if not rows:
        return
    results, run = replay_with_driver(
        rows,
        initial,
        lambda: Driver(options.command, spec, constants, timeout=options.timeout),
        processes=options.processes,
    )
    restarts.add(run.restarts)
    yield from results_batches(results)


def replay_with_spark_drivers(
    spark: Any, graph: Path, spec: str, constants: Mapping[str, Value], options: DriverOptions
) -> tuple[ReplaySummary, DriverRun]:
    """The replay through drivers in Spark's tasks; the results table is written into `graph`."""
    driver = probe(lambda: Driver(options.command, spec, constants, timeout=options.timeout))
    if "load" not in driver.capabilities:
        raise TidemarkError(
            "the driver cannot `load` a state: it replays along walks from the initial state, which need"
            " the whole graph in one process",
            source=" ".join(options.command),
            expected="--local (or no --spark/--master) for a driver without `load`",
        )
    tables = GraphTables(graph)
    initial = [(fp, tables.digests[fp]) for fp in tables.initial]
    restarts = spark.sparkContext.accumulator(0)
    body = partial(replay_arrow_with_drivers, spec, dict(constants), options, initial, restarts)
    summary = replay_partitions(spark, graph, body)
    summary.examples = tables.with_paths(summary.examples)
    assert driver.hello is not None
    run = DriverRun(
        command=driver.command,
        implementation=driver.hello.implementation,
        capabilities=sorted(driver.capabilities),
        mode="load",
        processes=options.processes,
        restarts=restarts.value,
        steps=summary.edges,
    )
    return summary, run
