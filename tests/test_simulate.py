"""TLC simulation traces replayed on the implementation from their initial state (real TLC, real Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_output_schema

from tidemark.conformance.cli.main import main
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.simulate import read_trace_module, simulate
from tidemark.conformance.tlc.output import parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc

SPEC = Path("spec/UpdateCounter.tla")
SIM = Path("spec/UpdateCounter-sim.cfg")

pytestmark = pytest.mark.tlc


@pytest.mark.spark
def test_simulation_traces_replay_on_spark(spark: Any) -> None:
    result = simulate(SPEC, SIM, traces=60, depth=40, seed=7)
    assert result.holds and result.master == "local[2]"
    assert result.traces == 60
    assert result.steps == result.steps_replayed == sum(result.coverage.values()) > 60 * 10
    assert {"Reserve", "Commit", "Restart", "Exchange"} <= set(result.coverage)


def test_same_seed_same_traces() -> None:
    first = simulate(SPEC, SIM, traces=20, depth=30, seed=3, local=True)
    again = simulate(SPEC, SIM, traces=20, depth=30, seed=3, local=True)
    assert (first.steps, first.coverage) == (again.steps, again.coverage)


def test_mutant_diverges_at_a_named_step() -> None:
    result = simulate(SPEC, SIM, traces=30, depth=40, seed=1, local=True, mutant="no-out-of-order-tracking")
    assert not result.holds and result.mismatches > 0
    first = result.examples[0]
    assert first.step >= 1 and first.reason == "successor differs"
    assert any(line.startswith("counter.") for line in first.diff)
    assert first.action["name"] in {"Commit", "Rollback"}


def test_trace_modules_are_read_state_by_state(tmp_path: Path) -> None:
    sim = TlcOptions(mode="simulate", traces=2, depth=5, trace_dir=tmp_path)
    assert parse_output(run_tlc(SPEC, SIM, sim)).outcome == "ok"
    files = sorted(tmp_path.glob("trace_*"))
    assert len(files) == 2
    states = read_trace_module(files[0])
    assert len(states) == 5 and '"action":{"name":"Init"}' in states[0]


def test_malformed_trace_module_names_the_file_and_state(tmp_path: Path) -> None:
    fake = tmp_path / "trace_0_0"
    fake.write_text("---- MODULE trace_0_0 ----\nSTATE_1 ==\n/\\ x = 1\n\nSTATE_2 ==\n/\\ x = {1,\n====\n")
    with pytest.raises(TidemarkError) as caught:
        read_trace_module(fake)
    assert str(fake) in str(caught.value) and "STATE_2" in caught.value.message
    empty = tmp_path / "trace_0_1"
    empty.write_text("---- MODULE trace_0_1 ----\n====\n")
    with pytest.raises(TidemarkError, match="no STATE_i definitions"):
        read_trace_module(empty)


def test_cli_simulate_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["simulate", str(SPEC), "--config", str(SIM), "--traces", "10", "--depth", "20", "--local", "--json"]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert '"mismatches":0' in text
    assert_output_schema("simulate", json.loads(text))


def test_three_copies_reach_an_exchange_below_a_restarted_copys_highest_applied() -> None:
    """The finding docs/counter.md describes: with three copies, the max LWM can be below what a
    restarted backup applied out of order (Ignite's update(value) fails the node there)."""
    result = parse_output(run_tlc(SPEC, Path("tests/models/UpdateCounter-3copies.cfg")))
    assert result.violation is not None and result.violation.invariant == "ExchangeCoversEveryCopy"
    actions = [step.action for step in result.violation.trace]
    assert actions == ["Init", "Reserve", "Reserve", "Commit", "Rollback", "Restart", "Drop", "Restart"]
