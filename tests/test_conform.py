"""Conformance of spec/UpdateCounter.tla and impl/counter.py: real TLC dumps, replay locally and on Spark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.conform import ConformResult, conform, replay_engine
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.replay import explain, replay_state
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import (
    Record,
    canonical_json,
    from_itf,
    state_digest,
    state_from_itf,
    state_to_itf,
)

SPEC = Path("spec/UpdateCounter.tla")
SMALL = Path("tests/models/UpdateCounter-small.cfg")
ACTIONS = {"Reserve", "Commit", "Rollback", "Drop", "Replay", "Restart", "Exchange", "JoinExchange"}

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def spark_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[ConformResult, Path]:
    run_dir = tmp_path_factory.mktemp("conform-spark")
    return conform(SPEC, SMALL, run_dir=run_dir), run_dir


@pytest.fixture(scope="module")
def spark_result(spark_run: tuple[ConformResult, Path]) -> ConformResult:
    return spark_run[0]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[ConformResult, Path]:
    run_dir = tmp_path_factory.mktemp("conform-local")
    return conform(SPEC, SMALL, local=True, run_dir=run_dir), run_dir


@pytest.mark.spark
def test_every_edge_of_the_small_model_replays_on_spark(spark_result: ConformResult) -> None:
    assert spark_result.holds
    assert spark_result.tlc is not None
    assert spark_result.states == spark_result.tlc.distinct_states
    # TLC counts the initial state among the states it generated; every other one is an edge.
    assert spark_result.tlc.generated_states == spark_result.edges + 1
    assert spark_result.edges_replayed == spark_result.edges > 3_000  # 3,499 in docs/figures.json
    assert (spark_result.mismatches, spark_result.enabledness_mismatches) == (0, 0)
    assert set(spark_result.coverage) == ACTIONS
    assert spark_result.master == "local[2]"


@pytest.mark.spark
def test_spark_and_local_replay_agree(
    spark_result: ConformResult, local_run: tuple[ConformResult, Path]
) -> None:
    local, _ = local_run
    assert local.master is None
    assert (local.states, local.edges, local.coverage) == (
        spark_result.states,
        spark_result.edges,
        spark_result.coverage,
    )


def _results(run_dir: Path) -> dict[int, dict[str, Any]]:
    rows = pq.ParquetDataset(run_dir / "results.parquet").read().to_pylist()
    return {row["fp"]: {**row, "coverage": dict(row["coverage"])} for row in rows}


@pytest.mark.spark
def test_spark_and_local_write_the_same_results_per_state(
    spark_run: tuple[ConformResult, Path], local_run: tuple[ConformResult, Path]
) -> None:
    on_spark, local = _results(spark_run[1]), _results(local_run[1])
    assert on_spark == local
    assert len(local) == local_run[0].states


def test_run_directory_holds_graph_and_summary(local_run: tuple[ConformResult, Path]) -> None:
    result, run_dir = local_run
    assert pq.read_metadata(run_dir / "states.parquet").num_rows == result.states
    assert pq.read_metadata(run_dir / "edges.parquet").num_rows == result.edges
    assert pq.read_metadata(run_dir / "mismatches.parquet").num_rows == 0
    # One results row per state: its edges all replayed, and the impl enabling exactly the spec's actions.
    results = _results(run_dir)
    edges = pq.read_table(run_dir / "edges.parquet").to_pydict()
    out_degree = {fp: 0 for fp in pq.read_table(run_dir / "states.parquet").to_pydict()["fp"]}
    for src in edges["src"]:
        out_degree[src] += 1
    assert {fp: row["edges"] for fp, row in results.items()} == out_degree
    assert all(
        row["edges_replayed"] == row["edges"] and row["edge_mismatches"] == 0 for row in results.values()
    )
    assert all(row["spec_actions"] == row["impl_enabled"] and not row["missing"] for row in results.values())
    assert any(row["spec_actions"] > 1 for row in results.values())
    coverage: dict[str, int] = {}
    for row in results.values():
        for name, count in row["coverage"].items():
            coverage[name] = coverage.get(name, 0) + count
    assert coverage == result.coverage
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["edges_replayed"] == result.edges
    assert not list(run_dir.glob("*.partial")) and not (run_dir / "graph.dot").exists()


def test_rerun_on_unchanged_inputs_reuses_the_graph(
    local_run: tuple[ConformResult, Path], tmp_path: Path
) -> None:
    first, shared = local_run
    run_dir = tmp_path / "run"
    shutil.copytree(shared, run_dir)  # other tests read the shared run directory
    again = conform(SPEC, SMALL, local=True, run_dir=run_dir)
    assert again.graph_reused and not first.graph_reused
    assert (again.states, again.edges, again.coverage, again.mismatches) == (
        first.states,
        first.edges,
        first.coverage,
        first.mismatches,
    )
    # A changed model is new input: the graph is rebuilt.
    changed = tmp_path / "UpdateCounter-changed.cfg"
    changed.write_text(SMALL.read_text().replace("MaxCounter = 2", "MaxCounter = 1"))
    other = conform(SPEC, changed, local=True, run_dir=run_dir)
    assert not other.graph_reused and other.states < first.states


def test_counter_without_out_of_order_tracking_is_caught(tmp_path: Path) -> None:
    result = conform(SPEC, SMALL, local=True, mutant="no-out-of-order-tracking", run_dir=tmp_path)
    assert not result.holds
    assert result.mismatches > 0
    edge = next(e for e in result.examples if e.kind == "edge")
    # The mutant moves LWM over holes: the diff names the counter's lwm (or items) of some copy.
    assert any(line.startswith("counter.") for line in edge.diff), edge
    # Every mismatch is in the results table, at its state, not only the examples the summary keeps.
    results = _results(tmp_path)
    assert sum(row["edge_mismatches"] for row in results.values()) == result.mismatches
    assert results[edge.src]["edge_mismatches"] >= 1
    assert any(m["dst"] == edge.dst for m in json.loads(results[edge.src]["examples"]))


def _graph(run_dir: Path) -> tuple[dict[int, str], dict[int, str], dict[int, list[int]]]:
    states = pq.read_table(run_dir / "states.parquet").to_pydict()
    edges = pq.read_table(run_dir / "edges.parquet").to_pydict()
    outgoing: dict[int, list[int]] = {}
    for src, dst in zip(edges["src"], edges["dst"], strict=True):
        outgoing.setdefault(src, []).append(dst)
    return (
        dict(zip(states["fp"], states["state"], strict=True)),
        dict(zip(states["fp"], states["action"], strict=True)),
        outgoing,
    )


def test_tampered_successor_is_reported_with_a_diff(local_run: tuple[ConformResult, Path]) -> None:
    _, run_dir = local_run
    states, actions, outgoing = _graph(run_dir)
    mapping = mapping_for("UpdateCounter", read_config(SMALL).constants)
    src = next(
        fp
        for fp, dsts in outgoing.items()
        if any(from_itf(json.loads(actions[d]))["name"] == "Commit" for d in dsts)
    )
    dst = next(d for d in outgoing[src] if from_itf(json.loads(actions[d]))["name"] == "Commit")
    tampered = state_from_itf(json.loads(states[dst]))
    counter = tampered["counter"]
    assert isinstance(counter, Record)
    copy = str(from_itf(json.loads(actions[dst]))["copy"])
    changed = Record({**counter, copy: Record({**counter[copy], "lwm": 99})})  # type: ignore[dict-item]
    tampered["counter"] = changed
    tampered_text = canonical_json(state_to_itf(tampered))
    edges = [(d, state_digest(tampered_text if d == dst else states[d]), actions[d]) for d in outgoing[src]]
    result = replay_state(mapping, src, states[src], edges)
    assert (result.edge_mismatches, result.missing, result.extra) == (1, [], [])
    [mismatch] = result.examples
    assert mismatch.actual_state == json.loads(states[dst])  # the impl's successor is the untampered one
    explained = explain(mismatch, tampered_text)
    assert explained.diff[0].startswith(f"counter.{copy}.lwm: expected 99, got ")


def test_missing_edge_is_an_enabledness_mismatch(local_run: tuple[ConformResult, Path]) -> None:
    _, run_dir = local_run
    states, actions, outgoing = _graph(run_dir)
    mapping = mapping_for("UpdateCounter", read_config(SMALL).constants)
    src = next(fp for fp, dsts in outgoing.items() if len(dsts) > 2)
    kept = outgoing[src][1:]
    result = replay_state(mapping, src, states[src], [(d, state_digest(states[d]), actions[d]) for d in kept])
    assert result.edge_mismatches == 0 and result.missing == []
    assert [json.loads(a) for a in result.extra] == [json.loads(actions[outgoing[src][0]])]
    assert (result.spec_actions, result.impl_enabled) == (len(kept), len(kept) + 1)
    [mismatch] = result.examples
    assert mismatch.extra == [json.loads(actions[outgoing[src][0]])] and mismatch.missing == []


def test_cli_conform_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["conform", str(SPEC), "--config", str(SMALL), "--local", "--run-dir", str(tmp_path), "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    for key in ("states", "edges", "edges_replayed", "mismatches", "enabledness_mismatches", "tlc_seconds"):
        assert key in report
    assert report["edges_replayed"] == report["edges"] > 0 and report["mismatches"] == 0


def test_cli_conform_mutant_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["conform", str(SPEC), "--config", str(SMALL), "--local", "--run-dir", str(tmp_path), "--json"]
    code = main([*argv, "--mutant", "no-out-of-order-tracking"])
    assert code == 1
    assert json.loads(capsys.readouterr().out)["mismatches"] > 0


def test_unknown_mutant_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "conform",
            str(SPEC),
            "--config",
            str(SMALL),
            "--local",
            "--run-dir",
            str(tmp_path),
            "--mutant",
            "nope",
        ]
    )
    assert code == 2
    assert "unknown mutant 'nope'" in capsys.readouterr().err


def test_a_state_the_mapping_cannot_concretize_is_one_mismatch_with_its_edges_counted(
    local_run: tuple[ConformResult, Path],
) -> None:
    _, run_dir = local_run
    states, actions, outgoing = _graph(run_dir)
    mapping = mapping_for("UpdateCounter", read_config(SMALL).constants)
    src = next(fp for fp, dsts in outgoing.items() if len(dsts) > 1)
    broken = state_from_itf(json.loads(states[src]))
    counter = broken["counter"]
    assert isinstance(counter, Record)
    copy = sorted(counter)[0]
    broken["counter"] = Record({**counter, copy: Record({**counter[copy], "lwm": "x"})})  # type: ignore[dict-item]
    edges = [(d, state_digest(states[d]), actions[d]) for d in outgoing[src]]
    result = replay_state(mapping, src, canonical_json(state_to_itf(broken)), edges)
    assert (result.edges, result.edges_replayed, result.edge_mismatches) == (len(edges), 0, 1)
    [mismatch] = result.examples
    assert mismatch.error is not None and mismatch.error.startswith("concretize: expected an integer")


@pytest.mark.parametrize(
    ("edges", "master", "local", "in_process", "why"),
    [
        (10, None, None, True, "below 1,000,000"),
        (1_000_000, None, None, False, "at least 1,000,000"),
        (10, "local[2]", None, False, "local[2] (asked for)"),
        (10, None, False, False, "Spark (asked for)"),
        (10**7, "local[2]", True, True, "without Spark, 2 process(es) (asked for)"),
    ],
)
def test_the_replay_engine_is_chosen_by_size_unless_asked(
    monkeypatch: pytest.MonkeyPatch,
    edges: int,
    master: str | None,
    local: bool | None,
    in_process: bool,
    why: str,
) -> None:
    monkeypatch.setattr("tidemark.conformance.conform.cores", lambda: 2)
    chosen, reason = replay_engine(edges, master, local)
    assert chosen is in_process and why in reason
