"""The main job's report: reports/index.html, and the one-screen terminal summary of `tidemark verify`.

The page is built with plain string functions (no template engine: every piece is small and escaped
where it is made, with html.escape). It loads nothing from the network, so it reads the same offline
and in CI artifacts:
- figures are tables; action coverage is drawn as inline SVG bar charts generated here;
- each counterexample and mismatch has a Mermaid sequence diagram in a <pre class="mermaid"> block
  beside a table saying the same. The Mermaid bundle shipped with the package is written beside the
  page (conformance/mermaid.py) and draws the blocks; without JavaScript their source stays readable.
- no date or host is written, so the same report gives the same page (timings apart).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from conformance.counterexample import action_text as value_action_text
from conformance.coverage import campaign_section, deep_section, reach_section
from conformance.mermaid import SCRIPT as MERMAID_SCRIPT
from conformance.mermaid import SCRIPT_TAGS, write_mermaid
from conformance.mermaid import VERSION as MERMAID_VERSION
from conformance.replay import Mismatch
from conformance.runinfo import RunInfo
from conformance.tlc.output import Outcome, TraceStep, Violation
from conformance.tlc.values import format_value, from_itf, state_from_itf
from conformance.validate import Rejection
from conformance.verify import ConformFigures, SpecReport, TlcFigures, ValidationFigures, VerifyReport
from conformance.zoo import ZooReport

# Mismatches drawn in full (diagram, source state); the other examples kept are listed in a table.
MISMATCH_DIAGRAMS = 5

# Action record fields naming the copy, node or member a step happens on (UpdateCounter: copy, TxCounters
# and PME: node, HazelcastAntiEntropy: member).
PARTICIPANT_FIELDS = ("copy", "node", "member")

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
code,pre{font-family:ui-monospace,monospace;font-size:90%}
td code{white-space:pre-wrap;word-break:break-all}
pre.mermaid{background:#f6f8fa;border:1px solid #ddd;padding:.6em;overflow-x:auto}
.holds{color:#17692b;font-weight:bold}.fails{color:#b3121f;font-weight:bold}
.diff{color:#b3121f}
section.spec{border-top:2px solid #999;margin-top:2em}
svg text{font-family:system-ui,sans-serif;font-size:12px}
"""


# ---------------------------------------------------------------------------------------------------------
# Text helpers shared by the page and the terminal.


def verdict(holds: bool) -> str:
    return "holds" if holds else "FAILS"


