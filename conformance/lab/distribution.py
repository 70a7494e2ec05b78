"""Distribution lab: how evenly each placement spreads partitions, and how much it moves on a join or leave.

Pure metric functions, plus `run_distribution`: a Spark job over the grid algorithms x node counts x
trials, each trial a topology of random node names derived from the seed. docs/distribution.md explains the
figures; `write_distribution_artifacts` renders a report as JSON, PNG plots and an HTML table.
"""

from __future__ import annotations

import html
import os
import random
import statistics
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, Protocol, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator

from tidemark.conformance.errors import TidemarkError
from tidemark.impl.affinity import INT_MAX, MAX_PARTITIONS, Assignment
from tidemark.impl.placement import (
    Placement,
    bounded_rendezvous,
    jump,
    modulo,
    ncache,
    ncache_after_leave,
    rendezvous,
    ring,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from pyspark.sql import SparkSession


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Algorithm(_Frozen):
    """A placement to measure; `vnodes` applies to the ring, `eps` to bounded rendezvous."""

    kind: Literal["modulo", "ring", "jump", "rendezvous", "bounded", "ncache"]
    vnodes: PositiveInt = 100
    eps: float = Field(default=0.05, ge=0)

    @property
    def label(self) -> str:
        if self.kind == "ring":
            return f"ring-{self.vnodes}"
        if self.kind == "bounded":
            return f"bounded-{self.eps:g}"
        return self.kind

    def placement(self) -> Placement:
        if self.kind == "ring":
            return partial(ring, vnodes=self.vnodes)
        if self.kind == "bounded":
            return partial(bounded_rendezvous, eps=self.eps)
        return {"modulo": modulo, "jump": jump, "rendezvous": rendezvous, "ncache": ncache}[self.kind]


DEFAULT_ALGORITHMS: tuple[Algorithm, ...] = (
    Algorithm(kind="modulo"),
    Algorithm(kind="ring", vnodes=1),
    Algorithm(kind="ring", vnodes=100),
    Algorithm(kind="jump"),
    Algorithm(kind="rendezvous"),
    Algorithm(kind="bounded", eps=0.05),
    Algorithm(kind="bounded", eps=0.04),
    Algorithm(kind="bounded", eps=0.0),
    Algorithm(kind="ncache"),
)


# The sweep's bounds: a trial's cost grows with partitions x nodes (ring-100 at 1,000 nodes and 1,024
# partitions: about 2 s); Ignite's backups are a Java int, a count >= the nodes meaning "every node".
MAX_NODES = 1_000
MAX_TRIALS = 1_000
R = TypeVar("R")  # a lab's record


class DistributionConfig(_Frozen):
    """The sweep: every algorithm at every node count, `trials` topologies each."""

    partitions: int = Field(default=1024, ge=1, le=MAX_PARTITIONS)
    backups: int = Field(default=0, ge=0, le=INT_MAX)
    node_counts: tuple[Annotated[int, Field(ge=2, le=MAX_NODES)], ...] = (4, 8, 16, 32, 64)
    trials: int = Field(default=10, ge=1, le=MAX_TRIALS)
    seed: int = 0
    algorithms: tuple[Algorithm, ...] = DEFAULT_ALGORITHMS

    @field_validator("node_counts")
    @classmethod
    def _some(cls, counts: tuple[int, ...]) -> tuple[int, ...]:
        if not counts:
            raise ValueError("at least one node count")
        return counts

    @field_validator("algorithms")
    @classmethod
    def _distinct_labels(cls, algorithms: tuple[Algorithm, ...]) -> tuple[Algorithm, ...]:
        labels = [a.label for a in algorithms]
        if not labels or len(set(labels)) != len(labels):
            raise ValueError(f"algorithms must be distinct and non-empty, got {labels}")
        return algorithms


class Loads(_Frozen):
    """Copies per node: primaries, backups and both."""

    primaries: tuple[int, ...]
    backups: tuple[int, ...]
    total: tuple[int, ...]


class LoadStats(_Frozen):
    """Spread of per-node loads; chi_square is against a uniform spread (as Ignite's benchmark scores it)."""

    peak_mean: float
    min_mean: float
    cv: float
    chi_square: float


class Movement(_Frozen):
    """What a join or leave did: the fraction of partitions whose owner set changed, the least a balanced
    placement must change (`ratio` = changed / ideal), and the fraction with parasitic moves."""

    changed: float
    ideal: float
    ratio: float
    parasitic: float


class TrialResult(_Frozen):
    algorithm: str
    nodes: int
    trial: int
    primaries: LoadStats
    total: LoadStats
    join: Movement
    leave: Movement


class SummaryRow(_Frozen):
    """Means over the trials of one algorithm at one node count (`worst_peak_mean`: the worst trial)."""

    algorithm: str
    nodes: int
    trials: int
    peak_mean: float
    worst_peak_mean: float
    primary_peak_mean: float
    cv: float
    chi_square: float
    join_changed: float
    join_ratio: float
    join_parasitic: float
    leave_changed: float
    leave_ratio: float
    leave_parasitic: float


class DistributionReport(_Frozen):
    config: DistributionConfig
    trials: tuple[TrialResult, ...]
    summary: tuple[SummaryRow, ...]


# --- metrics ---------------------------------------------------------------------------------------


def node_loads(assignment: Assignment, nodes: int) -> Loads:
    primaries, backups = [0] * nodes, [0] * nodes
    for owners in assignment:
        if owners:
            primaries[owners[0]] += 1
        for backup in owners[1:]:
            backups[backup] += 1
    total = tuple(p + b for p, b in zip(primaries, backups, strict=True))
    return Loads(primaries=tuple(primaries), backups=tuple(backups), total=total)


def load_stats(loads: Sequence[int]) -> LoadStats:
    mean = sum(loads) / len(loads)
    if mean == 0:
        raise ValueError("no copies placed")
    return LoadStats(
        peak_mean=max(loads) / mean,
        min_mean=min(loads) / mean,
        cv=statistics.pstdev(loads) / mean,
        chi_square=sum((load - mean) ** 2 for load in loads) / mean,
    )


Event: TypeAlias = Literal["join", "leave"]


def _owner_sets(assignment: Assignment, nodes: Sequence[str]) -> list[set[str]]:
    return [{nodes[i] for i in owners} for owners in assignment]


def owner_change(
    before: Assignment, before_nodes: Sequence[str], after: Assignment, after_nodes: Sequence[str]
) -> float:
    """Fraction of partitions whose set of owners (by node name) differs between two placements."""
    pairs = zip(_owner_sets(before, before_nodes), _owner_sets(after, after_nodes), strict=True)
    return sum(old != new for old, new in pairs) / len(before)


def parasitic_change(
    before: Assignment,
    before_nodes: Sequence[str],
    after: Assignment,
    after_nodes: Sequence[str],
    node: str,
    event: Event,
) -> float:
    """Fraction of partitions with a copy moved between nodes other than the one joining or leaving:
    the seed's "parasitic traffic", 0 under minimal disruption."""
    pairs = zip(_owner_sets(before, before_nodes), _owner_sets(after, after_nodes), strict=True)
    if event == "join":
        return sum(not new - {node} <= old for old, new in pairs) / len(before)
    return sum(not old - {node} <= new for old, new in pairs) / len(before)


def ideal_change(nodes: int, copies: int, event: Event) -> float:
    """The least fraction of partitions a balanced placement must touch: a joiner takes copies/(N+1) of
    the copies, each in a different partition; a leaver's copies/N must all be re-homed."""
    return min(1.0, copies / (nodes + 1 if event == "join" else nodes))


def movement(
    before: Assignment,
    before_nodes: Sequence[str],
    after: Assignment,
    after_nodes: Sequence[str],
    node: str,
    event: Event,
) -> Movement:
    """The Movement of a join or leave of `node`; copies per partition are read from `before`."""
    changed = owner_change(before, before_nodes, after, after_nodes)
    ideal = ideal_change(len(before_nodes), max(len(owners) for owners in before), event)
    return Movement(
        changed=changed,
        ideal=ideal,
        ratio=changed / ideal,
        parasitic=parasitic_change(before, before_nodes, after, after_nodes, node, event),
    )


# --- one trial -------------------------------------------------------------------------------------


def trial_topology(seed: int, nodes: int, trial: int) -> tuple[list[str], str, int]:
    """Node names (UUID strings, as Ignite's consistent ids often are), a joiner and a leaver's index."""
    rng = random.Random(f"tidemark-distribution:{seed}:{nodes}:{trial}")
    names = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(nodes + 1)]
    return names[:nodes], names[nodes], rng.randrange(nodes)


