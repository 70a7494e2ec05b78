"""The HTML page of a scenario run: the timeline, the checks and the diagram, loading nothing from the
network (Mermaid is written beside the page, conformance/mermaid.py); without JavaScript the diagram's
source stays readable."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable

from tidemark.conformance.mermaid import SCRIPT_TAGS
from tidemark.conformance.scenarios.result import ScenarioResult
from tidemark.conformance.scenarios.views.text import HEADERS, idle_verify_text, row_cells

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;white-space:pre-line}
td{font-family:ui-monospace,monospace;font-size:90%}
pre.mermaid{background:#f6f8fa;border:1px solid #ddd;padding:.6em}
.holds{color:#17692b;font-weight:bold}.fails{color:#b3121f;font-weight:bold}
"""


def _cells(tag: str, values: Iterable[str]) -> str:
    return "<tr>" + "".join(f"<{tag}>{html.escape(v)}</{tag}>" for v in values) + "</tr>"


def timeline_html(result: ScenarioResult, diagram: str) -> str:
    """The timeline, the checks and the diagram's source on one page."""
    verdict = ("holds", "holds") if result.passed else ("fails", "FAILS")
    rows = [_cells("th", [*HEADERS, *result.servers])]
    rows += [_cells("td", row_cells(row, result.servers)) for row in result.timeline]
    checks = [_cells("th", ["expectation", "expected", "actual", ""])]
    checks += [
        _cells("td", [c.path, json.dumps(c.expected), json.dumps(c.actual), "holds" if c.holds else "FAILS"])
        for c in result.checks
    ]
    failure = f"<p class='fails'>{html.escape(result.failure)}</p>" if result.failure else ""
    if result.idle_verify:
        failure += f"<p>{html.escape(idle_verify_text(result.idle_verify))}</p>"
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>scenario {html.escape(result.name)}</title>"
        f"<style>{_STYLE}</style></head><body>\n"
        f"<h1>scenario {html.escape(result.name)}: <span class='{verdict[0]}'>{verdict[1]}</span></h1>\n"
        f"<p>{html.escape(result.description)}</p><p>counter: {html.escape(result.counter)}</p>{failure}\n"
        f"<h2>Timeline</h2><table>{''.join(rows)}</table>\n"
        f"<h2>Expectations</h2><table>{''.join(checks)}</table>\n"
        f"<h2>Message flow</h2><pre class='mermaid'>{html.escape(diagram)}</pre>\n"
        + SCRIPT_TAGS
        + "</body></html>\n"
    )
