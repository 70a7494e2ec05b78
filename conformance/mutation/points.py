"""Single-point mutants of a Python module, generated from its syntax tree.

Each mutant changes one place: a comparison flipped (`<` to `<=` or `>=`, `==` to `!=`, `in` to
`not in`, ...), an integer constant moved by one, a condition negated, a statement deleted (replaced by
`pass`), `and` swapped with `or`, `+` with `-`. Docstrings, type annotations, f-string text and
`__repr__`/`__str__` (diagnostic text, not behaviour) are left alone. `install` puts a mutant in place
of the module itself, in an interpreter that has not imported it yet.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tidemark.conformance.errors import TidemarkError

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


# The package impl/ and conformance/ are imported under ("tidemark"), from this module's own name.
_TOP = __name__.split(".")[0] if __name__.count(".") >= 3 else ""


def module_name(path: Path) -> str:
    """The name a checkout's file is imported by: impl/counter.py is tidemark.impl.counter."""
    dotted = ".".join(path.with_suffix("").parts)
    return f"{_TOP}.{dotted}" if _TOP else dotted


def install(path: Path, index: int) -> None:
    """Install the mutant as the module itself, before anything imports it (in a fresh interpreter)."""
    name = module_name(path)
    package, _, leaf = name.rpartition(".")
    parent = importlib.import_module(package) if package else None
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses look their module up while the class body runs
    exec(mutated_code(path, index), module.__dict__)
    if parent is not None:
        setattr(parent, leaf, module)