def evaluate_trial(config: DistributionConfig, algorithm: Algorithm, nodes: int, trial: int) -> TrialResult:
    names, joiner, leaver = trial_topology(config.seed, nodes, trial)
    place = algorithm.placement()
    p, b = config.partitions, config.backups
    base = place(p, names, b)
    loads = node_loads(base, nodes)
    joined = [*names, joiner]
    survivors = names[:leaver] + names[leaver + 1 :]
    # NCache's map depends on history: its leave applies to the current map instead of starting afresh.
    history = algorithm.kind == "ncache"
    left = ncache_after_leave(p, names, b, leaver) if history else place(p, survivors, b)
    return TrialResult(
        algorithm=algorithm.label,
        nodes=nodes,
        trial=trial,
        primaries=load_stats(loads.primaries),
        total=load_stats(loads.total),
        join=movement(base, names, place(p, joined, b), joined, joiner, "join"),
        leave=movement(base, names, left, survivors, names[leaver], "leave"),
    )


def summarize(trials: Sequence[TrialResult]) -> tuple[SummaryRow, ...]:
    """One row per (algorithm, node count), in the order the algorithms first appear."""
    groups: dict[tuple[str, int], list[TrialResult]] = {}
    for result in trials:
        groups.setdefault((result.algorithm, result.nodes), []).append(result)
    rows = []
    mean = statistics.fmean
    for (algorithm, nodes), group in groups.items():
        rows.append(
            SummaryRow(
                algorithm=algorithm,
                nodes=nodes,
                trials=len(group),
                peak_mean=mean([r.total.peak_mean for r in group]),
                worst_peak_mean=max(r.total.peak_mean for r in group),
                primary_peak_mean=mean([r.primaries.peak_mean for r in group]),
                cv=mean([r.total.cv for r in group]),
                chi_square=mean([r.total.chi_square for r in group]),
                join_changed=mean([r.join.changed for r in group]),
                join_ratio=mean([r.join.ratio for r in group]),
                join_parasitic=mean([r.join.parasitic for r in group]),
                leave_changed=mean([r.leave.changed for r in group]),
                leave_ratio=mean([r.leave.ratio for r in group]),
                leave_parasitic=mean([r.leave.parasitic for r in group]),
            )
        )
    order = {name: i for i, name in enumerate(dict.fromkeys(r.algorithm for r in trials))}
    return tuple(sorted(rows, key=lambda r: (order[r.algorithm], r.nodes)))


