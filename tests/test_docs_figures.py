"""Figures the docs quote from runs match the runs: each number in docs/*.md marked
`<!-- figure MODEL FIELD -->` equals docs/figures.json, which scripts/figures.py writes from real TLC runs."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = json.loads((ROOT / "docs" / "figures.json").read_text(encoding="utf-8"))
MARKER = re.compile(r"<!-- figure (\S+) (\w+) -->")
NUMBER_BEFORE = re.compile(r"(\d[\d,]*)$")


def _markers() -> list[tuple[str, int, str, str, str | None]]:
    """(file, line, model, field, the number right before the marker or None) for every marker."""
    found = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in MARKER.finditer(line):
                before = NUMBER_BEFORE.search(line[: match.start()])
                name = str(path.relative_to(ROOT))
                found.append(
                    (name, number, match.group(1), match.group(2), before.group(1) if before else None)
                )
    return found


def test_every_marked_figure_matches_the_runs() -> None:
    markers = _markers()
    assert len(markers) >= 15  # the docs' model figures are marked
    wrong = []
    for name, line, model, field, quoted in markers:
        recorded = FIGURES.get(model, {}).get(field)
        if recorded is None or quoted is None or int(quoted.replace(",", "")) != recorded:
            wrong.append(f"{name}:{line}: {quoted} for {model} {field}, the run says {recorded}")
    assert wrong == [], "\n".join(wrong)


def test_the_figures_are_the_scripts_models_and_each_is_quoted() -> None:
    spec = importlib.util.spec_from_file_location("figures", ROOT / "scripts" / "figures.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert list(FIGURES) == list(script.MODELS)
    quoted = {model for _, _, model, _, _ in _markers()}
    assert quoted == set(FIGURES)
    for figures in FIGURES.values():
        assert figures["edges"] == figures["generated_states"] - figures["initial_states"]
