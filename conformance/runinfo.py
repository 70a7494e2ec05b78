"""What a run ran on: versions of tidemark and its tools, the machine, the date, and a digest of every
input file, so that a report says which inputs and which tools its verdict is about."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from conformance.errors import TidemarkError

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
    from conformance.tlc.runner import find_java

    try:
        done = subprocess.run([find_java(), "-version"], capture_output=True, text=True, timeout=30)
    except (TidemarkError, OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stderr or done.stdout).splitlines()
    return lines[0].strip() if lines else None


def _tlc() -> str | None:
    from conformance.tlc.runner import find_jar

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
        started=datetime.now(UTC).isoformat(timespec="seconds"),
        inputs={str(path): _digest(path) for path in sorted(set(inputs)) if path.is_file()},
    )
