"""What `tidemark verify` reached beyond the standard models' replay: the boundary situations of each model,
the random-walk campaign's slice, and (--deep) the deep models - with the HTML sections of the report.

The reachability report lists, per model, which of conformance/reach.py's boundary situations it reached
(key 0, size == threshold, merged join+left, RENTING->MOVING, two failures, total outage), so that a gap
in coverage is visible before it hides a bug: the standard models (a TLC run of spec/PMEReach.tla or
spec/TxCountersReach.tla with the model's constants, which prints what it reaches), the deep models
(conformance/deep.py) and the campaign's walks.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from conformance.campaign import CampaignReport, summary_line
from conformance.deep import DeepReport, reached
from conformance.reach import BOUNDARIES
from conformance.resources import resource
from conformance.tlc.output import Outcome, parse_output
from conformance.tlc.runner import TlcOptions, run_tlc

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


# --- the report's sections ---------------------------------------------------------------------------------


def _e(text: object) -> str:
    return html.escape(str(text))


def _mark(holds: bool) -> str:
    return '<span class="holds">holds</span>' if holds else '<span class="fails">FAILS</span>'


def reach_section(rows: Sequence[Reachability]) -> str:
    head = "".join(f"<th>{_e(b)}</th>" for b in BOUNDARIES)
    body = []
    for row in rows:
        cells = "".join(
            "<td>reached</td>"
            if b in row.reached
            else "<td>–</td>"
            if b in row.applicable
            else "<td>n/a</td>"
            for b in BOUNDARIES
        )
        body.append(f"<tr><td><code>{_e(row.model)}</code></td>{cells}</tr>")
    return (
        '<section id="reach"><h2>Reachability</h2>\n<p>Which boundary situations each model reached'
        " (conformance/reach.py): a model that never visits a state cannot check it.</p>\n"
        f"<table><tr><th>model</th>{head}</tr>{''.join(body)}</table></section>\n"
    )


def campaign_section(report: CampaignReport) -> str:
    failure = report.first_failure
    found = (
        f"<p>First failure: walk {failure.walk}, step {failure.step}: <code>{_e(failure.violation)}</code>"
        " (shrink it with <code>tidemark campaign</code>).</p>"
        if failure
        else ""
    )
    return (
        f'<section id="campaign"><h2>Random-walk campaign {_mark(report.holds)}</h2>\n'
        f"<p>{report.walks:,} walks of up to {report.steps_per_walk} steps (seed {report.seed}) over"
        " impl/pme.py on drawn configurations (up to 5 servers, 3 partitions, 3 crashes, baseline changes,"
        f" WAL thresholds 0-2, batches 1-3), proposed fixes {_e(', '.join(report.fixes) or 'none')};"
        f" every invariant after every step: {report.failures} failing walk(s), {report.steps:,} steps,"
        f" {report.walks_per_second:.1f} walks/s, {report.steps_per_second:,.0f} steps/s.</p>{found}"
        "</section>\n"
    )


def deep_section(deep: DeepReport) -> str:
    rows = []
    for m in deep.models:
        fixed, faithful = m.fixed, m.faithful
        states = f"{fixed.distinct_states:,}" if fixed.distinct_states is not None else "–"
        rest = m.residual
        known = "" if m.fixes_hold else " (a loss the fixes leave, expected)"
        left = f"; left by the fixes: {_e(rest.invariant or rest.outcome.value)}" if rest else ""
        rows.append(
            f"<tr><td>{_e(m.name)}</td><td>{_e(fixed.outcome.value)}, {states} states,"
            f" {fixed.seconds:.0f} s{known}{left}</td><td>{_e(faithful.invariant or faithful.outcome.value)}"
            f" ({_e(m.finding)})</td><td>{_mark(m.holds)}</td></tr>"
        )
    zoo = "".join(
        f"<tr><td><code>{_e(e.name)}</code></td><td>{_e(e.model)}: {_e(e.spec.describe())}</td>"
        f"<td>{'caught after ' + str(e.campaign.walks) + ' walks' if not e.campaign.holds else 'not caught'}"
        f"</td><td>{_mark(e.caught)}</td></tr>"
        for e in deep.zoo
    )
    return (
        f'<section id="deep"><h2>Deep models {_mark(deep.holds)}</h2>\n'
        "<p>Exhaustive TLC runs of the models that reach the data-loss paths (conformance/deep.py): the"
        " proposed fixes must hold, Ignite's protocol must lose data as the findings show.</p>\n"
        "<table><tr><th>model</th><th>fixed protocol</th><th>Ignite's protocol</th><th></th></tr>"
        f"{''.join(rows)}</table>\n<table><tr><th>zoo entry</th><th>TLC on the deep model</th>"
        f"<th>campaign</th><th></th></tr>{zoo}</table></section>\n"
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
