"""What the clients of the real-system harnesses share: building a Maven module, the harness JVM as a child
process speaking JSON lines, free loopback ports.

A harness (systems/<name>/) is a Maven module built into target/VERSION/ (harness.jar and lib/), skipped
while the jar is newer than the pom and the sources; Maven's repository is the project's .cache/m2, so only
the first build downloads. The JVM is started with PR_SET_PDEATHSIG (it dies with this process), watched by
the process's guardian (conformance/scratch.py), stopped by closing its stdin (killed after 30 s), and its
work directory lives in the process's scratch directory.
"""

from __future__ import annotations

import ctypes
import json
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, Final, Self

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.scratch import forget, scratch_root, watch

ROOT: Final = Path(__file__).resolve().parents[2]


def pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the JVM gets SIGKILL when this process dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def stop_jvm(proc: subprocess.Popen[str]) -> None:
    """End of input stops a harness JVM; after 30 s it is killed."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
    forget(proc.pid)
    if proc.stdout:
        proc.stdout.close()


def newest(paths: Iterable[Path]) -> float:
    return max((p.stat().st_mtime for p in paths), default=0.0)


def build_module(
    module: Path, property_name: str, version: str, error: type[ToolError], *, maven_repo: Path | None = None
) -> Path:
    """Build the harness module for this version (`-D<property_name>=<version>`) unless its jar is newer than
    the pom and the sources; returns the build directory (harness.jar and lib/)."""
    target = module / "target" / version
    jar = target / "harness.jar"
    sources = [module / "pom.xml", *(module / "src").rglob("*.java")]
    if jar.exists() and (target / "lib").is_dir() and jar.stat().st_mtime >= newest(sources):
        return target
    what = f"the {module.name} harness"
    if shutil.which("mvn") is None or shutil.which("java") is None:
        raise error(f"building {what} needs Java >= 17 and Maven on PATH (apt-get install maven)")
    repo = maven_repo or ROOT / ".cache" / "m2"
    cmd = ["mvn", "-B", "-q", f"-Dmaven.repo.local={repo}", f"-D{property_name}={version}", "-DskipTests"]
    try:
        done = subprocess.run(
            [*cmd, "package"], cwd=module, capture_output=True, text=True, timeout=900, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise error(f"building {what} took more than 15 minutes", source="mvn") from e
    if done.returncode != 0 or not jar.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise error(f"building {what} ({version}) failed:\n{tail}", source="mvn")
    return target


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(span: int, error: type[ToolError], rng: random.Random | None = None) -> int:
    """A base port with `span` free ports above it on 127.0.0.1, so that harnesses run side by side."""
    rng = rng or random.Random()
    for _ in range(50):
        base = rng.randrange(20000, 60000 - span, span)
        if all(port_free(base + i) for i in range(span)):
            return base
    raise error("no free block of loopback ports for the harness")


def options_file(module: Path) -> list[str]:
    """The module's jvm.options: one JVM option a line, # comments."""
    lines = (module / "jvm.options").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