# --- the Spark job ---------------------------------------------------------------------------------


def _evaluate_record(config_json: str, record: tuple[int, int, int]) -> dict[str, Any]:
    """The per-record function run on executors: plain JSON in and out, no driver objects."""
    config = DistributionConfig.model_validate_json(config_json)
    algorithm, nodes, trial = record
    return evaluate_trial(config, config.algorithms[algorithm], nodes, trial).model_dump(mode="json")


def spark_map(
    spark: SparkSession, grid: list[R], evaluate: Callable[[R], dict[str, Any]]
) -> list[dict[str, Any]]:
    """A lab's sweep on Spark: the records parallelized, the pure per-record function mapped, collected
    (a mapped RDD collects in the order of the parallelized list: no sorting needed)."""
    context = spark.sparkContext
    slices = min(len(grid), 4 * context.defaultParallelism)
    return context.parallelize(grid, slices).map(evaluate).collect()


def run_distribution(spark: SparkSession, config: DistributionConfig) -> DistributionReport:
    """Sweep the grid as a Spark job: parallelize the records, map the pure trial function, collect."""
    grid = [
        (a, nodes, trial)
        for a in range(len(config.algorithms))
        for nodes in config.node_counts
        for trial in range(config.trials)
    ]
    rows = spark_map(spark, grid, partial(_evaluate_record, config.model_dump_json()))
    trials = [TrialResult.model_validate(row) for row in rows]
    return DistributionReport(config=config, trials=tuple(trials), summary=summarize(trials))


