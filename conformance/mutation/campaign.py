"""The mutation campaign: how many single-point faults in an impl/ module conformance catches.

A mutant (conformance/mutation/points.py) runs in a fresh interpreter in which the mutated module is
installed under its real name before anything imports it, so every importer (the mappings, impl/pme.py's
subclasses of impl/cluster.py) gets the mutated code. There it replays the module's standard models'
state graphs (dumped once by TLC, in discovery order: shallow states first) until the first mismatch:
conformance kills the mutant. The unmutated module's replay, under coverage.py, first tells which lines
the models execute: a mutant of a line they never run survives without a replay ("unreached"). A
survivor is then run against the module's unit tests to find one that exposes it, and looked up in
conformance/mutation/survivors.py for its category and explanation.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

import coverage
from pydantic import BaseModel, Field

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mutation.points import Mutant, install, mutants
from tidemark.conformance.mutation.survivors import Category, explanation
from tidemark.conformance.resources import resource

if TYPE_CHECKING:  # imported at run time only once the mutant is installed
    from tidemark.conformance.conform import GraphTables
    from tidemark.conformance.mappings import SpecMapping

_RESULT = "tidemark-mutant-result "


class ModelGraph(BaseModel):
    """A standard model's state graph, dumped once by TLC for the whole campaign."""

    spec: str
    config: str
    graph: str = Field(description="run directory holding states.parquet and edges.parquet")


class Task(BaseModel):
    """What one child interpreter does: install mutant `index` of `path` (none: the unmutated module),
    then replay `models` until the first mismatch (recording the module's executed lines if `trace`),
    and run the unit tests `tests`."""

    path: str
    index: int | None
    models: list[ModelGraph] = Field(default_factory=list)
    trace: bool = False
    tests: list[str] = Field(default_factory=list)


class Verdict(BaseModel):
    status: Literal["killed", "survived", "stillborn"]
    model: str | None = Field(default=None, description="the model whose replay killed it")
    evidence: str | None = Field(default=None, description="the first mismatch, or why it is stillborn")
    test: str | None = Field(default=None, description="the first unit test that fails on it")
    lines: list[int] = Field(default_factory=list, description="the module's lines the replay executed")


_TURN = 500  # states each model replays in its turn

T = TypeVar("T")
R = TypeVar("R")


def in_turns(sources: Sequence[Iterable[T]], size: int) -> Iterator[tuple[int, T]]:
    """(source index, item) of every source, the sources taking turns of `size` items until all are
    exhausted."""
    running = [(index, iter(source)) for index, source in enumerate(sources)]
    while running:
        for entry in list(running):
            index, items = entry
            turn = list(itertools.islice(items, size))
            yield from ((index, item) for item in turn)
            if len(turn) < size:
                running.remove(entry)


def _first_mismatch(models: list[ModelGraph]) -> tuple[str, str] | None:
    """Replay the graphs, each in discovery order, taking turns of `_TURN` states; the model and the
    first mismatch (or crash) as one line, None if every graph conforms.

    Turns let a fault that only a small model exposes surface in its shallow states instead of after
    the whole of the larger models before it."""
    from tidemark.conformance.conform import GraphTables
    from tidemark.conformance.mappings import mapping_for
    from tidemark.conformance.tlc.config import read_config

    replays = []
    for model in models:
        tables = GraphTables(Path(model.graph))
        try:
            mapping = mapping_for(model.spec, read_config(Path(model.config)).constants)
        except Exception as error:  # the mutant rejects the model's configuration: conform fails at once
            return model.config, f"mapping: {type(error).__name__}: {error}"[:300]
        replays.append((model, tables, mapping))
    for index, (fp, text, outgoing) in in_turns([tables.rows() for _, tables, _ in replays], _TURN):
        model, tables, mapping = replays[index]
        evidence = _mismatch(mapping, tables, fp, text, outgoing)
        if evidence is not None:
            return model.config, evidence
    return None


def _mismatch(
    mapping: SpecMapping, tables: GraphTables, fp: int, text: str, outgoing: list[tuple[int, int, str]]
) -> str | None:
    """One state's first mismatch (or crash) as one line, None if it conforms."""
    from tidemark.conformance.replay import explain, replay_state

    try:
        result = replay_state(mapping, fp, text, outgoing)
    except Exception as error:  # any crash of the mutant fails the conformance run
        return f"state {fp}: {type(error).__name__}: {error}"
    if not result.examples:
        return None
    mismatch = result.examples[0]
    if mismatch.dst is not None:
        mismatch = explain(mismatch, tables.texts[mismatch.dst])
    action = mismatch.action.get("name") if isinstance(mismatch.action, dict) else None
    detail = mismatch.error or "; ".join(mismatch.diff[:2])
    if mismatch.kind == "enabledness":
        detail = f"impl enables {mismatch.extra[:1]}, spec takes {mismatch.missing[:1]}"
    return f"state {fp} {mismatch.kind} {action or ''}: {detail}"[:300]


