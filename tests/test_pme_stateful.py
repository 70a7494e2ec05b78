"""Stateful test: impl/pme.py driven through random schedules of the whole protocol (transactions, crashes,
restarts, joins, checkpoints, baseline changes, exchanges, rebalancing), with spec/PME.tla's invariants
restated over the implementation's own state after every step, and the runs validated by TLC as
behaviors of the spec.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import action_names, distinct_traces
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from tidemark.conformance.cli.main import main
from tidemark.conformance.invariants import violations
from tidemark.conformance.mappings.pme import PmeMapping, build
from tidemark.conformance.mappings.tx_counters import TxReplay, step_value
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import Record, Value
from tidemark.conformance.traces import Trace, write_traces
from tidemark.impl.cluster import Step
from tidemark.impl.pme import PmeCluster

SPEC = Path("spec/PME.tla")
STANDARD = Path("spec/PME.cfg")  # 3 servers, one partition, txs {1, 2} and {3}, one crash, restart, join
WIDE = Path("spec/PME-sim.cfg")  # 4 servers, two partitions, two crashes, baseline changes


# --- the state machine -----------------------------------------------------------------------------------

FAULTS = {"NodeFail", "Restart", "Join", "Checkpoint", "BaselineChange"}
FAULT_ODDS = 6


def make_machine(
    cluster_class: type[PmeCluster], model: Path, runs: list[tuple[dict[str, Value], ...]] | None = None
) -> type[RuleBasedStateMachine]:
    """Random schedules under the model's constants (crash bound, baseline auto-adjust); with `runs`,
    every run's states abstracted to spec states are appended to it."""
    mapping: PmeMapping = build(read_config(model).constants)

    class PmeMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.cluster = cluster_class.initial(mapping.config)
            self.action: Value = Record(name="Init")
            self.last: tuple[PmeCluster | None, Step | None] = (None, None)
            self.states = [self._abstract()] if runs is not None else []

        def _abstract(self) -> dict[str, Value]:
            return mapping.abstract(TxReplay(self.cluster, self.action))

        def _choices(self) -> tuple[list[Step], list[Step]]:
            protocol, faults = [], []
            for s in self.cluster.enabled():
                if mapping._allowed(s, self.cluster):
                    (faults if s.name in FAULTS else protocol).append(s)
            return protocol, faults

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            protocol, faults = self._choices()
            if not protocol and not faults:
                return  # the run is over (the spec's Done)
            # Faults drawn uniformly with the protocol's steps would crash most runs early.
            fault = not protocol or (
                bool(faults) and data.draw(st.integers(1, FAULT_ODDS), label="fault?") == 1
            )
            step = data.draw(st.sampled_from(faults if fault else protocol), label="step")
            before, self.cluster = self.cluster, self.cluster.apply(step)
            self.last = (before, step)
            self.action = step_value(step)
            if runs is not None:
                self.states.append(self._abstract())

        @invariant()
        def spec_invariants(self) -> None:
            found = violations(self.cluster, *self.last)
            assert not found, "\n".join(found)

        def teardown(self) -> None:
            if runs is not None:
                runs.append(tuple(self.states))

    PmeMachine.__name__ = f"PmeMachine[{cluster_class.__name__}, {model.stem}]"
    return PmeMachine


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    """Random schedules of the standard model (invariants checked on the way), as distinct ITF traces."""
    runs: list[tuple[dict[str, Value], ...]] = []
    run_state_machine_as_test(
        make_machine(PmeCluster, STANDARD, runs), settings=settings(stateful_step_count=60)
    )
    return distinct_traces(runs, "PME", STANDARD)


def test_random_schedules_reach_the_exchange_and_rebalancing(traces: list[Trace]) -> None:
    assert len(traces) >= 100
    seen = set().union(*map(action_names, traces))
    kinds = {"NodeFail", "Restart", "Join", "SendSingle", "FullMessage", "Supply", "Rebalance", "Recover"}
    assert kinds <= seen, f"never taken: {sorted(kinds - seen)}"


@pytest.mark.tlc
def test_tidemark_validate_accepts_every_schedule(
    traces: list[Trace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "schedules.jsonl"
    write_traces(path, traces)
    assert main(["validate", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["traces"], report["accepted"], report["rejected"]) == (len(traces), len(traces), [])
    assert (report["spec"], report["config"]) == (str(SPEC), str(STANDARD))


# Four servers, two partitions, two crashes, baseline changes (RENTING copies, evictions, full rebalance).
TestPmeSchedulesWide = make_machine(PmeCluster, WIDE).TestCase
TestPmeSchedulesWide.settings = settings(max_examples=100, stateful_step_count=80)
