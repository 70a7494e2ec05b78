"""The mutation campaign (conformance/mutation/): mutant generation, and conformance killing a
mutant of impl/counter.py of each kind on the counter's small model."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mutation.campaign import (
    Children,
    ModuleScore,
    MutantResult,
    Target,
    in_parallel,
    in_turns,
    measure_again,
    run_module,
)
from tidemark.conformance.mutation.points import mutants, mutated_code
from tidemark.conformance.mutation.survivors import Category, explanation

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
    from tidemark.conformance.mutation.survivors import SURVIVORS

    for path, listed in SURVIVORS.items():
        keys = {m.key for m in mutants(Path(path))}
        assert set(listed) <= keys, sorted(set(listed) - keys)


def test_models_take_turns_until_every_one_is_exhausted() -> None:
    # A mutant replays its models in turns, so a small model's shallow states come before the end of a
    # large one; every state of every model still comes exactly once, in its model's order.
    taken = list(in_turns([range(5), range(2), [], range(4)], 2))
    assert taken[:6] == [(0, 0), (0, 1), (1, 0), (1, 1), (3, 0), (3, 1)]
    for index, size in enumerate((5, 2, 0, 4)):
        assert [item for source, item in taken if source == index] == list(range(size))
    assert len(taken) == 11


def test_an_interrupted_campaign_stops_its_children_and_runs_nothing_queued() -> None:
    # SIGTERM reaches the campaign as KeyboardInterrupt while mutants run: the running children must be
    # stopped at once (a survivor's replay can take minutes) and nothing queued may start.
    children = Children()
    ran: list[int] = []

    def work(item: int) -> int:
        if item == 0:
            time.sleep(0.1)
            raise KeyboardInterrupt
        deadline = time.monotonic() + 5  # a long replay, cut short only by children.stop()
        while not children.stopped and time.monotonic() < deadline:
            time.sleep(0.01)
        ran.append(item)
        return item

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        in_parallel(work, list(range(50)), 2, children)
    assert time.monotonic() - started < 2
    assert children.stopped
    assert len(ran) <= 2, ran  # the one running, and one a free worker took before the queue was cancelled


def test_a_deleted_check_that_a_step_is_enabled_is_outside_in_every_module() -> None:
    check = "PmeCluster.join: self._require(self._when_join(node), 'Join', node=node) -> pass"
    assert explanation("impl/pme.py", check) == explanation(
        "impl/cluster.py", check.replace("PmeCluster", "Cluster")
    )
    reason = explanation("impl/pme.py", check)
    assert reason is not None and reason[0] == "outside"
    # Its result used: deleting the statement is a fault conformance must kill, not a listed survivor.
    assert explanation("impl/cluster.py", "Cluster.tx_remap: response = self._require(x) -> pass") is None


# impl/counter.py on the counter's small model, whose graph replays in seconds.
SMALL_COUNTER = Target(
    Path("impl/counter.py"),
    ((Path("spec/UpdateCounter.tla"), Path("tests/models/UpdateCounter-small.cfg")),),
    (),
)

# One fault of each kind in the counter's protocol operations, each on a path with at most one queued
# range (the small model's reach).
KILLED_ON_THE_SMALL_MODEL = [
    "PartitionUpdateCounter.update: if start < lwm: -> if start <= lwm:",
    "PartitionUpdateCounter.finalize: gaps.append((self._lwm + 1, start)) -> "
    "gaps.append((self._lwm + 2, start))",
    "PartitionUpdateCounter.update_lwm: if self._first: -> if not self._first:",
    "PartitionUpdateCounter.reserve: self._hwm = reserved + delta -> pass",
    "PartitionUpdateCounter.update: merge_left = prev is not None and prev_end == start -> "
    "merge_left = prev is not None or prev_end == start",
    "PartitionUpdateCounter.update: last = start + delta -> last = start - delta",
]


@pytest.mark.tlc
def test_conformance_kills_one_counter_mutant_of_each_kind(tmp_path: Path) -> None:
    """Conformance on the small counter model kills each of these mutants, with the mismatch as evidence.
    The small model keeps this within CI's budget (its graph replays in seconds; a mutant that survives
    the standard models takes minutes, which bench/mutate.py spends on every mutant)."""
    small = SMALL_COUNTER
    by_key = {m.key: m for m in mutants(small.path)}
    chosen = [by_key[key] for key in KILLED_ON_THE_SMALL_MODEL]
    assert {m.kind for m in chosen} == {"compare", "constant", "negate", "delete", "boolop", "arith"}
    assert not [key for key in KILLED_ON_THE_SMALL_MODEL if explanation(str(small.path), key)]
    score = run_module(small, tmp_path, Children(), chosen=chosen, tests=False)
    assert [r.key for r in score.results] == KILLED_ON_THE_SMALL_MODEL
    assert all(r.status == "killed" and r.evidence for r in score.results), score.results


def saved_run(models: list[str], survivors: dict[str, Category | None]) -> ModuleScore:
    """A run of impl/counter.py as bench/mutate.py --json saves it: every mutant killed but `survivors`
    (key: its category)."""
    results = [
        MutantResult(key=m.key, index=m.index, kind=m.kind, line=m.line, status="killed")
        for m in mutants(SMALL_COUNTER.path)
    ]
    for r in results:
        if r.key in survivors:
            r.status = "survived"
            r.model = None
            r.category = survivors[r.key]
    return ModuleScore(path="impl/counter.py", models=models, control_seconds=1.0, results=results)


@pytest.mark.tlc
def test_measuring_again_replays_only_the_unexplained_survivors_and_keeps_the_rest(tmp_path: Path) -> None:
    # A model added since the saved run: a survivor it kills becomes killed. Only the survivors the
    # registry, as it is now, does not explain away are replayed: the saved file's own category is stale.
    fault = KILLED_ON_THE_SMALL_MODEL[0]
    outside = "_check_items: if delta <= 0: -> pass"  # a check of invalid input, listed "outside"
    saved = saved_run([], {fault: "outside", outside: None})
    measured: list[str] = []
    again = measure_again(
        saved, SMALL_COUNTER, tmp_path, Children(), tests=False, on_result=lambda r: measured.append(r.key)
    )
    assert measured == [fault]
    assert again.measured_again == 1
    assert again.models == ["tests/models/UpdateCounter-small.cfg"]
    by_key = {r.key: r for r in again.results}
    assert by_key[fault].status == "killed" and by_key[fault].evidence
    assert by_key[outside].status == "survived" and by_key[outside].category == "outside"
    assert [r.key for r in again.results] == [r.key for r in saved.results]
    assert again.count(lambda r: r.killed) == saved.count(lambda r: r.killed) + 1


def test_measuring_again_refuses_a_changed_module_or_a_dropped_model(tmp_path: Path) -> None:
    # Kept kills stand only if the module and the models that made them are what the saved run had.
    changed = saved_run(["tests/models/UpdateCounter-small.cfg"], {})
    changed.results[3].key = "PartitionUpdateCounter.update: a line since rewritten"
    with pytest.raises(TidemarkError, match="differ from the saved run"):
        measure_again(changed, SMALL_COUNTER, tmp_path, Children())
    shorter = saved_run(["tests/models/UpdateCounter-small.cfg"], {})
    shorter.results.pop()
    with pytest.raises(TidemarkError, match=r"the module has \d+ mutants, the saved run \d+"):
        measure_again(shorter, SMALL_COUNTER, tmp_path, Children())
    dropped = saved_run(["spec/UpdateCounter.cfg"], {})
    with pytest.raises(TidemarkError, match=r"spec/UpdateCounter\.cfg are no longer targets"):
        measure_again(dropped, SMALL_COUNTER, tmp_path, Children())