def _failing_test(tests: list[str]) -> str | None:
    """The first unit test that fails, or None."""
    import pytest

    class FirstFailure:
        nodeid: str | None = None

        def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
            if report.failed and self.nodeid is None:
                self.nodeid = report.nodeid

    plugin = FirstFailure()
    pytest.main(
        [*tests, "-x", "-q", "-p", "no:cacheprovider", "-m", "not tlc and not spark"], plugins=[plugin]
    )
    return plugin.nodeid


def child_main() -> int:
    """Entry point of the child interpreter: a Task on stdin, a Verdict on the last stdout line."""
    task = Task.model_validate_json(sys.stdin.read())
    verdict = Verdict(status="survived")
    try:
        if task.index is not None:
            install(Path(task.path), task.index)
    except Exception as error:  # a mutant that cannot even be imported
        verdict = Verdict(status="stillborn", evidence=f"{type(error).__name__}: {error}")
    else:
        module = str(Path(task.path).resolve())
        tracer = coverage.Coverage(data_file=None, include=[module]) if task.trace else None
        if tracer is not None:
            tracer.start()
        killed = _first_mismatch(task.models)
        if killed is not None:
            verdict = Verdict(status="killed", model=killed[0], evidence=killed[1])
        if tracer is not None:
            tracer.stop()
            verdict.lines = sorted(tracer.get_data().lines(module) or [])
        if task.tests:
            verdict.test = _failing_test(task.tests)
    print(_RESULT + verdict.model_dump_json(), flush=True)
    return 0


