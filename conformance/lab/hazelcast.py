"""Hazelcast convergence lab: how many anti-entropy rounds until every backup replica has converged again
after a network blip lost backups, on tidemark's model of Hazelcast (impl/hazelcast.py), over a realistic
partition table (docs/hazelcast.md, "Convergence lab").

One trial: `partitions` partitions (Hazelcast's default 271), each one model of impl/hazelcast.py driven by
conformance/systems/hazelcast_claims.py's step code, over `members` members with a balanced table (partition
p owned by member p mod N, its replicas the next members); per partition and namespace (map1, map2 and the
internal one) `puts` puts; each backup is lost with probability `drop`, the rest delivered in the order sent.
Then anti-entropy rounds until every replica within the backup count has its owner's data and versions from
its index upward, nothing is dirty and every permit is back (the claims' convergence check).

The sync permits (`hazelcast.partition.max.parallel.replications`) are per member, shared by all its
partitions, for the syncs it requests as a replica and those it serves as an owner: the per-partition models
borrow each member's free permits from one pool while they step. A round is every member's anti-entropy task
once, in turn (each member's task runs on its own clock); within a member's task the partitions it owns fire
at once: every check reaches its replica before the first sync completes, so the permits decide how many
fragments one round repairs. Syncs that a jump triggered during the puts are delivered the same way.

`run_lab` fans the (configuration, seed) trials out as a Spark job; `write_lab_artifacts` renders a report
as JSON, PNG plots and HTML/Markdown tables.
"""

from __future__ import annotations

import argparse
import html
import random
import statistics
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tidemark.conformance.lab.distribution import lab_page, publish_lab
from tidemark.conformance.systems.hazelcast_claims import (
    MEMBERS,
    NAMESPACES,
    model_converged,
    model_of,
    settle,
)
from tidemark.impl.hazelcast import Backup, HazelcastCluster

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from pyspark.sql import SparkSession

# The order one kind of step is delivered in across the partitions of a burst (then again, until quiet).
PHASES = ("BackupAntiEntropy", "SyncRequest", "SyncSend", "SyncResponse", "SyncRetry")
MAX_SEEDS = 1_000
MAX_PUTS = 100


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LabConfig(_Frozen):
    """The sweep: every member count x drop rate x parallel replications, `seeds` trials each."""

    partitions: int = Field(default=271, ge=1, le=10_000)
    backups: int = Field(default=1, ge=1, le=6)
    puts: int = Field(default=2, ge=1, le=MAX_PUTS)
    member_counts: tuple[Annotated[int, Field(ge=2, le=len(MEMBERS))], ...] = (3, 5, 7)
    drops: tuple[Annotated[float, Field(ge=0, le=1)], ...] = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9)
    parallel: tuple[Annotated[int, Field(ge=1, le=100)], ...] = (1, 2, 5, 10)
    seeds: int = Field(default=2, ge=1, le=MAX_SEEDS)
    seed: int = 0
    max_rounds: int = Field(default=2_000, ge=1, le=100_000)

    @field_validator("member_counts", "drops", "parallel")
    @classmethod
    def _distinct(cls, values: tuple[Any, ...]) -> tuple[Any, ...]:
        if not values or len(set(values)) != len(values):
            raise ValueError(f"at least one value, all distinct, got {list(values)}")
        return tuple(sorted(values))


class TrialResult(_Frozen):
    """One trial: the backups sent and lost, the fragments (partition, replica, namespace) that lost one,
    the partitions not converged after the puts and after each round, and the rounds to convergence
    (None: not within max_rounds)."""

    members: int
    drop: float
    parallel: int
    seed: int
    backups_sent: int
    backups_lost: int
    fragments_hit: int
    stale: tuple[int, ...]
    rounds: int | None


class SummaryRow(_Frozen):
    """Over the seeds of one configuration: rounds (mean and worst), fragments hit, partitions stale after
    the puts."""

    members: int
    drop: float
    parallel: int
    trials: int
    converged: int
    mean_rounds: float | None
    max_rounds: int | None
    fragments_hit: float
    stale_after_puts: float


