"""A scenario run side by side on tidemark's implementation and a real system: the terminal table (one
row per step, each server's copy on both, the differences with their explanation, the first one marked)
and the --json object that carries both runs."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from tidemark.conformance.scenarios.compare import Difference, Observed, SideBySide
from tidemark.conformance.scenarios.outputs import scenario_summary


def _member_text(view: dict[str, Any]) -> str:
    """Hazelcast, e.g. `r1 p10 map1 (3,3)* {0: 1}`: replica index, free permits, per namespace with a fragment
    or entries its versions (* dirty) and entries."""
    parts = [f"r{view['replica']} p{view['permits']}"]
    for ns, f in sorted((k, v) for k, v in view.items() if isinstance(v, dict)):
        if f["versions"] or f["entries"]:
            vector = "(" + ",".join(map(str, f["versions"])) + ")" + ("*" if f["dirty"] else "")
            data = ", ".join(f"{k}: {v}" for k, v in f["entries"].items())
            parts.append(f"{ns} {vector} {{{data}}}")
    return " ".join(parts)


def _server_text(view: dict[str, Any]) -> str:
    """e.g. `OWNING lwm=5 hwm=5 (3,2) {1: v1, 4: v4}`; `down` for a server that is down."""
    if view.get("state") == "down":
        return "down"
    if "replica" in view:
        return _member_text(view)
    parts = []
    for key in sorted(k for k in view if k.startswith("p") and k[1:].isdigit()):
        copy = view[key]
        counter = f" lwm={copy['lwm']} hwm={copy['hwm']}" if "lwm" in copy else ""
        items = "".join(f" ({s},{d})" for s, d in copy.get("items", []))
        parts.append(f"{key} {copy['state']}{counter}{items}")
    data = ", ".join(f"{k}: {v}" for k, v in view.get("data", {}).items())
    prefix = "" if view.get("state") == "alive" else f"{view.get('state')} "
    return prefix + "; ".join(parts) + (f" {{{data}}}" if data else "")


def _marks(diffs: list[Difference], first: Difference | None) -> str:
    """The step's differences: unexplained ones each with both values (red), explained ones grouped by
    what explains them; the first difference of the run marked FIRST."""
    lines = [
        ("[bold]FIRST[/] " if d is first else "")
        + f"[bold red]{escape(f'{d.path}: {d.impl!r} / {d.real!r}')} UNEXPLAINED[/]"
        for d in diffs
        if d.why is None
    ]
    for why in dict.fromkeys(d.why for d in diffs if d.why is not None):
        group = [d for d in diffs if d.why == why]
        mark = "[bold]FIRST[/] " if first in group else ""
        lines.append(f"{mark}{escape(', '.join(d.path for d in group))} [dim]({why})[/]")
    return "\n".join(lines)


def side_by_side_table(result: SideBySide, system: str) -> Table:
    """One row per step: the step, every server on the implementation and on the real system, and what
    differs (the first difference marked FIRST; unexplained ones in red)."""
    servers = result.real.servers
    table = Table("#", "step", *servers, "differences", title=f"scenario {result.real.name}: impl / {system}")
    first = result.first_difference
    steps = {row.index: row.step for row in result.real.timeline}
    for index, impl, real in result.observed:
        diffs = [d for d in result.differences if d.step == index]
        cells = []
        for node in servers:
            a, b = _server_text(impl.get(node, {})), _server_text(real.get(node, {}))
            differs = any(d.path.startswith(f"{node}.") for d in diffs)
            line = escape(b) if not differs else f"[red]{escape(b)}[/]"
            cells.append(f"impl   {escape(a)}\n{system[:6]:<6} {line}")
        table.add_row(
            "" if index is None else str(index),
            escape(steps.get(index, "")),
            *cells,
            _marks(diffs, first),
        )
    return table


def side_by_side_summary(result: SideBySide, system: str) -> dict[str, Any]:
    """The --json object: the verdict, both runs (as `tidemark scenario --json` gives each), every
    observation of both after every step, the differences and the expectations explained or failing."""

    def diff_json(d: Difference) -> dict[str, Any]:
        return {"step": d.step, "path": d.path, "impl": d.impl, system: d.real, "why": d.why}

    def row(index: int | None, impl: Observed, real: Observed) -> dict[str, Any]:
        return {"step": index, "impl": impl, system: real}

    return {
        "name": result.real.name,
        "system": system,
        "passed": result.passed,
        "first_difference": diff_json(result.first_difference) if result.first_difference else None,
        "unexplained": [diff_json(d) for d in result.unexplained],
        "differences": [diff_json(d) for d in result.differences],
        "failing_checks": [c.model_dump(mode="json") for c in result.failing_checks],
        "explained_checks": [{**c.model_dump(mode="json"), "why": why} for c, why in result.explained_checks],
        "unused_notes": result.unused_notes,
        "impl": scenario_summary(result.impl),
        system: scenario_summary(result.real),
        "observed": [row(i, a, b) for i, a, b in result.observed],
    }
