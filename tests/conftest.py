"""Shared test configuration: a pinned Hypothesis profile so CI runs are reproducible."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tidemark.conformance.spark import spark_session

ROOT = Path(__file__).resolve().parent.parent
OUTPUT_SCHEMAS = ROOT / "conformance" / "schemas" / "output"


def assert_output_schema(command: str, data: dict[str, Any]) -> None:
    """A command's --json object validates against its published schema, and its verdict agrees with its
    exit code."""
    import jsonschema

    schema = json.loads((OUTPUT_SCHEMAS / f"{command}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["holds"] is (data["exit_code"] == 0)


# CI and local runs use the same derandomized profile: failures reproduce byte for byte.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=200,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("TIDEMARK_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One real local Spark session for the whole run (starting one costs ~10 s)."""
    with spark_session("local[2]", app_name="tidemark-tests") as session:
        yield session


def headless_chromium(
    page: Path,
    profile: Path,
    *arguments: str,
    window: tuple[int, int] = (1280, 2000),
    console: list[str] | None = None,
) -> str:
    """Run Debian's chromium headless on a local page (flags that keep it off this machine's closed
    network); returns its stdout. Fails, never skips, when chromium is missing. With `console`, the
    page's console messages (uncaught errors among them) are appended to it."""
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail(
            "chromium is not on PATH: this test renders a page in a real headless browser. "
            "Install Debian's chromium ('apt-get install chromium'; scripts/bootstrap.sh does so as root)."
        )
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--window-size={window[0]},{window[1]}",
        *(["--enable-logging=stderr", "--v=0"] if console is not None else []),
        *arguments,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    if console is not None:  # chromium logs each as '[...:INFO:CONSOLE:1] "message", source: ...'
        console += [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout


class Isolated:
    """`tidemark` commands run in an environment whose temporary directory is private (`tmp`): $TMPDIR
    for Python, java.io.tmpdir (JAVA_TOOL_OPTIONS) for any JVM not given one of its own. Whatever a run
    leaves behind, or any process it leaves running, is found there, whatever else runs on the machine.
    """

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "TMPDIR": str(tmp),
            "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={tmp}",
            "PYTHONPATH": str(ROOT),  # Spark's Python workers import this checkout too
        }

    def command(self, *arguments: str) -> list[str]:
        return [sys.executable, "-m", "tidemark.conformance.cli.main", *arguments]

    def run(self, *arguments: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*arguments), cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def start(self, *arguments: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*arguments),
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def left(self) -> list[str]:
        """Everything left in the private temporary directory (relative paths)."""
        return sorted(str(path.relative_to(self.tmp)) for path in self.tmp.rglob("*"))

    def processes(self) -> dict[int, str]:
        """pid -> command line of every live process started in this environment (its $TMPDIR)."""
        marker = f"TMPDIR={self.tmp}".encode()
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if marker not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # ended, not yet reaped
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, IndexError):
                continue
        return found

    def clean(self, timeout: float = 10.0) -> bool:
        """Within `timeout`: no process of this environment runs and its temporary directory is empty."""
        return eventually(lambda: not self.processes() and not self.left(), timeout)


def eventually(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def isolated(tmp_path: Path) -> Iterator[Isolated]:
    environment = Isolated(tmp_path / "system-tmp")
    yield environment
    for pid in environment.processes():  # a failed test must not leave its runs behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def distinct_traces(runs: list[tuple[dict[str, Any], ...]], spec: str, config: Path) -> list[Any]:
    """Hypothesis schedules (each a tuple of spec states) as distinct ITF traces of `spec` on `config`."""
    from tidemark.conformance.tlc.values import canonical_json, state_to_itf
    from tidemark.conformance.traces import Trace

    distinct = {canonical_json([state_to_itf(s) for s in run]): run for run in runs}
    return [
        Trace(id=f"hypothesis-{i}", spec=spec, states=run, config=str(config))
        for i, run in enumerate(distinct.values())
    ]


def action_names(trace: Any) -> set[str]:
    """The names of the actions a trace takes."""
    from tidemark.conformance.tlc.values import Record

    return {str(s["action"]["name"]) for s in trace.states if isinstance(s["action"], Record)}