def action_text(action: Any) -> str:
    """An ITF action record as `Commit(copy=b, delta=1, start=1)` (`Init` without parameters);
    anything else in TLA+ syntax."""
    try:
        value = from_itf(action)
    except ValueError:
        return str(action)
    return value_action_text(value)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _figure(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _seconds(value: float) -> str:
    return f"{value:.1f}"


def _e(text: object) -> str:
    return html.escape(str(text))


# ---------------------------------------------------------------------------------------------------------
# Terminal summary.


def summary_table(report: VerifyReport) -> Table:
    """One row per spec: the figures that say whether it holds, and where the time went."""
    table = Table(
        "spec",
        "TLC",
        "distinct states",
        "edges replayed",
        "mismatches",
        "traces accepted",
        "TLC s",
        "replay s",
    )
    for spec in report.specs:
        conformance, validation = spec.conformance, spec.validation
        style = "green" if spec.holds else "red"
        table.add_row(
            f"[{style}]{spec.spec}[/] {verdict(spec.holds)}",
            str(spec.tlc.outcome),
            _figure(spec.tlc.distinct_states),
            f"{conformance.edges_replayed:,}/{conformance.edges:,}" if conformance else "–",
            f"{conformance.mismatches + conformance.enabledness_mismatches:,}" if conformance else "–",
            f"{validation.accepted}/{validation.traces}" if validation else "–",
            _seconds(spec.timings.tlc_seconds) + (" (reused)" if spec.timings.graph_reused else ""),
            _seconds(spec.timings.replay_seconds),
        )
    return table


# ---------------------------------------------------------------------------------------------------------
# Mermaid sequence diagrams (source text; see the module docstring).


# One pass: replacing '#' and then ';' would mangle the ';' of the '#35;' just written.
_MERMAID_ENTITIES = str.maketrans({"#": "#35;", ";": "#59;"})


def _mermaid_text(text: str) -> str:
    """Text safe inside a Mermaid message or note: ';' and '#' would end or start an entity there."""
    return " ".join(text.translate(_MERMAID_ENTITIES).split())


def _split_diff(line: str) -> tuple[str, str, str] | None:
    """'path: expected X, got Y' (conformance.replay.value_diff) as (path, X, Y); None for other lines."""
    path, found, rest = line.partition(": expected ")
    expected, found_got, actual = rest.rpartition(", got ")
    return (path, expected, actual) if found and found_got else None


def mismatch_diagram(mismatch: Mismatch) -> str:
    """Source state -> action -> what the spec expected vs what the implementation gave."""
    lines = [
        "sequenceDiagram",
        "    participant spec as spec (expected)",
        "    participant impl as implementation (actual)",
        f"    Note over spec,impl: source state {mismatch.src}",
    ]
    if mismatch.kind == "enabledness":
        lines += [
            f"    spec-ximpl: {_mermaid_text(action_text(a))} (impl does not enable it)"
            for a in mismatch.missing
        ]
        lines += [
            f"    impl-xspec: {_mermaid_text(action_text(a))} (spec does not take it)" for a in mismatch.extra
        ]
        return "\n".join(lines)
    if mismatch.action is not None:
        lines.append(f"    spec->>impl: {_mermaid_text(action_text(mismatch.action))}")
    if mismatch.error:
        lines.append(f"    impl--xspec: {_mermaid_text(mismatch.error)}")
    for line in mismatch.diff:
        parts = _split_diff(line)
        if parts is None:
            lines.append(f"    Note over spec,impl: {_mermaid_text(line)}")
            continue
        path, expected, actual = map(_mermaid_text, parts)
        lines += [
            f"    impl-->>spec: {path}",
            f"    Note left of spec: {expected}",
            f"    Note right of impl: {actual}",
        ]
    return "\n".join(lines)


def _step_participant(step: TraceStep) -> str | None:
    action = step.state.get("action")
    if isinstance(action, dict):
        for field in PARTICIPANT_FIELDS:
            if isinstance(action.get(field), str):
                return str(action[field])
    return None


def _step_action(step: TraceStep) -> str:
    # The recorded action record has the parameters; TLC's label (the action's name) is the fallback.
    action = step.state.get("action")
    return action_text(action) if action is not None else step.action


def _step_label(step: TraceStep) -> str:
    return f"{step.index}. {_step_action(step)}"


def counterexample_diagram(violation: Violation) -> str:
    """One message per step, on the copy or node its action names; steps naming none span them all."""
    named = sorted({p for step in violation.trace if (p := _step_participant(step)) is not None})
    participants = named or ["spec"]
    ids = {name: f"P{i}" for i, name in enumerate(participants)}
    span = f"{ids[participants[0]]},{ids[participants[-1]]}"
    lines = ["sequenceDiagram"]
    lines += [f"    participant {ids[name]} as {_mermaid_text(name)}" for name in participants]
    for step in violation.trace:
        who = _step_participant(step)
        label = _mermaid_text(_step_label(step))
        if who is None and named:
            lines.append(f"    Note over {span}: {label}")
        else:
            target = ids[who or "spec"]
            lines.append(f"    {target}->>{target}: {label}")
    if violation.loops_back_to is not None:
        lines.append(f"    Note over {span}: back to state {violation.loops_back_to}")
    lines.append(
        f"    Note over {span}: violated: {_mermaid_text(violation.invariant or str(violation.kind))}"
    )
    return "\n".join(lines)


def _mermaid_block(source: str) -> str:
    return f'<pre class="mermaid">{_e(source)}</pre>\n'


# ---------------------------------------------------------------------------------------------------------
# Inline SVG bar charts.


def bar_chart(
    title: str,
    counts: Mapping[str, float],
    names: Sequence[str],
    shown: Callable[[float], str] = lambda v: f"{v:,}",
    zero_warns: bool = True,
) -> str:
    """Horizontal bars, one per name (0 for names without a count), scaled to the largest count;
    `shown` prints a value; a zero bar is a warning colour where a zero means something was never done."""
    label_width, bar_width, row, top = 120, 360, 22, 26
    largest = max(counts.values(), default=0) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{label_width + bar_width + 90}"'
        f' height="{top + row * len(names) + 4}" aria-label="{_e(title)}">',
        f"<title>{_e(title)}</title>",
        f'<text x="0" y="16" font-weight="bold">{_e(title)}</text>',
    ]
    for i, name in enumerate(names):
        count = counts.get(name, 0)
        y = top + i * row
        width = round(bar_width * count / largest)
        colour = "#4a7bd0" if count or not zero_warns else "#b86e00"  # e.g. an action never taken
        parts += [
            f'<text x="{label_width - 6}" y="{y + 14}" text-anchor="end">{_e(name)}</text>',
            f'<rect x="{label_width}" y="{y + 2}" width="{width}" height="{row - 6}" fill="{colour}"/>',
            f'<text x="{label_width + width + 4}" y="{y + 14}" fill="{colour}">{_e(shown(count))}</text>',
        ]
    return "".join(parts) + "</svg>\n"


