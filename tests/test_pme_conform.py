"""Conformance of spec/PME.tla and impl/pme.py: real TLC dumps replayed on Spark and locally, the
liveness property, and the LOST-partition model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.conform import ConformResult, conform, dump_graph, replay_locally
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.mappings.tx_counters import TxReplay
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome, parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.tlc.values import Record, canonical_json, state_from_itf, state_to_itf
from tidemark.impl.pme import PME_STEPS, PmeCluster

SPEC = Path("spec/PME.tla")
SMALL = Path("tests/models/PME-small.cfg")  # 2 servers, one crash: finalize, rejoin, rebalancing
LOST = Path("tests/models/PME-lost.cfg")  # both owners of three servers may fail: LOST partitions
LIVENESS = Path("spec/PME-liveness.cfg")
# The actions the small model reaches: every step of the whole protocol but those it has no room for (one
# partition owned by both servers: no baseline change, RENTING copy or eviction; no WAL truncation; one
# crash of two servers: no total outage, so no Activate), Checkpoint (off in this model: Checkpoints is
# FALSE), and the spec's terminal Done.
NOT_REACHED = {"BaselineChange", "Evict", "TruncateWal", "Checkpoint", "Activate"}
SMALL_ACTIONS = set(PME_STEPS) - NOT_REACHED | {"Done"}

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def spark_result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> ConformResult:
    return conform(SPEC, SMALL, run_dir=tmp_path_factory.mktemp("pme-conform-spark"))


@pytest.fixture(scope="module")
def lost_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("pme-lost-graph")
    dump = dump_graph(SPEC, LOST, run_dir, TlcOptions(), None)
    assert dump.tlc.outcome == Outcome.OK and dump.graph is not None
    return run_dir


@pytest.mark.spark
def test_every_edge_of_the_small_model_replays_on_spark(spark_result: ConformResult) -> None:
    assert spark_result.holds
    assert spark_result.tlc is not None
    assert spark_result.states == spark_result.tlc.distinct_states
    assert spark_result.edges_replayed == spark_result.edges > 20_000
    assert (spark_result.mismatches, spark_result.enabledness_mismatches) == (0, 0)
    assert set(spark_result.coverage) == SMALL_ACTIONS


def test_every_edge_of_the_lost_partition_model_replays(lost_graph: Path) -> None:
    summary = replay_locally(lost_graph, "PME", read_config(LOST).constants, None)
    assert summary.edges_replayed == summary.edges > 20_000
    assert (summary.mismatches, summary.enabledness_mismatches) == (0, 0)
    states = pq.read_table(lost_graph / "states.parquet").to_pydict()["state"]
    lost = [s for s in states if json.loads(s)["lost"] != {"#set": []}]
    assert lost, "the model never loses the partition"


def test_concretize_and_abstract_are_inverse_on_every_state(lost_graph: Path) -> None:
    mapping = mapping_for("PME", read_config(LOST).constants)
    for text in pq.read_table(lost_graph / "states.parquet").to_pydict()["state"]:
        state = state_from_itf(json.loads(text))
        assert canonical_json(state_to_itf(mapping.abstract(mapping.concretize(state)))) == text


def test_the_spec_starts_where_the_cluster_starts(lost_graph: Path) -> None:
    mapping = mapping_for("PME", read_config(LOST).constants)
    states = pq.read_table(lost_graph / "states.parquet").to_pydict()
    [initial] = [s for s, init in zip(states["state"], states["initial"], strict=True) if init]
    cluster = PmeCluster.initial(mapping.config)  # type: ignore[attr-defined]
    assert canonical_json(state_to_itf(mapping.abstract(TxReplay(cluster, Record(name="Init"))))) == initial


def test_every_moving_copy_becomes_owning_under_fairness() -> None:
    result = parse_output(run_tlc(SPEC, LIVENESS, TlcOptions(timeout=600)), source="TLC liveness")
    assert result.outcome == Outcome.OK, result
    assert result.distinct_states > 1_000


def test_without_fairness_a_moving_copy_may_stay_moving(tmp_path: Path) -> None:
    """The liveness property is not vacuous: the spec without fairness may stop with a copy MOVING."""
    config = tmp_path / "PME-no-fairness.cfg"
    config.write_text(LIVENESS.read_text().replace("SPECIFICATION LiveSpec", "SPECIFICATION Spec"))
    result = parse_output(run_tlc(SPEC, config, TlcOptions(timeout=600)), source="TLC without fairness")
    assert result.outcome == Outcome.PROPERTY_VIOLATED, result
    assert result.violation is not None
    states = [step.state for step in result.violation.trace]
    assert any("MOVING" in json.dumps(s) for s in states)
