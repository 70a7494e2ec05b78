"""`tidemark verify`'s one-screen terminal summary."""

from __future__ import annotations

from rich.table import Table

from tidemark.conformance.report.diagrams import verdict
from tidemark.conformance.report.render import figure, seconds
from tidemark.conformance.verify import VerifyReport


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
            figure(spec.tlc.distinct_states),
            f"{conformance.edges_replayed:,}/{conformance.edges:,}" if conformance else "–",
            f"{conformance.mismatches + conformance.enabledness_mismatches:,}" if conformance else "–",
            f"{validation.accepted}/{validation.traces}" if validation else "–",
            seconds(spec.timings.tlc_seconds) + (" (reused)" if spec.timings.graph_reused else ""),
            seconds(spec.timings.replay_seconds),
        )
    return table
