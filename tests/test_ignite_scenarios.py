"""Every shipped scenario on a real Ignite cluster, side by side with tidemark's implementation: it passes
there (each expectation holds on Ignite or the file's notes say why not, each difference from impl is one
of Ignite's known behaviours) or the file says why it cannot run there. One harness JVM for all of them
(a fresh cluster and fresh persistence directories each): about 1-2 minutes.

Also what a cluster that cannot start gives (a clear IgniteError, exit 3) and leaves behind (nothing),
and a seeded handful of random walks on Spark (two harness JVMs)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.scenarios import load_scenario
from tidemark.conformance.scenarios.adapters.ignite import shared_harness
from tidemark.conformance.scenarios.compare import side_by_side
from tidemark.conformance.scenarios.real import cannot_run
from tidemark.conformance.systems.ignite import PORTS_PER_HARNESS, IgniteError, IgniteHarness, free_base_port
from tidemark.conformance.systems.ignite_differences import explain

pytestmark = pytest.mark.ignite

SCENARIOS = sorted(Path("scenarios").glob("*.json"))


@pytest.fixture(scope="module")
def harness() -> Iterator[IgniteHarness]:
    with shared_harness() as h:
        yield h


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: Path(p).stem)
def test_every_scenario_passes_on_ignite_or_says_why_it_cannot(path: Path, harness: IgniteHarness) -> None:
    scenario = load_scenario(path)
    reason = cannot_run(scenario, "ignite")
    if reason is not None:
        assert len(reason) > 20, "the reason must say why"
        return
    result = side_by_side(scenario, "ignite", explain)
    failing = [f"{c.path}: expected {c.expected!r}, Ignite {c.actual!r}" for c in result.failing_checks]
    unexplained = [f"{d.where}: impl {d.impl!r}, Ignite {d.real!r}" for d in result.unexplained]
    assert result.real.failure is None, result.real.failure
    assert not failing, "\n".join(failing)
    assert not unexplained, "\n".join(unexplained)
    assert result.passed
    assert result.real.system == "ignite" and len(result.observed) == len(scenario.steps) + 1


def test_the_command_shows_both_runs_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "f1.mmd"
    code = main(
        [
            "scenario",
            "scenarios/figure1-backup-reordering.json",
            "--system",
            "ignite",
            "--json",
            "--out",
            str(out),
        ]
    )
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["passed"] and answer["run"]
    assert answer["impl"]["system"] == "impl" and answer["ignite"]["system"] == "ignite"
    assert answer["ignite"]["nodes"]["s2"]["counters"]["0"]["lwm"] == 5
    rows = answer["observed"]
    assert rows[0]["step"] is None and rows[-1]["ignite"]["s2"]["p0"]["lwm"] == 5
    # impl and Ignite agree at every step of figure 1 (protocol 2pc has no coordinator to compare)
    assert answer["differences"] == [] and answer["first_difference"] is None
    assert Path(answer["diagram"]).exists() and Path(answer["page"]).exists()


def _jvms() -> set[int]:
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"tidemark.ignite.Harness" in cmdline and int(pid) != os.getpid():
            found.add(int(pid))
    return found


def test_taken_ports_give_a_clear_error_and_leave_nothing_behind() -> None:
    before = _jvms()
    base = free_base_port()
    sockets = []
    try:
        for port in range(base, base + PORTS_PER_HARNESS):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", port))
            s.listen()
            sockets.append(s)
        h = IgniteHarness(timeout=120)
        with pytest.raises(IgniteError) as error, h:
            h.start(1, partitions=1, backups=0, base_port=base)
        work = h.work_dir
    finally:
        for s in sockets:
            s.close()
    assert error.value.exit_code == 3
    assert "start" in str(error.value)
    assert work is None or not work.exists()
    assert _jvms() <= before


def test_too_small_a_heap_gives_a_clear_error_and_leaves_nothing_behind() -> None:
    before = _jvms()
    h = IgniteHarness(timeout=120, heap="16m")
    with pytest.raises(IgniteError) as error, h:
        h.start(1, partitions=1, backups=0)
    assert error.value.exit_code == 3
    assert h.work_dir is None
    assert _jvms() <= before
