"""`tidemark conform`: TLC dumps the model's state graph, Spark replays every edge against the impl.

Run directory layout (one per spec and model, reused by later commands):
    states.parquet, edges.parquet   the state graph (conformance/tlc/dot.py)
    inputs.json                     what the graph was made from: a rerun on the same inputs reuses it
    results.parquet/                one row per state: edges replayed and mismatching, the actions the
                                    spec takes and the impl enables (missing/extra), coverage, mismatches
    mismatches.parquet              the mismatch examples kept in the summary, explained (JSON per row)
    summary.json                    the ConformResult
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, Field, ValidationError

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.kit.replay import DriverRun
from tidemark.conformance.locks import locked
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.parallel import PARALLEL_EDGES, cores, replay_in_shares
from tidemark.conformance.replay import (
    RESULTS_DDL,
    RESULTS_SCHEMA,
    Mismatch,
    ReplaySummary,
    StateResult,
    explain,
    replay_arrow_batches,
    results_batches,
)
from tidemark.conformance.spark import SparkWarmup, is_local, session_running, spark_session
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.dot import GRAPH_FORMAT, GraphSummary, dot_to_parquet
from tidemark.conformance.tlc.output import Outcome, TlcResult, parse_output, tlc_failure
from tidemark.conformance.tlc.runner import TlcOptions, find_jar, find_java, run_tlc
from tidemark.conformance.tlc.values import Value


class DriverOptions(BaseModel):
    """Replay through driver processes instead of the in-process implementation."""

    command: list[str] = Field(description="the driver's command line")
    processes: int = Field(default=2, ge=1, description="drivers running in parallel (on Spark: per task)")
    timeout: float = Field(default=60.0, gt=0, description="seconds a driver has to answer one message")
    walk: bool = Field(default=False, description="walks from the initial state even if it can `load`")
    spark: bool = Field(
        default=False, description="on Spark (local[*] or conform's master): drivers per task"
    )


class ConformResult(BaseModel):
    spec: str
    config: str
    mutant: str | None = None
    outcome: Outcome = Field(description="TLC's outcome while dumping the graph")
    states: int = 0
    edges: int = 0
    edges_replayed: int = 0
    mismatches: int = 0
    enabledness_mismatches: int = 0
    tlc_seconds: float = 0.0
    load_seconds: float = 0.0
    graph_reused: bool = Field(default=False, description="the run directory's graph matched the inputs")
    replay_seconds: float = 0.0
    master: str | None = None
    engine: str = Field(default="", description="where the replay ran, and why there")
    driver: DriverRun | None = Field(default=None, description="how the drivers replayed the graph")
    coverage: dict[str, int] = Field(default_factory=dict)
    examples: list[Mismatch] = Field(default_factory=list)
    tlc: TlcResult | None = None

    @property
    def holds(self) -> bool:
        return (
            self.outcome == Outcome.OK
            and self.mismatches == 0
            and self.enabledness_mismatches == 0
            and self.edges_replayed == self.edges
        )


RESULTS = "results.parquet"


def default_run_dir(spec: Path, config: Path) -> Path:
    return Path("runs") / f"{spec.stem}-{config.stem}"


def replay_with_spark(
    spark: object, graph: Path, spec: str, constants: Mapping[str, Value], mutant: str | None
) -> ReplaySummary:
    """Group each state with its outgoing edges (the targets' digests and actions joined in), replay
    partitions in parallel on impl/, and write the results table into `graph`."""
    return replay_partitions(spark, graph, partial(replay_arrow_batches, spec, dict(constants), mutant))


def replay_partitions(
    spark: object, graph: Path, job: Callable[[Iterator[Any]], Iterator[pa.RecordBatch]]
) -> ReplaySummary:
    """The graph's (fp, state, out) rows replayed on Spark, each partition by `job` (_replay_plan); the
    results table is written into `graph`."""
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    # On a cluster the executors do not see this machine's disk: the graph travels from the driver as
    # Arrow data, and the results come back the same way; a local master reads and writes the files.
    local = is_local(str(spark.sparkContext.master))

    def table(name: str) -> Any:
        path = graph / name
        return spark.read.parquet(str(path)) if local else spark.createDataFrame(pq.read_table(path))

    results = _replay_plan(table("states.parquet"), table("edges.parquet"), job)
    with _publishing(graph / RESULTS) as target:
        if local:
            results.write.parquet(str(target))
        else:
            pq.write_table(results.toArrow(), target)
    return summarize(graph)


def _replay_plan(states: Any, edges: Any, job: Callable[[Iterator[Any]], Iterator[pa.RecordBatch]]) -> Any:
    """The replay's Spark plan: each state with its outgoing edges (the targets' digests and actions
    joined in), mapped by `job` to results rows."""
    from pyspark.sql import functions as F

    targets = states.select(
        F.col("fp").alias("dst"), F.col("digest").alias("dst_digest"), F.col("action").alias("dst_action")
    )
    outgoing = (
        edges.join(targets, "dst")
        .groupBy("src")
        .agg(F.collect_list(F.struct("dst", "dst_digest", "dst_action")).alias("out"))
    )
    rows = (
        states.select("fp", "state")
        .join(outgoing, states.fp == outgoing.src, "left")
        .select("fp", "state", "out")
    )
    # Arrow batches, not pickled Rows: the JVM -> Python hand-over is the cost that dominates otherwise.
    return rows.mapInArrow(job, RESULTS_DDL)


def _prepare_worker(
    spec: str, constants: Mapping[str, Value], mutant: str | None, batches: Iterator[Any]
) -> Iterator[pa.RecordBatch]:
    """The warm-up job's body: a Python worker imports and builds what replaying takes, and answers
    nothing."""
    mapping_for(spec, constants, mutant)
    for _ in batches:
        pass
    return iter(())


def warm_up_replay(spec: str, constants: Mapping[str, Value], mutant: str | None, spark: Any) -> None:
    """Run the replay's plan over a one-state graph on `spark`: the JVM loads and compiles the plan's
    classes and the Python workers start and import the mapping, before the real graph exists."""
    from tidemark.conformance.tlc.dot import EDGES_SCHEMA, STATES_SCHEMA

    states = {"fp": [0], "initial": [True], "state": ["{}"], "action": ["{}"], "digest": [0]}
    edges = {"src": [0], "dst": [0], "label": [""]}
    _replay_plan(
        spark.createDataFrame(pa.table(states, schema=STATES_SCHEMA)),
        spark.createDataFrame(pa.table(edges, schema=EDGES_SCHEMA)),
        partial(_prepare_worker, spec, dict(constants), mutant),
    ).collect()


class GraphTables:
    """A dumped graph held in this process's memory: the local replay's input, and the target states'
    texts that explain mismatches."""

    def __init__(self, graph: Path) -> None:
        columns = pq.read_table(
            graph / "states.parquet", columns=["fp", "initial", "state", "action", "digest"]
        ).to_pydict()
        edges = pq.read_table(graph / "edges.parquet", columns=["src", "dst"]).to_pydict()
        self.order: list[int] = columns["fp"]
        self.initial = [fp for fp, initial in zip(columns["fp"], columns["initial"], strict=True) if initial]
        self.digests = dict(zip(columns["fp"], columns["digest"], strict=True))
        self.texts = dict(zip(columns["fp"], columns["state"], strict=True))
        target = {
            fp: (fp, digest, action)
            for fp, digest, action in zip(columns["fp"], columns["digest"], columns["action"], strict=True)
        }
        self._parent: dict[int, tuple[int, str] | None] | None = None
        self.outgoing: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
        for src, dst in zip(edges["src"], edges["dst"], strict=True):
            self.outgoing[src].append(target[dst])

    def path_to(self, fp: int) -> list[Any]:
        """The actions (ITF) of a shortest path from an initial state to state `fp`."""
        if self._parent is None:
            self._parent = {fp: None for fp in self.initial}
            frontier = deque(self.initial)
            while frontier:
                src = frontier.popleft()
                for dst, _, action in self.outgoing.get(src, []):
                    if dst not in self._parent:
                        self._parent[dst] = (src, action)
                        frontier.append(dst)
        steps: list[Any] = []
        while (step := self._parent.get(fp)) is not None:
            fp = step[0]
            steps.append(json.loads(step[1]))
        return steps[::-1]

    def with_paths(self, examples: list[Mismatch]) -> list[Mismatch]:
        """The examples, each with the path that leads to it from an initial state (if it has none)."""
        return [
            m
            if m.path is not None
            else m.model_copy(update={"path": [*self.path_to(m.src), *([m.action] if m.action else [])]})
            for m in examples
        ]

    def rows(self) -> Iterator[tuple[int, str, list[tuple[int, int, str]]]]:
        """(state, its JSON, outgoing edges (dst, dst digest, dst action)) in the tables' order, which is
        TLC's discovery order: shallow states first."""
        for fp in self.order:
            yield fp, self.texts[fp], self.outgoing.get(fp, [])


