"""The deep models: TLC on models that reach the states where data was lost, and what each reached.

The standard models stop at one failure; the data-loss paths of issue 20 need two failures, a join
exchange that a node left is merged into, baseline changes with RENTING copies assigned again, a
partition at the WAL rebalance threshold, or a total outage. A deep model reaches them (spec/*-deep.cfg,
spec/PMEFixed-outage.cfg). `tidemark verify --deep` checks, each exhaustively (2 TLC workers, a VIEW
without `action`):

- the proposed fixes on every deep model (spec/PMEReach.tla, spec/TxCountersReach.tla: the fixed specs
  plus the recording of the boundary situations reached, conformance/reach.py's list) - they must hold;
- Ignite's protocol on the same models (spec/PME.tla, spec/TxCounters.tla) - TLC must find the data loss
  the findings document (a violation; which invariant and how long the trace are reported);
- where the fixes leave a loss (a residual model: the fixed protocol with every invariant, or the deep
  model itself when `fixes_hold` is False), TLC must find it, as its finding documents;
- the bug zoo's entries of issue 20 put into the fixed deep models (with the constants `DEEP_ZOO` changes
  where the model as it stands cannot reach the bug in time) - TLC must catch each;
- the random-walk campaign against the same entries' mutants (conformance/campaign.py) - it must catch
  each within a budget of walks.

`verify` without --deep runs a bounded slice: the standard models' reachability and a seeded campaign.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import BaseModel, Field

from tidemark.conformance.campaign import CampaignReport, run_campaign
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.reach import BOUNDARIES
from tidemark.conformance.resources import resource
from tidemark.conformance.tlc.output import Outcome, TlcResult, parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.zoo.entries import ZOO, SpecCatch, variant_config

SPEC = resource("spec")
REACHED = re.compile(r'<<"tidemark-reached", "([^"]+)">>')


@dataclass(frozen=True)
class DeepModel:
    name: str
    config: Path  # the fixed protocol's model, run on `spec` (fixes and the recording of reached situations)
    spec: Path
    faithful: Path  # the same model of Ignite's protocol, run on `faithful_spec`: TLC must find a loss
    faithful_spec: Path
    finding: str  # the docs/findings/ page of that loss
    residual: Path | None = None  # the fixed protocol where the fixes leave a loss: TLC must find it
    fixes_hold: bool = True  # False: the fixes leave a loss on this very model (its finding): TLC finds it


DEEP_MODELS: tuple[DeepModel, ...] = (
    DeepModel(
        "PME-deep",
        SPEC / "PMEFixed-deep.cfg",
        SPEC / "PMEReach.tla",
        SPEC / "PME-deep.cfg",
        SPEC / "PME.tla",
        "merged-left-keeps-gaps",
    ),
    DeepModel(
        "PME-outage",
        SPEC / "PMEFixed-outage.cfg",
        SPEC / "PMEReach.tla",
        SPEC / "PME-outage.cfg",
        SPEC / "PME.tla",
        "activation-keeps-gaps",
        SPEC / "PMEFixed-outage-residual.cfg",
    ),
    DeepModel(
        "TxCounters-deep",
        SPEC / "TxCountersFixed-deep.cfg",
        SPEC / "TxCountersReach.tla",
        SPEC / "TxCounters-deep.cfg",
        SPEC / "TxCounters.tla",
        "rollback-range-reused",
        fixes_hold=False,
    ),
)


@dataclass(frozen=True)
class DeepCatch:
    """Where TLC looks for a zoo entry's bug: a deep model, with some of its constants changed when the
    model as it stands cannot reach the bug (or reaches it only after hours of breadth-first search)."""

    model: str
    constants: tuple[tuple[str, str], ...] = ()


# The bug zoo's entries of issue 20, each with the deep model that reaches its bug (docs/pme.md, section 10).
DEEP_ZOO: dict[str, DeepCatch] = {
    "merged-left-finalizes-joiner": DeepCatch("PME-deep"),
    # The inflated starting counter loses data only through a historical rebalance from it: at threshold
    # 1 that needs both keys committed (a one-key partition is rebalanced in full, which resets the
    # counter: with one key the model holds, 335,953 states), deeper than breadth-first search gets in
    # ten minutes. Threshold 0, one key and crashes after the decision reach it (OwningCoversLwm after 27
    # states, 93,937 states, with two failures and RENTING->MOVING).
    "renting-keeps-counter": DeepCatch(
        "PME-deep", (("TxKeys", "{{0}}"), ("WalRebalanceThreshold", "0"), ("FailAfterDecisions", "TRUE"))
    ),
    # With threshold 1 and two single-key transactions no copy can be rebalanced from history at
    # size == threshold: a lagging copy misses at least one counter, and Ignite's rule needs fewer
    # missing counters than entries, so 2 entries. Threshold 2 puts the boundary there (a copy at
    # counter 1 that missed t2, from a supplier holding both keys); one crash after both decisions
    # reaches it (RebalanceModeAsIgnite after 27 states, 51,632 states), where threshold 2 alone
    # leaves more than 600,000 states shallower than the bug.
    "wal-threshold-inclusive": DeepCatch(
        "PME-deep", (("WalRebalanceThreshold", "2"), ("MaxFailures", "1"), ("FailAfterDecisions", "TRUE"))
    ),
    "activation-without-demotion": DeepCatch("PME-outage"),
}
# Walks the campaign may take to catch one of them (it stops at the first failure).
CAMPAIGN_BUDGET = 3000
CAMPAIGN_ROUND = 200
CAMPAIGN_STEPS = 120


class Check(BaseModel):
    """One TLC run on a deep model."""

    spec: str
    config: str
    outcome: Outcome
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None
    invariant: str | None = Field(default=None, description="the invariant or property violated, if any")
    trace: int | None = Field(default=None, description="the counterexample's length, if any")
    error: str | None = None
    seconds: float


class DeepModelReport(BaseModel):
    name: str
    fixed: Check = Field(description="the proposed fixes: must hold")
    reached: list[str] = Field(description="the boundary situations the model reached")
    faithful: Check = Field(description="Ignite's protocol: TLC must find the documented loss")
    finding: str
    residual: Check | None = Field(default=None, description="what the fixes leave: TLC must find it")
    fixes_hold: bool = Field(default=True, description="False: the fixes leave a loss on this model")

    @property
    def holds(self) -> bool:
        fixed = self.fixed.outcome == Outcome.OK if self.fixes_hold else self.fixed.invariant is not None
        left = self.residual is None or self.residual.invariant is not None
        return fixed and self.faithful.invariant is not None and left


class DeepZooEntry(BaseModel):
    name: str
    model: str
    constants: dict[str, str] = Field(default_factory=dict, description="the model's constants changed")
    spec: SpecCatch
    campaign: CampaignReport

    @property
    def caught(self) -> bool:
        return self.spec.caught and not self.campaign.holds


class DeepReport(BaseModel):
    models: list[DeepModelReport]
    zoo: list[DeepZooEntry]
    seconds: float = 0.0

    @property
    def holds(self) -> bool:
        return all(m.holds for m in self.models) and all(e.caught for e in self.zoo)


def reached(output: str) -> list[str]:
    """The boundary situations a run with CONSTRAINT RecordReach printed, in BOUNDARIES order."""
    found = set(REACHED.findall(output))
    return [b for b in BOUNDARIES if b in found]


def _check(
    spec: Path, config: Path, options: TlcOptions, on_line: Callable[[str], None] | None
) -> tuple[Check, str]:
    run = run_tlc(spec, config, options, on_line)
    result: TlcResult = parse_output(run, source=f"TLC on {spec} with {config}")
    violation = result.violation
    check = Check(
        spec=str(spec),
        config=str(config),
        outcome=result.outcome,
        distinct_states=result.distinct_states,
        generated_states=result.generated_states,
        depth=result.depth,
        invariant=violation.invariant if violation else None,
        trace=len(violation.trace) if violation else None,
        error=result.error,
        seconds=result.seconds,
    )
    return check, run.output


def check_model(
    model: DeepModel, options: TlcOptions, on_line: Callable[[str], None] | None = None
) -> DeepModelReport:
    fixed, output = _check(model.spec, model.config, options, on_line)
    faithful, _ = _check(model.faithful_spec, model.faithful, options, on_line)
    residual = _check(SPEC / "PMEFixed.tla", model.residual, options, on_line)[0] if model.residual else None
    return DeepModelReport(
        name=model.name,
        fixed=fixed,
        reached=reached(output),
        faithful=faithful,
        finding=model.finding,
        residual=residual,
        fixes_hold=model.fixes_hold,
    )


def with_constants(text: str, constants: Sequence[tuple[str, str]], source: Path) -> str:
    """A model config's text with the named constants' values replaced."""
    for name, value in constants:
        text, found = re.subn(rf"^(\s*{name} = ).*$", rf"\g<1>{value}", text, count=1, flags=re.M)
        if not found:
            raise TidemarkError(f"no constant {name}", source=str(source), expected=f"a line '{name} = ...'")
    return text


def catch_in_deep_model(name: str, work_dir: Path, options: TlcOptions) -> SpecCatch:
    """TLC on the fixed deep model with the zoo entry's bug put in (its definition override)."""
    entry = next(e for e in ZOO if e.name == name)
    where = DEEP_ZOO[name]
    model = next(m for m in DEEP_MODELS if m.name == where.model)
    config = variant_config(replace(entry, model=model.config), work_dir)
    text = with_constants(config.read_text(encoding="utf-8"), where.constants, model.config)
    changed = ", ".join(f"{k} = {v}" for k, v in where.constants)
    note = f"\\* Constants changed for this entry (DEEP_ZOO): {changed}.\n" if changed else ""
    config.write_text(note + text)
    started = time.monotonic()
    result = parse_output(run_tlc(model.spec, config, options), source=f"TLC on {name} in {model.name}")
    violation = result.violation
    caught = (
        result.outcome in (Outcome.INVARIANT_VIOLATED, Outcome.PROPERTY_VIOLATED) and violation is not None
    )
    return SpecCatch(
        caught=caught,
        outcome=result.outcome.value,
        invariant=violation.invariant if violation else None,
        trace=[step.action for step in violation.trace] if violation else [],
        seconds=round(time.monotonic() - started, 3),
        error=result.error,
    )


