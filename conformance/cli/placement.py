"""The placement commands: `tidemark affinity` (where Ignite's rendezvous affinity puts keys) and
`tidemark distribution` (the distribution lab on Spark)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel
from rich.table import Table

from tidemark.conformance.cli.limits import LIMITS
from tidemark.conformance.cli.outputs import emit
from tidemark.conformance.cli.progress import out
from tidemark.conformance.errors import TidemarkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Config = TypeVar("Config", bound=BaseModel)
Report = TypeVar("Report", bound=BaseModel)


def _parse_key(text: str, kind: str) -> object:
    """A key as the Java object it stands for: int and long keep Java's ranges (their hashCode)."""
    import uuid

    from tidemark.impl.affinity import INT_MAX, INT_MIN, JavaLong

    try:
        if kind == "int":
            if not INT_MIN <= (value := int(text)) <= INT_MAX:
                raise ValueError(f"outside the Java int range [{INT_MIN}, {INT_MAX}]")
            return value
        if kind == "long":
            return JavaLong(int(text))
        if kind == "uuid":
            return uuid.UUID(text)
    except ValueError as error:
        raise TidemarkError(
            f"{text!r} is not a Java {kind}: {error}", source="KEY", expected=f"a Java {kind}"
        ) from error
    return text


def cmd_affinity(args: argparse.Namespace) -> int:
    from tidemark.impl.affinity import RendezvousConfig, assign_partition, key_partition, make_node

    if len(args.nodes) > (most := int(LIMITS["affinity --nodes"].high)):
        raise TidemarkError(f"{len(args.nodes):,} node ids", source="--nodes", expected=f"at most {most:,}")
    if len(set(args.nodes)) != len(args.nodes):
        repeated = sorted({node for node in args.nodes if args.nodes.count(node) > 1})
        raise TidemarkError(
            f"node ids repeated: {repeated}", source="--nodes", expected="distinct consistent ids"
        )
    config = RendezvousConfig(partitions=args.partitions, backups=args.backups)
    nodes = [make_node(node) for node in args.nodes]
    keys = [_parse_key(text, args.type) for text in args.keys]  # every key checked before any output
    rows = []
    for text, key in zip(args.keys, keys, strict=True):
        partition = key_partition(key, args.partitions)
        owners = [str(nodes[i].consistent_id) for i in assign_partition(partition, nodes, config)]
        rows.append(
            {
                "key": text,
                "type": args.type,
                "partition": partition,
                "primary": owners[0],
                "backups": owners[1:],
            }
        )
    if args.json:
        from tidemark.conformance.cli.outputs import AffinityOutput

        found = AffinityOutput.model_validate(
            {"partitions": args.partitions, "nodes": args.nodes, "keys": rows}
        )
        return emit("affinity", found, 0)
    table = Table("key", "partition", "primary", "backups")
    for row in rows:
        table.add_row(str(row["key"]), str(row["partition"]), str(row["primary"]), ", ".join(row["backups"]))
    out.print(table)
    return 0


def spark_lab(
    args: argparse.Namespace,
    command: str,
    config: Callable[[], Config],
    run: Callable[[SparkSession, Config], Report],
    write: Callable[[Report, Path], list[Path]],
) -> tuple[Report, list[Path]]:
    """A lab command's work: its `config` (a model refusing bad options is bad input), the sweep `run` on
    Spark (--master), its files written into --out by `write`; returns the report and the files."""
    from pydantic import ValidationError

    from tidemark.conformance.locks import locked
    from tidemark.conformance.spark import spark_session
    from tidemark.conformance.tlc.runner import find_java

    try:
        checked = config()
    except ValidationError as error:
        first: Any = error.errors()[0]
        raise TidemarkError(
            first["msg"], source=f"{command} options", location=".".join(map(str, first["loc"]))
        ) from error
    find_java()  # Spark's driver is a JVM
    with spark_session(args.master) as spark:
        report = run(spark, checked)
    with locked(args.out):  # runs side by side publish whole sets of files, one after the other
        return report, write(report, args.out)


def lab_answer(
    args: argparse.Namespace, command: str, report: BaseModel, files: list[Path], table: str, code: int = 0
) -> int:
    """A lab command's answer: its report as JSON (--json), or its Markdown table and the files written."""
    if args.json:
        return emit(command, report, code)
    out.print(table)
    out.print(f"written: {', '.join(str(f) for f in files)}")
    return code


def cmd_distribution(args: argparse.Namespace) -> int:
    from tidemark.conformance.lab.distribution import (
        DEFAULT_ALGORITHMS,
        DistributionConfig,
        markdown_table,
        run_distribution,
        write_distribution_artifacts,
    )

    by_label = {a.label: a for a in DEFAULT_ALGORITHMS}
    unknown = [name for name in args.algorithms or [] if name not in by_label]
    if unknown:
        raise TidemarkError(
            f"unknown algorithms {unknown}", source="--algorithms", expected=f"some of {sorted(by_label)}"
        )
    report, files = spark_lab(
        args,
        "distribution",
        lambda: DistributionConfig(
            partitions=args.partitions,
            backups=args.backups,
            node_counts=tuple(args.nodes),
            trials=args.trials,
            seed=args.seed,
            algorithms=tuple(by_label[name] for name in args.algorithms)
            if args.algorithms
            else DEFAULT_ALGORITHMS,
        ),
        run_distribution,
        write_distribution_artifacts,
    )
    return lab_answer(args, "distribution", report, files, markdown_table(report))