# --- rendering -------------------------------------------------------------------------------------


class _Row(Protocol):
    @property
    def algorithm(self) -> str: ...
    @property
    def nodes(self) -> int: ...


def _series(summary: Sequence[_Row], metric: str) -> dict[str, tuple[list[int], list[float]]]:
    series: dict[str, tuple[list[int], list[float]]] = {}
    for row in summary:
        xs, ys = series.setdefault(row.algorithm, ([], []))
        xs.append(row.nodes)
        ys.append(float(getattr(row, metric)))
    return series


_MARKERS = "osv^DPX*h<>"


def draw_lines(axes: Axes, summary: Sequence[_Row], counts: Sequence[int], metric: str) -> None:
    """One line per algorithm over node counts, log-log with plain tick labels."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    for i, (name, (xs, ys)) in enumerate(_series(summary, metric).items()):
        # Several schemes coincide (e.g. at peak/mean 1.0): distinct markers and dashes keep them visible.
        axes.plot(xs, ys, marker=_MARKERS[i % len(_MARKERS)], linestyle="-" if i % 2 else "--", label=name)
    axes.set(xscale="log", yscale="log", xlabel="nodes")
    axes.set_xticks(list(counts), [str(n) for n in counts])
    axes.xaxis.set_minor_formatter(NullFormatter())  # only the node counts are labelled
    axes.yaxis.set_major_formatter(ScalarFormatter())
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.grid(True, which="both", alpha=0.3)


class Plot(NamedTuple):
    """A lab's two figures: peak/mean against node count, and what a join and a leave moved / ideal."""

    peak_name: str
    peak_label: str
    peak_title: str
    move_name: str
    move_label: str
    move_title: str  # with {event}


def plot_peak_and_movement(
    summary: Sequence[Any], counts: Sequence[int], directory: Path, plot: Plot
) -> list[Path]:
    """The two PNGs of `plot` in `directory`: rows with `peak_mean`, `join_ratio` and `leave_ratio`."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers and CI
    from matplotlib import pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(7, 4.5))
    draw_lines(axes, summary, counts, "peak_mean")
    top = max(row.peak_mean for row in summary)
    # Peak/mean spans less than a decade: a log axis alone would label only 1.0.
    axes.set_yticks([t for t in (1, 1.05, 1.1, 1.25, 1.5, 2, 3, 4, 6, 8) if t <= top * 1.05])
    axes.set(ylabel=plot.peak_label, title=plot.peak_title)
    axes.legend(fontsize="small")
    peak = directory / plot.peak_name
    figure.tight_layout()
    figure.savefig(peak, dpi=110)
    plt.close(figure)

    figure, panes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for pane, event in zip(panes, ("join", "leave"), strict=True):
        draw_lines(pane, summary, counts, f"{event}_ratio")
        pane.set(title=plot.move_title.format(event=event))
    panes[0].set_ylabel(plot.move_label)
    panes[1].legend(fontsize="small")
    move = directory / plot.move_name
    figure.tight_layout()
    figure.savefig(move, dpi=110)
    plt.close(figure)
    return [peak, move]


def plot_distribution(report: DistributionReport, directory: Path) -> list[Path]:
    """peak_mean.png (load peak/mean vs node count) and movement.png (join and leave vs ideal) as PNGs."""
    config = report.config
    subtitle = f"{config.partitions} partitions, {config.backups} backups, {config.trials} trials"
    plot = Plot(
        "peak_mean.png",
        "peak / mean load",
        f"Uniformity ({subtitle})",
        "movement.png",
        "moved fraction / ideal fraction",
        "Partitions moved on a {event} / ideal (" + f"{config.backups} backups)",
    )
    return plot_peak_and_movement(report.summary, config.node_counts, directory, plot)


_COLUMNS = (
    ("algorithm", "algorithm", "{}"),
    ("nodes", "nodes", "{}"),
    ("peak_mean", "peak/mean", "{:.3f}"),
    ("worst_peak_mean", "worst peak/mean", "{:.3f}"),
    ("cv", "CV", "{:.3f}"),
    ("chi_square", "chi²", "{:.1f}"),
    ("join_changed", "moved on join", "{:.3f}"),
    ("join_ratio", "join / ideal", "{:.2f}"),
    ("join_parasitic", "parasitic on join", "{:.3f}"),
    ("leave_changed", "moved on leave", "{:.3f}"),
    ("leave_ratio", "leave / ideal", "{:.2f}"),
    ("leave_parasitic", "parasitic on leave", "{:.3f}"),
)


Columns = tuple[tuple[str, str, str], ...]  # (field, title, format) per column of a lab's table


def html_table_of(rows: Sequence[Any], columns: Columns, css: str) -> str:
    """Summary rows as an HTML <table> fragment."""
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title, _ in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(fmt.format(getattr(row, field)))}</td>" for field, _, fmt in columns)
        + "</tr>\n"
        for row in rows
    )
    return f'<table class="{css}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n'


def markdown_table_of(rows: Sequence[Any], columns: Columns) -> str:
    """Summary rows as a Markdown table."""
    lines = ["| " + " | ".join(title for _, title, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt.format(getattr(row, f)) for f, _, fmt in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def html_table(report: DistributionReport) -> str:
    """The summary as an HTML <table> fragment (one row per algorithm and node count)."""
    return html_table_of(report.summary, _COLUMNS, "distribution")


def markdown_table(report: DistributionReport, nodes: int | None = None) -> str:
    """The summary as a Markdown table, optionally for one node count (for docs/distribution.md)."""
    return markdown_table_of([row for row in report.summary if nodes is None or row.nodes == nodes], _COLUMNS)


def lab_page(title: str, intro: str, plots: list[Path], table: str) -> str:
    """A lab's standalone report page: its title, a paragraph of text, the plots (beside it), the table."""
    images = "".join(f'<p><img src="{html.escape(p.name)}" alt="{html.escape(p.stem)}"></p>\n' for p in plots)
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>tidemark: {html.escape(title)}</title>\n'
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n<p>{html.escape(intro)}</p>\n{images}{table}</body></html>\n"
    )