def local_processes(edges: int) -> int:
    """How many processes replay a graph of `edges` edges on this machine without Spark."""
    return 1 if edges < PARALLEL_EDGES else cores()


def replay_locally(
    graph: Path, spec: str, constants: Mapping[str, Value], mutant: str | None, processes: int | None = None
) -> ReplaySummary:
    """The same replay on this machine without Spark: in this process, or with `processes` (by default
    `local_processes`) forked processes (conformance/parallel.py)."""
    tables = GraphTables(graph)
    rows = list(tables.rows())
    count = processes or local_processes(sum(len(out) for _, _, out in rows))
    with _publishing(graph / RESULTS) as target:
        target.mkdir()
        replay_in_shares(target, rows, spec, constants, mutant, count)
    return _summary(graph, tables)


def write_results(graph: Path, tables: GraphTables, results: Iterable[StateResult]) -> ReplaySummary:
    with _publishing(graph / RESULTS) as target:
        target.mkdir()
        with pq.ParquetWriter(target / "part-00000.parquet", RESULTS_SCHEMA) as writer:
            for batch in results_batches(results):
                writer.write_batch(batch)
    return _summary(graph, tables)


def _summary(graph: Path, tables: GraphTables) -> ReplaySummary:
    summary = summarize(graph, tables.texts.get)
    summary.examples = tables.with_paths(summary.examples)
    return summary