class LabReport(_Frozen):
    config: LabConfig
    trials: tuple[TrialResult, ...]
    summary: tuple[SummaryRow, ...]


# --- one trial -------------------------------------------------------------------------------------------


def table(members: int, partition: int) -> tuple[str, ...]:
    """A balanced partition table: owner m(p mod N + 1), then the next members as replicas 1, 2, ..."""
    names = MEMBERS[:members]
    shift = partition % members
    return names[shift:] + names[:shift]


class _Pool:
    """The members' free sync permits, shared by their partitions' models."""

    def __init__(self, members: Sequence[str], permits: int) -> None:
        self.free = dict.fromkeys(members, permits)

    def lend(self, c: HazelcastCluster) -> HazelcastCluster:
        """The partition's model with the members' free permits as its own."""
        return replace(c, members={m: replace(s, permits=self.free[m]) for m, s in c.members.items()})

    def keep(self, c: HazelcastCluster) -> HazelcastCluster:
        """Take back what the partition's model left free."""
        self.free = {m: s.permits for m, s in c.members.items()}
        return c

    def step(self, c: HazelcastCluster, only: str) -> HazelcastCluster:
        """Deliver every `only` step of one partition with the pool's permits."""
        return self.keep(settle(self.lend(c), only=frozenset({only})))

    def converged(self, c: HazelcastCluster) -> bool:
        return model_converged(self.lend(c))[0]


def _burst(models: list[HazelcastCluster], pool: _Pool, active: Sequence[int]) -> None:
    """Deliver what is in flight in `active` partitions, one kind of step at a time across all of them."""
    while any(_busy(models[p]) for p in active):
        for kind in PHASES:
            for p in active:
                if _busy(models[p]):
                    models[p] = pool.step(models[p], kind)


def _busy(c: HazelcastCluster) -> bool:
    """Messages in flight, or replications an owner prepares."""
    return bool(c.network) or any(s.serving for s in c.members.values())


def evaluate_trial(config: LabConfig, members: int, drop: float, parallel: int, seed: int) -> TrialResult:
    names = MEMBERS[:members]
    models = [model_of(table(members, p), names, config.backups, parallel) for p in range(config.partitions)]
    pool = _Pool(names, parallel)
    # One draw per backup, the same whatever the drop rate: a higher rate loses a superset of the backups.
    rng = random.Random(f"tidemark-hazelcast-lab:{config.seed}:{members}:{seed}")
    value = sent = lost = 0
    hit: set[tuple[int, str, str]] = set()
    for p, c in enumerate(models):
        for ns in NAMESPACES:
            for key in range(config.puts):
                value += 1
                c = c.put(ns, key, value)
        backups = sorted((b for b in c.network if isinstance(b, Backup)), key=lambda b: (b.value, b.replica))
        c = pool.lend(c)
        for b in backups:  # in the order sent: a backup after a lost one is a jump (dirty, a sync asked)
            sent += 1
            if rng.random() < drop:
                lost += 1
                hit.add((p, b.to, b.ns))
                c = c.drop(b)
            else:
                c = c.backup(b.to, b)
        models[p] = pool.keep(c)
    _burst(models, pool, range(config.partitions))
    behind = [p for p in range(config.partitions) if not pool.converged(models[p])]
    stale = [len(behind)]
    while behind and len(stale) <= config.max_rounds:
        for owner in names:
            turn = [p for p in behind if models[p].owner == owner]
            for p in turn:
                models[p] = models[p].anti_entropy(owner)
            _burst(models, pool, turn)
        behind = [p for p in behind if not pool.converged(models[p])]
        stale.append(len(behind))
    return TrialResult(
        members=members,
        drop=drop,
        parallel=parallel,
        seed=seed,
        backups_sent=sent,
        backups_lost=lost,
        fragments_hit=len(hit),
        stale=tuple(stale),
        rounds=None if behind else len(stale) - 1,
    )


