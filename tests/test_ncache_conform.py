"""Conformance of spec/NCachePartitionReplica.tla and impl/ncache.py: real TLC state graphs replayed on the
implementation, the documented loss windows found by `tidemark check`, the NCache zoo caught on both
sides."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.conform import conform, dump_graph, replay_locally
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.mappings.ncache import NcReplay
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome
from tidemark.conformance.tlc.runner import TlcOptions
from tidemark.conformance.tlc.values import Record, canonical_json, state_from_itf, state_to_itf
from tidemark.conformance.zoo.entries import run_zoo
from tidemark.impl.ncache import NCacheCluster

SPEC = Path("spec/NCachePartitionReplica.tla")
STANDARD = Path("spec/NCachePartitionReplica.cfg")
ASYNC = Path("tests/models/NCachePartitionReplica-async.cfg")
SPLIT = Path("tests/models/NCachePartitionReplica-split.cfg")
MAINTENANCE = Path("spec/NCachePartitionReplica-maintenance.cfg")
SPLIT_TWO = Path("tests/models/NCachePartitionReplica-split-two.cfg")
NCACHE_ZOO = [
    "log-not-replayed", "map-not-consulted-in-transfer", "replica-on-itself", "leave-keeps-transfers",
    "rejoin-without-pull",
]  # fmt: skip
SYNC_ACTIONS = {
    "Write", "ReplicationFailure", "Join", "StartTransfer", "EndTransfer", "Leave", "PullOrphan", "Done",
}  # fmt: skip

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def standard_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("nc-standard-graph")
    dump = dump_graph(SPEC, STANDARD, run_dir, TlcOptions(), None)
    assert dump.tlc.outcome == Outcome.OK and dump.graph is not None
    return run_dir


def test_every_edge_of_the_standard_model_replays(standard_graph: Path) -> None:
    summary = replay_locally(standard_graph, "NCachePartitionReplica", read_config(STANDARD).constants, None)
    assert summary.edges_replayed == summary.edges > 20_000
    assert (summary.mismatches, summary.enabledness_mismatches) == (0, 0)
    assert set(summary.coverage) == SYNC_ACTIONS


def test_every_edge_of_the_async_model_replays(tmp_path: Path) -> None:
    result = conform(SPEC, ASYNC, local=True, run_dir=tmp_path / "run")
    assert result.holds and result.edges_replayed == result.edges > 1_000
    assert result.coverage["Replicate"] > 0 and "ReplicationFailure" not in result.coverage


def test_every_edge_of_the_split_brain_model_replays(tmp_path: Path) -> None:
    result = conform(SPEC, SPLIT, local=True, run_dir=tmp_path / "run")
    assert result.holds and result.edges_replayed == result.edges > 1_000
    assert all(result.coverage[name] > 0 for name in ("Split", "LoserWrite", "Merge"))


def test_every_edge_of_the_two_member_split_model_replays(tmp_path: Path) -> None:
    """Splits cutting one or two members off, the merge, and the losers joining again."""
    result = conform(SPEC, SPLIT_TWO, local=True, run_dir=tmp_path / "run")
    assert result.holds and result.edges_replayed == result.edges > 20_000
    assert all(result.coverage[name] > 0 for name in ("Split", "LoserWrite", "Merge", "Join"))


def test_every_edge_of_the_maintenance_model_replays(tmp_path: Path) -> None:
    """The stop and its three exits, with OneDownKeepsData holding in TLC's run."""
    result = conform(SPEC, MAINTENANCE, local=True, run_dir=tmp_path / "run")
    assert result.holds and result.edges_replayed == result.edges > 20_000
    exits = ("StopForMaintenance", "MaintenanceRejoin", "MaintenanceTimeout", "MaintenanceFailure")
    assert all(result.coverage[name] > 0 for name in exits)


def test_concretize_and_abstract_are_inverse_on_every_state(standard_graph: Path) -> None:
    mapping = mapping_for("NCachePartitionReplica", read_config(STANDARD).constants)
    for text in pq.read_table(standard_graph / "states.parquet").to_pydict()["state"]:
        state = state_from_itf(json.loads(text))
        assert canonical_json(state_to_itf(mapping.abstract(mapping.concretize(state)))) == text


def test_the_spec_starts_where_the_cluster_starts(standard_graph: Path) -> None:
    mapping = mapping_for("NCachePartitionReplica", read_config(STANDARD).constants)
    states = pq.read_table(standard_graph / "states.parquet").to_pydict()
    [initial] = [s for s, init in zip(states["state"], states["initial"], strict=True) if init]
    cluster = NCacheCluster.initial(mapping.config)  # type: ignore[attr-defined]
    replay = NcReplay(cluster, {}, 0, 0, 0, 0, Record(name="Init"))
    assert canonical_json(state_to_itf(mapping.abstract(replay))) == initial


def test_check_reports_the_loss_windows_as_documented(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SPEC), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["holds"] and report["outcome"] == "ok"  # the standard model
    windows = report["documented"]
    assert [Path(w["config"]).name for w in windows] == [
        "NCachePartitionReplica-loss-async.cfg",
        "NCachePartitionReplica-loss-double-leave.cfg",
        "NCachePartitionReplica-loss-maintenance.cfg",
        "NCachePartitionReplica-loss-split.cfg",
    ]
    for window in windows:
        assert window["as_documented"] and window["verdict"] == "AckedWritesSurvive violated, as documented"
        assert window["violation"]["invariant"] == "AckedWritesSurvive"
        departures = {"Leave", "Split", "MaintenanceFailure"}
        assert departures & {step["action"] for step in window["violation"]["trace"]}


def test_check_fails_when_a_documented_loss_does_not_happen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The async window with synchronous replication: the property holds, against the record."""
    text = Path("spec/NCachePartitionReplica-loss-async.cfg").read_text()
    config = tmp_path / "loss-async-sync.cfg"
    config.write_text(text.replace("Sync = FALSE", "Sync = TRUE"))
    assert main(["check", str(SPEC), "--config", str(config), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["outcome"], report["holds"], report["exit_code"]) == ("ok", False, 1)
    assert report["documented"][0]["verdict"] == "AckedWritesSurvive unexpectedly holds"


def test_the_ncache_zoo_is_caught_on_both_sides(tmp_path: Path) -> None:
    report = run_zoo(tmp_path / "zoo", NCACHE_ZOO)
    assert [r.name for r in report.entries] == NCACHE_ZOO
    for result in report.entries:
        assert result.spec.caught and result.impl.caught, result
        assert result.protocol == "NCachePartitionReplica"