def summarize(graph: Path, state_text: Callable[[int], str | None] | None = None) -> ReplaySummary:
    """Fold the run directory's results table into a summary; its edge mismatches are explained with
    the spec's target states (`state_text`, or read from the states table)."""
    summary = ReplaySummary()
    for batch in pq.ParquetDataset(graph / RESULTS).read().to_batches():
        summary.add_rows(batch)
    summary.coverage = dict(sorted(summary.coverage.items()))
    if state_text is None:
        wanted = [m.dst for m in summary.examples if m.actual_state is not None]
        table = pq.read_table(
            graph / "states.parquet", columns=["fp", "state"], filters=[("fp", "in", wanted)]
        )
        state_text = dict(
            zip(table.column("fp").to_pylist(), table.column("state").to_pylist(), strict=True)
        ).get
    summary.examples = sorted(
        (
            explain(m, text) if m.dst is not None and (text := state_text(m.dst)) is not None else m
            for m in summary.examples
        ),
        key=lambda m: (m.src, m.dst or 0, m.kind),
    )
    return summary


@contextmanager
def _publishing(target: Path) -> Iterator[Path]:
    """A scratch path beside `target` (a file or a directory) that replaces it when the block succeeds,
    and is removed if it does not: an interrupted write never leaves a half-written target."""
    scratch = target.with_name(target.name + ".partial")
    _remove(scratch)
    try:
        yield scratch
        if target.is_dir():
            shutil.rmtree(target)
        scratch.replace(target)
    finally:
        _remove(scratch)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _write_mismatches(path: Path, summary: ReplaySummary) -> None:
    with _publishing(path) as scratch:
        pq.write_table(pa.table({"mismatch": [m.model_dump_json() for m in summary.examples]}), scratch)


class GraphInputs(BaseModel):
    """What a dumped graph was made from; a run directory holding the same is reused, not rebuilt."""

    fingerprint: str
    tlc: TlcResult
    graph: GraphSummary


def inputs_fingerprint(spec: Path, config: Path, options: TlcOptions) -> str:
    """Every module beside the spec (EXTENDS finds them there), the model, TLC and its graph options."""
    digest = hashlib.sha256()
    for path in [*sorted(spec.parent.glob("*.tla")), config, find_jar()]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(options.model_dump_json(include={"mode", "fp", "seed", "depth", "traces"}).encode())
    digest.update(f"graph format {GRAPH_FORMAT}".encode())
    return digest.hexdigest()


class GraphDump(BaseModel):
    tlc: TlcResult
    graph: GraphSummary | None = Field(description="None when TLC did not finish with outcome ok")
    load_seconds: float = 0.0
    reused: bool = False