def summarize(trials: Sequence[TrialResult]) -> tuple[SummaryRow, ...]:
    groups: dict[tuple[int, float, int], list[TrialResult]] = {}
    for t in trials:
        groups.setdefault((t.members, t.drop, t.parallel), []).append(t)
    rows = []
    for (members, drop, parallel), group in sorted(groups.items()):
        done = [t.rounds for t in group if t.rounds is not None]
        rows.append(
            SummaryRow(
                members=members,
                drop=drop,
                parallel=parallel,
                trials=len(group),
                converged=len(done),
                mean_rounds=statistics.fmean(done) if done else None,
                max_rounds=max(done) if len(done) == len(group) else None,
                fragments_hit=statistics.fmean(t.fragments_hit for t in group),
                stale_after_puts=statistics.fmean(t.stale[0] for t in group),
            )
        )
    return tuple(rows)


# --- the Spark job ---------------------------------------------------------------------------------------


def grid(config: LabConfig) -> list[tuple[int, float, int, int]]:
    """Every (members, drop, parallel, seed), the largest trials first (they set the job's length)."""
    cells = [
        (m, d, par, s)
        for m in config.member_counts
        for d in config.drops
        for par in config.parallel
        for s in range(config.seeds)
    ]
    return sorted(cells, key=lambda c: (-c[1], c[2], c[0], c[3]))


def _evaluate_record(config_json: str, record: tuple[int, float, int, int]) -> dict[str, Any]:
    """The per-record function run on executors: plain JSON in and out, no driver objects."""
    config = LabConfig.model_validate_json(config_json)
    return evaluate_trial(config, *record).model_dump(mode="json")


def run_lab(spark: SparkSession, config: LabConfig) -> LabReport:
    """Sweep the grid as a Spark job: one record per trial, the pure trial function mapped, collected."""
    cells = grid(config)
    context = spark.sparkContext
    # One trial per slice: trials differ in length by orders of magnitude (drop 0 against 0.9 at 1 permit).
    evaluate = partial(_evaluate_record, config.model_dump_json())
    rows = context.parallelize(cells, len(cells)).map(evaluate).collect()
    trials = sorted((TrialResult.model_validate(row) for row in rows), key=_order)
    return LabReport(config=config, trials=tuple(trials), summary=summarize(trials))


def _order(t: TrialResult) -> tuple[int, float, int, int]:
    return t.members, t.drop, t.parallel, t.seed


# --- rendering -------------------------------------------------------------------------------------------


def _mean_rounds(report: LabReport, members: int, drop: float, parallel: int) -> float:
    row = next(r for r in report.summary if (r.members, r.drop, r.parallel) == (members, drop, parallel))
    return float("nan") if row.mean_rounds is None else row.mean_rounds


def _rounds_axis(axes: Axes, ys: Sequence[float]) -> None:
    """Rounds on a log axis (symmetric around 0 if some are 0), labelled in plain numbers."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    shown = [y for y in ys if y == y] or [1.0]  # NaN: no trial converged
    low, top = min(shown), max(shown)
    axes.set_yscale("symlog", linthresh=1) if low < 1 else axes.set_yscale("log")
    ticks = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000)
    axes.set_yticks([t for t in ticks if low / 1.5 <= t <= top * 1.5 or t == low])
    axes.yaxis.set_major_formatter(ScalarFormatter())
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.grid(True, which="major", alpha=0.3)


def plot_lab(report: LabReport, directory: Path) -> list[Path]:
    """rounds_vs_drop.png (one pane per member count, one line per parallel replications) and
    rounds_vs_members.png (at the highest drop rate)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers and CI
    from matplotlib import pyplot as plt

    config = report.config
    subtitle = f"{config.partitions} partitions, {config.backups} backup(s), {config.puts} puts per namespace"
    counts = config.member_counts
    figure, panes = plt.subplots(
        1, len(counts), figsize=(4 * len(counts) + 1, 4.5), sharey=True, squeeze=False
    )
    every: list[float] = []
    for pane, members in zip(panes[0], counts, strict=True):
        for parallel in config.parallel:
            ys = [_mean_rounds(report, members, d, parallel) for d in config.drops]
            pane.plot(config.drops, ys, marker="o", label=f"{parallel} parallel replication(s)")
            every += ys
        pane.set(title=f"{members} members", xlabel="fraction of backups lost")
        pane.grid(True, alpha=0.3)
    _rounds_axis(panes[0][0], every)  # the panes share the axis
    panes[0][0].set_ylabel("anti-entropy rounds to convergence")
    panes[0][-1].legend(fontsize="small")
    figure.suptitle(f"Rounds to convergence ({subtitle})")
    by_drop = directory / "rounds_vs_drop.png"
    figure.tight_layout()
    figure.savefig(by_drop, dpi=110)
    plt.close(figure)

    drop = config.drops[-1]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    every = []
    for parallel in config.parallel:
        ys = [_mean_rounds(report, m, drop, parallel) for m in counts]
        axes.plot(counts, ys, marker="o", label=f"{parallel} parallel replication(s)")
        every += ys
    axes.set(xlabel="members", ylabel="anti-entropy rounds to convergence")
    _rounds_axis(axes, every)
    axes.set_xticks(list(counts))
    axes.set_title(f"Rounds to convergence, {drop:.0%} of backups lost ({subtitle})", fontsize="small")
    axes.legend(fontsize="small")
    by_members = directory / "rounds_vs_members.png"
    figure.tight_layout()
    figure.savefig(by_members, dpi=110)
    plt.close(figure)
    return [by_drop, by_members]


