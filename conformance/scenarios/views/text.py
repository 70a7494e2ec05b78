"""A timeline row as text: the cells the terminal table and the HTML page share, and the table itself."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from tidemark.conformance.scenarios.result import (
    CounterView,
    IdleVerifyView,
    MessageEvent,
    NodeSnapshot,
    ScenarioResult,
    TimelineRow,
    TopologyView,
)

HEADERS = ("#", "step", "messages", "in flight", "topology")


def counter_text(view: CounterView) -> str:
    """e.g. `lwm=0 hwm=5 (3,2)`: the items are the out-of-order ranges (start, delta)."""
    items = " ".join(f"({start},{delta})" for start, delta in view.items)
    return f"lwm={view.lwm} hwm={view.hwm}" + (f" {items}" if items else "")


def node_cell(snapshot: NodeSnapshot) -> str:
    """A server's counters per partition, each followed by its copy's state and where its WAL archive was
    truncated (pme)."""
    if snapshot.state == "down":
        # Its memory is gone; the counters it will have come from its WAL at restart. Copy states (pme)
        # are kept on the disk.
        return "\n".join(["(down)", *(f"p{p}: {text}" for p, text in snapshot.copies.items())])
    parts = sorted(set(snapshot.counters) | set(snapshot.copies))
    several = len(parts) > 1
    lines = []
    for p in parts:
        counter = snapshot.counters.get(p)
        texts = [counter_text(counter)] if counter else []
        texts += [snapshot.copies[p]] if p in snapshot.copies else []
        texts += [f"history {snapshot.history[p]}"] if p in snapshot.history else []
        text = " ".join(texts)
        lines.append(f"p{p}: {text}" if several else text)
    if snapshot.state != "alive":
        lines.insert(0, f"({snapshot.state})")
    return "\n".join(lines)


def arrow_text(event: MessageEvent) -> str:
    return f"{event.sender}->{event.receiver} {event.label}"


def owners_text(owners: Sequence[str]) -> str:
    return ", ".join(owners) or "none"


def topology_text(view: TopologyView) -> str:
    """e.g. `ver 3.0` and the owner list; while an exchange is pending
    `ver 3.1 (exchange pending: affinity; ready 3.0)`; with protocol pme the coordinator last."""
    text = f"ver {view.version}"
    if view.ready != view.version:
        events = f": {', '.join(view.pending)}" if view.pending else ""
        text += f" (exchange pending{events}; ready {view.ready})"
    lists = {tuple(owners) for owners in view.owners.values()}
    if len(lists) == 1:
        lines = [text, f"owners {owners_text(next(iter(lists)))}"]
    else:
        lines = [text, *(f"p{p} owners {owners_text(o)}" for p, o in view.owners.items())]
    if view.coordinator:
        lines.append(f"coordinator {view.coordinator}")
    return "\n".join(lines)


def messages_cell(row: TimelineRow) -> str:
    marks = {"delivered": "in ", "sent": "out", "lost": "lost"}
    return "\n".join(f"{marks[e.kind]} {arrow_text(e)}" for e in row.messages)


def step_cell(row: TimelineRow) -> str:
    return row.step + (f"\n{row.note}" if row.note else "")


def row_cells(row: TimelineRow, servers: Sequence[str]) -> list[str]:
    """The row's cells under HEADERS and then one per server."""
    index = "" if row.index is None else str(row.index)
    nodes = [node_cell(row.nodes[n]) for n in servers]
    return [
        index,
        step_cell(row),
        messages_cell(row),
        str(row.in_flight),
        topology_text(row.topology),
        *nodes,
    ]


def idle_verify_text(report: IdleVerifyView) -> str:
    """e.g. `idle_verify: clean; skipped p0: s3 MOVING`; with conflicts `idle_verify: CONFLICTS; ...`"""
    found = [
        f"counter conflict p{p}: "
        + ", ".join(f"{n} lwm={c.lwm}" + "".join(f" ({s},{d})" for s, d in c.items) for n, c in nodes.items())
        for p, nodes in report.counter_conflicts.items()
    ]
    found += [
        f"hash conflict p{p}: " + ", ".join(f"{n} {h}" for n, h in nodes.items())
        for p, nodes in report.hash_conflicts.items()
    ]
    found += [
        f"skipped p{p}: " + ", ".join(f"{n} {why}" for n, why in nodes.items())
        for p, nodes in report.skipped.items()
    ]
    if report.lost:
        found.append("lost " + ", ".join(f"p{p}" for p in report.lost))
    return "; ".join(["idle_verify: " + ("clean" if report.clean else "CONFLICTS"), *found])


def timeline_table(result: ScenarioResult) -> Table:
    """One row per step: the step, messages in / out / lost, messages in flight, the topology, every
    server's counters (and copy states); with protocol pme idle_verify's final report as the caption."""
    table = Table(
        *HEADERS,
        *result.servers,
        title=f"scenario {result.name}",
        caption=idle_verify_text(result.idle_verify) if result.idle_verify else None,
    )
    for row in result.timeline:
        table.add_row(*row_cells(row, result.servers))
    return table
