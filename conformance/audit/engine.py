"""The two engines of the audit and what they hand back: one row per copy.

- Spark (`copies_on_spark`): one task per unit of the snapshot (a Parquet row group, a CSV file); each
  task reads its unit with pyarrow in its Python worker and maps conformance/audit/kernel.py over its
  batches; Spark adds the tasks' per-copy sums up. The rows never pass through the JVM: shipping them
  from Spark's Parquet reader to the Python workers cost more than the whole audit in one process
  (docs/performance.md). Only the per-copy rows reach the driver, so its memory does not grow with the
  input. On a cluster the snapshot's files are shipped to the executors by the session (ship_files), so
  they need not share the driver's file system.
- this process (`copies_here`): the same units and kernel one after the other, the sums folded as they
  come: the benchmark's single-process baseline.

Both give the same table (COPIES): per copy its sums and, per per-copy column, the smallest and largest
value over its rows (they differ when rows of one copy disagree, which `copy_figures` refuses).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

import pyarrow as pa

from tidemark.conformance.audit.kernel import PARTIAL_DDL, PARTIAL_SCHEMA, KernelOptions, partials
from tidemark.conformance.audit.snapshot import CellError, Snapshot, Unit, unit_batches, units
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.spark import ship_files, shipped_paths

KEYS: Final = ("group", "partition", "node")
SUMS: Final = ("rows", "entries", "part_hash", "ver_hash")
SAME: Final = ("state", "primary", "lwm", "gaps", "hwm")  # one value per copy
ERRORS: Final = ("error", "error_column", "error_file", "error_row")
_FOLD_ROWS: Final = 1 << 18  # per-copy partial rows kept before they are folded


@dataclass(frozen=True)
class CopyFigures:
    """A copy's figures from its rows."""

    group: str
    partition: int
    node: str
    state: str
    primary: bool
    lwm: int
    gaps: str
    hwm: int
    rows: int
    entries: int
    part_hash: int
    ver_hash: int


def _aggregations() -> list[tuple[str, str]]:
    return [*((c, "sum") for c in SUMS), *((c, "min") for c in SAME), *((c, "max") for c in SAME)]


def _fold(tables: list[pa.Table]) -> pa.Table:
    """Per-copy partial rows added up (min and max kept apart after the first fold)."""
    table = pa.concat_tables(tables, promote_options="permissive")
    if "state_min" not in table.schema.names:
        table = table.drop_columns(list(ERRORS))
        table = pa.Table.from_arrays(
            [
                *(table.column(c) for c in (*KEYS, *SUMS)),
                *(table.column(c) for c in SAME),
                *(table.column(c) for c in SAME),
            ],
            [*KEYS, *SUMS, *(f"{c}_min" for c in SAME), *(f"{c}_max" for c in SAME)],
        )
    out = table.group_by(list(KEYS), use_threads=False).aggregate(
        [
            *((c, "sum") for c in SUMS),
            *((f"{c}_min", "min") for c in SAME),
            *((f"{c}_max", "max") for c in SAME),
        ]
    )
    names = [
        *(f"{c}_sum" for c in SUMS),
        *(f"{c}_min_min" for c in SAME),
        *(f"{c}_max_max" for c in SAME),
        *KEYS,
    ]
    plain = [*SUMS, *(f"{c}_min" for c in SAME), *(f"{c}_max" for c in SAME), *KEYS]
    return out.rename_columns([plain[names.index(n)] for n in out.schema.names])


def unit_partials(snapshot: Snapshot, options: KernelOptions, unit: Unit) -> Iterator[pa.RecordBatch]:
    """The kernel's partial sums over one unit of the snapshot; after an error row, nothing more."""
    try:
        for batch in unit_batches(snapshot, unit):
            part = partials(batch, options)
            yield part
            if part.num_rows and part.column("error")[0].is_valid:
                return
    except CellError as error:
        row = {
            "error": error.message,
            "error_column": error.column,
            "error_file": unit[0],
            "error_row": error.row,
        }
        yield pa.RecordBatch.from_pylist([row], schema=PARTIAL_SCHEMA)


