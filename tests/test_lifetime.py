"""Nothing of a run outlives it: no TLC or Spark process, no temporary directory, whether the run ends
normally, fails, is interrupted (Ctrl-C, SIGTERM) or killed (SIGKILL); and one run at a time per run
directory (conformance/scratch.py, conformance/guardian.py, conformance/locks.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, Isolated, eventually

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.guardian import process_stat
from tidemark.conformance.locks import LOCK_FILE, DirectoryBusy, locked
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.traces import write_traces
from tidemark.conformance.validate import initial_states
from tidemark.conformance.walks import random_walks

FIXTURES = ROOT / "tests" / "fixtures" / "tlc"
SPEC = "spec/UpdateCounter.tla"
SMALL = "tests/models/UpdateCounter-small.cfg"


def _script(isolated: Isolated, body: str) -> subprocess.Popen[str]:
    """A Python process in the isolated environment running `body`, which prints one line when ready."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(body)],
        cwd=ROOT,
        env=isolated.env,
        stdout=subprocess.PIPE,
        text=True,
    )


def _wait_for(isolated: Isolated, text: str, timeout: float = 120) -> int:
    """The pid of the isolated environment's process whose command line holds `text`, once it runs."""
    found: list[int] = []

    def running() -> bool:
        found[:] = [pid for pid, command in isolated.processes().items() if text in command]
        return bool(found)

    assert eventually(running, timeout), f"no process running {text!r}"
    return found[0]


# --- the guardian ---------------------------------------------------------------------------------------


def test_sigkill_leaves_no_watched_process_and_no_scratch_directory(isolated: Isolated) -> None:
    parent = _script(
        isolated,
        """
        import subprocess, sys, time
        from tidemark.conformance.scratch import scratch_dir, watch
        with scratch_dir("probe-") as scratch:
            (scratch / "file").write_text("written by the run")
            child = subprocess.Popen(["sleep", "300"], start_new_session=True)
            watch(child.pid, group=True)
            print(scratch, child.pid, flush=True)
            time.sleep(300)
        """,
    )
    assert parent.stdout is not None
    scratch, child = parent.stdout.readline().split()
    assert Path(scratch, "file").is_file() and Path(scratch).parent.parent == isolated.tmp
    assert process_stat(int(child)) is not None
    parent.kill()
    parent.wait()
    assert isolated.clean(timeout=5), (isolated.processes(), isolated.left())


