"""The command line's parser: every command, its options and their defaults. What each value accepts (its
range, the checks on output directories) is in conformance/cli/limits.py; `scenario --out` is checked by
conformance/scenarios/outputs.py, before the scenario runs.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
from pathlib import Path

from tidemark.conformance.cli.limits import (
    bounded,
    heap,
    itf_file,
    junit_file,
    output_dir,
    regexps,
    run_dir,
    spark_master,
)
from tidemark.conformance.locks import LOCK_FILE


def _no_wait_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="fail at once (exit 3) if another run holds the directory, instead of waiting for it",
    )


def _tlc_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers", type=bounded("--workers"), default=1, help="TLC worker threads (default 1)"
    )
    parser.add_argument(
        "--timeout",
        type=bounded("--timeout", float),
        default=900,
        help="seconds before TLC is killed (default 900)",
    )
    parser.add_argument("--heap", type=heap, default="2g", help="TLC's JVM heap, -Xmx (default 2g)")


def _junit_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--junit", type=junit_file, metavar="FILE.xml", help="also write the verdicts as JUnit XML"
    )


def _trace_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--out", type=itf_file, metavar="X.itf.json", help=f"write {what} as an ITF trace")


def _master_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", type=spark_master, help="Spark master URL (default local[*])")
    parser.add_argument(
        "--executor-python",
        metavar="PYTHON",
        help="the Python a cluster's executors run (default PYSPARK_PYTHON, else spark.pyspark.python,"
        " else python3); local masters always run this interpreter (docs/cluster.md)",
    )


def _seed_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: int, what: str
) -> None:
    parser.add_argument("--seed", type=bounded("--seed"), default=default, help=f"{what} (default {default})")


# The files that mark a directory as conform's (or the zoo's) run directory; the lock file is there from
# the start of a run (conformance/locks.py), so a run killed before writing anything can be run again.
_CONFORM_RUN = run_dir(
    LOCK_FILE, "inputs.json", "states.parquet", "edges.parquet", "results.parquet", "summary.json"
)
_ZOO_RUN = run_dir(LOCK_FILE, "configs", "graphs")


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidemark", description=description)
    parser.add_argument("--version", action="version", version=version_text())
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="model-check a spec with TLC")
    check.add_argument("spec", type=Path)
    check.add_argument("--config", type=Path, help="TLC model config (default: SPEC with .cfg)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    _trace_argument(check, "the counterexample")
    _tlc_arguments(check)

    conform = commands.add_parser("conform", help="replay a spec's state graph against the implementation")
    conform.add_argument("spec", type=Path)
    conform.add_argument("--config", type=Path, help="TLC model config (default: SPEC with .cfg)")
    _master_argument(conform)
    engine = conform.add_mutually_exclusive_group()
    engine.add_argument(
        "--local",
        action="store_true",
        help="replay without Spark, one process per core (default: by the graph's size)",
    )
    engine.add_argument("--spark", action="store_true", help="replay on Spark local[*] whatever the size")
    conform.add_argument("--mutant", help="replay against a deliberately broken implementation")
    conform.add_argument(
        "--driver",
        metavar="CMD",
        help="replay through a driver process (docs/driver-protocol.md), e.g. examples/java/run",
    )
    conform.add_argument(
        "--drivers",
        type=bounded("--drivers"),
        default=2,
        metavar="N",
        help="driver processes in parallel (2; on Spark, per task)",
    )
    conform.add_argument(
        "--driver-timeout",
        type=bounded("--driver-timeout", float),
        default=60.0,
        metavar="SECONDS",
        help="time a driver has to answer one message before it is stopped and restarted (60)",
    )
    conform.add_argument(
        "--walk", action="store_true", help="with --driver: walks from the initial state even if it can load"
    )
    conform.add_argument(
        "--run-dir", type=_CONFORM_RUN, help="where the graph and results go (default runs/SPEC-CFG)"
    )
    conform.add_argument("--json", action="store_true", help="print one JSON object")
    _junit_argument(conform)
    _trace_argument(conform, "the path from an initial state to the first mismatch")
    _no_wait_argument(conform)
    _tlc_arguments(conform)

    simulate = commands.add_parser(
        "simulate", help="replay TLC's random simulation traces on the implementation (large models)"
    )
    simulate.add_argument("spec", type=Path)
    simulate.add_argument("--config", type=Path, help="TLC model config (default: SPEC with .cfg)")
    simulate.add_argument(
        "--traces", type=bounded("simulate --traces"), default=100, help="number of traces (default 100)"
    )
    simulate.add_argument(
        "--depth", type=bounded("simulate --depth"), default=50, help="steps per trace (default 50)"
    )
    _seed_argument(simulate, 1, "TLC's simulation seed")
    _master_argument(simulate)
    simulate.add_argument("--local", action="store_true", help="replay in this process, without Spark")
    simulate.add_argument("--mutant", help="replay against a deliberately broken implementation")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    _tlc_arguments(simulate)

    explain = commands.add_parser(
        "explain", help="replay an ITF trace (a counterexample) on the implementation, step by step"
    )
    explain.add_argument("trace", type=Path, metavar="TRACE.itf.json")
    explain.add_argument("--spec", type=Path, help="the spec (default: the trace's metadata)")
    explain.add_argument("--config", type=Path, help="its model config (default: the trace's constants)")
    which = explain.add_mutually_exclusive_group()
    which.add_argument("--mutant", help="replay on a deliberately broken implementation")
    which.add_argument(
        "--correct",
        action="store_true",
        help="replay on the correct implementation, whatever the trace names",
    )
    explain.add_argument("--json", action="store_true", help="print one JSON object")

    zoo = commands.add_parser(
        "zoo", help="the bug zoo: each known bug caught by TLC (spec variant) and by conformance (mutant)"
    )
    zoo.add_argument("--only", nargs="+", metavar="NAME", help="run these entries only")
    zoo.add_argument(
        "--run-dir", type=_ZOO_RUN, default=Path("runs/zoo"), help="configs and graphs (default runs/zoo)"
    )
    zoo.add_argument("--json", action="store_true", help="print one JSON object")
    _junit_argument(zoo)
    _no_wait_argument(zoo)
    _tlc_arguments(zoo)

    prove = commands.add_parser("prove", help="prove the counter's invariants inductive with z3")
    prove.add_argument(
        "--k",
        type=bounded("prove --k"),
        default=4,
        help="out-of-order items covered by the proof (default 4)",
    )
    prove.add_argument("--json", action="store_true", help="print one JSON object")

    affinity = commands.add_parser(
        "affinity", help="partition, primary and backups of keys (Ignite's rendezvous)"
    )
    affinity.add_argument("keys", nargs="+", metavar="KEY")
    affinity.add_argument("--type", choices=["int", "long", "string", "uuid"], default="string")
    affinity.add_argument("--partitions", type=bounded("--partitions"), default=1024)
    affinity.add_argument("--backups", type=bounded("--backups"), default=1)
    affinity.add_argument("--nodes", nargs="+", default=["node-1", "node-2", "node-3"], help="consistent ids")
    affinity.add_argument("--json", action="store_true", help="print one JSON object")

    distribution = commands.add_parser("distribution", help="balance and movement of placements (Spark job)")
    distribution.add_argument("--partitions", type=bounded("--partitions"), default=1024)
    distribution.add_argument(
        "--nodes",
        type=bounded("distribution --nodes"),
        nargs="+",
        default=[4, 8, 16, 32, 64],
        help="cluster sizes",
    )
    distribution.add_argument("--backups", type=bounded("--backups"), default=0)
    distribution.add_argument("--algorithms", nargs="+", help="labels, e.g. rendezvous bounded-0.05 ncache")
    distribution.add_argument("--trials", type=bounded("distribution --trials"), default=10)
    _seed_argument(distribution, 0, "seed of the topologies")
    _master_argument(distribution)
    distribution.add_argument(
        "--out", type=output_dir, default=Path("reports/distribution"), help="plots and tables"
    )
    distribution.add_argument("--json", action="store_true", help="print one JSON object")

    lab = commands.add_parser(
        "hazelcast-lab", help="Hazelcast's anti-entropy: rounds to convergence after lost backups (Spark job)"
    )
    lab.add_argument("--partitions", type=bounded("hazelcast-lab --partitions"), default=271)
    for name, kind, default, what in (
        ("--members", int, [3, 5, 7], "member counts"),
        ("--drops", float, [0.0, 0.1, 0.3, 0.5, 0.7, 0.9], "fractions of the backups lost"),
        ("--parallel", int, [1, 2, 5, 10], "sync permits per member (max parallel replications)"),
    ):
        lab.add_argument(
            name, type=bounded(f"hazelcast-lab {name}", kind), nargs="+", default=default, help=what
        )
    lab.add_argument("--backups", type=bounded("hazelcast-lab --backups"), default=1)
    lab.add_argument(
        "--puts", type=bounded("hazelcast-lab --puts"), default=2, help="per partition and namespace"
    )
    lab.add_argument(
        "--seeds", type=bounded("hazelcast-lab --seeds"), default=2, help="trials per configuration"
    )
    lab.add_argument("--max-rounds", type=bounded("hazelcast-lab --max-rounds"), default=2_000)
    _seed_argument(lab, 0, "seed of the losses")
    _master_argument(lab)
    lab.add_argument("--out", type=output_dir, default=Path("reports/hazelcast-lab"), help="plots and tables")
    lab.add_argument("--json", action="store_true", help="print one JSON object")

    ncache = commands.add_parser(
        "ncache-lab", help="NCache's map by data size beside the hash placements, skewed values (Spark job)"
    )
    ncache.add_argument("--keys", type=bounded("ncache-lab --keys"), default=20_000)
    ncache.add_argument("--zipf", type=bounded("ncache-lab --zipf", float), default=0.6)
    ncache.add_argument("--max-size", type=bounded("ncache-lab --max-size"), default=1 << 20)
    ncache.add_argument(
        "--nodes", type=bounded("distribution --nodes"), nargs="+", default=[4, 8, 16, 32, 64]
    )
    ncache.add_argument("--placements", nargs="+", help="e.g. rendezvous ncache-count ncache-bytes")
    ncache.add_argument("--trials", type=bounded("distribution --trials"), default=10)
    _seed_argument(ncache, 0, "seed of the keys and topologies")
    _master_argument(ncache)
    ncache.add_argument("--out", type=output_dir, default=Path("reports/ncache-lab"), help="plots and tables")
    ncache.add_argument("--json", action="store_true", help="print one JSON object")

    validate = commands.add_parser("validate", help="check implementation traces (ITF JSON lines) with TLC")
    validate.add_argument("traces", type=Path, metavar="TRACES", help="ITF JSON lines or one FILE.itf.json")
    validate.add_argument("--spec", type=Path, help="the spec (default: spec/NAME.tla, NAME from the traces)")
    validate.add_argument(
        "--config", type=Path, help="TLC model config (default: the traces' #meta.config, else SPEC.cfg)"
    )
    validate.add_argument(
        "--mapping", type=Path, metavar="MAP.json", help="TRACES is an event log mapped by MAP"
    )
    validate.add_argument("--json", action="store_true", help="print one JSON object")
    _tlc_arguments(validate)

    scenario = commands.add_parser(
        "scenario", help="run a scenario file on the cluster: timeline, Mermaid diagram, expectations"
    )
    scenario.add_argument("file", type=Path, metavar="FILE")
    scenario.add_argument(
        "--out",
        type=Path,
        help="X.mmd or X.html: the Mermaid diagram is written to X.mmd and the timeline page to X.html "
        "(default reports/scenarios/NAME.mmd)",
    )
    scenario.add_argument("--json", action="store_true", help="print one JSON object")
    scenario.add_argument(
        "--system",
        choices=["impl", "ignite", "hazelcast"],
        default="impl",
        help="a real system to run it on too, side by side with the implementation (docs/real-ignite.md, "
        "docs/real-hazelcast.md)",
    )
    scenario.add_argument("--ignite-version", default="2.18.0", help="Ignite for --system ignite (2.18.0)")
    scenario.add_argument(
        "--hazelcast-version", default="5.7.0", help="Hazelcast for --system hazelcast (5.7.0)"
    )
    _junit_argument(scenario)

    doctor = commands.add_parser(
        "doctor", help="check Java, TLC's jar, Spark, Maven and the Ignite and Hazelcast harnesses here"
    )
    doctor.add_argument("--ignite", action="store_true", help="also start and stop one Ignite server")
    doctor.add_argument("--ignite-version", default="2.18.0", help="the harness's Ignite (default 2.18.0)")
    doctor.add_argument("--hazelcast", action="store_true", help="also start and stop one Hazelcast member")
    doctor.add_argument(
        "--hazelcast-version", default="5.7.0", help="the harness's Hazelcast (default 5.7.0)"
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON object")

    _audit_parser(commands)

    verify = commands.add_parser(
        "verify", help="the main job: check, conform, validate every standard model, the bug zoo; HTML report"
    )
    _master_argument(verify)
    verify.add_argument("--local", action="store_true", help="replay without Spark, one process per core")
    verify.add_argument(
        "--traces",
        type=bounded("verify --traces"),
        default=100,
        help="implementation walks per spec (default 100)",
    )
    verify.add_argument(
        "--steps", type=bounded("verify --steps"), default=30, help="steps per walk at most (default 30)"
    )
    _seed_argument(verify, 0, "seed of the walks")
    verify.add_argument(
        "--out", type=output_dir, default=Path("reports"), help="where index.html goes (default reports)"
    )
    verify.add_argument("--skip-zoo", action="store_true", help="leave out the bug zoo (tidemark zoo)")
    verify.add_argument(
        "--only",
        nargs="+",
        metavar="SPEC",
        help="verify these standard models only, by spec name (e.g. UpdateCounter)",
    )
    verify.add_argument(
        "--walks",
        type=bounded("verify --walks"),
        default=200,
        help="walks of the random-walk campaign's seeded slice (default 200; 0: none)",
    )
    verify.add_argument(
        "--deep", action="store_true", help="also the deep models, exhaustively (conformance/deep.py; hours)"
    )
    verify.add_argument("--json", action="store_true", help="print the VerifyReport as one JSON object")
    _junit_argument(verify)
    _no_wait_argument(verify)
    _tlc_arguments(verify)

    campaign = commands.add_parser(
        "campaign",
        help="random walks of impl/pme.py checking every invariant; a failure shrunk to a scenario",
    )
    campaign.add_argument("--walks", type=bounded("campaign --walks"), default=1000, help="(default 1000)")
    campaign.add_argument(
        "--steps", type=bounded("campaign --steps"), default=100, help="steps per walk at most (default 100)"
    )
    _seed_argument(campaign, 0, "seed of the walks")
    campaign.add_argument(
        "--mutant", help="walk a bug-zoo mutant of impl/pme.py (conformance/zoo/mutants.py)"
    )
    campaign.add_argument(
        "--faithful",
        action="store_true",
        help="Ignite's protocol, without the proposed fixes (tidemark.impl.cluster.Fix)",
    )
    _master_argument(campaign)
    campaign.add_argument("--local", action="store_true", help="walk in this process, without Spark")
    campaign.add_argument(
        "--out",
        type=output_dir,
        default=Path("reports/campaign"),
        help="where the shrunk scenario of a failure goes (default reports/campaign)",
    )
    campaign.add_argument("--json", action="store_true", help="print one JSON object")
    for command in commands.choices.values():
        _verbosity_arguments(command)
    return parser


def _verbosity_arguments(parser: argparse.ArgumentParser) -> None:
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("-q", "--quiet", action="store_true", help="print errors only, no progress")
    loudness.add_argument(
        "-v", "--verbose", action="store_true", help="also pass TLC's output and debug notices through"
    )


def version_text() -> str:
    """tidemark's version, and the Python running it."""
    try:
        version = importlib.metadata.version("tidemark")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        version = "unknown (not installed)"
    return f"tidemark {version} (Python {platform.python_version()})"


