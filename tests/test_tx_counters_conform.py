"""Conformance of spec/TxCounters.tla and impl/cluster.py: real TLC dumps, replay on Spark and locally."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.conform import ConformResult, conform, dump_graph, replay_locally
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.mappings.tx_counters import TxReplay
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome, parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.tlc.values import Record, canonical_json, state_from_itf, state_to_itf
from tidemark.impl.cluster import Cluster

SPEC = Path("spec/TxCounters.tla")
SMALL = Path("tests/models/TxCounters-small.cfg")
# Every action of the spec: the cluster's steps (Checkpoint aside, a stuttering step) and Done.
ACTIONS = {
    "TxStart",
    "TxRemap",
    "TxPrepare",
    "TxCommit",
    "TxRollback",
    "Lock",
    "LockRemap",
    "Prepare",
    "Prepared",
    "Commit",
    "Rollback",
    "RolledBack",
    "BackupPrepare",
    "BackupCommit",
    "BackupRollback",
    "Recover",
    "NodeFail",
    "Restart",
    "Exchange",
    "Done",
}

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def spark_result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> ConformResult:
    return conform(SPEC, SMALL, run_dir=tmp_path_factory.mktemp("tx-conform-spark"))


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small model's state graph as Parquet (TLC only, no replay)."""
    run_dir = tmp_path_factory.mktemp("tx-graph")
    dump = dump_graph(SPEC, SMALL, run_dir, TlcOptions(), None)
    assert dump.tlc.outcome == Outcome.OK and dump.graph is not None
    return run_dir


@pytest.mark.spark
def test_every_edge_of_the_small_model_replays_on_spark(spark_result: ConformResult) -> None:
    assert spark_result.holds
    assert spark_result.tlc is not None
    assert spark_result.states == spark_result.tlc.distinct_states
    assert spark_result.tlc.generated_states == spark_result.edges + 1
    assert spark_result.edges_replayed == spark_result.edges > 10_000
    assert (spark_result.mismatches, spark_result.enabledness_mismatches) == (0, 0)
    assert set(spark_result.coverage) == ACTIONS
    assert spark_result.master == "local[2]"


def test_concretize_and_abstract_are_inverse_on_every_state(graph: Path) -> None:
    mapping = mapping_for("TxCounters", read_config(SMALL).constants)
    states = pq.read_table(graph / "states.parquet").to_pydict()
    for text in states["state"]:
        state = state_from_itf(json.loads(text))
        assert canonical_json(state_to_itf(mapping.abstract(mapping.concretize(state)))) == text


def test_the_spec_starts_where_the_cluster_starts(graph: Path) -> None:
    mapping = mapping_for("TxCounters", read_config(SMALL).constants)
    states = pq.read_table(graph / "states.parquet").to_pydict()
    [initial] = [s for s, init in zip(states["state"], states["initial"], strict=True) if init]
    cluster = Cluster.initial(mapping.config)  # type: ignore[attr-defined]
    assert canonical_json(state_to_itf(mapping.abstract(TxReplay(cluster, Record(name="Init"))))) == initial


def test_primary_rolling_back_before_its_backups_is_caught(graph: Path) -> None:
    summary = replay_locally(graph, "TxCounters", read_config(SMALL).constants, "primary-rollback-first")
    assert summary.mismatches > 0 and summary.edges_replayed == summary.edges
    for example in summary.examples:
        assert example.kind == "edge" and example.action["name"] == "Rollback"
        node = example.action["node"]
        # The primary closed the range and logged the rollback while its backups still hold the tx.
        assert any(line.startswith(f"counter.{node}.0.lwm: expected 0") for line in example.diff), example
        assert any(line.startswith(f"txs.{node}.") and '"rollingBack"' in line for line in example.diff)


def test_commit_without_wal_is_caught(graph: Path) -> None:
    summary = replay_locally(graph, "TxCounters", read_config(SMALL).constants, "commit-without-wal")
    assert summary.mismatches > 0
    assert {e.action["name"] for e in summary.examples} <= {"Commit", "BackupCommit", "Recover"}
    assert all(any(line.startswith("wal.") for line in e.diff) for e in summary.examples)


def test_the_spec_with_the_primary_rolling_back_first_violates_unique_counters(tmp_path: Path) -> None:
    """The same bug in the spec: TLC finds a counter handed out again after the primary failed."""
    for name in ("TxCounters.tla", "UpdateCounter.tla", "GapFinalization.tla"):
        shutil.copy(SPEC.parent / name, tmp_path / name)
    spec = tmp_path / "TxCounters.tla"
    text = spec.read_text()
    first = """    /\\ txs' = [txs EXCEPT ![n][t].state = "rollingBack"]
    /\\ action' = Step("Rollback", t, n)
    /\\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, counter, data, wal>>"""
    last = """    /\\ RollbackOn(n, txs[n][t].writes)
    /\\ txs' = [txs EXCEPT ![n][t].state = "rolledBack"]"""
    assert text.count(first) == 1 and text.count(last) == 1
    # Rollback applies update(start, delta) and the rollback record at once; RolledBack only finishes.
    apply_now = "data>>\n    /\\ RollbackOn(n, txs[n][t].writes)"
    text = text.replace(first, first.replace("counter, data, wal>>", apply_now))
    text = text.replace(
        last, last.replace("/\\ RollbackOn(n, txs[n][t].writes)", "/\\ UNCHANGED <<counter, wal>>")
    )
    spec.write_text(text)
    run = run_tlc(spec, SPEC.with_suffix(".cfg").resolve(), TlcOptions(timeout=300))
    result = parse_output(run, source="TLC on the broken spec")
    assert result.outcome == Outcome.INVARIANT_VIOLATED, result
    assert result.violation is not None and result.violation.invariant == "UniqueCounters"
    actions = [step.action for step in result.violation.trace]
    assert actions.index("Rollback") < actions.index("NodeFail") < actions.index("Exchange")


def test_cli_unknown_mutant_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["conform", str(SPEC), "--config", str(SMALL), "--local", "--run-dir", str(tmp_path)]
    assert main([*argv, "--mutant", "nope"]) == 2
    assert "unknown mutant 'nope' for TxCounters" in capsys.readouterr().err
