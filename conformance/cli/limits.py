"""What each command-line value accepts: every size and count a user can type has a range (LIMITS, the
README's "Limits" table), checked while the arguments are parsed, so a value out of range is a usage error
(exit 2) before any work starts. Output directories are checked at the same time: an option naming a
directory must not name a file, and the place must be writable; nothing is created here.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tidemark.conformance.lab.distribution import MAX_NODES, MAX_TRIALS
from tidemark.impl.affinity import INT_MAX, LONG_MAX, LONG_MIN, MAX_PARTITIONS


def cores() -> int:
    """The cores this process may use: more TLC workers than that only contend."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def memory_bytes() -> int:
    """This machine's physical memory: a larger TLC heap would swap, or the JVM would not start."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # no sysconf: no upper bound known
        return 1 << 50


@dataclass(frozen=True)
class Limit:
    """The range of one option, and why it ends there (printed in errors and the README)."""

    low: float
    high: float
    why: str
    shown: str | None = None  # the range in words, where it depends on the machine

    def text(self) -> str:
        return self.shown or f"{_number(self.low)} to {_number(self.high)}"


def _number(value: float) -> str:
    return f"{value:,}" if float(value).is_integer() else f"{value:g}"


JAVA_LONG = Limit(LONG_MIN, LONG_MAX, "a Java long (TLC's -seed)", "-2^63 to 2^63 - 1")


LIMITS: dict[str, Limit] = {
    "--workers": Limit(1, cores(), "TLC worker threads", "1 to this machine's cores"),
    "--timeout": Limit(0.001, 30 * 24 * 3600, "seconds, up to 30 days"),
    "simulate --traces": Limit(1, 100_000, "TLC writes each trace as a file"),
    "simulate --depth": Limit(1, 100_000, "steps per simulated trace"),
    "verify --traces": Limit(1, 100_000, "implementation walks per spec"),
    "verify --steps": Limit(1, 10_000, "steps per walk"),
    "verify --walks": Limit(0, 1_000_000, "walks of the campaign's slice (0: none)"),
    "campaign --walks": Limit(1, 10_000_000, "random walks; Spark spreads them"),
    "campaign --steps": Limit(1, 10_000, "steps per walk"),
    "--seed": JAVA_LONG,
    "--drivers": Limit(1, 64, "driver processes, each a program of its own"),
    "--driver-timeout": Limit(0.001, 24 * 3600, "seconds a driver has for one message, up to a day"),
    "prove --k": Limit(1, 32, "z3's time grows with k: about 30 s at k = 32"),
    "--partitions": Limit(1, MAX_PARTITIONS, "Ignite's limit for a cache's partitions"),
    "--backups": Limit(0, INT_MAX, "Ignite's backups; a count >= the nodes puts a copy on every node"),
    "affinity --nodes": Limit(1, 10_000, "node ids per topology, distinct"),
    "distribution --nodes": Limit(2, MAX_NODES, "cluster sizes; a trial at 1,000 nodes takes seconds"),
    "distribution --trials": Limit(1, MAX_TRIALS, "topologies per cluster size"),
    "hazelcast-lab --partitions": Limit(1, 10_000, "partitions per trial (Hazelcast's default 271)"),
    "hazelcast-lab --members": Limit(2, 7, "members per trial: one partition's replica indexes 0..6"),
    "hazelcast-lab --drops": Limit(0, 1, "fraction of the backups lost"),
    "hazelcast-lab --parallel": Limit(1, 100, "hazelcast.partition.max.parallel.replications"),
    "hazelcast-lab --backups": Limit(1, 6, "Hazelcast's backup count"),
    "hazelcast-lab --puts": Limit(1, 100, "puts per partition and namespace"),
    "hazelcast-lab --seeds": Limit(1, 1_000, "trials per configuration"),
    "hazelcast-lab --max-rounds": Limit(1, 100_000, "anti-entropy rounds before a trial gives up"),
    "ncache-lab --keys": Limit(1, 1_000_000, "keys per trial, hashed into NCache's 1000 buckets"),
    "ncache-lab --zipf": Limit(0, 4, "exponent of the value sizes' Zipf law (0: all equal)"),
    "ncache-lab --max-size": Limit(1, 1 << 40, "bytes of the largest value"),
    "audit --groups": Limit(1, 1000, "cache groups a generated snapshot has"),
    "audit --copies": Limit(1, 64, "copies of each partition, on as many nodes"),
    "audit --nodes": Limit(1, 1000, "nodes of a generated snapshot"),
    "audit --entries": Limit(0, 10**10, "keys of a generated snapshot, in all groups"),
    "audit --divergences": Limit(0, 1_000_000, "partitions a divergence is injected in, distinct"),
    "audit --not-idle": Limit(0, 1_000_000, "partitions whose counters move in the later snapshot"),
}


HEAP_MIN = 64 << 20


def bounded(name: str, kind: type[int] | type[float] = int) -> Callable[[str], float]:
    """An argparse type for option `name` of LIMITS: a number in its range, else a usage error."""
    limit = LIMITS[name]

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not limit.low <= value <= limit.high:  # NaN fails this too
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: {_number(limit.low)} to {_number(limit.high)} ({limit.why})"
            )
        return value

    parse.__name__ = "integer" if kind is int else "number"
    return parse


_SIZE = re.compile(r"^(\d+)([mMgG])$")


def heap(text: str) -> str:
    """A JVM heap size (-Xmx): 64m up to this machine's memory."""
    match = _SIZE.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 512m or 4g")
    size = int(match.group(1)) << (20 if match.group(2) in "mM" else 30)
    if not HEAP_MIN <= size <= memory_bytes():
        raise argparse.ArgumentTypeError(
            f"{text} is out of range: 64m to this machine's {memory_bytes() >> 20:,}m"
        )
    return text