def _audit_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = commands.add_parser(
        "audit",
        help="Ignite's idle_verify over partition snapshots (Parquet or CSV) on Spark; --generate makes some",
    )
    audit.add_argument(
        "snapshots", nargs="*", type=Path, metavar="SNAPSHOT", help="a snapshot, and a later one"
    )
    audit.add_argument("--key-type", choices=["int", "long", "string", "uuid"], help="the keys' Java type")
    audit.add_argument("--caches", type=regexps, default=(), help="groups to audit: REGEX[,REGEX...]")
    audit.add_argument("--exclude-caches", type=regexps, default=(), help="groups not to audit: REGEX[,...]")
    audit.add_argument("--dump", type=Path, metavar="FILE", help="every partition's records, Ignite's layout")
    audit.add_argument("--skip-zeros", action="store_true", help="leave empty partitions out of the dump")
    audit.add_argument(
        "--against", type=Path, metavar="DUMP", help="compare the records with an idle_verify dump"
    )
    audit.add_argument("--report", type=Path, metavar="FILE.html", help="a page with the conflicts plotted")
    _master_argument(audit)
    audit.add_argument("--local", action="store_true", help="in this process, without Spark")
    audit.add_argument("--json", action="store_true", help="print one JSON object")
    generate = audit.add_argument_group(
        "--generate DIR: a synthetic snapshot in DIR/snapshot (and DIR/later)"
    )
    generate.add_argument("--generate", type=output_dir, metavar="DIR")
    generate.add_argument("--groups", type=bounded("audit --groups"), default=1)
    generate.add_argument("--partitions", type=bounded("--partitions"), default=1024)
    generate.add_argument("--copies", type=bounded("audit --copies"), default=3)
    generate.add_argument("--nodes", type=bounded("audit --nodes"), help="default: copies + 1")
    generate.add_argument("--entries", type=bounded("audit --entries"), default=100_000)
    generate.add_argument("--divergences", type=bounded("audit --divergences"), default=8)
    generate.add_argument("--not-idle", type=bounded("audit --not-idle"), default=0)
    _seed_argument(generate, 0, "seed of the snapshot")