class Children:
    """The child interpreters running now, so that an interrupted campaign leaves none behind."""

    def __init__(self) -> None:
        self._running: set[subprocess.Popen[str]] = set()
        self._lock = threading.Lock()
        self.stopped = False

    def run(self, task: Task, timeout: float) -> Verdict | None:
        """Run one task in a fresh interpreter; None when it did not finish within `timeout` seconds."""
        command = [
            sys.executable,
            "-c",
            "from tidemark.conformance.mutation.campaign import child_main; child_main()",
        ]
        with self._lock:
            if self.stopped:
                raise KeyboardInterrupt
            child = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            self._running.add(child)
        try:
            out, err = child.communicate(task.model_dump_json(), timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            return None
        except BaseException:  # interrupted while waiting: the child must not outlive the campaign
            child.kill()
            raise
        finally:
            with self._lock:
                self._running.discard(child)
        for line in reversed(out.splitlines()):
            if line.startswith(_RESULT):
                return Verdict.model_validate_json(line[len(_RESULT) :])
        if self.stopped:
            raise KeyboardInterrupt
        raise TidemarkError(
            f"a mutant run ended without a result (exit code {child.returncode}): {err.strip()[-2000:]}",
            source=task.path,
            expected="the child interpreter to print its verdict",
        )

    def stop(self) -> None:
        """Kill every running child and start no new one."""
        with self._lock:
            self.stopped = True
            for child in self._running:
                child.kill()


# --- the campaign ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """An impl module, the standard models whose conformance should catch its faults, and its unit tests."""

    path: Path
    models: tuple[tuple[Path, Path], ...]  # (spec, config)
    tests: tuple[str, ...]


TARGETS = {
    "impl/counter.py": Target(
        Path("impl/counter.py"),
        (
            (resource("spec/UpdateCounter.tla"), resource("spec/UpdateCounter.cfg")),
            (resource("spec/UpdateCounter.tla"), resource("spec/UpdateCounter-limit.cfg")),
        ),
        ("tests/test_counter.py", "tests/test_counter_stateful.py"),
    ),
    "impl/cluster.py": Target(
        Path("impl/cluster.py"),
        (
            (resource("spec/TxCounters.tla"), resource("spec/TxCounters.cfg")),
            # What the standard model leaves out: two partitions (a range per partition, a server owning
            # nothing), transactions sharing a key (lock waits) and the proposed fix (docs/mutation.md).
            (resource("spec/TxCounters.tla"), resource("tests/models/TxCounters-partitions.cfg")),
            (resource("spec/TxCountersFixed.tla"), resource("tests/models/TxCountersFixed-mutation.cfg")),
        ),
        ("tests/test_cluster.py", "tests/test_cluster_stateful.py", "tests/test_scenario.py"),
    ),
    "impl/pme.py": Target(
        Path("impl/pme.py"),
        (
            (resource("spec/PME.tla"), resource("spec/PME.cfg")),
            # What the standard model turns off: WAL truncation, a partition at the threshold, two
            # crashes and a total outage with checkpoints, baseline changes (RENTING, eviction), and
            # the proposed fixes (docs/mutation.md, impl/pme.py).
            (resource("spec/PME.tla"), resource("tests/models/PME-history.cfg")),
            (resource("spec/PME.tla"), resource("tests/models/PME-threshold.cfg")),
            (resource("spec/PME.tla"), resource("tests/models/PME-outage.cfg")),
            (resource("spec/PME.tla"), resource("tests/models/PME-baseline.cfg")),
            (resource("spec/PMEFixed.tla"), resource("tests/models/PMEFixed-mutation.cfg")),
            # Added after the first full run (measured with --again): LOST partitions (both owners of
            # three servers fail) and the fixes through a total outage (a hole of two counters closed,
            # the HWM floor).
            (resource("spec/PME.tla"), resource("tests/models/PME-lost.cfg")),
            (resource("spec/PMEFixed.tla"), resource("tests/models/PMEFixed-outage-mutation.cfg")),
        ),
        ("tests/test_pme_stateful.py", "tests/test_scenarios_pme.py"),
    ),
}

Status = Literal["killed", "timeout", "survived", "unreached", "stillborn"]


class MutantResult(BaseModel):
    key: str
    index: int
    kind: str
    line: int
    status: Status = Field(
        description="killed: conformance found a mismatch (or the mutant crashed it); timeout: the replay "
        "ran past the time limit; survived: every edge conformed; unreached: the models never execute "
        "the mutated code (it survives without being run); stillborn: the module does not import"
    )
    model: str | None = None
    evidence: str | None = None
    test: str | None = Field(default=None, description="survivors: the first unit test that exposes it")
    category: Category | None = Field(default=None, description="survivors: see survivors.py")
    explanation: str | None = Field(default=None, description="survivors: why it survives")
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        return self.status in ("killed", "timeout")

    @property
    def survived(self) -> bool:
        return self.status in ("survived", "unreached")


class ModuleScore(BaseModel):
    path: str
    models: list[str]
    control_seconds: float = Field(description="replay of every model by the unmutated module")
    tests_run: bool = Field(default=True, description="whether survivors were run against the unit tests")
    results: list[MutantResult]
    measured_again: int | None = Field(
        default=None,
        description="a run measured again (measure_again): how many of its survivors were replayed on "
        "the models now; the other results are the earlier run's",
    )

    def classify(self) -> None:
        """Give the survivors their category and explanation from the registry as it is now."""
        for r in self.results:
            if r.survived:
                r.category, r.explanation = explanation(self.path, r.key) or (None, None)

    def count(self, predicate: Callable[[MutantResult], bool]) -> int:
        return sum(1 for r in self.results if predicate(r))

    @property
    def killable(self) -> int:
        """Mutants that some input tells from the module: neither stillborn nor argued equivalent."""
        return self.count(lambda r: r.status != "stillborn" and r.category != "equivalent")

    @property
    def protocol(self) -> int:
        """The killable mutants that change what the protocol does on valid input (not "outside")."""
        return self.killable - self.count(lambda r: r.category == "outside")

    @property
    def score(self) -> float:
        """Share of the killable mutants that conformance kills."""
        return self.count(lambda r: r.killed) / self.killable if self.killable else 1.0

    @property
    def protocol_score(self) -> float:
        """Share of the protocol's mutants that conformance kills."""
        return self.count(lambda r: r.killed) / self.protocol if self.protocol else 1.0


def in_parallel(work: Callable[[T], R], items: Sequence[T], jobs: int, children: Children) -> list[R]:
    """work(item) for every item, `jobs` at a time. Interrupted (SIGINT, or SIGTERM raised as
    KeyboardInterrupt), it kills the running children and starts no queued item, rather than letting the
    pool run the whole queue to its end before the interruption reaches the caller."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        try:
            return list(pool.map(work, items))
        except BaseException:
            children.stop()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def prepare_graphs(target: Target, work: Path) -> list[ModelGraph]:
    """TLC dumps each model's graph once (reused while spec, model and TLC are unchanged)."""
    from tidemark.conformance.conform import dump_graph
    from tidemark.conformance.tlc.output import Outcome
    from tidemark.conformance.tlc.runner import TlcOptions

    graphs = []
    for spec, config in target.models:
        graph = work / f"{spec.stem}-{config.stem}"
        dump = dump_graph(spec, config, graph, TlcOptions(), None)
        if dump.tlc.outcome != Outcome.OK:
            raise TidemarkError(
                f"TLC did not finish the model: {dump.tlc.outcome}", source=str(config), expected="outcome ok"
            )
        graphs.append(ModelGraph(spec=spec.stem, config=str(config), graph=str(graph)))
    return graphs


def run_module(
    target: Target,
    work: Path,
    children: Children,
    *,
    chosen: Sequence[Mutant] | None = None,
    jobs: int = 2,
    tests: bool = True,
    on_result: Callable[[MutantResult], None] | None = None,
) -> ModuleScore:
    """Every mutant of the module (or the `chosen` ones) against conformance on its models; survivors
    against its unit tests too (`tests`)."""

    graphs = prepare_graphs(target, work)
    path = str(target.path)

    def control(graph: ModelGraph) -> tuple[Verdict | None, float]:
        started = time.monotonic()
        verdict = children.run(Task(path=path, index=None, models=[graph], trace=True), timeout=3600)
        return verdict, time.monotonic() - started

    # The unmutated module replays the models in parallel (`jobs`); a mutant replays them in turns, so
    # its time limit follows their sum.
    controls = in_parallel(control, graphs, jobs, children)
    executed: set[int] = set()
    for verdict, _ in controls:
        if verdict is None or verdict.status != "survived":
            raise TidemarkError(
                f"the unmutated module does not conform: {verdict and verdict.evidence}",
                source=path,
                expected="conformance to hold before mutants are measured",
            )
        executed.update(verdict.lines)
    control_seconds = sum(seconds for _, seconds in controls)
    timeout = 3 * control_seconds + 60

    def measure(mutant: Mutant) -> MutantResult:
        begun = time.monotonic()
        result = MutantResult(
            key=mutant.key, index=mutant.index, kind=mutant.kind, line=mutant.line, status="unreached"
        )
        reached = mutant.at_import or not executed.isdisjoint(range(mutant.line, mutant.end_line + 1))
        if reached:
            verdict = children.run(Task(path=path, index=mutant.index, models=graphs), timeout)
            result.status = "timeout" if verdict is None else verdict.status
            if verdict is not None:
                result.model, result.evidence = verdict.model, verdict.evidence
        if result.survived:
            result.category, result.explanation = explanation(path, mutant.key) or (None, None)
            if tests:
                exposed = children.run(Task(path=path, index=mutant.index, tests=list(target.tests)), timeout)
                result.test = "(the unit tests time out)" if exposed is None else exposed.test
        result.seconds = round(time.monotonic() - begun, 2)
        if on_result is not None:
            on_result(result)
        return result

    results = in_parallel(measure, mutants(target.path) if chosen is None else chosen, jobs, children)
    return ModuleScore(
        path=path,
        models=[g.config for g in graphs],
        control_seconds=round(control_seconds, 2),
        tests_run=tests,
        results=results,
    )


def measure_again(
    saved: ModuleScore,
    target: Target,
    work: Path,
    children: Children,
    *,
    jobs: int = 2,
    tests: bool = True,
    on_result: Callable[[MutantResult], None] | None = None,
) -> ModuleScore:
    """A saved run of the module with its survivors measured again on the target's models now, for
    models added since. Every model of the saved run must still be a target: the graph that killed a
    mutant would kill it again, so its result is kept. Survivors the registry (as it is now; the saved
    survivors are classified anew in place) argues equivalent or outside the protocol are kept as they
    are: a kill among them would only add to the protocol's score."""
    current = mutants(target.path)
    if len(current) != len(saved.results):
        raise TidemarkError(
            f"the module has {len(current)} mutants, the saved run {len(saved.results)}",
            source=saved.path,
            expected="the module unchanged since the run measured again",
        )
    changed = [
        r.key
        for r, m in zip(saved.results, current, strict=True)
        if (r.index, r.key, r.line) != (m.index, m.key, m.line)
    ]
    if changed:
        raise TidemarkError(
            f"{len(changed)} mutants differ from the saved run's, the first: {changed[0]}",
            source=saved.path,
            expected="the module unchanged since the run measured again",
        )
    dropped = sorted(set(saved.models) - {str(config) for _, config in target.models})
    if dropped:
        raise TidemarkError(
            f"the saved run's models {', '.join(dropped)} are no longer targets",
            source=saved.path,
            expected="every model of the saved run still a target (its kills stand only then)",
        )
    saved.classify()
    again = [
        current[r.index] for r in saved.results if r.survived and r.category not in ("equivalent", "outside")
    ]
    fresh = run_module(target, work, children, chosen=again, jobs=jobs, tests=tests, on_result=on_result)
    measured = {r.index: r for r in fresh.results}
    return ModuleScore(
        path=saved.path,
        models=fresh.models,
        control_seconds=fresh.control_seconds,
        tests_run=tests,
        results=[measured.get(r.index, r) for r in saved.results],
        measured_again=len(again),
    )
