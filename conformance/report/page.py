"""The main job's report page, reports/index.html, rendered from the jinja2 templates in templates/.

The page loads nothing from the network, so it reads the same offline and in CI artifacts:
- figures are tables; action coverage, seconds per phase and distinct states by depth are inline SVG bar
  charts (charts.py);
- each counterexample and mismatch has a Mermaid sequence diagram (diagrams.py) in a <pre class="mermaid">
  block beside a table saying the same. The Mermaid bundle shipped with the package is written beside the
  page (conformance/mermaid.py) and draws the blocks; without JavaScript their source stays readable;
- every file the run wrote is linked relatively (artefacts/ beside the page, report.json, junit.xml),
  so the directory can be copied elsewhere whole;
- no date or host is written outside the Run section, so the same report gives the same page (timings
  and that section apart).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from tidemark.conformance.mermaid import SCRIPT as MERMAID_SCRIPT
from tidemark.conformance.mermaid import VERSION as MERMAID_VERSION
from tidemark.conformance.mermaid import write_mermaid
from tidemark.conformance.reach import BOUNDARIES
from tidemark.conformance.replay import Mismatch
from tidemark.conformance.report.charts import bar_chart
from tidemark.conformance.report.diagrams import (
    action_text,
    counterexample_diagram,
    mismatch_diagram,
    step_action,
    verdict,
)
from tidemark.conformance.report.render import STYLE, environment, seconds
from tidemark.conformance.tlc.output import Outcome, Violation
from tidemark.conformance.tlc.values import format_value, state_from_itf
from tidemark.conformance.verify import ConformFigures, SpecReport, ValidationFigures, VerifyReport

# Mismatches drawn in full (diagram, source state); the other examples kept are listed in a table.
MISMATCH_DIAGRAMS = 5
# The run's files beside the page (write_report).
REPORT_JSON, JUNIT_XML = "report.json", "junit.xml"


# ---------------------------------------------------------------------------------------------------------
# What the templates show, as plain values (the templates escape them).


def state_rows(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    values = state_from_itf(state)
    return [(name, format_value(values[name])) for name in sorted(values)]


def counterexample(violation: Violation) -> dict[str, Any]:
    """The title, the diagram and per step its action and the variables it changed."""
    violated = violation.invariant or violation.kind
    previous: dict[str, Any] = {}
    steps = []
    for step in violation.trace:
        changed = [
            name for name in sorted(step.state) if name != "action" and step.state[name] != previous.get(name)
        ]
        values = state_from_itf({name: step.state[name] for name in changed})
        steps.append(
            {
                "index": step.index,
                "action": step_action(step),
                "changed": [f"{name} = {format_value(values[name])}" for name in changed],
            }
        )
        previous = step.state
    return {
        "title": f"Counterexample: {violated} violated after {len(violation.trace)} states",
        "diagram": counterexample_diagram(violation),
        "steps": steps,
    }


def mismatch_action(mismatch: Mismatch) -> str:
    return action_text(mismatch.action) if mismatch.action is not None else "–"


def mismatch_lines(mismatch: Mismatch) -> list[str]:
    lines = [*mismatch.diff, *([mismatch.error] if mismatch.error else [])]
    lines += [f"spec takes, impl does not enable: {action_text(a)}" for a in mismatch.missing]
    lines += [f"impl enables, spec does not take: {action_text(a)}" for a in mismatch.extra]
    return lines


def mismatch(m: Mismatch) -> dict[str, Any]:
    return {
        "title": f"{m.kind} mismatch at state {m.src}, action {mismatch_action(m)}",
        "lines": mismatch_lines(m),
        "diagram": mismatch_diagram(m),
        "src": m.src,
        "state": state_rows(m.source_state),
    }


def coverage_charts(conformance: ConformFigures, validation: ValidationFigures | None) -> Markup:
    names = sorted(set(conformance.coverage) | set(validation.coverage if validation else {}))
    charts = bar_chart("state-graph edges replayed, per action", conformance.coverage, names)
    if validation is not None:
        charts += bar_chart("implementation walk steps, per action", validation.coverage, names)
    return charts


def phases(spec: SpecReport) -> list[tuple[str, float]]:
    t = spec.timings
    return [
        ("TLC (state graph)", t.tlc_seconds),
        ("graph to Parquet", t.load_seconds),
        ("replay", t.replay_seconds),
        ("walks", t.walk_seconds),
        ("TLC: initial states and walks", t.validation_seconds),
    ]


def phases_chart(spec: SpecReport) -> Markup:
    shown = dict(phases(spec))
    return bar_chart(f"{spec.spec}: seconds per phase", shown, list(shown), seconds, zero_warns=False)


def depth_chart(spec: SpecReport) -> Markup:
    """Distinct states at each depth (breadth-first level from the initial states) of the state graph."""
    assert spec.conformance is not None
    levels = {str(depth): n for depth, n in enumerate(spec.conformance.states_by_depth)}
    return bar_chart(f"{spec.spec}: distinct states by depth", levels, list(levels), zero_warns=False)


def audit_html(report: VerifyReport) -> Markup:
    from tidemark.conformance.audit.page import audit_section

    assert report.audit is not None
    return Markup(audit_section(report.audit.report, "h3"))  # escaped where conformance/audit/page.py made it


def has_diagrams(report: VerifyReport) -> bool:
    """The page draws a counterexample or a mismatch (the templates draw one for each)."""
    specs = any(s.tlc.violation or (s.conformance and s.conformance.examples) for s in report.specs)
    zoo = report.zoo is not None and any(e.spec.counterexample or e.impl.mismatch for e in report.zoo.entries)
    return specs or zoo


@cache
def _environment() -> Environment:
    env = environment()
    env.globals.update(
        verdict=verdict,
        action_text=action_text,
        state_rows=state_rows,
        counterexample=counterexample,
        mismatch=mismatch,
        mismatch_action=mismatch_action,
        mismatch_lines=mismatch_lines,
        coverage_charts=coverage_charts,
        phases=phases,
        phases_chart=phases_chart,
        depth_chart=depth_chart,
        audit_html=audit_html,
        boundaries=BOUNDARIES,
        Outcome=Outcome,
        MISMATCH_DIAGRAMS=MISMATCH_DIAGRAMS,
        MERMAID_VERSION=MERMAID_VERSION,
        MERMAID_SCRIPT=MERMAID_SCRIPT,
        STYLE=Markup(STYLE),  # the package's own stylesheet
        REPORT_JSON=REPORT_JSON,
        JUNIT_XML=JUNIT_XML,
    )
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def html_page(report: VerifyReport, files: Sequence[str] = ()) -> str:
    """The whole page; `files`: the report's own files beside it (relative paths), listed in its
    Artefacts section (each spec lists its own files)."""
    # Mermaid only where there are diagrams (counterexamples, mismatches): a page that holds without
    # any neither loads it nor credits it.
    return render("index.html.j2", report=report, files=files, drawn=has_diagrams(report))


# ---------------------------------------------------------------------------------------------------------
# Writing the page and the run's files beside it.


def _write(path: Path, text: str) -> None:
    """Write a file atomically: a partial file renamed over it, removed if writing fails."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def write_report(report: VerifyReport, directory: Path = Path("reports")) -> Path:
    """Write directory/index.html, report.json (the command's --json) and junit.xml beside it, and Mermaid;
    returns the page's path. The specs' artefacts are already in directory/artefacts (verify wrote them)."""
    from tidemark.conformance.cli.outputs import dump
    from tidemark.conformance.junit import verify_suites
    from tidemark.conformance.junit import write as write_junit

    directory.mkdir(parents=True, exist_ok=True)
    write_mermaid(directory)
    _write(directory / REPORT_JSON, dump("verify", report, 0 if report.holds else 1) + "\n")
    write_junit(directory / JUNIT_XML, verify_suites(report))
    page = directory / "index.html"
    _write(page, html_page(report, [REPORT_JSON, JUNIT_XML]))
    return page