# ---------------------------------------------------------------------------------------------------------
# Page sections.


def _table(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table of (label, HTML value) rows; values are escaped by the caller."""
    body = "".join(f"<tr><th>{_e(label)}</th><td>{value}</td></tr>" for label, value in rows)
    return f"<table>{body}</table>\n"


def _grid(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table with a header row; cells are HTML, escaped by the caller."""
    header = "".join(f"<th>{_e(title)}</th>" for title in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>\n" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>\n{body}</tbody></table>\n"


def _verdict_html(holds: bool) -> str:
    return f'<span class="{"holds" if holds else "fails"}">{verdict(holds)}</span>'


def _code(text: str) -> str:
    return f"<code>{_e(text)}</code>"


def _state_table(state: Mapping[str, Any]) -> str:
    values = state_from_itf(state)
    return _table((name, _code(format_value(values[name]))) for name in sorted(values))


def _run_section(info: RunInfo) -> str:
    """What the verdicts are about: tools, machine, date, and each input file's digest."""
    rows = [
        ("tidemark", _e(info.tidemark)),
        ("Python", _e(info.python)),
        ("Java", _e(info.java or "not found")),
        ("TLC", _e(info.tlc or "not found")),
        ("Spark (pyspark)", _e(info.spark or "not installed")),
        ("machine", _e(info.machine)),
        ("started (UTC)", _e(info.started)),
    ]
    inputs = _grid(["input", "SHA-256"], ([_code(p), _code(d)] for p, d in info.inputs.items()))
    return f'<section id="run"><h2>Run</h2>\n{_table(rows)}<h3>Inputs</h3>\n{inputs}</section>\n'


def _summary(report: VerifyReport) -> str:
    rows = []
    for spec in report.specs:
        conformance, validation = spec.conformance, spec.validation
        rows.append(
            [
                f'<a href="#spec-{_e(spec.spec)}">{_e(spec.spec)}</a>',
                _verdict_html(spec.holds),
                _e(spec.tlc.outcome),
                _e(_figure(spec.tlc.distinct_states)),
                _e(f"{conformance.edges_replayed:,} / {conformance.edges:,}") if conformance else "–",
                _e(f"{conformance.mismatches + conformance.enabledness_mismatches:,}")
                if conformance
                else "–",
                _e(f"{validation.accepted} / {validation.traces}") if validation else "–",
                _e(_seconds(spec.timings.total_seconds)),
            ]
        )
    head = [
        "spec",
        "verdict",
        "TLC",
        "distinct states",
        "edges replayed",
        "mismatches",
        "traces accepted",
        "s",
    ]
    return _grid(head, rows)


def _tlc_section(tlc: TlcFigures) -> str:
    rows = [
        ("outcome", _e(tlc.outcome)),
        ("distinct states", _e(_figure(tlc.distinct_states))),
        ("states generated", _e(_figure(tlc.generated_states))),
        ("depth", _e(_figure(tlc.depth))),
    ]
    if tlc.error:
        rows.append(("error", f'<span class="diff">{_e(tlc.error)}</span>'))
    text = "<h3>Model checking (TLC)</h3>\n" + _table(rows)
    return text + (_counterexample(tlc.violation) if tlc.violation else "")


def _counterexample(violation: Violation) -> str:
    violated = violation.invariant or violation.kind
    title = f"Counterexample: {violated} violated after {len(violation.trace)} states"
    previous: dict[str, Any] = {}
    rows = []
    for step in violation.trace:
        changed = [
            name for name in sorted(step.state) if name != "action" and step.state[name] != previous.get(name)
        ]
        values = state_from_itf({name: step.state[name] for name in changed})
        cells = "<br>".join(_code(f"{name} = {format_value(values[name])}") for name in changed)
        rows.append([_e(step.index), _e(_step_action(step)), cells or "(unchanged)"])
        previous = step.state
    steps = (
        _grid(["state", "action", "variables that changed"], rows)
        if rows
        else "<p>TLC printed no trace.</p>\n"
    )
    return f"<h4>{_e(title)}</h4>\n{_mermaid_block(counterexample_diagram(violation))}{steps}"


def _conformance_section(conformance: ConformFigures) -> str:
    rows = [
        ("verdict", _verdict_html(conformance.holds)),
        ("replayed on", _e(conformance.master or "this process (no Spark)")),
        ("states", _e(_figure(conformance.states))),
        ("edges replayed", _e(f"{conformance.edges_replayed:,} / {conformance.edges:,}")),
        ("edge mismatches", _e(_figure(conformance.mismatches))),
        ("enabledness mismatches", _e(_figure(conformance.enabledness_mismatches))),
    ]
    return "<h3>Conformance: spec → implementation</h3>\n" + _table(rows)


def _coverage_section(conformance: ConformFigures, validation: ValidationFigures | None) -> str:
    names = sorted(set(conformance.coverage) | set(validation.coverage if validation else {}))
    charts = bar_chart("state-graph edges replayed, per action", conformance.coverage, names)
    if validation is not None:
        charts += bar_chart("implementation walk steps, per action", validation.coverage, names)
    return f'<h3>Action coverage</h3>\n<div class="coverage">{charts}</div>\n'


def _mismatches_section(conformance: ConformFigures) -> str:
    """The first mismatches in full, with diagrams; the other examples kept, one table row each."""
    examples = conformance.examples
    if not examples:
        return ""
    total = conformance.mismatches + conformance.enabledness_mismatches
    text = f"<h3>Mismatches ({len(examples)} of {total:,} shown)</h3>\n"
    text += "".join(_mismatch(m) for m in examples[:MISMATCH_DIAGRAMS])
    rest = examples[MISMATCH_DIAGRAMS:]
    if rest:
        rows = [
            [_e(m.kind), _e(m.src), _e(_mismatch_action(m)), _diff_cells(_mismatch_lines(m))] for m in rest
        ]
        text += "<h4>More mismatches</h4>\n" + _grid(["kind", "source state", "action", "differences"], rows)
    return text


def _mismatch_action(mismatch: Mismatch) -> str:
    return action_text(mismatch.action) if mismatch.action is not None else "–"


def _mismatch_lines(mismatch: Mismatch) -> list[str]:
    lines = [*mismatch.diff, *([mismatch.error] if mismatch.error else [])]
    lines += [f"spec takes, impl does not enable: {action_text(a)}" for a in mismatch.missing]
    lines += [f"impl enables, spec does not take: {action_text(a)}" for a in mismatch.extra]
    return lines


def _diff_cells(lines: Sequence[str]) -> str:
    return "<br>".join(f'<span class="diff">{_code(line)}</span>' for line in lines)


def _mismatch(mismatch: Mismatch) -> str:
    title = f"{mismatch.kind} mismatch at state {mismatch.src}, action {_mismatch_action(mismatch)}"
    diff = "".join(f'<li class="diff">{_code(line)}</li>' for line in _mismatch_lines(mismatch))
    return (
        f"<h4>{_e(title)}</h4>\n<ul>{diff}</ul>\n{_mermaid_block(mismatch_diagram(mismatch))}"
        f"<details><summary>source state {_e(mismatch.src)}</summary>\n"
        f"{_state_table(mismatch.source_state)}</details>\n"
    )


def _validation_section(validation: ValidationFigures) -> str:
    rows = [
        ("verdict", _verdict_html(validation.holds)),
        ("walks", _e(f"{validation.traces:,} of up to {validation.steps} steps, seed {validation.seed}")),
        ("accepted by TLC", _e(f"{validation.accepted:,} / {validation.traces:,}")),
        ("rejected", _e(f"{len(validation.rejected):,}")),
    ]
    text = "<h3>Implementation traces: implementation → spec</h3>\n" + _table(rows)
    if validation.rejected:
        text += _grid(["trace", "step", "action", "reason", "diff"], map(_rejection_row, validation.rejected))
    return text


def _rejection_row(rejection: Rejection) -> list[str]:
    return [
        _e(rejection.id),
        _e(rejection.step),
        _e(rejection.action or "–"),
        _e(rejection.reason),
        _diff_cells(rejection.diff),
    ]


def _timings_section(spec: SpecReport) -> str:
    timings = spec.timings
    rows = [
        ("TLC (state graph)", timings.tlc_seconds),
        ("graph to Parquet", timings.load_seconds),
        ("replay", timings.replay_seconds),
        ("walks", timings.walk_seconds),
        ("TLC: initial states and walks", timings.validation_seconds),
        ("total", timings.total_seconds),
    ]
    reused = "<p>The state graph was reused from the run directory (same inputs).</p>\n"
    phases = dict(rows[:-1])
    chart = bar_chart(f"{spec.spec}: seconds per phase", phases, list(phases), _seconds, zero_warns=False)
    return (
        "<h3>Timings (s)</h3>\n"
        + chart
        + _table((label, _e(_seconds(s))) for label, s in rows)
        + (reused if timings.graph_reused else "")
    )


def _spec_section(spec: SpecReport) -> str:
    mutant = f", mutant implementation {spec.mutant}" if spec.mutant else ""
    text = (
        f'<section class="spec" id="spec-{_e(spec.spec)}">\n'
        f"<h2>{_e(spec.spec)} {_verdict_html(spec.holds)}</h2>\n"
        f"<p>{_code(spec.path)} with model {_code(spec.config)}{_e(mutant)}</p>\n"
    )
    text += _tlc_section(spec.tlc)
    conformance, validation = spec.conformance, spec.validation
    if conformance is None:
        text += (
            "<p>No conformance mapping for this spec: model-checked only.</p>\n"
            if spec.tlc.outcome == Outcome.OK
            else "<p>No state graph to replay: TLC did not finish with outcome ok.</p>\n"
        )
    # Figures first, then the details behind them: coverage, then each mismatch.
    text += _conformance_section(conformance) if conformance else ""
    text += _validation_section(validation) if validation else ""
    text += (
        _coverage_section(conformance, validation) + _mismatches_section(conformance) if conformance else ""
    )
    return text + _timings_section(spec) + "</section>\n"


def _zoo_section(zoo: ZooReport) -> str:
    """Each bug of the zoo: what caught it in the spec variant (TLC) and in the mutant (conformance)."""
    rows = [
        "<tr><th>bug</th><th>spec variant (TLC)</th><th>implementation mutant (conformance)</th>"
        "<th>verdict</th></tr>"
    ]
    for entry in zoo.entries:
        rows.append(
            f"<tr><td>{_code(entry.name)} ({_e(entry.protocol)}"
            + (f", reproduces {_e(entry.reproduces)}" if entry.reproduces else "")
            + f")<br>{_e(entry.title)}<br>{_code(entry.override)}</td>"
            f"<td>{_e(entry.spec.describe())}</td><td>{_e(entry.impl.describe())}</td>"
            f"<td>{_verdict_html(entry.caught)}</td></tr>"
        )
        found = [
            *([_counterexample(entry.spec.counterexample)] if entry.spec.counterexample else []),
            *([_mismatch(entry.impl.mismatch)] if entry.impl.mismatch else []),
        ]
        if found:
            rows.append(
                f'<tr><td colspan="4"><details><summary>{_e(entry.name)}: the counterexample and the'
                f" mismatch</summary>\n{''.join(found)}</details></td></tr>"
            )
    return (
        f'<section id="zoo"><h2>Bug zoo {_verdict_html(zoo.all_caught)}</h2>\n'
        "<p>Each known bug as a spec variant (spec/PMEZoo.tla, spec/HazelcastZoo.tla, selected by a"
        " definition override) that TLC"
        " must falsify, and as an implementation mutant that conformance replay must reject"
        " (docs/bugzoo.md).</p>\n"
        f"<table>{''.join(rows)}</table></section>\n"
    )


def _audit_section(report: VerifyReport) -> str:
    from conformance.audit.page import audit_section

    assert report.audit is not None
    check = report.audit
    return (
        f'<section id="audit-check"><h2>idle_verify audit {_verdict_html(check.holds)}</h2>\n'
        "<p>A generated snapshot with injected divergences (conformance/audit/generate.py), audited like"
        " Ignite's idle_verify; it holds when it finds exactly the injected ones (docs/audit.md).</p>\n"
        + audit_section(check.report, "h3")
        + "</section>\n"
    )


def html_page(report: VerifyReport) -> str:
    """The whole report page (see the module docstring)."""
    body = (
        f"<h1>tidemark verify: {_verdict_html(report.holds)}</h1>\n"
        f"<p>{_count(len(report.specs), 'spec')}. Each is model-checked by TLC; each with a mapping is also"
        f" replayed on the implementation and checked against {_count(report.traces, 'implementation walk')}"
        f" of up to {report.steps} steps (seed {report.seed})."
        f" {_e(_seconds(report.total_seconds))} s in all.</p>\n"
        + _summary(report)
        + "".join(_spec_section(spec) for spec in report.specs)
        + (_zoo_section(report.zoo) if report.zoo is not None else "")
        + (_audit_section(report) if report.audit is not None else "")
        + (campaign_section(report.campaign) if report.campaign is not None else "")
        + (reach_section(report.reachability) if report.reachability else "")
        + (deep_section(report.deep) if report.deep is not None else "")
        + (_run_section(report.run) if report.run is not None else "")
    )
    # Mermaid only where there are diagrams (counterexamples, mismatches): a page that holds without
    # any neither loads it nor credits it.
    drawn = '<pre class="mermaid">' in body
    footer = (
        f"<footer><p>Diagrams drawn by Mermaid {MERMAID_VERSION} (<code>{MERMAID_SCRIPT}</code> beside"
        " this page, MIT licence); without JavaScript they read as Mermaid source.</p></footer>\n"
        + SCRIPT_TAGS
        if drawn
        else ""
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f"<title>tidemark verify: {verdict(report.holds)}</title>\n<style>{STYLE}</style></head><body>\n"
        + body
        + footer
        + "</body></html>\n"
    )


def write_report(report: VerifyReport, directory: Path = Path("reports")) -> Path:
    """Write directory/index.html atomically (a partial file renamed over it, removed if writing fails)
    and Mermaid beside it; returns the page's path."""
    directory.mkdir(parents=True, exist_ok=True)
    write_mermaid(directory)
    page = directory / "index.html"
    partial = directory / ".index.html.partial"
    try:
        partial.write_text(html_page(report), encoding="utf-8")
        partial.replace(page)
    finally:
        partial.unlink(missing_ok=True)
    return page
