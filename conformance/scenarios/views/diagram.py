"""The Mermaid sequence diagram of a scenario run: its messages, and notes on what changed."""

from __future__ import annotations

import re

from tidemark.conformance.scenarios.result import NodeSnapshot, ScenarioResult, TopologyView
from tidemark.conformance.scenarios.views.text import counter_text, owners_text

# The server a step runs on, in its text, e.g. "Rebalance(node=s3, part=0)".
_STEP_NODE = re.compile(r"\bnode=(\w+)")
# One pass: replacing '#' and then ';' would mangle the ';' of the '#35;' just written.
_MERMAID_ENTITIES = str.maketrans({"#": "#35;", ";": "#59;"})


def mermaid_text(text: str) -> str:
    """Text safe in a Mermaid message or note: ';' and '#' would end a statement or start an entity."""
    return " ".join(text.translate(_MERMAID_ENTITIES).split())


# Protocols whose servers keep nothing across a crash (Hazelcast's members hold their data in memory).
MEMORY_ONLY = ("hazelcast", "ncache")


def _state_text(before: NodeSnapshot, after: NodeSnapshot, protocol: str) -> str | None:
    """A note on what a step did to a server: crash, restart, its counters, its copies' states (pme)."""
    if after.state == "down" and before.state != "down":
        return "crashed: memory lost" + ("" if protocol in MEMORY_ONLY else ", WAL kept")
    if after == before:
        return None
    prefix = "restarted from its WAL: " if after.state == "restarted" and before.state != "restarted" else ""
    changes = [
        f"p{p} {counter_text(c)}" for p, c in after.counters.items() if c != before.counters.get(p) or prefix
    ]
    for p in sorted(set(before.copies) | set(after.copies)):
        old, new = before.copies.get(p, "EVICTED"), after.copies.get(p, "EVICTED")
        if old != new:
            changes.append(f"p{p} {old} → {new}")
    # An evicted copy's history goes back to 0 with it: only truncations are news.
    truncated = [f"p{p} history {h}" for p, h in after.history.items() if h > before.history.get(p, 0)]
    if truncated:
        changes.append("WAL archive truncated: " + ", ".join(truncated))
    return prefix + "; ".join(changes)


def _topology_note(before: TopologyView, after: TopologyView) -> str | None:
    """pme: a note on a topology change - a new version whose exchange is pending (the late affinity
    switch named as such), or the owner lists a completed exchange switched to."""
    if after.version != before.version:
        if "affinity" in after.pending and "affinity" not in before.pending:
            return (
                "late affinity switch: rebalancing done and the owner order changes: exchange on "
                f"ver {after.version}"
            )
        return f"ver {after.version}: exchange pending ({', '.join(after.pending)})"
    if after.owners == before.owners:
        return None
    switched = []
    for p, owners in after.owners.items():
        old = before.owners.get(p, [])
        if owners != old:
            primary = f" (primary {old[0] if old else 'none'} → {owners[0] if owners else 'none'})"
            switched.append(
                f"p{p} owners {owners_text(old)} → {owners_text(owners)}"
                + (primary if old[:1] != owners[:1] else "")
            )
    return "; ".join(switched)


def mermaid_diagram(result: ScenarioResult) -> str:
    """The message flow: each message drawn when it is delivered (so reordering shows) or lost, a note
    for steps that deliver nothing, a note with a server's counters (pme: copy states, WAL truncation)
    whenever they change and, with protocol pme, a note on each new topology version and owner list."""
    servers = result.servers
    everyone = f"{result.client},{servers[-1]}"
    lines = ["sequenceDiagram", f"    participant {result.client} as {result.client} (client)"]
    lines += [f"    participant {s}" for s in servers]
    previous = result.timeline[0]
    for row in result.timeline[1:]:
        shown = [e for e in row.messages if e.kind != "sent"]
        for e in shown:
            arrow, lost = ("->>", "") if e.kind == "delivered" else ("-x", " (lost)")
            lines.append(f"    {e.sender}{arrow}{e.receiver}: {row.index}. {mermaid_text(e.label)}{lost}")
        if not shown:
            named = _STEP_NODE.search(row.step)
            node = named.group(1) if named and named.group(1) in servers else None
            where = node or (result.client if row.step.startswith("Tx") else f"{servers[0]},{servers[-1]}")
            lines.append(f"    Note over {where}: {row.index}. {mermaid_text(row.step)}")
        if row.note:
            lines.append(f"    Note over {everyone}: {mermaid_text(row.note)}")
        change = _topology_note(previous.topology, row.topology) if result.protocol == "pme" else None
        if change:
            lines.append(f"    Note over {everyone}: {mermaid_text(change)}")
        for node in servers:
            text = _state_text(previous.nodes[node], row.nodes[node], result.protocol)
            if text:
                lines.append(f"    Note over {node}: {mermaid_text(text)}")
        previous = row
    return "\n".join(lines) + "\n"
