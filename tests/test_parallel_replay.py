"""Replay without Spark on several processes: the shares cover the states in order, and the results
table and summary are those of one process."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.conform import (
    AUTO_SPARK_EDGES,
    GraphInputs,
    _spark_expected,
    dump_graph,
    replay_locally,
)
from tidemark.conformance.parallel import shares
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome
from tidemark.conformance.tlc.runner import TlcOptions

SPEC = Path("spec/TxCounters.tla")
SMALL = Path("tests/models/TxCounters-small.cfg")


def _rows(outgoing: list[int]) -> list[tuple[int, str, list[tuple[int, int, str]]]]:
    return [(fp, "{}", [(0, 0, "{}")] * n) for fp, n in enumerate(outgoing)]


@pytest.mark.parametrize(
    ("outgoing", "count", "expected"),
    [
        ([1, 1, 1, 1], 2, [(0, 2), (2, 4)]),
        ([6, 1, 1, 1, 1, 1, 1], 2, [(0, 1), (1, 7)]),  # balanced by edges, not by states
        ([0, 0, 0], 2, [(0, 2), (2, 3)]),  # a state without edges still counts (its enabledness)
        ([3], 4, [(0, 1)]),  # no empty share
        ([], 2, []),
        ([2, 2, 2], 1, [(0, 3)]),
    ],
)
def test_shares_are_contiguous_and_balanced_by_edges(
    outgoing: list[int], count: int, expected: list[tuple[int, int]]
) -> None:
    assert shares(_rows(outgoing), count) == expected


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("parallel-graph")
    dump = dump_graph(SPEC, SMALL, run_dir, TlcOptions(), None)
    assert dump.tlc.outcome == Outcome.OK and dump.graph is not None
    return run_dir


@pytest.mark.tlc
def test_two_processes_write_what_one_process_writes(graph: Path, tmp_path: Path) -> None:
    constants = read_config(SMALL).constants
    copy = tmp_path / "copy"
    shutil.copytree(graph, copy)
    # A mutant, so that there are mismatches (and examples, kept up to a limit in table order) to compare.
    one = replay_locally(graph, "TxCounters", constants, "commit-without-wal", processes=1)
    two = replay_locally(copy, "TxCounters", constants, "commit-without-wal", processes=2)
    assert one.mismatches > 0 and one == two
    parts = sorted(p.name for p in (copy / "results.parquet").iterdir())
    assert parts == ["part-00000.parquet", "part-00001.parquet"]
    single = pq.ParquetDataset(graph / "results.parquet").read()
    assert pq.ParquetDataset(copy / "results.parquet").read().equals(single)


@pytest.mark.tlc
def test_spark_is_warmed_when_asked_for_or_when_the_earlier_graph_was_large(
    graph: Path, tmp_path: Path
) -> None:
    assert _spark_expected(tmp_path, "local[2]", None) and _spark_expected(tmp_path, None, False)
    assert not _spark_expected(tmp_path, None, True) and not _spark_expected(tmp_path, "local[2]", True)
    assert not _spark_expected(tmp_path, None, None)  # no earlier graph
    assert not _spark_expected(graph, None, None)  # an earlier graph below the threshold
    earlier = GraphInputs.model_validate_json((graph / "inputs.json").read_bytes())
    earlier.graph.edges = AUTO_SPARK_EDGES
    (tmp_path / "inputs.json").write_text(earlier.model_dump_json())
    assert _spark_expected(tmp_path, None, None)
