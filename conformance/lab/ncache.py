"""NCache size lab: balance by data size and movement on a join or leave, with skewed value sizes, for
NCache's distribution map (impl/ncache_balance.py) beside the hash placements (docs/ncache.md section 4).

One trial: `keys` keys, each hashed into one of the 1000 buckets at random (seeded) with a Zipf-distributed
value size (the k-th key weighs `max_size / k^zipf` bytes), so bucket weights are skewed; N nodes with
the distribution lab's random names (`trial_topology`). Per placement: the bytes each node owns
(peak/mean and CV by bytes; the floor is the largest bucket over the mean, which no placement of whole
buckets goes below); on a join and on a leave, the fraction of bytes moved against the ideal (the
joiner's due 1/(N+1); the leaver's own bytes, which must move) and the parasitic bytes (moved between
nodes other than the one joining or leaving).

NCache's variants, all with the data loaded before the members join one by one: `ncache-count` (the
count-only map of impl/placement.py: each joiner takes exactly the share, from the fullest members),
`ncache-shuffle` (NCache's join below the 10 % weight threshold: a diagonal walk over the weight-sorted
buckets), `ncache-bytes` (NCache's join above it: buckets chosen by bytes) and `ncache-auto` (as
`ncache-bytes`, with automatic data load balancing on, run after every change until no member is out of
the band). A leave re-homes the leaver's buckets by count in every variant, as NCache does.

`run_lab` fans the (placement, nodes, trial) records out as a Spark job through the distribution lab's
`spark_map`; `write_lab_artifacts` renders a report as JSON, PNG plots and HTML/Markdown tables.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tidemark.conformance.lab.distribution import (
    MAX_NODES,
    Algorithm,
    Plot,
    html_table_of,
    lab_page,
    markdown_table_of,
    plot_peak_and_movement,
    publish_lab,
    spark_map,
    trial_topology,
)
from tidemark.impl.ncache import BUCKETS
from tidemark.impl.ncache_balance import (
    AUTO_BALANCE_PERCENT,
    auto_balance,
    join,
    joined,
    member_weights,
    overloaded,
)
from tidemark.impl.placement import ncache_leave, ncache_owners

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NCacheKind = Literal["ncache-count", "ncache-shuffle", "ncache-bytes", "ncache-auto"]
HASHED = {"rendezvous": Algorithm(kind="rendezvous"), "ring-100": Algorithm(kind="ring", vnodes=100)}
HASHED |= {"jump": Algorithm(kind="jump"), "bounded-0.05": Algorithm(kind="bounded", eps=0.05)}
NCACHE: tuple[NCacheKind, ...] = ("ncache-count", "ncache-shuffle", "ncache-bytes", "ncache-auto")
PLACEMENTS = (*HASHED, *NCACHE)
# Weighed joins: a cache size so small every member is above 10 % of it; shuffled: one no member reaches.
TINY_CACHE, HUGE_CACHE = 1, 1 << 62


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LabConfig(_Frozen):
    """The sweep: every placement at every node count, `trials` key sets and topologies each."""

    keys: int = Field(default=20_000, ge=1, le=1_000_000)
    zipf: float = Field(default=0.6, ge=0, le=4)
    max_size: int = Field(default=1 << 20, ge=1, le=1 << 40)
    node_counts: tuple[Annotated[int, Field(ge=2, le=MAX_NODES)], ...] = (4, 8, 16, 32, 64)
    trials: int = Field(default=10, ge=1, le=1_000)
    seed: int = 0
    placements: tuple[str, ...] = PLACEMENTS

    @field_validator("node_counts", "placements")
    @classmethod
    def _distinct(cls, values: tuple[Any, ...]) -> tuple[Any, ...]:
        if not values or len(set(values)) != len(values):
            raise ValueError(f"at least one value, all distinct, got {list(values)}")
        if unknown := [v for v in values if isinstance(v, str) and v not in PLACEMENTS]:
            raise ValueError(f"unknown placement {unknown[0]!r}, expected one of {list(PLACEMENTS)}")
        return values


class Moved(_Frozen):
    """A join or leave: the fraction of bytes and of buckets whose owner changed, bytes / ideal (the
    joiner's due 1/(N+1); the leaver's own bytes), and the fraction of bytes moved between nodes other
    than the one joining or leaving."""

    bytes: float
    buckets: float
    ratio: float
    parasitic: float


class TrialResult(_Frozen):
    placement: str
    nodes: int
    trial: int
    peak_mean: float  # by bytes
    floor: float  # the least peak/mean any placement of whole buckets reaches: the largest bucket's
    cv: float
    join: Moved
    leave: Moved


class SummaryRow(_Frozen):
    """Means over the trials of one placement at one node count (`worst_peak_mean`: the worst trial)."""

    algorithm: str
    nodes: int
    trials: int
    peak_mean: float
    worst_peak_mean: float
    floor: float
    cv: float
    join_bytes: float
    join_ratio: float
    join_parasitic: float
    leave_bytes: float
    leave_ratio: float
    leave_parasitic: float


class LabReport(_Frozen):
    config: LabConfig
    trials: tuple[TrialResult, ...]
    summary: tuple[SummaryRow, ...]


# --- one trial -----------------------------------------------------------------------------------------


def bucket_weights(config: LabConfig, nodes: int, trial: int) -> list[int]:
    """Bytes per bucket: the k-th key (of `keys`) weighs max_size / k^zipf, in a bucket drawn at random."""
    rng = random.Random(f"tidemark-ncache-lab:{config.seed}:{nodes}:{trial}")
    weights = [0] * BUCKETS
    for k in range(1, config.keys + 1):
        weights[rng.randrange(BUCKETS)] += max(1, int(config.max_size / k**config.zipf))
    return weights


def moved(
    before: Sequence[str], after: Sequence[str], weights: Sequence[int], node: str, ideal: float
) -> Moved:
    """What changed between two maps (owner names per bucket) when `node` joined or left."""
    total = sum(weights)
    changed = [b for b, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
    share = sum(weights[b] for b in changed) / total
    parasitic = sum(weights[b] for b in changed if node not in (before[b], after[b])) / total
    return Moved(bytes=share, buckets=len(changed) / len(before), ratio=share / ideal, parasitic=parasitic)


def _settled(owners: Sequence[int], weights: Sequence[int], members: int) -> tuple[int, ...]:
    """Automatic load balancing run until no member is out of the band (each run: one donor; a run that
    changes nothing ends it)."""
    current = tuple(owners)
    for _ in range(members):
        if not overloaded(current, weights, members, AUTO_BALANCE_PERCENT):
            break
        after = auto_balance(current, weights, members, enabled=True)
        if after == current:
            break
        current = after
    return current


def ncache_maps(
    kind: NCacheKind, weights: Sequence[int], members: int, leaver: int
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """NCache's map of `members` joined in order, after one more joins, and after `leaver` left (owners
    renumbered without it); a leave re-homes by bucket count in every variant, as NCache does."""
    if kind == "ncache-count":
        base = tuple(ncache_owners(len(weights), members))
        after_join = tuple(ncache_owners(len(weights), members + 1))
        return base, after_join, tuple(ncache_leave(base, members, leaver))
    cache = HUGE_CACHE if kind == "ncache-shuffle" else TINY_CACHE
    if kind != "ncache-auto":
        base = joined(weights, members, cache)
        return base, join(base, weights, members, cache), tuple(ncache_leave(base, members, leaver))
    base = (0,) * len(weights)
    for n in range(1, members):
        base = _settled(join(base, weights, n, cache), weights, n + 1)
    after_join = _settled(join(base, weights, members, cache), weights, members + 1)
    after_leave = _settled(ncache_leave(base, members, leaver), weights, members - 1)
    return base, after_join, after_leave


def evaluate_trial(config: LabConfig, placement: str, nodes: int, trial: int) -> TrialResult:
    names, joiner, leaver = trial_topology(config.seed, nodes, trial)
    weights = bucket_weights(config, nodes, trial)
    joined_names, survivors = [*names, joiner], names[:leaver] + names[leaver + 1 :]
    if placement in HASHED:
        place = HASHED[placement].placement()
        base, after_join, after_leave = (
            tuple(owners[0] for owners in place(BUCKETS, members, 0))
            for members in (names, joined_names, survivors)
        )
    else:
        kind: NCacheKind = next(k for k in NCACHE if k == placement)
        base, after_join, after_leave = ncache_maps(kind, weights, nodes, leaver)
    load = member_weights(base, weights, nodes)
    total = sum(load)
    mean = total / nodes
    before = [names[o] for o in base]
    return TrialResult(
        placement=placement,
        nodes=nodes,
        trial=trial,
        peak_mean=max(load) / mean,
        floor=max(1.0, max(weights) / mean),
        cv=statistics.pstdev(load) / mean,
        join=moved(before, [joined_names[o] for o in after_join], weights, joiner, 1 / (nodes + 1)),
        leave=moved(
            before, [survivors[o] for o in after_leave], weights, names[leaver], load[leaver] / total
        ),
    )


def summarize(trials: Sequence[TrialResult]) -> tuple[SummaryRow, ...]:
    """One row per (placement, node count), in the order the trials come."""
    groups: dict[tuple[str, int], list[TrialResult]] = {}
    for t in trials:
        groups.setdefault((t.placement, t.nodes), []).append(t)
    mean = statistics.fmean
    return tuple(
        SummaryRow(
            algorithm=placement,
            nodes=nodes,
            trials=len(group),
            peak_mean=mean([t.peak_mean for t in group]),
            worst_peak_mean=max(t.peak_mean for t in group),
            floor=mean([t.floor for t in group]),
            cv=mean([t.cv for t in group]),
            join_bytes=mean([t.join.bytes for t in group]),
            join_ratio=mean([t.join.ratio for t in group]),
            join_parasitic=mean([t.join.parasitic for t in group]),
            leave_bytes=mean([t.leave.bytes for t in group]),
            leave_ratio=mean([t.leave.ratio for t in group]),
            leave_parasitic=mean([t.leave.parasitic for t in group]),
        )
        for (placement, nodes), group in groups.items()
    )


# --- the Spark job -------------------------------------------------------------------------------------


def _evaluate_record(config_json: str, record: tuple[str, int, int]) -> dict[str, Any]:
    """The per-record function run on executors: plain JSON in and out."""
    return evaluate_trial(LabConfig.model_validate_json(config_json), *record).model_dump(mode="json")


def run_lab(spark: SparkSession, config: LabConfig) -> LabReport:
    grid = [(p, n, t) for p in config.placements for n in config.node_counts for t in range(config.trials)]
    rows = spark_map(spark, grid, partial(_evaluate_record, config.model_dump_json()))
    trials = [TrialResult.model_validate(row) for row in rows]
    return LabReport(config=config, trials=tuple(trials), summary=summarize(trials))


# --- rendering -----------------------------------------------------------------------------------------


def plot_lab(report: LabReport, directory: Path) -> list[Path]:
    """bytes_peak_mean.png (peak/mean by bytes vs nodes) and bytes_moved.png (bytes moved / ideal)."""
    config = report.config
    subtitle = f"{config.keys} keys, Zipf {config.zipf:g}, {config.trials} trials"
    plot = Plot(
        "bytes_peak_mean.png",
        "peak / mean bytes",
        f"Balance by data size ({subtitle})",
        "bytes_moved.png",
        "moved bytes / ideal",
        "Bytes moved on a {event} / ideal",
    )
    return plot_peak_and_movement(report.summary, config.node_counts, directory, plot)


_COLUMNS = (
    ("algorithm", "placement", "{}"),
    ("nodes", "nodes", "{}"),
    ("peak_mean", "peak/mean bytes", "{:.3f}"),
    ("worst_peak_mean", "worst", "{:.3f}"),
    ("floor", "floor", "{:.3f}"),
    ("cv", "CV", "{:.3f}"),
    ("join_bytes", "bytes moved on join", "{:.3f}"),
    ("join_ratio", "join / ideal", "{:.2f}"),
    ("join_parasitic", "parasitic on join", "{:.3f}"),
    ("leave_bytes", "bytes moved on leave", "{:.3f}"),
    ("leave_ratio", "leave / ideal", "{:.2f}"),
    ("leave_parasitic", "parasitic on leave", "{:.3f}"),
)


def markdown_table(report: LabReport, nodes: int | None = None) -> str:
    """The summary as Markdown, optionally for one node count."""
    return markdown_table_of([r for r in report.summary if nodes in (None, r.nodes)], _COLUMNS)


def html_table(report: LabReport) -> str:
    return html_table_of(report.summary, _COLUMNS, "ncache-lab")


def write_lab_artifacts(report: LabReport, directory: Path) -> list[Path]:
    """report.json, table.md, table.html, index.html and the plots in `directory`; returns the files."""
    config = report.config
    intro = (
        f"{BUCKETS} buckets, {config.keys} keys with Zipf({config.zipf:g}) value sizes up to"
        f" {config.max_size} bytes, nodes {list(config.node_counts)}, {config.trials} trials,"
        f" seed {config.seed}."
    )

    return publish_lab(
        directory,
        report,
        {"table.md": markdown_table(report), "table.html": html_table(report)},
        lambda work: plot_lab(report, work),
        lambda plots: lab_page("NCache: balance by data size", intro, plots, html_table(report)),
    )


def cmd_ncache_lab(args: argparse.Namespace) -> int:
    """`tidemark ncache-lab`: the sweep on Spark, its files in --out."""
    from tidemark.conformance.cli.placement import lab_answer, spark_lab

    report, files = spark_lab(
        args,
        "ncache-lab",
        lambda: LabConfig(
            keys=args.keys,
            zipf=args.zipf,
            max_size=args.max_size,
            node_counts=tuple(args.nodes),
            trials=args.trials,
            seed=args.seed,
            placements=tuple(args.placements or PLACEMENTS),
        ),
        run_lab,
        write_lab_artifacts,
    )
    return lab_answer(args, "ncache-lab", report, files, markdown_table(report))
