"""Conformance of spec/HazelcastAntiEntropy.tla and impl/hazelcast.py: real TLC dumps replayed locally and
on Spark, the liveness property and its non-vacuity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.conform import ConformResult, conform, dump_graph, replay_locally
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.mappings.hazelcast import HzReplay
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome, parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.tlc.values import Record, canonical_json, state_from_itf, state_to_itf
from tidemark.impl.hazelcast import HazelcastCluster

SPEC = Path("spec/HazelcastAntiEntropy.tla")
SMALL = Path("tests/models/HazelcastAntiEntropy-small.cfg")  # 2 members, a map, one put, loss, crash
PROMOTION = Path("tests/models/HazelcastAntiEntropy-promotion-zoo.cfg")  # 3 members, two crashes
LIVENESS = Path("spec/HazelcastAntiEntropy-liveness.cfg")
# Every action of the spec: the small model takes them all.
ACTIONS = {
    "Put", "Backup", "BackupFailure", "AntiEntropy", "BackupAntiEntropy", "SyncRequest", "SyncSend",
    "SyncResponse", "SyncRetry", "SyncTimeout", "Drop", "Crash", "Join", "Migrate", "Destroy",
}  # fmt: skip

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def small_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("hz-small-graph")
    dump = dump_graph(SPEC, SMALL, run_dir, TlcOptions(), None)
    assert dump.tlc.outcome == Outcome.OK and dump.graph is not None
    return run_dir


def test_every_edge_of_the_small_model_replays(small_graph: Path) -> None:
    summary = replay_locally(small_graph, "HazelcastAntiEntropy", read_config(SMALL).constants, None)
    assert summary.edges_replayed == summary.edges > 20_000
    assert (summary.mismatches, summary.enabledness_mismatches) == (0, 0)
    assert set(summary.coverage) == ACTIONS


def test_every_edge_of_the_promotion_model_replays(tmp_path: Path) -> None:
    result = conform(SPEC, PROMOTION, local=True, run_dir=tmp_path / "run")
    assert result.holds and result.edges_replayed == result.edges > 5_000
    states = pq.read_table(tmp_path / "run" / "states.parquet").to_pydict()["state"]
    # Somewhere the owner crashed while index 1 was vacant: m3 owns with m1 and m2 gone.
    promoted = [s for s in states if json.loads(s)["table"]["#map"][:2] == [[0, "m3"], [1, "none"]]]
    assert promoted, "the model never promotes from index 2"


def test_concretize_and_abstract_are_inverse_on_every_state(small_graph: Path) -> None:
    mapping = mapping_for("HazelcastAntiEntropy", read_config(SMALL).constants)
    for text in pq.read_table(small_graph / "states.parquet").to_pydict()["state"]:
        state = state_from_itf(json.loads(text))
        assert canonical_json(state_to_itf(mapping.abstract(mapping.concretize(state)))) == text


def test_the_spec_starts_where_the_cluster_starts(small_graph: Path) -> None:
    mapping = mapping_for("HazelcastAntiEntropy", read_config(SMALL).constants)
    states = pq.read_table(small_graph / "states.parquet").to_pydict()
    [initial] = [s for s, init in zip(states["state"], states["initial"], strict=True) if init]
    cluster = HazelcastCluster.initial(mapping.config)  # type: ignore[attr-defined]
    replay = HzReplay(cluster, 0, 0, 0, {m: frozenset() for m in cluster.config.members}, Record(name="Init"))
    assert canonical_json(state_to_itf(mapping.abstract(replay))) == initial


@pytest.mark.spark
def test_a_mutant_is_rejected_on_spark(spark: Any, tmp_path: Path) -> None:
    result: ConformResult = conform(SPEC, SMALL, mutant="failed-backup-advances", run_dir=tmp_path)
    assert not result.holds and result.mismatches > 0
    assert {m.action["name"] for m in result.examples if m.action} == {"BackupFailure"}


def test_every_backup_converges_under_fairness() -> None:
    result = parse_output(run_tlc(SPEC, LIVENESS, TlcOptions(timeout=900, workers=2)), source="TLC liveness")
    assert result.outcome == Outcome.OK, result
    assert result.distinct_states > 10_000


def test_without_fairness_a_backup_may_stay_behind(tmp_path: Path) -> None:
    """The liveness property is not vacuous: without fairness a dropped backup is never repaired."""
    config = tmp_path / "no-fairness.cfg"
    config.write_text(LIVENESS.read_text().replace("SPECIFICATION LiveSpec", "SPECIFICATION Spec"))
    result = parse_output(run_tlc(SPEC, config, TlcOptions(timeout=900, workers=2)), source="TLC")
    assert result.outcome == Outcome.PROPERTY_VIOLATED, result
    assert result.violation is not None and len(result.violation.trace) >= 2
