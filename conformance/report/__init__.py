"""The main job's report: reports/index.html (page.py, from the jinja2 templates in templates/), its
diagrams (diagrams.py) and charts (charts.py), and the terminal summary of `tidemark verify`
(terminal.py)."""

from tidemark.conformance.report.charts import bar_chart
from tidemark.conformance.report.diagrams import (
    action_text,
    counterexample_diagram,
    mismatch_diagram,
    verdict,
)
from tidemark.conformance.report.page import html_page, write_report
from tidemark.conformance.report.render import STYLE
from tidemark.conformance.report.terminal import summary_table

__all__ = [
    "STYLE",
    "action_text",
    "bar_chart",
    "counterexample_diagram",
    "html_page",
    "mismatch_diagram",
    "summary_table",
    "verdict",
    "write_report",
]
