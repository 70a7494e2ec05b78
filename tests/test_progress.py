"""Progress on stderr: a line per phase and heartbeats without a terminal, nothing with -q or --json,
TLC's lines with -v; --version."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from tidemark.conformance.cli import progress as progress_module
from tidemark.conformance.cli.main import main
from tidemark.conformance.cli.progress import progress

ROOT = Path(__file__).resolve().parent.parent


def plain_console() -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, force_terminal=False, width=200), text


def test_without_a_terminal_each_phase_is_a_line_and_long_ones_beat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "HEARTBEAT_SECONDS", 0.05)
    console, text = plain_console()
    with progress(console, json=False, quiet=False, verbose=False) as status:
        status.phase("replaying 10 edges")
        status.line("Progress(3) at 2026-01-01: 7 states generated")
        status.line("an unrelated line of TLC")
        time.sleep(0.3)
    shown = text.getvalue()
    assert shown.splitlines()[0] == "tidemark: replaying 10 edges"
    assert "tidemark: still replaying 10 edges (0 s; TLC: Progress(3) at 2026-01-01" in shown
    assert "unrelated" not in shown
    time.sleep(0.2)
    assert text.getvalue() == shown  # the heartbeat ended with the run


@pytest.mark.parametrize(("json", "quiet"), [(True, False), (False, True)])
def test_json_and_quiet_show_nothing(json: bool, quiet: bool) -> None:
    console, text = plain_console()
    with progress(console, json=json, quiet=quiet, verbose=False) as status:
        status.phase("a phase")
        status.line("Progress(1)")
    assert text.getvalue() == ""


def test_verbose_passes_tlc_through() -> None:
    console, text = plain_console()
    with progress(console, json=False, quiet=False, verbose=True) as status:
        status.line("Semantic processing of module Naturals")
    assert "Semantic processing of module Naturals" in text.getvalue()


@pytest.mark.tlc
def test_check_in_a_pipe_says_its_phase(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(ROOT / "tests" / "fixtures" / "tlc" / "Ok.tla")
    assert main(["check", spec, "--heap", "256m"]) == 0
    assert f"tidemark: model checking {spec} with TLC" in capsys.readouterr().err
    assert main(["check", spec, "--heap", "256m", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("tidemark ")
