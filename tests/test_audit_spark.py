"""The audit on a real local Spark session: the same per-copy figures as in one process, bad rows named
by file, row group and row from a Spark task, and `tidemark verify`'s audit check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.audit.check import audit_check
from tidemark.conformance.audit.engine import copies_here, copies_on_spark
from tidemark.conformance.audit.generate import GenerateConfig, generate
from tidemark.conformance.audit.kernel import KernelOptions
from tidemark.conformance.audit.snapshot import open_snapshot
from tidemark.conformance.errors import TidemarkError

pytestmark = pytest.mark.spark


def test_spark_gives_the_figures_one_process_gives(spark: Any, tmp_path: Path) -> None:
    config = GenerateConfig(
        groups=2, partitions=32, entries=50_000, divergences=8, seed=5, rows_per_file=40_000
    )
    generate(config, tmp_path)
    snapshot = open_snapshot(tmp_path / "snapshot")
    assert len(snapshot.files) == 4  # several files and row groups: several tasks
    options = KernelOptions(snapshot.key_type)
    here = copies_here(snapshot, options).sort_by([(k, "ascending") for k in ("group", "partition", "node")])
    there = copies_on_spark(spark, snapshot, options)
    there = there.select(here.schema.names).sort_by(
        [(k, "ascending") for k in ("group", "partition", "node")]
    )
    assert there.to_pylist() == here.to_pylist()


def test_a_bad_row_is_named_from_a_spark_task(spark: Any, tmp_path: Path) -> None:
    generate(GenerateConfig(partitions=16, entries=50_000, copies=2), tmp_path)
    snapshot = open_snapshot(tmp_path / "snapshot")
    file = snapshot.files[0]
    table = pq.read_table(file)
    states = table.column("state").to_pylist()
    states[70_000] = "owning"
    pq.write_table(table.set_column(3, "state", [states]), file, row_group_size=1 << 15)
    with pytest.raises(TidemarkError) as raised:
        copies_on_spark(spark, open_snapshot(tmp_path / "snapshot"), KernelOptions("long"))
    assert raised.value.source == str(file)
    assert raised.value.location == "row group 2, row 70000 (from 0)"
    assert "column state: unknown state 'owning'" in raised.value.message


def test_verify_audit_check_holds_on_spark(spark: Any) -> None:
    check = audit_check(spark)
    assert check.holds and check.report.engine == spark.sparkContext.master
    assert all(
        check.found[kind] for kind in ("counter_conflicts", "hash_conflicts", "moving", "lost", "not_idle")
    )
