"""What a run ran on: versions of tidemark and its tools, the machine, the date, and a digest of every
input file, so that a report says which inputs and which tools its verdict is about; for every command's
--json also its arguments, its model's constants and its seconds per phase (CommandRun)."""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
import time
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tidemark.conformance.errors import TidemarkError

# "EXTENDS Naturals, UpdateCounter" and "X == INSTANCE UpdateCounter WITH ...": the modules a spec uses.
_USES = re.compile(r"\b(?:EXTENDS|INSTANCE)\s+([\w\s,]+?)(?:\bWITH\b|$)", re.MULTILINE)


class RunInfo(BaseModel):
    tidemark: str
    python: str
    java: str | None = Field(description="`java -version`'s first line, None without Java")
    tlc: str | None = Field(description="TLC's jar and its Implementation-Version")
    spark: str | None = Field(description="pyspark's version")
    machine: str = Field(description="OS, architecture, cores and memory")
    started: str = Field(description="UTC, ISO 8601")
    inputs: dict[str, str] = Field(description="each input file -> its SHA-256")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _java() -> str | None:
    from tidemark.conformance.tlc.runner import find_java

    try:
        done = subprocess.run([find_java(), "-version"], capture_output=True, text=True, timeout=30)
    except (TidemarkError, OSError, subprocess.TimeoutExpired):
        return None
    # The JVM announces JAVA_TOOL_OPTIONS and _JAVA_OPTIONS ("Picked up ...") before its version.
    lines = [line for line in (done.stderr or done.stdout).splitlines() if not line.startswith("Picked up ")]
    return lines[0].strip() if lines else None


def _tlc() -> str | None:
    from tidemark.conformance.tlc.runner import find_jar

    try:
        jar = find_jar()
        manifest = zipfile.ZipFile(jar).read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (TidemarkError, OSError, KeyError, zipfile.BadZipFile):
        return None
    found = re.search(r"^Implementation-Version:\s*(.+)$", manifest, re.MULTILINE)
    return f"{jar.name} {found.group(1).strip()}" if found else jar.name


def spec_inputs(spec: Path, config: Path) -> list[Path]:
    """The spec, its model config and the modules beside it that it extends or instantiates, recursively."""
    found: list[Path] = [config]
    pending = [spec]
    while pending:
        module = pending.pop()
        if module in found or not module.is_file():
            continue
        found.append(module)
        for names in _USES.findall(module.read_text(encoding="utf-8", errors="replace")):
            pending += [module.parent / f"{name.strip()}.tla" for name in names.split(",") if name.strip()]
    return found


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_info(inputs: Iterable[Path]) -> RunInfo:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {memory / 2**30:.0f} GB"
    return RunInfo(
        tidemark=_version("tidemark") or "unknown (not installed)",
        python=platform.python_version(),
        java=_java(),
        tlc=_tlc(),
        spark=_version("pyspark"),
        machine=machine,
        started=_now(),
        inputs={str(path): _digest(path) for path in sorted(set(inputs)) if path.is_file()},
    )


# --- a command's inputs and timings, in every command's --json (conformance/cli/outputs.py)
# ---------------------


class CommandRun(RunInfo):
    """RunInfo for one command: what it was given and where its time went."""

    command: str
    arguments: dict[str, Any] = Field(description="the command line's options and operands, as given")
    constants: dict[str, Any] | None = Field(
        default=None, description="the model config's constants (ITF values), for commands given a model"
    )
    timings: dict[str, float] = Field(
        description="seconds per phase (e.g. tlc, replay; verify: per spec and phase), `total` the command's"
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Invocation:
    command: str
    arguments: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    started_utc: str = field(default_factory=_now)


# The command being run (set by the CLI around it), read when its JSON is printed.
_current: ContextVar[Invocation | None] = ContextVar("tidemark_invocation", default=None)

# Options that change how a command prints, not what it checks.
_PRESENTATION = {"command", "json", "quiet", "verbose"}


@contextmanager
def invocation(args: argparse.Namespace) -> Iterator[None]:
    """Record the command and its arguments for `command_run` while it runs."""
    arguments = {k: v for k, v in sorted(vars(args).items()) if k not in _PRESENTATION}
    token = _current.set(Invocation(args.command, arguments))
    try:
        yield
    finally:
        _current.reset(token)


def _json(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


def phase_timings(command: str, result: BaseModel) -> dict[str, float]:
    """A result's seconds per phase: its `phases()` where it has one, else its top-level `X_seconds`
    fields (`seconds` alone: the command's one phase, named after it)."""
    phases = getattr(result, "phases", None)
    if callable(phases):
        found: dict[str, float] = phases()
        return found
    timings = {}
    for name in type(result).model_fields:
        value = getattr(result, name)
        if isinstance(value, float) and (name == "seconds" or name.endswith("_seconds")):
            timings[name.removesuffix("seconds").removesuffix("_") or command] = value
    return timings


def _model_inputs(arguments: dict[str, Any]) -> tuple[list[Path], dict[str, Any] | None]:
    """The input files named by the arguments (a spec brings its config and modules) and the constants of
    the model config, if there is one."""
    from tidemark.conformance.tlc.config import read_config
    from tidemark.conformance.tlc.values import to_itf

    files = [v for v in arguments.values() if isinstance(v, Path) and v.is_file()]
    spec, config = arguments.get("spec"), arguments.get("config")
    if isinstance(spec, Path) and spec.suffix == ".tla":
        config = config or spec.with_suffix(".cfg")
        files += spec_inputs(spec, config)
    constants = None
    if isinstance(config, Path) and config.is_file():
        try:
            constants = {name: to_itf(v) for name, v in read_config(config).constants.items()}
        except TidemarkError:  # the command has already read it; nothing more to say here
            constants = None
    return files, constants


def command_run(command: str, result: BaseModel | None = None) -> CommandRun:
    """The command's inputs, the tools' versions and its timings; verify's RunInfo (digests of every
    spec's inputs, its start) is kept as it is."""
    current = _current.get()
    arguments = current.arguments if current is not None and current.command == command.split()[0] else {}
    files, constants = _model_inputs(arguments)
    own = getattr(result, "run", None)
    info = own if isinstance(own, RunInfo) else run_info(files)
    timings = phase_timings(command.split()[0], result) if result is not None else {}
    if current is not None:
        timings["total"] = round(time.monotonic() - current.started, 3)
        if own is None:
            info = info.model_copy(update={"started": current.started_utc})
    return CommandRun(
        **info.model_dump(),
        command=command,
        arguments={k: _json(v) for k, v in arguments.items()},
        constants=constants,
        timings=timings,
    )