def dump_graph(
    spec: Path, config: Path, graph: Path, options: TlcOptions, on_line: Callable[[str], None] | None
) -> GraphDump:
    """Run TLC with the dot dump and convert it to Parquet in `graph`; the dot file is removed.

    When `graph` already holds the tables made from the same inputs, they are reused as they are.
    """
    graph.mkdir(parents=True, exist_ok=True)
    record = graph / "inputs.json"
    fingerprint = inputs_fingerprint(spec, config, options)
    tables = (graph / "states.parquet", graph / "edges.parquet")
    if record.is_file() and all(table.is_file() for table in tables):
        known = _recorded_graph(record, *tables)
        if known is not None and known.fingerprint == fingerprint:
            return GraphDump(tlc=known.tlc, graph=known.graph, reused=True)
    record.unlink(missing_ok=True)  # the tables below are about to change
    dot = graph / "graph.dot"
    try:
        run = run_tlc(spec, config, options.model_copy(update={"dump_dot": dot}), on_line)
        result = parse_output(run, source=f"TLC on {spec}")
        if result.outcome != Outcome.OK:
            return GraphDump(tlc=result, graph=None)
        started = time.monotonic()
        summary = dot_to_parquet(dot, *tables)
        _write_atomically(
            record, GraphInputs(fingerprint=fingerprint, tlc=result, graph=summary).model_dump_json()
        )
        return GraphDump(tlc=result, graph=summary, load_seconds=round(time.monotonic() - started, 3))
    finally:
        dot.unlink(missing_ok=True)


def _recorded_graph(record: Path, states: Path, edges: Path) -> GraphInputs | None:
    """The run directory's record of its graph, None (with a notice) when the record or the tables it
    describes are unreadable or disagree: the graph is then rebuilt."""
    problem = None
    try:
        known = GraphInputs.model_validate_json(record.read_bytes())
    except (OSError, ValidationError) as error:
        detail = error.errors(include_url=False)[0]["msg"] if isinstance(error, ValidationError) else error
        problem = f"{record.name} is not a graph record: {detail}"
    else:
        for table, expected in ((states, known.graph.states), (edges, known.graph.edges)):
            try:
                count = pq.read_metadata(table).num_rows
            except (OSError, pa.ArrowException) as error:
                problem = f"{table.name} is not a Parquet table: {error}"
                break
            if count != expected:
                problem = f"{table.name} holds {count:,} rows, {record.name} says {expected:,}"
                break
    if problem is None:
        return known
    logging.getLogger("tidemark").warning("%s: %s; rebuilding the state graph", record.parent, problem)
    return None


def _write_atomically(path: Path, text: str) -> None:
    with _publishing(path) as scratch:
        scratch.write_text(text)


# Below this many edges the replay without Spark (one process per core) beats a new Spark session on
# this machine (docs/performance.md, "The standard models, in the mode conform picks": on the counter
# model, 304,000 edges, two processes replayed in 78 s where a local Spark session warmed behind TLC
# still took 218 s after it). Above it Spark's worth is memory: the replay without it holds the whole
# graph in the driver's memory (about 0.5 GB per million edges).
AUTO_SPARK_EDGES = 1_000_000


def _spark_expected(run_dir: Path, master: str | None, local: bool | None) -> bool:
    """Whether the replay will run on Spark before TLC has said how large the graph is: asked for, or
    chosen by size and the run directory's earlier graph of this model was large enough."""
    if local is not None or master is not None:
        return not local
    try:
        earlier = GraphInputs.model_validate_json((run_dir / "inputs.json").read_bytes())
    except (OSError, ValidationError):
        return False
    return earlier.graph.edges >= AUTO_SPARK_EDGES


def replay_engine(edges: int, master: str | None, local: bool | None) -> tuple[bool, str]:
    """(replay without Spark?, why): as asked, or, with `local` None and no master, by the graph's size."""
    here = f"without Spark, {local_processes(edges)} process(es)"
    if local:
        return True, f"{here} (asked for)"
    if master is not None:
        return False, f"on Spark at {master} (asked for)"
    if local is not None:
        return False, "on Spark (asked for)"
    if edges < AUTO_SPARK_EDGES:
        return True, f"{here} ({edges:,} edges: below {AUTO_SPARK_EDGES:,}, Spark would not pay off)"
    return False, f"on Spark ({edges:,} edges: at least {AUTO_SPARK_EDGES:,}, where Spark pays off)"