def copies_here(snapshot: Snapshot, options: KernelOptions) -> pa.Table:
    """COPIES computed in this process; the first bad row raises its TidemarkError."""
    pending: list[pa.Table] = []
    held = 0
    for unit in units(snapshot):
        for part in unit_partials(snapshot, options, unit):
            if part.num_rows and part.column("error")[0].is_valid:
                raise located(snapshot, part.to_pylist()[0])
            pending.append(pa.Table.from_batches([part]))
            held += part.num_rows
            if held > _FOLD_ROWS:
                pending, held = [_fold(pending)], 0
    return _fold(pending) if pending else _empty()


def _empty() -> pa.Table:
    return pa.table(
        {
            "group": pa.array([], pa.string()),
            "partition": pa.array([], pa.int32()),
            "node": pa.array([], pa.string()),
        }
    )


def located(snapshot: Snapshot, error: dict[str, Any]) -> TidemarkError:
    """The kernel's error row as the user's error: the file, the row group or line, the column."""
    source, where = snapshot.where(int(error["error_file"]), int(error["error_row"]))
    return TidemarkError(f"column {error['error_column']}: {error['error']}", source=source, location=where)


def _spark_kernel(snapshot: Snapshot, options: KernelOptions, shipped: tuple[str, ...] | None) -> Any:
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        here = snapshot if shipped is None else replace(snapshot, files=shipped_paths(shipped))
        for batch in batches:
            for unit in zip(
                *(batch.column(c).to_pylist() for c in ("file", "row_group", "first")), strict=True
            ):
                yield from unit_partials(here, options, unit)

    return run


def copies_on_spark(spark: Any, snapshot: Snapshot, options: KernelOptions) -> pa.Table:
    """COPIES computed by a Spark job: one task per unit (a Parquet row group, a CSV file) reads it with
    pyarrow and maps the kernel over it; Spark adds the partial sums up per copy."""
    from pyspark.sql import functions as F

    pieces = units(snapshot)
    # Two tasks per core: enough to even out the load, few enough that a task's fixed cost (a Python
    # worker's round trip, measured at 0.2-0.3 s on a busy machine) stays small beside its work.
    slices = max(1, min(len(pieces), 2 * spark.sparkContext.defaultParallelism))
    tasks = spark.sparkContext.parallelize(pieces, slices)
    sums = spark.createDataFrame(tasks, "file int, row_group int, first bigint").mapInArrow(
        _spark_kernel(snapshot, options, ship_files(spark, snapshot.files)), PARTIAL_DDL
    )
    table = (
        sums.groupBy(*(F.col(f"`{c}`") for c in (*KEYS, *ERRORS)))
        .agg(
            *(F.sum(c).alias(c) for c in SUMS),
            *(F.min(c).alias(f"{c}_min") for c in SAME),
            *(F.max(c).alias(f"{c}_max") for c in SAME),
        )
        .toArrow()
    )
    errors = table.filter(table.column("error").is_valid())
    if errors.num_rows:
        raise located(snapshot, min(errors.to_pylist(), key=lambda e: (e["error_file"], e["error_row"])))
    return table.filter(table.column("error").is_null()).drop_columns(list(ERRORS))


def copy_figures(table: pa.Table, source: str) -> list[CopyFigures]:
    """The copies of COPIES; a copy whose rows disagree on a per-copy column is bad input."""
    figures = []
    for row in table.sort_by([(k, "ascending") for k in KEYS]).to_pylist():
        for column in SAME:
            if row[f"{column}_min"] != row[f"{column}_max"]:
                raise TidemarkError(
                    f"the rows of the copy of group {row['group']!r}, partition {row['partition']} on node"
                    f" {row['node']!r} disagree on {column}: {row[f'{column}_min']!r}"
                    f" and {row[f'{column}_max']!r}",
                    source=source,
                    expected="one state, primary flag and counter per copy",
                )
        figures.append(
            CopyFigures(**{k: row[k] for k in (*KEYS, *SUMS)}, **{c: row[f"{c}_min"] for c in SAME})
        )
    return figures
