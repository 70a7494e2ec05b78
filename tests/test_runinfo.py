"""The inputs a run is about: a spec with the modules it extends or instantiates, and its config."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.conformance.runinfo import _java, spec_inputs

ROOT = Path(__file__).resolve().parent.parent


def test_a_spec_brings_the_modules_it_uses(tmp_path: Path) -> None:
    (tmp_path / "A.tla").write_text(
        "---- MODULE A ----\nEXTENDS Naturals, B\nC == INSTANCE C WITH x <- 1\n====\n"
    )
    (tmp_path / "B.tla").write_text("---- MODULE B ----\nEXTENDS A\n====\n")  # a cycle ends
    (tmp_path / "C.tla").write_text("---- MODULE C ----\n====\n")
    (tmp_path / "A.cfg").write_text("INIT Init\n")
    found = spec_inputs(tmp_path / "A.tla", tmp_path / "A.cfg")
    assert sorted(p.name for p in found) == ["A.cfg", "A.tla", "B.tla", "C.tla"]  # Naturals: TLC's own


def test_pme_uses_the_counter_and_transaction_specs() -> None:
    names = {p.name for p in spec_inputs(ROOT / "spec" / "PME.tla", ROOT / "spec" / "PME.cfg")}
    assert {"PME.tla", "PME.cfg", "UpdateCounter.tla", "TxCounters.tla"} <= names


def test_the_java_version_is_javas_own_line_even_with_java_tool_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xss2m")
    version = _java()
    assert version is not None and "version" in version and not version.startswith("Picked up")