def conform(
    spec: Path,
    config: Path | None = None,
    *,
    master: str | None = None,
    local: bool | None = False,
    mutant: str | None = None,
    run_dir: Path | None = None,
    options: TlcOptions | None = None,
    on_line: Callable[[str], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    wait: bool = True,
    driver: DriverOptions | None = None,
) -> ConformResult:
    """Model-check `spec` with a state-graph dump and replay every edge and state on the impl.

    `local`: replay in this process (True), on Spark (False), or by the graph's size (None,
    `replay_engine`). `on_line` gets TLC's output lines, `on_phase` a short note as each later phase
    starts. The run directory stays consistent if the run is interrupted: the results of an earlier run
    are removed before anything changes, and every file is written under a temporary name and renamed.
    One run at a time works in a run directory: another one waits for it (or, unless `wait`, fails at
    once).
    """
    phase = on_phase or (lambda _: None)
    find_java()  # nothing is created in the run directory without the tools to fill it
    find_jar()
    config = config or spec.with_suffix(".cfg")
    model = read_config(config)
    if driver is None:  # bad spec, constants or mutant: fail before TLC runs
        mapping_for(spec.stem, model.constants, mutant)
    elif shutil.which(driver.command[0]) is None:  # nor a driver that cannot start
        raise ToolError("cannot start the driver: no such program", source=driver.command[0])
    run_dir = run_dir or default_run_dir(spec, config)
    with locked(run_dir, wait=wait), ExitStack() as stack:
        warmup = None
        # Not beside a session already running (a test suite's shared one): nothing to hide then.
        if driver is None and _spark_expected(run_dir, master, local) and not session_running():
            warmup = SparkWarmup(master, partial(warm_up_replay, spec.stem, model.constants, mutant))
            stack.callback(warmup.close)
        for stale in (run_dir / "summary.json", run_dir / "mismatches.parquet"):
            stale.unlink(missing_ok=True)
        shutil.rmtree(run_dir / RESULTS, ignore_errors=True)
        phase("model checking with TLC (state graph dump)")
        dump = dump_graph(spec, config, run_dir, options or TlcOptions(), on_line)
        tlc, graph = dump.tlc, dump.graph
        if (error := tlc_failure(tlc, spec, config)) is not None:
            raise error
        result = ConformResult(
            spec=spec.stem,
            config=str(config),
            mutant=mutant,
            outcome=tlc.outcome,
            tlc_seconds=0.0 if dump.reused else tlc.seconds,
            load_seconds=dump.load_seconds,
            graph_reused=dump.reused,
            tlc=tlc,
        )
        if graph is None:
            return result
        if graph.states_without_action:
            raise TidemarkError(
                f"{graph.states_without_action} states have no `action` variable:"
                " their edges cannot be replayed",
                source=str(spec),
                expected="a spec that records each step in `action` (see DESIGN.md)",
            )
        started = time.monotonic()
        in_process, result.engine = replay_engine(graph.edges, master, local)
        if driver is not None and (driver.spark or master is not None) and not driver.walk:
            from tidemark.conformance.kit.spark import replay_with_spark_drivers

            phase(f"starting Spark: replaying through drivers on {master or 'local[*]'}")
            spark = stack.enter_context(spark_session(master))
            result.master = spark.sparkContext.master
            result.engine = f"on Spark {result.master}, {driver.processes} driver process(es) per task"
            phase(f"replaying {graph.edges:,} edges {result.engine}")
            summary, result.driver = replay_with_spark_drivers(
                spark, run_dir, spec.stem, model.constants, driver
            )
        elif driver is not None:
            result.engine = f"through {driver.processes} driver process(es)"
            phase(f"replaying {graph.edges:,} edges {result.engine}")
            from tidemark.conformance.kit.local import replay_with_drivers  # imports this module

            summary, result.driver = replay_with_drivers(run_dir, spec.stem, model.constants, driver)
        elif in_process:
            phase(f"replaying {graph.edges:,} edges {result.engine}")
            summary = replay_locally(run_dir, spec.stem, model.constants, mutant)
        else:
            phase(f"{'waiting for' if warmup else 'starting'} Spark: replaying {result.engine}")
            spark = warmup.session() if warmup else stack.enter_context(spark_session(master))
            result.master = spark.sparkContext.master
            phase(f"replaying {graph.edges:,} edges on Spark {result.master}")
            summary = replay_with_spark(spark, run_dir, spec.stem, model.constants, mutant)
        result.replay_seconds = round(time.monotonic() - started, 3)
        if (summary.states, summary.edges) != (graph.states, graph.edges):
            raise TidemarkError(
                f"replay saw {summary.states} states and {summary.edges} edges, the dump holds "
                f"{graph.states} and {graph.edges}",
                source=str(run_dir),
                expected="every state and edge of the graph replayed once",
            )
        result = result.model_copy(
            update={
                "states": summary.states,
                "edges": summary.edges,
                "edges_replayed": summary.edges_replayed,
                "mismatches": summary.mismatches,
                "enabledness_mismatches": summary.enabledness_mismatches,
                "coverage": summary.coverage,
                "examples": summary.examples[:20],
            }
        )
        _write_mismatches(run_dir / "mismatches.parquet", summary)
        _write_atomically(run_dir / "summary.json", result.model_dump_json(indent=2))
        return result