# Spark's master URLs: local, local[N], local[*], local[N,F], spark://, yarn, k8s://, mesos://.
_MASTER = re.compile(
    r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|(spark|k8s|mesos)://\S+)$"
)


def spark_master(text: str) -> str:
    if _MASTER.match(text) is None or text in ("local[0]",):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Spark master URL (local, local[4], local[*], spark://HOST:PORT, yarn, k8s://...)"
        )
    return text


def _writable(path: Path) -> None:
    """The nearest existing directory at or above `path` must be one this process can write in."""
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: {ancestor} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{path}: cannot write in {ancestor}: {error.strerror}") from error


def output_dir(text: str) -> Path:
    """A directory the command writes into (created if missing)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a file, not a directory")
    _writable(path)
    return path


def run_dir(*markers: str) -> Callable[[str], Path]:
    """A run directory: new, empty, or one holding a run's files (`markers`). Any other directory is
    refused: a run replaces its files there, and the user's own files must not be among them."""

    def parse(text: str) -> Path:
        path = output_dir(text)
        if path.is_dir() and any(path.iterdir()) and not any((path / m).exists() for m in markers):
            raise argparse.ArgumentTypeError(
                f"{path} holds other files, not a run's ({', '.join(markers)}): give a new or empty directory"
            )
        return path

    parse.__name__ = "run directory"
    return parse


def itf_file(text: str) -> Path:
    """An ITF trace to write: a name ending in .itf.json, in an existing, writable directory."""
    path = Path(text)
    if not path.name.endswith(".itf.json"):
        raise argparse.ArgumentTypeError(f"{text}: an ITF trace is written to a file named X.itf.json")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file name ending in .itf.json")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: {parent} is not a writable directory")
    return path


def junit_file(text: str) -> Path:
    """A JUnit XML report to write: a file name in an existing, writable directory."""
    path = Path(text)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file name, e.g. results.xml")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: {parent} is not a writable directory")
    return path


def regexps(text: str) -> tuple[str, ...]:
    """Comma-separated regular expressions (Ignite's cache-name lists), each one compiled to check it."""
    patterns = tuple(p for p in text.split(",") if p)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise argparse.ArgumentTypeError(f"{pattern!r} is not a regular expression: {error}") from None
    return patterns


def limits_table() -> str:
    """The README's table of limits (a test keeps the README equal to it)."""
    rows = [f"| `{name}` | {limit.text()} | {limit.why} |" for name, limit in LIMITS.items()]
    rows.insert(
        2, "| `--heap` | 64m to this machine's memory | TLC's JVM heap (-Xmx): a size like 512m or 4g |"
    )
    return "\n".join(["| option | range | note |", "|---|---|---|", *rows]) + "\n"