def test_a_killed_runs_lock_is_held_until_its_children_are_stopped(
    isolated: Isolated, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    # The child ignores SIGTERM: the guardian needs its grace period and SIGKILL to stop it, and must keep
    # the run directory locked all that time.
    parent = _script(
        isolated,
        f"""
        import subprocess, sys, time
        from pathlib import Path
        from tidemark.conformance.locks import locked
        from tidemark.conformance.scratch import watch
        stubborn = (
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
            " print(1, flush=True); time.sleep(300)"
        )
        with locked(Path({str(run_dir)!r})):
            child = subprocess.Popen(
                [sys.executable, "-c", stubborn], stdout=subprocess.PIPE, start_new_session=True
            )
            child.stdout.readline()
            watch(child.pid, group=True)
            print(child.pid, flush=True)
            time.sleep(300)
        """,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert f"pid {parent.pid}:" in (run_dir / LOCK_FILE).read_text()
    parent.kill()
    parent.wait()
    with (
        pytest.raises(DirectoryBusy, match="in use by another tidemark run") as busy,
        locked(run_dir, wait=False),
    ):
        pass
    assert busy.value.exit_code == 3
    assert process_stat(child) is not None  # still there: SIGTERM did not stop it
    assert eventually(lambda: process_stat(child) is None, 10)
    assert isolated.clean(timeout=5)
    with locked(run_dir, wait=False):  # released once the guardian is done
        assert f"pid {os.getpid()}:" in (run_dir / LOCK_FILE).read_text()


# --- locks in one process -------------------------------------------------------------------------------


def test_threads_of_one_process_take_turns_and_the_holder_may_lock_again(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    order: list[str] = []
    notices: list[str] = []
    refusals: list[DirectoryBusy] = []

    def impatient() -> None:
        try:
            with locked(run_dir, wait=False):
                order.append("impatient")
        except DirectoryBusy as busy:
            refusals.append(busy)

    def patient() -> None:
        with locked(run_dir, notice=notices.append):
            order.append("patient")

    with locked(run_dir):
        with locked(run_dir):  # the holding thread again: no deadlock
            order.append("again")
        refused = threading.Thread(target=impatient)
        refused.start()
        refused.join(5)
        waiting = threading.Thread(target=patient)
        waiting.start()
        assert eventually(lambda: bool(notices), 5)
        order.append("holder done")
    waiting.join(5)
    assert order == ["again", "holder done", "patient"]
    assert "another thread of this process" in refusals[0].describe()
    assert "waiting for it to finish" in notices[0]


def test_a_directory_that_cannot_be_created_is_bad_input(tmp_path: Path) -> None:
    a_file = tmp_path / "report.html"
    a_file.write_text("not a directory")
    with pytest.raises(TidemarkError, match="cannot create or lock it") as error, locked(a_file / "out"):
        pass
    assert error.value.exit_code == 2 and str(a_file) in error.value.describe()


# --- real runs ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def walk_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec, config = Path(SPEC), Path(SMALL)
    mapping = mapping_for(spec.stem, read_config(config).constants)
    walks = random_walks(mapping, initial_states(spec, config), count=5, steps=20, seed=3, config=SMALL)
    path = tmp_path_factory.mktemp("walks") / "walks.jsonl"
    write_traces(path, walks)
    return path


@pytest.mark.tlc
def test_runs_that_succeed_or_fail_leave_no_temporary_directory(
    isolated: Isolated, tmp_path: Path, walk_file: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a trace"}\n')
    runs: list[tuple[int, list[str]]] = [
        (0, ["check", str(FIXTURES / "Ok.tla")]),
        (1, ["check", str(FIXTURES / "InvariantViolation.tla")]),
        (2, ["check", str(FIXTURES / "SyntaxError.tla")]),
        (0, ["validate", str(walk_file)]),
        (2, ["validate", str(bad)]),
        (0, ["simulate", SPEC, "--config", SMALL, "--traces", "5", "--local"]),
        (0, ["conform", SPEC, "--config", SMALL, "--local", "--run-dir", str(tmp_path / "r")]),
        (0, ["scenario", "scenarios/figure1-backup-reordering.json", "--out", str(tmp_path / "f1.mmd")]),
    ]
    for expected, arguments in runs:
        before = isolated.left()
        done = (
            isolated.run(*arguments, "--heap", "256m")
            if arguments[0] != "scenario"
            else isolated.run(*arguments)
        )
        assert done.returncode == expected, (arguments, done.stderr)
        assert "Traceback" not in done.stderr
        assert before == [] and isolated.left() == [], arguments
        assert isolated.processes() == {}, arguments


@pytest.mark.tlc
@pytest.mark.parametrize(
    ("number", "code", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupted_or_terminated_run_stops_tlc_and_cleans_up(
    isolated: Isolated, tmp_path: Path, number: int, code: int, said: str
) -> None:
    for name in ("Unbounded.tla", "Unbounded.cfg"):  # TLC never finishes this one
        (tmp_path / name).write_text((FIXTURES / name).read_text())
    run = isolated.start("check", str(tmp_path / "Unbounded.tla"), "--heap", "256m")
    _wait_for(isolated, "tlc2.TLC")
    run.send_signal(number)
    _, stderr = run.communicate(timeout=30)
    assert run.returncode == code
    assert said in stderr and "Traceback" not in stderr
    assert isolated.clean(timeout=5), (isolated.processes(), isolated.left())


@pytest.mark.tlc
def test_sigkill_of_conform_during_tlc_leaves_no_jvm_and_no_temporary_directory(
    isolated: Isolated, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    # The standard model: TLC runs for several seconds, long enough to be killed in the middle.
    run = isolated.start("conform", SPEC, "--local", "--run-dir", str(run_dir), "--heap", "256m")
    tlc = _wait_for(isolated, "tlc2.TLC")
    assert eventually(lambda: (run_dir / "graph.dot").is_file(), 60)  # TLC is writing the state graph
    run.kill()
    run.wait()
    assert isolated.clean(timeout=5), (isolated.processes(), isolated.left())
    assert process_stat(tlc) is None
    with locked(run_dir, wait=False):  # the dead run's lock is gone with it
        pass


@pytest.mark.tlc
@pytest.mark.spark
def test_sigkill_of_conform_during_the_spark_replay_leaves_no_jvm_and_no_temporary_directory(
    isolated: Isolated, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    # The standard model's graph, dumped first: its replay on Spark lasts long enough to be killed midway.
    arguments = ("conform", SPEC, "--run-dir", str(run_dir), "--heap", "256m")
    assert isolated.run(*arguments, "--local", timeout=900).returncode == 0
    run = isolated.start(*arguments, "--master", "local[2]")
    _wait_for(isolated, "org.apache.spark.deploy.SparkSubmit")
    _wait_for(isolated, "pyspark.daemon", timeout=600)  # the replay's Python workers: it is replaying
    assert run.poll() is None
    run.kill()
    run.wait()
    assert isolated.clean(timeout=10), (isolated.processes(), isolated.left())


# --- one run per directory ------------------------------------------------------------------------------


@pytest.mark.tlc
def test_a_second_conform_on_the_same_run_directory_waits_or_fails_at_once(
    isolated: Isolated, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    arguments = ("conform", SPEC, "--config", SMALL, "--local", "--run-dir", str(run_dir))
    first = isolated.start(*arguments, "--json")
    _wait_for(isolated, "tlc2.TLC")
    refused = isolated.run(*arguments, "--no-wait")
    assert refused.returncode == 3
    assert f"{run_dir}: in use by another tidemark run (pid {first.pid}" in refused.stderr
    second = isolated.start(*arguments, "--json")
    first_out, _ = first.communicate(timeout=300)
    second_out, second_err = second.communicate(timeout=300)
    assert (first.returncode, second.returncode) == (0, 0)
    assert f"{run_dir} is in use by another run (pid {first.pid}" in second_err
    # The second ran after the first, on its graph: never both in the directory at once.
    assert not json.loads(first_out)["graph_reused"] and json.loads(second_out)["graph_reused"]
    assert isolated.clean(timeout=5)


@pytest.mark.parametrize(
    "arguments",
    [
        ("zoo", "--only", "no-out-of-order-tracking", "--run-dir"),
        ("verify", "--local", "--skip-zoo", "--out"),
    ],
)
def test_zoo_and_verify_lock_their_directories(
    isolated: Isolated, tmp_path: Path, arguments: tuple[str, ...]
) -> None:
    directory = tmp_path / "busy"
    with locked(directory):
        started = time.monotonic()
        refused = isolated.run(*arguments, str(directory), "--no-wait", timeout=60)
    assert refused.returncode == 3, refused.stderr
    assert f"{directory}: in use by another tidemark run (pid {os.getpid()}" in refused.stderr
    assert time.monotonic() - started < 30  # refused before any work


@pytest.mark.ignite
def test_sigkill_while_the_ignite_harness_runs_leaves_no_jvm_and_no_work_directory(
    isolated: Isolated,
) -> None:
    parent = _script(
        isolated,
        """
        import time
        from tidemark.conformance.systems.ignite import IgniteHarness
        with IgniteHarness() as harness:
            harness.start(servers=2)
            print(harness.work_dir, flush=True)
            time.sleep(300)
        """,
    )
    assert parent.stdout is not None
    work_dir = Path(parent.stdout.readline().strip())
    assert (work_dir / "jvm.stderr").is_file() and work_dir.parent.parent == isolated.tmp
    assert any("tidemark.ignite.Harness" in command for command in isolated.processes().values())
    parent.kill()
    parent.wait()
    assert isolated.clean(timeout=10), (isolated.processes(), isolated.left())
