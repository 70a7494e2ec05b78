"""Side by side without a real system: the comparison of observations, the notes of scenario files, the
explanations of Ignite's known differences, the mapping of servers to Ignite's nodes, and the random walks
(drawing, replaying, shrinking). tests/test_ignite_scenarios.py runs the same on a real cluster."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios import load_scenario
from tidemark.conformance.scenarios.adapters import SYSTEMS
from tidemark.conformance.scenarios.adapters.ignite import IgniteScenarioError, node_mapping
from tidemark.conformance.scenarios.compare import differences, noted, observe, side_by_side
from tidemark.conformance.scenarios.format import ScenarioFile
from tidemark.conformance.scenarios.runner import run_scenario
from tidemark.conformance.systems.ignite_differences import KNOWN, explain
from tidemark.conformance.systems.ignite_walks import (
    WalkModel,
    as_scenario,
    replays,
    shrink,
    walk_steps,
)
from tidemark.impl.affinity import make_node, rank_nodes
from tidemark.impl.cluster import Step

SCENARIOS = sorted(Path("scenarios").glob("*.json"))
FIGURE3 = Path("scenarios/figure3-gaps-closed-at-node-left.json")


def test_differences_name_each_leaf_and_compare_data_and_owner_lists_whole() -> None:
    impl = {"s1": {"p0": {"lwm": 1, "items": []}, "data": {"1": "a"}}, "topology": {"owners": {"0": ["s1"]}}}
    real = copy.deepcopy(impl)
    assert differences(impl, real) == []
    real["s1"]["p0"]["lwm"] = 2
    real["s1"]["data"]["2"] = "b"
    real["topology"]["owners"]["0"] = ["s2", "s1"]
    assert differences(impl, real) == [
        ("s1.data", {"1": "a"}, {"1": "a", "2": "b"}),
        ("s1.p0.lwm", 1, 2),
        ("topology.owners[0]", ["s1"], ["s2", "s1"]),
    ]


def test_a_note_names_expectations_with_wildcards_and_literal_brackets() -> None:
    assert noted("steps[15].expect.s3.counters[0].lwm", "steps[15].expect.s3.counters[0].*")
    assert noted("steps[18].expect.s2.counters[0].items", "steps[18].expect.s?.counters[0].*")
    assert not noted("steps[16].expect.s3.counters[0].lwm", "steps[15].expect.s3.counters[0].*")
    assert not noted("steps1.expect", "steps[15]*"), "brackets are no character class"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_the_implementation_beside_itself_shows_no_difference(path: Path) -> None:
    """The machinery of --system, with impl on both sides: every observation equal after every step."""
    scenario = load_scenario(path)
    result = side_by_side(scenario, "impl", lambda *args: None)
    assert result.differences == []
    assert [i for i, _, _ in result.observed] == [None, *range(len(scenario.steps))]
    assert result.passed == result.impl.passed


def test_every_shipped_note_names_a_known_difference_or_a_reason() -> None:
    for path in SCENARIOS:
        notes = load_scenario(path).systems.get("ignite")
        if notes is None:
            continue
        for pattern, reason in notes.differences.items():
            kind = reason.split(":", 1)[0]
            assert kind in KNOWN, f"{path.name}: note {pattern} names no known difference ({kind!r})"


def test_a_bad_note_is_refused_naming_its_place(tmp_path: Path) -> None:
    data = json.loads(FIGURE3.read_text())
    data["systems"] = {"ignite": {"differences": {"steps[1].expect": ""}}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TidemarkError) as error:
        load_scenario(path)
    assert "systems.ignite.differences" in error.value.describe()
    data["systems"] = {"ncache": {"cannot_run": "no"}}
    path.write_text(json.dumps(data))
    with pytest.raises(TidemarkError, match="systems"):
        load_scenario(path)


def test_a_scenario_that_cannot_run_on_ignite_says_why_and_starts_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = "scenarios/no-tracking-loses-updates.json"
    assert main(["scenario", path, "--system", "ignite", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["run"] is False and "mutant" in answer["reason"]


def _seen(scenario_path: Path, step: int) -> tuple[dict[str, Any], Any]:
    seen: dict[int | None, dict[str, Any]] = {}
    scenario = load_scenario(scenario_path)
    with SYSTEMS["impl"]["pme"](scenario) as run:
        run_scenario(scenario, "impl", watch=lambda i, r: seen.__setitem__(i, observe(r)))
        return seen[step], run


def test_known_differences_explain_what_they_say_and_nothing_else() -> None:
    # figure 3 after the primary s1 failed (step 15): the node-left exchange is still to come in tidemark.
    impl, system = _seen(FIGURE3, 15)
    finalized = copy.deepcopy(impl)
    finalized["s2"]["p0"].update(lwm=5, items=[])
    assert explain(15, "s2.p0.lwm", impl, finalized, system) == "pme-free-switch"
    # after the exchange (step 20) the same difference is a finding
    done, system = _seen(FIGURE3, 20)
    other = copy.deepcopy(done)
    other["s2"]["p0"]["lwm"] = 4
    assert explain(20, "s2.p0.lwm", done, other, system) is None
    # a backup's HWM, never the primary's
    other = copy.deepcopy(done)
    other["s3"]["p0"]["hwm"] = 0
    assert explain(20, "s3.p0.hwm", done, other, system) == "backup-hwm"
    other["s2"]["p0"]["hwm"] = 0
    assert explain(20, "s2.p0.hwm", done, other, system) is None
    # data a real server holds and tidemark does not, with no transaction of one phase: a finding
    other = copy.deepcopy(done)
    other["s3"]["data"]["9"] = "x"
    assert explain(20, "s3.data", done, other, system) is None


def test_a_rollback_ignite_ends_at_once_is_known_only_while_tidemark_rolls_back() -> None:
    # t3 prepared on s1, s2, s3 and rolled back: both backups answered, s1 still waits for its RolledBack.
    model = WalkModel.read()
    tx = [Step("TxStart", tx="t3"), Step("Lock", tx="t3", node="s1"), Step("TxPrepare", tx="t3")]
    tx += [Step("Prepare", tx="t3", node="s1")] + [
        Step("BackupPrepare", tx="t3", node=b) for b in ("s2", "s3")
    ]
    tx += [
        Step("Prepared", tx="t3", node="s1"),
        Step("TxRollback", tx="t3"),
        Step("Rollback", tx="t3", node="s1"),
    ]
    tx += [Step("BackupRollback", tx="t3", node=b) for b in ("s2", "s3")]
    scenario = as_scenario(model, "rollback", tx)
    seen: dict[int | None, dict[str, Any]] = {}
    with SYSTEMS["impl"]["pme"](scenario) as run:
        run_scenario(scenario, "impl", watch=lambda i, r: seen.__setitem__(i, observe(r)))
        impl = seen[len(tx) - 1]
        assert impl["s1"]["txs"]["t3"] == "rollingBack" and impl["s1"]["p0"]["lwm"] == 0
        real = copy.deepcopy(impl)
        real["s1"]["txs"]["t3"] = "rolledBack"
        assert explain(10, "s1.txs.t3", impl, real, run) == "rollback-at-once"
        real["s1"]["p0"]["lwm"] = 1  # Ignite closed the range once the backups answered
        assert explain(10, "s1.p0.lwm", impl, real, run) == "rollback-at-once"
        # a counter behind tidemark's, or a transaction Ignite did not roll back: findings
        real["s1"]["p0"]["lwm"] = 0
        real["s1"]["p0"]["items"] = [[0, 1]]
        assert explain(10, "s1.p0.items", impl, real, run) is None
        real["s1"]["txs"]["t3"] = "committed"
        assert explain(10, "s1.txs.t3", impl, real, run) is None


def test_servers_map_to_the_nodes_ignite_ranks_in_the_scenario_order() -> None:
    scenario = load_scenario(FIGURE3)
    mapping = node_mapping(scenario)
    ranking = [f"s{i + 1}" for i in rank_nodes(0, [make_node(f"s{i}") for i in (1, 2, 3)])]
    assert [mapping[s] for s in ("s1", "s2", "s3")] == ranking
    data = json.loads(Path("scenarios/figure1-backup-reordering.json").read_text())
    data["cluster"].update(partitions=2, owners={"0": ["s1", "s2", "s3"], "1": ["s1", "s2", "s3"]})
    # Ignite ranks s1..s3 differently for partitions 0 and 1: no naming gives both the same owner list.
    ranks = [rank_nodes(p, [make_node(f"s{i}") for i in (1, 2, 3)]) for p in (0, 1)]
    assert ranks[0] != ranks[1]
    with pytest.raises(IgniteScenarioError, match="rendezvous affinity"):
        node_mapping(ScenarioFile.model_validate(data))


def test_walks_are_drawn_the_same_way_each_time_and_join_at_once() -> None:
    model = WalkModel.read()
    first = walk_steps(model, 3, 7, 25)
    assert first == walk_steps(model, 3, 7, 25)
    assert first != walk_steps(model, 3, 8, 25)
    for i, step in enumerate(first):
        assert step.name not in ("TxRemap", "LockRemap", "Checkpoint")
        if step.name == "Restart":
            assert first[i + 1] == Step("Join", node=step.node)
    assert replays(model, first)
    scenario = as_scenario(model, "walk", first)
    assert run_scenario(scenario).failure is None


def test_a_cut_walk_must_still_be_a_walk_and_shrinking_keeps_what_shows() -> None:
    model = WalkModel.read()
    steps = walk_steps(model, 0, 2, 30)
    starts = [s for s in steps if s.name == "TxStart"]
    assert starts and not replays(model, [s for s in steps if s.name != "TxStart"])
    # the predicate: the walk still starts the first transaction it started
    first = starts[0]
    minimal = shrink(model, steps, lambda cut: first in cut, budget=200)
    assert minimal == [first] or (first in minimal and len(minimal) < len(steps))
    assert replays(model, minimal)
