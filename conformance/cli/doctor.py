"""`tidemark doctor`: what this machine has of what tidemark runs on, and what is missing.

Reports Python, Java (17 or newer: TLC, Spark and the real-system harnesses run on it), TLC's jar, Spark
(pyspark), Maven and the real-Ignite and real-Hazelcast harnesses (built or not, for which version; whether
Maven's repository in the project's cache holds the system, so a build works offline). `--ignite` also
starts a one-server Ignite cluster and stops it, `--hazelcast` one Hazelcast member: whether the system
starts here at all (ports, memory).

Exit code 0 when everything tidemark's main job needs is there (Python, Java, TLC's jar, Spark), 3 when
not; Maven and the harnesses are needed only for the real-system commands, and reported as warnings.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tidemark.conformance.cli.outputs import finish
from tidemark.conformance.errors import TidemarkError


@dataclass(frozen=True)
class Finding:
    """One component: present or not, and what it is (a version, a path) or what to do."""

    component: str
    ok: bool
    detail: str
    required: bool = True


def _run(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"failed: {error}"
    return (done.stdout + done.stderr).strip()


def check_java() -> Finding:
    if shutil.which("java") is None:
        return Finding("java", False, "not on PATH: install a JDK 17+ (make test installs openjdk-17)")
    text = _run(["java", "-version"])
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    major = int(match.group(1)) if match else 0
    major = int(match.group(2) or 0) if major == 1 and match else major  # "1.8" is Java 8
    first = text.splitlines()[0] if text else "no output"
    return Finding("java", major >= 17, first if major >= 17 else f"{first}: Java 17 or newer is needed")


def check_tlc() -> Finding:
    from tidemark.conformance.tlc.runner import find_jar

    try:
        jar = find_jar()
    except TidemarkError as error:
        return Finding("TLC jar", False, error.describe())
    return Finding("TLC jar", True, f"{jar} ({jar.stat().st_size // 2**20} MiB)")


def check_spark() -> Finding:
    try:
        version = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return Finding("spark", False, "pyspark is not installed (make test installs it)")
    return Finding("spark", True, f"pyspark {version} (local[*] by default)")


def check_maven() -> Finding:
    if shutil.which("mvn") is None:
        needed = "not on PATH: needed to build the real-system harnesses (apt-get install maven)"
        return Finding("maven", False, needed, required=False)
    first = _run(["mvn", "-B", "-v"]).splitlines()  # -B: no colours
    return Finding("maven", True, first[0] if first else "mvn -v printed nothing", required=False)


@dataclass(frozen=True)
class Harness:
    """A real-system harness as doctor sees it: its Maven module, where Maven's repository keeps the system's
    core jar (group path, artifact), and how to start the smallest cluster of it."""

    system: str  # "ignite", "hazelcast"
    group: tuple[str, ...]
    artifact: str

    def module(self) -> Path:
        from tidemark.conformance.systems.ignite import ROOT

        return ROOT / "systems" / self.system

    def start(self, version: str) -> str:
        """Start the smallest cluster and stop it (the harness JVM and its directory go with it); the
        system's version as the harness reports it."""
        if self.system == "ignite":
            from tidemark.conformance.systems.ignite import IgniteHarness

            with IgniteHarness(version) as ignite:
                ignite.start(1, partitions=1, backups=0)
                return str(ignite.info.get("ignite"))
        from tidemark.conformance.systems.hazelcast import HazelcastHarness

        with HazelcastHarness(version) as hazelcast:
            hazelcast.start(("m1",), partitions=1)
            return str(hazelcast.info.get("hazelcast"))


IGNITE = Harness("ignite", ("org", "apache", "ignite"), "ignite-core")
HAZELCAST = Harness("hazelcast", ("com", "hazelcast"), "hazelcast")


def check_harness(harness: Harness, version: str) -> Finding:
    from tidemark.conformance.systems.ignite import ROOT

    module = harness.module()
    target = module / "target" / version
    jar = target / "harness.jar"
    cached = ROOT / ".cache" / "m2" / Path(*harness.group) / harness.artifact / version
    offline = (
        "its dependencies are in .cache/m2 (builds offline)"
        if cached.is_dir()
        else (f"Maven downloads {harness.system.capitalize()} at the first build")
    )
    name = f"{harness.system} harness {version}"
    if not jar.is_file() or not (target / "lib" / f"{harness.artifact}-{version}.jar").is_file():
        return Finding(name, False, f"not built ({offline}); make test builds it", required=False)
    sources = [module / "pom.xml", *(module / "src").rglob("*.java")]
    stale = max(p.stat().st_mtime for p in sources) > jar.stat().st_mtime
    state = "built, older than its sources (rebuilt on next use)" if stale else "built"
    return Finding(name, True, f"{state}: {jar}; {offline}", required=False)


def check_cluster(harness: Harness, version: str) -> Finding:
    """Start the smallest cluster and stop it: whether the system starts here at all (ports, memory)."""
    started = time.monotonic()
    what = "a server" if harness is IGNITE else "a member"
    try:
        reported = harness.start(version)
    except TidemarkError as error:
        return Finding(f"{harness.system} cluster", False, error.describe(), required=False)
    seconds = time.monotonic() - started
    return Finding(
        f"{harness.system} cluster",
        True,
        f"{harness.system.capitalize()} {reported}: {what} started and stopped in {seconds:.1f} s",
        required=False,
    )


def findings(versions: dict[Harness, str], start: frozenset[Harness] = frozenset()) -> list[Finding]:
    """Every component; for each harness (with the version asked for) whether it is built, and for those in
    `start` whether its cluster starts."""
    python = sys.version.split()[0]
    found = [Finding("python", sys.version_info >= (3, 11), f"{python} ({sys.executable})")]
    found += [check_java(), check_tlc(), check_spark(), check_maven()]
    found += [check_harness(h, v) for h, v in versions.items()]
    found += [check_cluster(h, v) for h, v in versions.items() if h in start]
    return found


def cmd_doctor(args: argparse.Namespace) -> int:
    versions = {IGNITE: args.ignite_version, HAZELCAST: args.hazelcast_version}
    start = frozenset(h for h, asked in ((IGNITE, args.ignite), (HAZELCAST, args.hazelcast)) if asked)
    found = findings(versions, start)
    healthy = all(f.ok for f in found if f.required)
    code = 0 if healthy else 3  # something required is missing: the environment's fault
    if args.json:
        components = [asdict(f) for f in found]
        print(finish("doctor", {"ok": healthy, "components": components}, code))
        return code
    console = Console(soft_wrap=True)
    table = Table("component", "", "detail", title="tidemark doctor")
    for f in found:
        mark = "[green]ok[/]" if f.ok else ("[red]MISSING[/]" if f.required else "[yellow]missing[/]")
        table.add_row(f.component, mark, escape(f.detail))
    console.print(table)
    verdict = "everything tidemark needs is here" if healthy else "something tidemark needs is missing"
    console.print(f"[{'green' if healthy else 'red'}]{verdict}[/]")
    return code
