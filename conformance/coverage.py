"""What `tidemark verify` reached beyond the standard models' replay: the boundary situations of each model,
the random-walk campaign's slice, and (--deep) the deep models (conformance/report/ draws them).

The reachability report lists, per model, which of conformance/reach.py's boundary situations it reached
(key 0, size == threshold, merged join+left, RENTING->MOVING, two failures, total outage), so that a gap
in coverage is visible before it hides a bug: the standard models (a TLC run of spec/PMEReach.tla or
spec/TxCountersReach.tla with the model's constants, which prints what it reaches), the deep models
(conformance/deep.py) and the campaign's walks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from tidemark.conformance.campaign import CampaignReport, summary_line
from tidemark.conformance.deep import DeepReport, reached
from tidemark.conformance.reach import BOUNDARIES
from tidemark.conformance.resources import resource
from tidemark.conformance.tlc.output import Outcome, parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc

# The module that records what a model of each spec reaches (it holds the spec, the fixes and the zoo).
REACH_MODULES = {"PME": resource("spec/PMEReach.tla"), "TxCounters": resource("spec/TxCountersReach.tla")}


class Reachability(BaseModel):
    model: str = Field(description="the model, e.g. spec/PME.cfg, or the campaign")
    reached: list[str] = Field(description="the boundary situations it reached, in conformance.reach order")
    applicable: list[str] = Field(description="the situations its spec has at all")


def recording_config(config: Path, work_dir: Path) -> Path:
    """A copy of a model config that records the boundaries reached (CONSTRAINT RecordReach)."""
    path = work_dir / f"reach-{config.stem}.cfg"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config.read_text(encoding="utf-8") + "\nCONSTRAINT RecordReach\n", encoding="utf-8")
    return path


def model_reach(
    spec: Path,
    config: Path,
    work_dir: Path,
    options: TlcOptions,
    on_line: Callable[[str], None] | None = None,
) -> Reachability | None:
    """The boundaries a standard model reaches (None for a spec without a recording module)."""
    module = REACH_MODULES.get(spec.stem)
    if module is None:
        return None
    run = run_tlc(module, recording_config(config, work_dir), options, on_line)
    result = parse_output(run, source=f"TLC recording what {config} reaches")
    if result.outcome != Outcome.OK:
        return Reachability(model=f"{config} ({result.outcome.value})", reached=[], applicable=[])
    return Reachability(model=str(config), reached=reached(run.output), applicable=applicable(module))


def applicable(module: Path) -> list[str]:
    """The boundary situations a spec has at all (its recording module's list)."""
    return list(BOUNDARIES) if module.stem.startswith("PME") else ["key 0", "two failures"]


def campaign_reach(report: CampaignReport) -> Reachability:
    return Reachability(
        model=f"campaign ({report.walks:,} walks, seed {report.seed})",
        reached=[b for b in BOUNDARIES if report.reached.get(b)],
        applicable=list(BOUNDARIES),
    )


def coverage_lines(
    campaign: CampaignReport | None, deep: DeepReport | None, reachability: Sequence[Reachability]
) -> tuple[list[str], list[str]]:
    """tidemark verify's terminal lines about the campaign, the deep models and reachability (rich markup),
    and the names of the parts that fail."""
    lines = [summary_line(campaign)] if campaign is not None else []
    lines += [f"reached by {row.model}: {', '.join(row.reached) or 'none'}" for row in reachability]
    failing = ["the campaign"] if campaign is not None and not campaign.holds else []
    return lines, failing + (["the deep models"] if deep is not None and not deep.holds else [])