class JsonLinesJvm:
    """A harness JVM answering one JSON line per command: `{"id", "ok", "result"}` or `{"id", "ok": false,
    "kind", "error"}` (kind "bad_input" raises `refused`, anything else `error`); its first line says it is
    ready. Its stdout is read by a thread into a queue, so every wait has a timeout."""

    def __init__(
        self,
        cmd: list[str],
        work_dir: Path,
        *,
        error: type[ToolError],
        refused: type[TidemarkError],
        timeout: float,
    ) -> None:
        self.error, self.refused, self.timeout = error, refused, timeout
        self.work_dir = work_dir
        self._lines: queue.Queue[str] = queue.Queue()
        self._next_id = 0
        self._stderr: IO[str] = open(work_dir / "jvm.stderr", "w")  # noqa: SIM115 - closed in close()
        try:
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                bufsize=1,
                preexec_fn=pdeathsig,
            )
        except OSError as e:
            self._stderr.close()
            raise error(f"cannot start java: {e}") from e
        watch(self._proc.pid, group=False)
        reader: Callable[[], None] = lambda: self._read_all(self._proc)  # noqa: E731
        threading.Thread(target=reader, daemon=True).start()
        self.info: dict[str, Any] = self._next_line()
        if not self.info.get("ready"):
            self.close()
            raise error(f"the harness did not start: {self.info}")

    @property
    def process(self) -> subprocess.Popen[str] | None:
        """The JVM while it runs."""
        return self._proc

    def _read_all(self, proc: subprocess.Popen[str] | None) -> None:
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)
        self._lines.put("")  # end of output: the JVM exited

    def stderr_tail(self, lines: int = 20) -> str:
        path = self.work_dir / "jvm.stderr"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def _gone(self, what: str) -> ToolError:
        tail = self.stderr_tail()
        self.close()
        return self.error(f"the harness {what}; its stderr ends with:\n{tail}")

    def _next_line(self, timeout: float | None = None) -> dict[str, Any]:
        wait = self.timeout if timeout is None else timeout
        try:
            line = self._lines.get(timeout=wait)
        except queue.Empty:
            raise self._gone(f"did not answer within {wait:.0f} s") from None
        if not line:
            raise self._gone("exited")
        try:
            answer: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError as e:
            raise self.error(f"the harness wrote a line that is not JSON: {line[:200]!r}") from e
        return answer

    def call(self, cmd: str, *, timeout: float | None = None, **args: Any) -> Any:
        """Send one command; its result, or `refused` / `error`."""
        if self._proc is None or self._proc.stdin is None:
            raise self.error("the harness is not running")
        self._next_id += 1
        try:
            self._proc.stdin.write(json.dumps({"id": self._next_id, "cmd": cmd, **args}) + "\n")
            self._proc.stdin.flush()
        except OSError as e:
            raise self._gone(f"is gone ({e})") from e
        answer = self._next_line(timeout)
        if answer.get("id") != self._next_id:
            raise self.error(f"the harness answered {answer.get('id')} to command {self._next_id}")
        if not answer.get("ok"):
            message = answer.get("error", "unknown error")
            if answer.get("kind") == "bad_input":
                raise self.refused(message, source="harness", location=cmd)
            raise self.error(f"{cmd}: {message}", source="harness")
        return answer.get("result")

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_jvm(proc)
        if not self._stderr.closed:
            self._stderr.close()


def work_directory(prefix: str, keep: bool) -> Path:
    """A fresh work directory: in the process's scratch directory (removed however the process ends) unless
    it is to be kept."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=None if keep else scratch_root()))
    (path / "tmp").mkdir()
    return path


def java_command(target: Path, options: list[str], work_dir: Path, main: str, *args: str) -> list[str]:
    classpath = f"{target / 'harness.jar'}{os.pathsep}{target / 'lib' / '*'}"
    tmpdir = f"-Djava.io.tmpdir={work_dir / 'tmp'}"
    return ["java", *options, tmpdir, "-cp", classpath, main, *args]


class HarnessClient:
    """A harness's client: builds the module, starts its JVM in a fresh work directory, sends commands,
    stops it and removes the directory on close (use as a context manager). A system's client says how
    (`error`, `refused`, `prefix`, `build`, `command`) and adds its commands."""

    error: type[ToolError] = ToolError
    refused: type[TidemarkError] = TidemarkError
    prefix = "harness-"  # of the work directory's name

    def __init__(self, version: str, *, timeout: float, keep_dir: bool = False) -> None:
        self.version = version
        self.timeout = timeout  # seconds one command may take before the harness counts as hung
        self.keep_dir = keep_dir
        self.work_dir: Path | None = None
        self._jvm: JsonLinesJvm | None = None

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def build(self) -> Path:
        """The built module's directory (harness.jar and lib/)."""
        raise NotImplementedError

    def command(self, target: Path, work_dir: Path) -> list[str]:
        """The java command line of the harness."""
        raise NotImplementedError

    @property
    def info(self) -> dict[str, Any]:
        return self._jvm.info if self._jvm else {}

    @property
    def process(self) -> subprocess.Popen[str] | None:
        """The harness JVM while it runs."""
        return self._jvm.process if self._jvm else None

    def open(self) -> None:
        target = self.build()
        self.work_dir = work_directory(self.prefix, self.keep_dir)
        try:
            self._jvm = JsonLinesJvm(
                self.command(target, self.work_dir),
                self.work_dir,
                error=self.error,
                refused=self.refused,
                timeout=self.timeout,
            )
        except BaseException:
            self.close()
            raise

    def stderr_tail(self, lines: int = 20) -> str:
        return self._jvm.stderr_tail(lines) if self._jvm else ""

    def call(self, cmd: str, **args: Any) -> Any:
        """Send one command; its result, or `refused` (bad input) / `error`."""
        if self._jvm is None:
            raise self.error("the harness is not running")
        return self._jvm.call(cmd, **args)

    def close(self) -> None:
        """Stop the JVM (end of input, then kill after 30 s) and remove the work directory."""
        jvm, self._jvm = self._jvm, None
        if jvm is not None:
            jvm.close()
        if self.work_dir is not None and not self.keep_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None
