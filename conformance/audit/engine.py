"""The two engines of the audit and what they hand back: one row per copy.

- Spark (`copies_on_spark`): the snapshot's Parquet files read by Spark, each row with its file and row
  index (`_metadata`); conformance/audit/kernel.py mapped over Arrow batches by mapInArrow (one Python
  worker per core); the per-batch sums added per copy by Spark's aggregation. Only the per-copy rows
  reach the driver, so its memory does not grow with the input.
- this process (`copies_here`): the same kernel over pyarrow's batches, its sums folded as they come.
  CSV snapshots are read here; it is also the benchmark's single-process baseline.

Both give the same table (COPIES): per copy its sums and, per per-copy column, the smallest and largest
value over its rows (they differ when rows of one copy disagree, which `copy_figures` refuses).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

import pyarrow as pa

from conformance.audit.kernel import PARTIAL_DDL, KernelOptions, partials
from conformance.audit.snapshot import BATCH_ROWS, Snapshot, local_batches
from conformance.errors import TidemarkError

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


def copies_here(snapshot: Snapshot, options: KernelOptions, rows: int = BATCH_ROWS) -> pa.Table:
    """COPIES computed in this process; the first bad row raises its TidemarkError."""
    pending: list[pa.Table] = []
    held = 0
    for batch in local_batches(snapshot, rows):
        part = partials(batch, options)
        if part.num_rows and part.column("error")[0].is_valid:
            raise located(snapshot, part.to_pylist()[0], lambda file_id: int(file_id))
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


def located(snapshot: Snapshot, error: dict[str, Any], file_number: Any) -> TidemarkError:
    """The kernel's error row as the user's error: the file, the row group or line, the column."""
    source, where = snapshot.where(file_number(error["error_file"]), int(error["error_row"]))
    return TidemarkError(f"column {error['error_column']}: {error['error']}", source=source, location=where)


def _spark_kernel(options: KernelOptions) -> Any:
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield partials(batch, options)

    return run


def copies_on_spark(spark: Any, snapshot: Snapshot, options: KernelOptions) -> pa.Table:
    """COPIES computed by a Spark job (see the module docstring)."""
    from pyspark.sql import functions as F

    if snapshot.kind != "parquet":
        raise TidemarkError(
            "CSV snapshots are audited in this process",
            source="--master",
            expected="--local, or a Parquet snapshot",
        )
    conf = spark.conf
    previous = conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS))
    try:
        frame = spark.read.parquet(*(p.resolve().as_uri() for p in snapshot.files)).select(
            *(F.col(f"`{c}`") for c in snapshot.columns),
            F.xxhash64(F.col("_metadata.file_path")).alias("_file"),
            F.col("_metadata.row_index").alias("_row"),
        )
        sums = frame.mapInArrow(_spark_kernel(options), PARTIAL_DDL)
        table = (
            sums.groupBy(*(F.col(f"`{c}`") for c in (*KEYS, *ERRORS)))
            .agg(
                *(F.sum(c).alias(c) for c in SUMS),
                *(F.min(c).alias(f"{c}_min") for c in SAME),
                *(F.max(c).alias(f"{c}_max") for c in SAME),
            )
            .toArrow()
        )
    finally:
        conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
    errors = table.filter(table.column("error").is_valid())
    if errors.num_rows:
        first = min(
            errors.to_pylist(), key=lambda e: (_spark_file(spark, snapshot, e["error_file"]), e["error_row"])
        )
        raise located(snapshot, first, lambda file_id: _spark_file(spark, snapshot, file_id))
    return table.filter(table.column("error").is_null()).drop_columns(list(ERRORS))


def _spark_file(spark: Any, snapshot: Snapshot, file_id: int) -> int:
    """The number of the file whose path Spark hashed to `file_id` (only looked up for an error)."""
    from pyspark.sql import functions as F

    paths = spark.read.parquet(*(p.resolve().as_uri() for p in snapshot.files)).select(
        F.col("_metadata.file_path").alias("path")
    )
    for row in paths.distinct().select("path", F.xxhash64(F.col("path")).alias("id")).collect():
        if row["id"] == file_id:
            return [p.resolve() for p in snapshot.files].index(Path(unquote(urlparse(row["path"]).path)))
    raise AssertionError(f"no file of {snapshot.path} has the id {file_id}")


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
