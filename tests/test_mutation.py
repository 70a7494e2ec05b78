"""The mutation campaign (conformance/mutation.py): mutant generation, and conformance killing a seeded
sample of impl/counter.py's mutants on the counter's standard models."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from conformance.mutation import TARGETS, Children, mutants, mutated_code, run_module
from conformance.mutation_survivors import explanation

MODULE = '''"""Doc."""

LIMIT = 2


def f(a: int, b: int = 0) -> int:
    """Docstring."""
    if a < LIMIT and not b:
        return a + 1
    text = f"{a + 1}"
    return len(text) - b


def __repr__() -> str:
    return "x" + str(1)
'''


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    return path


def run(path: Path, index: int, a: int, b: int = 0) -> int:
    namespace: dict[str, object] = {}
    exec(mutated_code(path, index), namespace)
    f = namespace["f"]
    assert callable(f)
    result = f(a, b)
    assert isinstance(result, int | None)
    return result or 0


def test_every_operator_yields_its_mutants_in_source_order(module: Path) -> None:
    found = [(m.kind, m.line, m.key.split(": ", 1)[1]) for m in mutants(module)]
    assert found == [
        ("constant", 3, "LIMIT = 2 -> LIMIT = 3"),
        ("constant", 3, "LIMIT = 2 -> LIMIT = 1"),
        ("constant", 6, "def f(a: int, b: int=0) -> int: -> def f(a: int, b: int=1) -> int:"),
        ("constant", 6, "def f(a: int, b: int=0) -> int: -> def f(a: int, b: int=-1) -> int:"),
        ("delete", 8, "if a < LIMIT and (not b): -> pass"),
        ("negate", 8, "if a < LIMIT and (not b): -> if not (a < LIMIT and (not b)):"),
        ("boolop", 8, "if a < LIMIT and (not b): -> if a < LIMIT or not b:"),
        ("compare", 8, "if a < LIMIT and (not b): -> if a <= LIMIT and (not b):"),
        ("compare", 8, "if a < LIMIT and (not b): -> if a >= LIMIT and (not b):"),
        ("delete", 9, "return a + 1 -> pass"),
        ("arith", 9, "return a + 1 -> return a - 1"),
        ("constant", 9, "return a + 1 -> return a + 2"),
        ("constant", 9, "return a + 1 -> return a + 0"),
        ("delete", 10, "text = f'{a + 1}' -> pass"),
        ("delete", 11, "return len(text) - b -> pass"),
        ("arith", 11, "return len(text) - b -> return len(text) + b"),
    ]
    # Docstrings, annotations, f-string text and __repr__ are not mutated; keys name the scope.
    assert all(m.key.startswith(("<module>: ", "f: ")) for m in mutants(module))
    assert [m.at_import for m in mutants(module)][:5] == [True, True, True, True, False]


def test_each_mutant_changes_exactly_its_point(module: Path) -> None:
    keys = {m.key: m.index for m in mutants(module)}
    assert run(module, keys["f: return a + 1 -> return a - 1"], 1) == 0
    assert run(module, keys["f: return a + 1 -> return a + 2"], 1) == 3
    assert run(module, keys["f: if a < LIMIT and (not b): -> if a <= LIMIT and (not b):"], 2) == 3
    assert run(module, keys["f: if a < LIMIT and (not b): -> if a <= LIMIT and (not b):"], 1) == 2
    assert run(module, keys["<module>: LIMIT = 2 -> LIMIT = 1"], 1) == 1  # len("2") - 0: not below 1
    assert run(module, keys["f: return a + 1 -> pass"], 1) == 1  # falls through to len("2") - 0


def test_the_registry_names_only_mutants_that_exist() -> None:
    # A listed survivor whose key no mutant has any more (the code moved on) must be updated, not kept.
    from conformance.mutation_survivors import SURVIVORS

    for path, listed in SURVIVORS.items():
        keys = {m.key for m in mutants(Path(path))}
        assert set(listed) <= keys, sorted(set(listed) - keys)


@pytest.mark.tlc
def test_a_seeded_sample_of_counter_mutants_is_killed_by_conformance(tmp_path: Path) -> None:
    """Eight mutants of impl/counter.py that are not listed as survivors, chosen by a fixed seed: every
    one must make conformance on the counter's standard models fail."""
    target = TARGETS["impl/counter.py"]
    candidates = [m for m in mutants(target.path) if explanation(str(target.path), m.key) is None]
    sample = random.Random(20).sample(candidates, 8)
    score = run_module(target, tmp_path, Children(), chosen=sample, tests=False)
    assert [r.key for r in score.results] == [m.key for m in sample]
    assert all(r.killed for r in score.results), [r for r in score.results if not r.killed]
    assert all(r.evidence for r in score.results)