# TLC's budget for a deep model. The largest, the fixed PME-deep, took 2,608 s exhaustively with 2 workers
# and an 8 GB heap on an otherwise idle 2-core machine (23,232,594 states, docs/pme.md, section 10); the
# slowest zoo catch took 1,217 s. The 600 s default of a standard model would cut both short.
DEEP_TLC = TlcOptions(workers=2, timeout=4 * 3600, heap="8g")


def run_deep(
    *,
    work_dir: Path,
    options: TlcOptions | None = None,
    models: Sequence[str] | None = None,
    spark: object | None = None,
    on_line: Callable[[str], None] | None = None,
) -> DeepReport:
    """Every deep model (or the named ones) and the issue-20 zoo entries, as the module docstring says."""
    options = options or DEEP_TLC
    started = time.monotonic()
    chosen = [m for m in DEEP_MODELS if models is None or m.name in models]
    if models is not None and len(chosen) != len(set(models)):
        raise TidemarkError(
            f"unknown deep model in {sorted(models)}",
            source="--deep",
            expected=str([m.name for m in DEEP_MODELS]),
        )
    reports = [check_model(m, options, on_line) for m in chosen]
    names = {m.name for m in chosen}
    zoo = [
        DeepZooEntry(
            name=name,
            model=catch.model,
            constants=dict(catch.constants),
            spec=catch_in_deep_model(name, work_dir, options),
            campaign=run_campaign(
                walks=CAMPAIGN_BUDGET,
                steps=CAMPAIGN_STEPS,
                mutant=name,
                spark=spark,
                until_failure=CAMPAIGN_ROUND,
            ),
        )
        for name, catch in DEEP_ZOO.items()
        if catch.model in names
    ]
    return DeepReport(models=reports, zoo=zoo, seconds=round(time.monotonic() - started, 3))
