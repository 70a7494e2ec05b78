"""Where a scenario run is written: the Mermaid diagram and the HTML page (with Mermaid beside it), one
file per format named by its suffix, and the --json summary.

`--out X.mmd` and `--out X.html` alike name both files, X.mmd and X.html: neither ever overwrites the
other. The paths are checked before the run, and each file is written under a temporary name and renamed,
so a failure leaves no half-written output.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mermaid import write_mermaid
from tidemark.conformance.scenarios.result import ScenarioResult
from tidemark.conformance.scenarios.views.diagram import mermaid_diagram
from tidemark.conformance.scenarios.views.page import timeline_html

DEFAULT_OUT = Path("reports/scenarios")
DIAGRAM, PAGE = ".mmd", ".html"


def output_paths(out: Path | None, name: str) -> tuple[Path, Path]:
    """The diagram's and the page's paths for `--out` (default reports/scenarios/NAME.mmd), or a
    TidemarkError (exit 2) when they cannot be written."""
    base = out if out is not None else DEFAULT_OUT / f"{name}{DIAGRAM}"
    if base.suffix not in (DIAGRAM, PAGE):
        raise TidemarkError(
            f"{base} names neither the diagram nor the page",
            source="--out",
            expected=f"a path ending in {DIAGRAM} or {PAGE} (both files are written, one with each suffix)",
        )
    paths = base.with_suffix(DIAGRAM), base.with_suffix(PAGE)
    for path in paths:
        if path.is_dir():
            raise TidemarkError(f"{path} is a directory", source="--out", expected="a file path")
    existing = next(p for p in (base.parent, *base.parent.parents) if p.exists() or p == Path(p.anchor))
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise TidemarkError(
            f"cannot write under {existing}", source="--out", expected="a path in a writable directory"
        )
    return paths


def write_outputs(result: ScenarioResult, out: Path) -> tuple[Path, Path]:
    """The Mermaid diagram and the timeline page for `out` (see `output_paths`), with Mermaid beside
    them to draw the diagram."""
    diagram_path, page_path = output_paths(out, result.name)
    diagram_path.parent.mkdir(parents=True, exist_ok=True)
    write_mermaid(diagram_path.parent)
    diagram = mermaid_diagram(result)
    _write_atomically(diagram_path, diagram)
    _write_atomically(page_path, timeline_html(result, diagram))
    return diagram_path, page_path


def _write_atomically(path: Path, text: str) -> None:
    # A temporary name of this writer's own: runs of the same scenario side by side write the same files.
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def scenario_summary(result: ScenarioResult) -> dict[str, Any]:
    """The --json object: the verdict, the checks, and every node's final counters, data and states."""
    return result.model_dump(mode="json", by_alias=True, exclude={"timeline", "description"})