def _cells(row: SummaryRow) -> list[str]:
    rounds = "-" if row.mean_rounds is None else f"{row.mean_rounds:.1f}"
    worst = "-" if row.max_rounds is None else str(row.max_rounds)
    return [
        str(row.members),
        f"{row.drop:.0%}",
        str(row.parallel),
        f"{row.converged}/{row.trials}",
        rounds,
        worst,
        f"{row.fragments_hit:.0f}",
        f"{row.stale_after_puts:.0f}",
    ]


_HEADERS = (
    "members",
    "backups lost",
    "parallel replications",
    "converged",
    "mean rounds",
    "worst rounds",
    "fragments hit",
    "partitions stale after the puts",
)


def markdown_table(report: LabReport) -> str:
    lines = ["| " + " | ".join(_HEADERS) + " |", "|" + "---|" * len(_HEADERS)]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in report.summary]
    return "\n".join(lines) + "\n"


def html_table(report: LabReport) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEADERS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(row)) + "</tr>\n"
        for row in report.summary
    )
    return (
        f'<table class="hazelcast-lab">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n'
    )


def html_page(report: LabReport, plots: list[Path]) -> str:
    config = report.config
    intro = (
        f"{config.partitions} partitions, {config.backups} backup(s), {config.puts} puts per partition and"
        f" namespace ({', '.join(NAMESPACES)}), {config.seeds} seed(s) per configuration, seed {config.seed}."
    )
    return lab_page("Hazelcast anti-entropy: rounds to convergence", intro, plots, html_table(report))


def write_lab_artifacts(report: LabReport, directory: Path) -> list[Path]:
    """report.json, table.md, table.html, index.html and the plots in `directory`; returns the files."""
    return publish_lab(
        directory,
        report,
        {"table.md": markdown_table(report), "table.html": html_table(report)},
        lambda work: plot_lab(report, work),
        lambda plots: html_page(report, plots),
    )


# --- the command -----------------------------------------------------------------------------------------


def cmd_hazelcast_lab(args: argparse.Namespace) -> int:
    """`tidemark hazelcast-lab`: the sweep on Spark, its files in --out; holds when every trial converged."""
    from tidemark.conformance.cli.placement import lab_answer, spark_lab

    report, files = spark_lab(
        args,
        "hazelcast-lab",
        lambda: LabConfig(
            partitions=args.partitions,
            backups=args.backups,
            puts=args.puts,
            member_counts=tuple(args.members),
            drops=tuple(args.drops),
            parallel=tuple(args.parallel),
            seeds=args.seeds,
            seed=args.seed,
            max_rounds=args.max_rounds,
        ),
        run_lab,
        write_lab_artifacts,
    )
    code = 0 if all(t.rounds is not None for t in report.trials) else 1
    return lab_answer(args, "hazelcast-lab", report, files, markdown_table(report), code)
