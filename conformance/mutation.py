"""Mutation campaign: how many single-point faults in impl/ does conformance catch?

Each mutant changes one place of one impl module's syntax tree: a comparison flipped (`<` to `<=` or
`>=`, `==` to `!=`, `in` to `not in`, ...), an integer constant moved by one, a condition negated, a
statement deleted (replaced by `pass`), `and` swapped with `or`, `+` with `-`. Docstrings, type
annotations, f-string text and `__repr__`/`__str__` (diagnostic text, not behaviour) are left alone.

A mutant runs in a fresh interpreter in which the mutated module is installed under its real name
before anything imports it, so every importer (the mappings, impl/pme.py's subclasses of impl/cluster.py)
gets the mutated code. There it replays the module's standard models' state graphs (dumped once by
TLC, in discovery order: shallow states first) until the first mismatch: conformance kills the mutant.
A survivor is then run against the module's unit tests to find one that exposes it; a survivor no test
exposes is listed with the argument that it is equivalent (`SURVIVORS`) or reported as unexplained.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import coverage
from pydantic import BaseModel, Field

from conformance.errors import TidemarkError
from conformance.mutation_survivors import Category, explanation

# Comparison flips: each operator's boundary shift and negation.
_COMPARE: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}
_SKIPPED_FUNCTIONS = {"__repr__", "__str__"}

Kind = Literal["compare", "constant", "negate", "delete", "boolop", "arith"]


@dataclass(frozen=True)
class Mutant:
    """One mutation point of a module: `key` names it stably (scope and the text before and after)."""

    path: str
    index: int
    kind: Kind
    line: int
    end_line: int
    at_import: bool  # module level or a default argument: runs when the module is imported
    scope: str
    before: str
    after: str
    key: str


def _change(before: str, after: str) -> tuple[str, str]:
    """Two one-line texts cut to their difference and 30 characters around it when longer than 90."""
    if len(before) <= 90 and len(after) <= 90:
        return before, after
    common = min(len(before), len(after))
    head = next((i for i in range(common) if before[i] != after[i]), common)
    tail = next((i for i in range(common - head) if before[-1 - i] != after[-1 - i]), common - head)
    first = max(0, head - 30)

    def cut(text: str) -> str:
        last = min(len(text), len(text) - tail + 30)
        return ("..." if first else "") + text[first:last] + ("..." if last < len(text) else "")

    return cut(before), cut(after)


def _shortened(text: str) -> str:
    return text if len(text) <= 90 else text[:87] + "..."


class _Sites(ast.NodeTransformer):
    """Walks a module in a fixed order, numbering every mutation point; with `target` set, leaves
    exactly that point mutated. Each point is shown as the first line of its statement before and after."""

    def __init__(self, target: int | None = None) -> None:
        self.target = target
        self.count = 0
        self.scope: list[str] = []
        self.statement: ast.stmt | None = None
        self.found: list[tuple[Kind, int, int, bool, str, str, str]] = []

    def _line(self) -> str:
        return ast.unparse(self.statement).splitlines()[0] if self.statement is not None else ""

    def _site(self, kind: Kind, node: ast.AST, mutate: Callable[[], Callable[[], None]]) -> bool:
        """One mutation point: `mutate` changes the tree in place and returns its undo. True (and the
        change kept) if this is the target."""
        index = self.count
        self.count += 1
        before = self._line()
        undo = mutate()
        after = "pass" if kind == "delete" else self._line()
        if index != self.target:
            undo()
        scope = ".".join(self.scope) or "<module>"
        first: int = getattr(node, "lineno", 0)
        last: int = getattr(node, "end_lineno", None) or first
        at_import = not self.scope or isinstance(self.statement, ast.FunctionDef)
        shown = _change(before, after) if kind != "delete" else (_shortened(before), after)
        self.found.append((kind, first, last, at_import, scope, *shown))
        return index == self.target

    # --- what is never mutated ------------------------------------------------------------------------

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return node

    def visit_arguments(self, node: ast.arguments) -> ast.AST:
        # Defaults only: annotations are not behaviour.
        node.defaults = [self.visit(d) for d in node.defaults]
        node.kw_defaults = [d if d is None else self.visit(d) for d in node.kw_defaults]
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.scope.append(node.name)
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef | ast.ClassDef):
                self.visit(statement)
        self.scope.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if node.name in _SKIPPED_FUNCTIONS:
            return node
        self.scope.append(node.name)
        outer, self.statement = self.statement, node
        node.args = self.visit(node.args)
        self.statement = outer
        self._body(node.body)
        self.scope.pop()
        return node

    def visit_Module(self, node: ast.Module) -> ast.AST:
        # Module level: the values of constants, and the definitions (imports and names stay).
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef | ast.ClassDef):
                self.visit(statement)
            elif isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
                self.statement = statement
                statement.value = self.visit(statement.value)
        return node

    # --- statements: each one deleted, then its parts mutated -------------------------------------------

    def _body(self, body: list[ast.stmt]) -> None:
        for position, statement in enumerate(body):
            docstring = (
                position == 0
                and isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
            )
            if docstring or isinstance(statement, ast.Pass | ast.FunctionDef | ast.ClassDef):
                continue
            outer, self.statement = self.statement, statement

            def delete(at: int = position, kept: ast.stmt = statement) -> Callable[[], None]:
                body[at] = ast.copy_location(ast.Pass(), kept)
                return lambda: body.__setitem__(at, kept)

            if not self._site("delete", statement, delete):
                if isinstance(statement, ast.AnnAssign):
                    if statement.value is not None:
                        statement.value = self.visit(statement.value)
                else:
                    self.visit(statement)
            self.statement = outer

    def generic_visit(self, node: ast.AST) -> ast.AST:
        # Statement lists go through _body (each statement is a deletion point), everything else once.
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._body(value)
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
        return node

    def _negate(self, node: ast.If | ast.While | ast.IfExp) -> None:
        """The node's test negated (`not x` becomes `x`) as a mutation point. A test that is a single
        comparison is not negated: flipping its operator (visit_Compare) already gives that mutant."""
        test = node.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            is_not = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            negated = test.operand if is_not else ast.UnaryOp(op=ast.Not(), operand=test)  # type: ignore[attr-defined]

            def mutate() -> Callable[[], None]:
                node.test = negated
                return lambda: setattr(node, "test", test)

            if self._site("negate", test, mutate):
                return
        node.test = self.visit(test)

    def visit_If(self, node: ast.If) -> ast.AST:
        self._negate(node)
        self._body(node.body)
        self._body(node.orelse)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        self._negate(node)
        self._body(node.body)
        self._body(node.orelse)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self._negate(node)
        node.body, node.orelse = self.visit(node.body), self.visit(node.orelse)
        return node

    # --- expressions ----------------------------------------------------------------------------------

    def _swap(self, kind: Kind, node: ast.AST, field: str, replacement: Any) -> bool:
        """Replace one field of `node` as a mutation point."""
        original = getattr(node, field)

        def mutate() -> Callable[[], None]:
            setattr(node, field, replacement)
            return lambda: setattr(node, field, original)

        return self._site(kind, node, mutate)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        for position, op in enumerate(node.ops):
            for replacement in _COMPARE.get(type(op), ()):
                ops = [*node.ops[:position], replacement(), *node.ops[position + 1 :]]
                if self._swap("compare", node, "ops", ops):
                    return node
        return self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        if self._swap("boolop", node, "op", ast.Or() if isinstance(node.op, ast.And) else ast.And()):
            return node
        return self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if isinstance(node.op, ast.Add | ast.Sub):
            op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
            if self._swap("arith", node, "op", op):
                return node
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is int:
            for value in (node.value + 1, node.value - 1):
                if self._swap("constant", node, "value", value):
                    return node
        return node


def _tree(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError) as error:
        raise TidemarkError(
            f"cannot read the module: {error}", source=str(path), expected="a Python module"
        ) from error


def mutants(path: Path) -> list[Mutant]:
    """Every single-point mutant of the module at `path`, in a fixed order."""
    sites = _Sites()
    sites.visit(_tree(path))
    seen: Counter[str] = Counter()
    found = []
    for index, (kind, line, end_line, at_import, scope, before, after) in enumerate(sites.found):
        key = f"{scope}: {before} -> {after}"
        seen[key] += 1
        if seen[key] > 1:
            key += f" #{seen[key]}"
        found.append(Mutant(str(path), index, kind, line, end_line, at_import, scope, before, after, key))
    return found


def mutated_code(path: Path, index: int) -> types.CodeType:
    """The module at `path` with mutation point `index` applied, compiled."""
    tree = _tree(path)
    _Sites(index).visit(tree)
    return compile(ast.fix_missing_locations(tree), str(path), "exec")


def module_name(path: Path) -> str:
    return ".".join(path.with_suffix("").parts)


def install(path: Path, index: int) -> None:
    """Install the mutant as the module itself, before anything imports it (in a fresh interpreter)."""
    name = module_name(path)
    package, _, leaf = name.rpartition(".")
    parent = __import__(package) if package else None
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses look their module up while the class body runs
    exec(mutated_code(path, index), module.__dict__)
    if parent is not None:
        setattr(parent, leaf, module)


# --- running a mutant (in a fresh interpreter) ---------------------------------------------------------

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


def _first_mismatch(model: ModelGraph) -> str | None:
    """Replay the graph in discovery order; the first mismatch (or crash) as one line, None if it conforms."""
    from conformance.conform import GraphTables
    from conformance.mappings import mapping_for
    from conformance.replay import explain, replay_state
    from conformance.tlc.config import read_config

    tables = GraphTables(Path(model.graph))
    mapping = mapping_for(model.spec, read_config(Path(model.config)).constants)
    for fp, text, outgoing in tables.rows():
        try:
            result = replay_state(mapping, fp, text, outgoing)
        except Exception as error:  # any crash of the mutant fails the conformance run
            return f"state {fp}: {type(error).__name__}: {error}"
        if result.examples:
            mismatch = result.examples[0]
            if mismatch.dst is not None:
                mismatch = explain(mismatch, tables.texts[mismatch.dst])
            action = mismatch.action.get("name") if isinstance(mismatch.action, dict) else None
            detail = mismatch.error or "; ".join(mismatch.diff[:2])
            if mismatch.kind == "enabledness":
                detail = f"impl enables {mismatch.extra[:1]}, spec takes {mismatch.missing[:1]}"
            return f"state {fp} {mismatch.kind} {action or ''}: {detail}"[:300]
    return None


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
        for model in task.models:
            evidence = _first_mismatch(model)
            if evidence is not None:
                verdict = Verdict(status="killed", model=model.config, evidence=evidence)
                break
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
        command = [sys.executable, "-c", "from conformance.mutation import child_main; child_main()"]
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
            (Path("spec/UpdateCounter.tla"), Path("spec/UpdateCounter.cfg")),
            (Path("spec/UpdateCounter.tla"), Path("spec/UpdateCounter-limit.cfg")),
        ),
        ("tests/test_counter.py", "tests/test_counter_stateful.py"),
    ),
    "impl/cluster.py": Target(
        Path("impl/cluster.py"),
        ((Path("spec/TxCounters.tla"), Path("spec/TxCounters.cfg")),),
        ("tests/test_cluster.py", "tests/test_cluster_stateful.py", "tests/test_scenario.py"),
    ),
    "impl/pme.py": Target(
        Path("impl/pme.py"),
        ((Path("spec/PME.tla"), Path("spec/PME.cfg")),),
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
    category: Category | None = Field(default=None, description="survivors: see mutation_survivors.py")
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
    results: list[MutantResult]

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


def prepare_graphs(target: Target, work: Path) -> list[ModelGraph]:
    """TLC dumps each model's graph once (reused while spec, model and TLC are unchanged)."""
    from conformance.conform import dump_graph
    from conformance.tlc.output import Outcome
    from conformance.tlc.runner import TlcOptions

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
    started = time.monotonic()
    control = children.run(Task(path=path, index=None, models=graphs, trace=True), timeout=3600)
    control_seconds = time.monotonic() - started
    if control is None or control.status != "survived":
        raise TidemarkError(
            f"the unmutated module does not conform: {control and control.evidence}",
            source=path,
            expected="conformance to hold before mutants are measured",
        )
    executed = set(control.lines)
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

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(measure, mutants(target.path) if chosen is None else chosen))
    return ModuleScore(
        path=path,
        models=[g.config for g in graphs],
        control_seconds=round(control_seconds, 2),
        results=results,
    )
