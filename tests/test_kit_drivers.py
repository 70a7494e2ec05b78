"""Implementations behind the driver protocol on real TLC graphs: the Java update counter and 2PC
counter assignment of examples/java (written from the specs, sharing no code with impl/) and their broken
variants, and impl/'s Python driver against in-process replay on TxCounters."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tidemark.conformance.conform import ConformResult, DriverOptions, conform
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import from_itf, state_from_itf

SMALL = Path("tests/models/UpdateCounter-small.cfg")
TX_SMALL = Path("tests/models/TxCounters-small.cfg")
JAVA = "examples/java/run"
BUGS = [
    "no-out-of-order-tracking",
    "stale-hwm-after-switch",
    "gaps-not-persisted",
    "node-left-without-finalize",
]
TX_BUGS = ["backup-reserves-own-range", "commit-in-prepare-order", "rollback-leaves-range-open"]

pytestmark = [
    pytest.mark.tlc,
    pytest.mark.skipif(shutil.which("javac") is None, reason="the Java example needs javac (a JDK)"),
]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[ConformResult, Path]:
    run_dir = tmp_path_factory.mktemp("kit-small")
    return conform(Path("spec/UpdateCounter.tla"), SMALL, local=True, run_dir=run_dir), run_dir


@pytest.fixture(scope="module")
def tx_small(tmp_path_factory: pytest.TempPathFactory) -> tuple[ConformResult, Path]:
    run_dir = tmp_path_factory.mktemp("kit-tx-small")
    return conform(Path("spec/TxCounters.tla"), TX_SMALL, local=True, run_dir=run_dir), run_dir


# (spec module, small model, the fixture with its in-process conform): one per Java implementation.
COUNTER = ("UpdateCounter", SMALL, "small")
TWO_PC = ("TxCounters", TX_SMALL, "tx_small")


def _reached(path: list[Any], spec: str, model: Path) -> dict[str, Any]:
    """The state impl/ reaches along `path` from the initial state: the path is a real behavior."""
    mapping = mapping_for(spec, read_config(model).constants)
    impl = mapping.initial()  # type: ignore[attr-defined]
    for action in path:
        impl = mapping.apply(impl, from_itf(action))
    return mapping.abstract(impl)


@pytest.mark.parametrize(("target", "walk"), [(COUNTER, False), (COUNTER, True), (TWO_PC, False)])
def test_the_java_implementations_conform(
    request: pytest.FixtureRequest, target: tuple[str, Path, str], walk: bool
) -> None:
    spec, model, fixture = target
    local, run_dir = request.getfixturevalue(fixture)
    result = conform(
        Path(f"spec/{spec}.tla"), model, run_dir=run_dir, driver=DriverOptions(command=[JAVA], walk=walk)
    )
    assert result.holds, result.examples[:2]
    assert result.driver is not None and result.driver.implementation == "examples/java counterkit"
    assert (result.edges_replayed, result.mismatches, result.enabledness_mismatches) == (local.edges, 0, 0)
    assert result.coverage == local.coverage


@pytest.mark.parametrize(
    ("target", "bug"), [(COUNTER, bug) for bug in BUGS] + [(TWO_PC, bug) for bug in TX_BUGS]
)
def test_every_broken_java_variant_is_caught_with_its_path(
    request: pytest.FixtureRequest, target: tuple[str, Path, str], bug: str
) -> None:
    spec, model, fixture = target
    run_dir = request.getfixturevalue(fixture)[1]
    command = [JAVA, "--bug", bug]
    result = conform(Path(f"spec/{spec}.tla"), model, run_dir=run_dir, driver=DriverOptions(command=command))
    assert not result.holds and result.mismatches > 0
    edge = next(m for m in result.examples if m.kind == "edge")
    assert edge.path is not None and edge.path[-1] == edge.action
    assert _reached(edge.path[:-1], spec, model) == state_from_itf(edge.source_state)
    assert edge.diff or edge.error


def test_the_python_driver_gives_the_in_process_results_on_tx_counters(
    tx_small: tuple[ConformResult, Path],
) -> None:
    local, run_dir = tx_small
    command = [sys.executable, "-m", "tidemark.conformance.kit.python_driver", "TxCounters"]
    through = conform(
        Path("spec/TxCounters.tla"), TX_SMALL, run_dir=run_dir, driver=DriverOptions(command=command)
    )
    assert local.holds and through.holds
    for field in ("states", "edges", "edges_replayed", "mismatches", "enabledness_mismatches", "coverage"):
        assert getattr(through, field) == getattr(local, field), field


@pytest.mark.spark
@pytest.mark.parametrize("bug", [None, "rollback-leaves-range-open"])
def test_java_drivers_replay_on_spark_as_in_this_process(
    spark: Any, tx_small: tuple[ConformResult, Path], bug: str | None
) -> None:
    """Each Spark task replays its partition of the graph through drivers of its own: the same figures
    as the drivers in this process, and a broken variant caught with its path."""
    local, run_dir = tx_small
    command = [JAVA, *(["--bug", bug] if bug else [])]
    spec, master = Path("spec/TxCounters.tla"), str(spark.sparkContext.master)
    on_spark = conform(spec, TX_SMALL, master=master, run_dir=run_dir, driver=DriverOptions(command=command))
    assert on_spark.master == master and on_spark.driver is not None
    assert (on_spark.states, on_spark.edges, on_spark.driver.steps) == (
        local.states,
        local.edges,
        local.edges,
    )
    if bug is None:
        assert on_spark.holds and on_spark.coverage == local.coverage
        assert (on_spark.edges_replayed, on_spark.mismatches, on_spark.enabledness_mismatches) == (
            local.edges,
            0,
            0,
        )
        return
    here = conform(spec, TX_SMALL, run_dir=run_dir, driver=DriverOptions(command=command))
    assert (on_spark.mismatches, on_spark.enabledness_mismatches) == (
        here.mismatches,
        here.enabledness_mismatches,
    )
    edge = next(m for m in on_spark.examples if m.kind == "edge")
    assert edge.path is not None and edge.path[-1] == edge.action
    assert _reached(edge.path[:-1], "TxCounters", TX_SMALL) == state_from_itf(edge.source_state)
