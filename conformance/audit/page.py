"""The audit's HTML: a section (in `tidemark verify`'s report and in `tidemark audit --report`'s page) with
the figures, the conflicts per group and per node drawn as bar charts, and the partitions with something
to say, their records in a table. Plain strings escaped where made, nothing loaded from the network
(the same conventions as conformance/report/, whose bar chart it uses)."""

from __future__ import annotations

from html import escape

from tidemark.conformance.audit.audit import AuditReport, PartitionAudit, Tally

_FINDINGS_SHOWN = 50


def _charts(title: str, tallies: dict[str, Tally]) -> str:
    from tidemark.conformance.report import bar_chart

    names = list(tallies)
    return "".join(
        bar_chart(f"{kind} conflicts per {title}", {n: getattr(t, kind) for n, t in tallies.items()}, names)
        for kind in ("counter", "hash")
    )


def _finding(p: PartitionAudit) -> str:
    what = [
        label
        for label, flag in (
            ("counter conflict", p.counter_conflict),
            ("hash conflict", p.hash_conflict),
            ("MOVING copy", p.moving),
            ("LOST", p.lost),
            ("not idle", p.not_idle),
        )
        if flag
    ]
    rows = "".join(
        f"<tr><td>{escape(r.node)}</td><td>{'yes' if r.primary else ''}</td><td>{r.state.value}</td>"
        f"<td><code>{escape(r.counter)}</code></td><td>{r.size if r.state.value == 'OWNING' else ''}</td>"
        f"<td>{r.part_hash}</td><td>{r.ver_hash}</td></tr>"
        for r in p.records
    )
    return (
        f"<h4>{escape(p.group)} partition {p.partition}: {escape(', '.join(what))}</h4>"
        "<table><tr><th>node</th><th>primary</th><th>state</th><th>counter</th><th>size</th><th>partHash</th>"
        f"<th>partVerHash</th></tr>{rows}</table>\n"
    )


def audit_section(report: AuditReport, heading: str = "h2") -> str:
    """The figures, the charts and the findings of one audit."""
    findings = report.findings()
    figures = (
        f"{report.rows:,} rows, {report.copies:,} copies, {len(report.partitions):,} partitions in"
        f" {report.groups} groups, audited on {escape(report.engine)} in {report.seconds:.1f} s:"
        f" {report.counter_conflicts} counter conflicts, {report.hash_conflicts} hash conflicts,"
        f" {report.moving} partitions with a MOVING copy, {report.lost} LOST, {report.not_idle} not idle."
    )
    shown = "".join(_finding(p) for p in findings[:_FINDINGS_SHOWN])
    more = (
        f"<p>and {len(findings) - _FINDINGS_SHOWN} more (see --json or --dump).</p>"
        if len(findings) > _FINDINGS_SHOWN
        else ""
    )
    return (
        f'<section id="audit"><{heading}>idle_verify audit of {escape(report.snapshot)}</{heading}>\n'
        f"<p>{figures}</p>\n"
        "<p>Per node: the copies whose counter or hashes differ from their partition's primary copy.</p>\n"
        f"{_charts('group', report.per_group)}{_charts('node', report.per_node)}\n{shown}{more}</section>\n"
    )


def audit_page(report: AuditReport) -> str:
    """`tidemark audit --report`'s page."""
    from tidemark.conformance.report import STYLE

    verdict = "conflicts" if report.conflict else "no conflicts"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f"<title>tidemark audit: {verdict}</title>\n<style>{STYLE}</style></head><body>\n"
        f"<h1>tidemark audit: {verdict}</h1>\n{audit_section(report)}</body></html>\n"
    )