def html_page(report: DistributionReport, plots: list[Path]) -> str:
    """A standalone report page: the configuration, the plots (beside it) and the table."""
    config = report.config
    intro = (
        f"{config.partitions} partitions, {config.backups} backups, nodes {list(config.node_counts)}, "
        f"{config.trials} trials per size, seed {config.seed}."
    )
    return lab_page("Data distribution", intro, plots, html_table(report))


def publish(directory: Path, render: Callable[[Path], list[str]]) -> list[Path]:
    """Write a lab's files into `directory`: `render` draws them in a scratch directory beside it and
    returns their names, then they are renamed into place; a failure leaves the directory as it was."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".partial-") as scratch:
        work = Path(scratch)
        names = render(work)
        if clashing := [name for name in names if (directory / name).is_dir()]:
            raise TidemarkError(
                f"{clashing[0]} there is a directory", source=str(directory), expected="a file or nothing"
            )
        for name in names:
            os.replace(work / name, directory / name)
    return [directory / name for name in names]


def publish_lab(
    directory: Path,
    report: BaseModel,
    tables: Mapping[str, str],
    plot: Callable[[Path], list[Path]],
    page: Callable[[list[Path]], str],
) -> list[Path]:
    """A lab's files, published into `directory`: report.json, its `tables` (file name -> text), the plots
    `plot` draws and index.html (`page` of those plots); returns the files."""

    def render(work: Path) -> list[str]:
        (work / "report.json").write_text(report.model_dump_json(indent=2))
        for name, text in tables.items():
            (work / name).write_text(text)
        plots = plot(work)
        (work / "index.html").write_text(page(plots))
        return ["report.json", *tables, "index.html", *(p.name for p in plots)]

    return publish(directory, render)


def write_distribution_artifacts(report: DistributionReport, directory: Path) -> list[Path]:
    """report.json, table.html, index.html and the plots in `directory`; returns the files."""
    return publish_lab(
        directory,
        report,
        {"table.html": html_table(report)},
        lambda work: plot_distribution(report, work),
        lambda plots: html_page(report, plots),
    )
