"""Tests for tidemark.conformance.tlc.runner: real TLC runs on the tiny specs in tests/fixtures/tlc/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.output import Outcome, TlcResult, parse_output
from tidemark.conformance.tlc.runner import JAR_ENV, TlcOptions, TlcRun, find_jar, run_tlc, tlc_command

pytestmark = pytest.mark.tlc

FIXTURES = (Path(__file__).parent / "fixtures" / "tlc").resolve()
OK_SPEC = FIXTURES / "Ok.tla"
SMALL = TlcOptions(heap="256m", timeout=60)


def running_tlc_on(spec: Path) -> list[str]:
    """Command lines of live processes that mention `spec` (pgrep -f)."""
    found = subprocess.run(["pgrep", "-a", "-f", str(spec)], capture_output=True, text=True, check=False)
    return found.stdout.splitlines()


@pytest.fixture(scope="module")
def ok_run() -> tuple[TlcRun, list[str]]:
    lines: list[str] = []
    return run_tlc(OK_SPEC, options=SMALL, on_line=lines.append), lines


def test_ok_run_and_its_figures(ok_run: tuple[TlcRun, list[str]]) -> None:
    run, _ = ok_run
    assert run.exit_code == 0, run.output
    assert not run.timed_out
    assert 0 < run.seconds < 60
    result = parse_output(run)
    assert result.outcome == Outcome.OK
    assert (result.distinct_states, result.generated_states, result.depth) == (9, 14, 5)
    assert result.error is None


def test_ok_run_command_and_streamed_lines(ok_run: tuple[TlcRun, list[str]]) -> None:
    run, lines = ok_run
    command = run.command
    assert command[-1] == str(OK_SPEC)
    assert command[command.index("-config") + 1] == "Ok.cfg"
    for flag, value in [("-fp", "1"), ("-seed", "1"), ("-workers", "1")]:
        assert command[command.index(flag) + 1] == value
    assert "-tool" in command
    assert "-Xmx256m" in command
    metadir = Path(command[command.index("-metadir") + 1])
    assert not metadir.exists()  # the scratch metadir is removed after the run
    # The callback saw every line, without line ends.
    assert lines == run.output.splitlines()
    assert "Model checking completed. No error has been found." in lines


def test_timeout_kills_tlc(tmp_path: Path) -> None:
    # A private copy: its path names only this run's TLC, even if another test session runs beside this one.
    spec = tmp_path / "Unbounded.tla"
    for name in ("Unbounded.tla", "Unbounded.cfg"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    assert running_tlc_on(spec) == []
    seen_running: list[list[str]] = []

    def on_line(line: str) -> None:
        if not seen_running:  # TLC's first line: the JVM is up
            seen_running.append(running_tlc_on(spec))

    run = run_tlc(spec, options=TlcOptions(heap="256m", timeout=3), on_line=on_line)
    # The pgrep pattern did match TLC while it ran, so the check below is meaningful.
    assert seen_running and len(seen_running[0]) == 1 and "tlc2.TLC" in seen_running[0][0]
    assert run.timed_out
    assert run.exit_code == -9  # SIGKILL
    assert 3 <= run.seconds < 20
    result = parse_output(run)
    assert result.outcome == Outcome.TIMEOUT
    assert result.error is not None
    assert result.error.startswith("TLC did not finish within its timeout of 3 s: stopped after 3.")
    assert result.distinct_states is None
    assert running_tlc_on(spec) == []


def test_jar_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jar = tmp_path / "my-tla2tools.jar"
    jar.write_bytes(b"")
    monkeypatch.setenv(JAR_ENV, str(jar))
    assert find_jar() == jar


def test_jar_variable_pointing_to_a_missing_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jar"
    monkeypatch.setenv(JAR_ENV, str(missing))
    with pytest.raises(TidemarkError) as caught:
        run_tlc(OK_SPEC, options=SMALL)
    assert "TLA2TOOLS_JAR" in str(caught.value)
    assert str(missing) in str(caught.value)
    assert caught.value.message == "no such file"


def test_java_missing_from_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(TidemarkError) as caught:
        run_tlc(OK_SPEC, options=SMALL)
    assert "java" in caught.value.message
    assert "Java 17" in str(caught.value)


def test_missing_spec_and_missing_config(tmp_path: Path) -> None:
    with pytest.raises(TidemarkError) as caught:
        run_tlc(tmp_path / "Nope.tla", options=SMALL)
    assert caught.value.source == str(tmp_path / "Nope.tla")
    with pytest.raises(TidemarkError) as caught:
        run_tlc(OK_SPEC, tmp_path / "Nope.cfg", options=SMALL)
    assert caught.value.source == str(tmp_path / "Nope.cfg")
    assert caught.value.message == "no such model config"


def test_config_in_another_directory(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    config = models / "OnlyX.cfg"
    config.write_text("INIT Init\nNEXT Next\nCONSTRAINT OnlyX\n", encoding="utf-8")
    run = run_tlc(OK_SPEC, config, options=SMALL)
    result = parse_output(run)
    assert result.outcome == Outcome.OK, run.output
    # The constraint keeps y = 0: 3 distinct states instead of Ok.cfg's 9, so this config was the one read.
    assert (result.distinct_states, result.generated_states, result.depth) == (3, 6, 3)
    assert os.path.isabs(run.command[run.command.index("-config") + 1]) is False


@pytest.fixture(scope="module")
def simulation() -> tuple[TlcRun, TlcResult]:
    run = run_tlc(OK_SPEC, options=SMALL.model_copy(update={"mode": "simulate", "traces": 5, "depth": 10}))
    return run, parse_output(run)


def test_simulation_mode(simulation: tuple[TlcRun, TlcResult]) -> None:
    run, result = simulation
    assert result.outcome == Outcome.OK, run.output
    assert run.exit_code == 0
    command = run.command
    assert command[command.index("-simulate") + 1] == "num=5"
    assert command[command.index("-depth") + 1] == "10"
    # 5 traces of 10 states each from the one initial state (the spec never deadlocks).
    assert "51 states generated" in run.output


def test_simulation_figures(simulation: tuple[TlcRun, TlcResult]) -> None:
    _, result = simulation
    assert result.generated_states == 51


def test_depth_outside_simulation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TidemarkError, match="-depth applies to simulation only"):
        tlc_command(OK_SPEC, FIXTURES / "Ok.cfg", TlcOptions(depth=5), tmp_path)


def test_dump_dot_writes_the_state_graph(tmp_path: Path) -> None:
    dot = tmp_path / "graphs" / "ok.dot"
    dot.parent.mkdir()
    run = run_tlc(OK_SPEC, options=SMALL.model_copy(update={"dump_dot": dot}))
    result = parse_output(run)
    assert result.outcome == Outcome.OK, run.output
    lines = dot.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "strict digraph DiskGraph {"
    assert sum(" -> " in line for line in lines) == 13  # 14 generated - 1 initial
    assert sum("style = filled" in line for line in lines) == 1
    assert sum("[label=" in line and " -> " not in line for line in lines) == 9
