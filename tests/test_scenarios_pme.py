"""Scenario files of the whole protocol ("protocol": "pme", impl/pme.py): the shipped ones hold and end
quiet, a wrong expectation fails where it is, malformed files are refused naming the field, the JSON output
carries idle_verify's report, the timeline and diagram show the exchange and rebalancing messages, WAL
truncation (TruncateWal) and the late affinity switch."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from test_scenario import _drop, _mermaid_structure, _run, _set, _write

from tidemark.conformance.cli.main import main
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios import load_scenario, run_scenario, write_outputs
from tidemark.conformance.scenarios.result import MessageEvent, ScenarioResult
from tidemark.conformance.scenarios.views.diagram import mermaid_diagram
from tidemark.conformance.scenarios.vocabulary import EventName
from tidemark.impl.pme import Event

FIGURE1 = Path("scenarios/figure1-backup-reordering.json")
FIGURE2 = Path("scenarios/figure2-outdated-node-rejoins.json")
FIGURE3 = Path("scenarios/figure3-gaps-closed-at-node-left.json")
LOST = Path("scenarios/all-owners-fail-partition-lost.json")
TRUNCATED = Path("scenarios/wal-truncated-full-rebalance.json")
SWITCH = Path("scenarios/late-affinity-switch.json")
REORDER = Path("scenarios/primary-reorder-fail-rejoin.json")
PME_SCENARIOS = sorted(
    p
    for p in Path("scenarios").glob("*.json")
    if json.loads(p.read_text(encoding="utf-8")).get("protocol") == "pme"
)


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _failing(data: dict[str, Any], tmp_path: Path) -> set[str]:
    result = _run(_write(tmp_path, data))
    assert result.failure is None, result.failure
    return {c.path for c in result.checks if not c.holds}


# --- the shipped scenarios --------------------------------------------------------------------------------


def test_the_pme_scenarios_are_shipped() -> None:
    assert {p.stem for p in PME_SCENARIOS} == {
        "figure2-outdated-node-rejoins",
        "figure3-gaps-closed-at-node-left",
        "figure4-partial-prepare",
        "primary-reorder-fail-rejoin",
        "partial-commit-backup-stops",
        "rollback-record-replayed-after-restart",
        "gap-survives-checkpoint",
        "all-owners-fail-partition-lost",
        "wal-truncated-full-rebalance",
        "late-affinity-switch",
        "full-rebalance-sends-key-0",
        "join-merged-with-left",
        "moving-renting-moving",
        "wal-threshold-strict",
        "rollback-range-reused",
        "merged-left-keeps-gaps",
        "all-owners-fail-reactivation",
        "lost-partition-reactivated",
        "activation-keeps-gaps",
    }


@pytest.mark.parametrize("path", PME_SCENARIOS, ids=[p.stem for p in PME_SCENARIOS])
def test_every_pme_scenario_holds_and_its_json_has_idle_verify(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scenario", str(path), "--json", "--out", str(tmp_path / "flow.mmd")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["passed"], report["failure"], report["protocol"]) == (True, None, "pme")
    assert set(report["idle_verify"]) == {"clean", "counter_conflicts", "hash_conflicts", "skipped", "lost"}
    data = _load(path)
    # Each one states what idle_verify reports at the end, and has a description and notes.
    assert "idle_verify" in data and data["description"]
    assert any("note" in step for step in data["steps"])
    assert report["idle_verify"]["clean"] is data["idle_verify"]["clean"]


@pytest.mark.parametrize("path", PME_SCENARIOS, ids=[p.stem for p in PME_SCENARIOS])
def test_every_pme_scenario_ends_with_no_exchange_pending_and_nothing_in_flight(path: Path) -> None:
    result = _run(path)
    last = result.timeline[-1].topology
    assert (last.version, last.pending) == (last.ready, [])
    assert result.timeline[-1].in_flight == 0 and result.topology == last


# Scenarios where a server that rejoined and rebalanced comes before a live owner in the assignment: the
# last batch starts the late affinity switch, and the scenario runs its exchange. -> (primary before, after)
SWITCHING = {
    REORDER: ("s2", "s1"),
    SWITCH: ("s2", "s1"),
    Path("scenarios/gap-survives-checkpoint.json"): ("s1", "s1"),
    Path("scenarios/partial-commit-backup-stops.json"): ("s1", "s1"),
}


@pytest.mark.parametrize(("path", "primaries"), SWITCHING.items(), ids=[p.stem for p in SWITCHING])
def test_the_last_batch_of_a_rejoined_server_starts_the_late_affinity_switch(
    path: Path, primaries: tuple[str, str]
) -> None:
    result = _run(path)
    rows = result.timeline
    bumps = [i for i in range(1, len(rows)) if rows[i].topology.version != rows[i - 1].topology.version]
    batches = [i for i, row in enumerate(rows) if row.step.startswith("Rebalance(")]
    # Only the last batch switches, on a new minor version; the owner list waits for the exchange.
    assert [i for i in bumps if i in batches] == [batches[-1]]
    before, switch = rows[batches[-1] - 1].topology, rows[batches[-1]].topology
    major, minor = before.version.split(".")
    assert (switch.version, switch.ready, switch.pending) == (
        f"{major}.{int(minor) + 1}",
        before.version,
        ["affinity"],
    )
    assert switch.owners == before.owners
    # The exchange: a single message from every live server, then the full message, which demands nothing.
    exchange = rows[batches[-1] + 1 :]
    full = next(i for i, row in enumerate(exchange) if row.step.startswith("FullMessage("))
    singles = {row.step for row in exchange[:full] if row.step.startswith("SendSingle(")}
    assert singles == {f"SendSingle(node={n})" for n in switch.owners[0]}
    done = exchange[full]
    assert (done.topology.ready, done.topology.pending) == (switch.version, [])
    assert [m for m in done.messages if m.kind == "sent"] == []
    # The owner list is the assignment's order again, and the new primary's HWM reaches the max LWM.
    owners = done.topology.owners[0]
    assert owners == [n for n in result.servers if n in owners]
    assert (switch.owners[0][0], owners[0]) == primaries
    primary = done.nodes[owners[0]].counters[0]
    assert primary.hwm >= max(done.nodes[n].counters[0].lwm for n in owners)


def test_the_late_affinity_switch_raises_the_new_primarys_hwm_and_no_counter_is_reused() -> None:
    result = _run(SWITCH)

    def s1(step: int) -> tuple[int, int]:
        counter = result.timeline[step + 1].nodes["s1"].counters[0]
        return counter.lwm, counter.hwm

    # A MOVING backup applies t2's counter 5 without reserving: its HWM lags its LWM until the switch.
    assert s1(23) == s1(27) == (5, 4)
    assert (s1(31), result.timeline[32].topology.owners) == ((5, 5), {0: ["s1", "s2"]})
    assert s1(35) == (5, 6)  # t3 gets 6 from s1, not 5 again
    for node in result.nodes.values():
        assert {k: e.cntr for k, e in node.data.items()} == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6}
    [waiting] = [c for c in result.checks if c.path == "steps[28].refused"]
    assert waiting.holds and result.timeline[29].step == "TxStart(tx=t3) refused"
    _, _, notes = _mermaid_structure(mermaid_diagram(result))
    assert "late affinity switch: rebalancing done and the owner order changes: exchange on ver 3.1" in notes
    assert "p0 owners s2, s1 → s1, s2 (primary s2 → s1)" in notes


def _label_sent(result: ScenarioResult, step: int) -> list[str]:
    return [m.label for m in result.timeline[step + 1].messages if m.kind == "sent"]


def test_truncate_wal_shows_in_the_timeline_and_diagram(tmp_path: Path) -> None:
    result = _run(TRUNCATED)
    before, after = result.timeline[13], result.timeline[14]
    assert after.step == "TruncateWal(node=s1)" and (after.messages, after.in_flight) == ([], 0)
    assert (before.nodes["s1"].history, after.nodes["s1"].history, after.nodes["s2"].history) == (
        {},
        {0: 5},
        {},
    )
    # The checkpoint changes no counter and no copy state: only what the archive can supply.
    assert after.nodes["s1"].model_dump(exclude={"history"}) == before.nodes["s1"].model_dump(
        exclude={"history"}
    )
    _, arrows, notes = _mermaid_structure(mermaid_diagram(result))
    at = notes.index("13. TruncateWal(node=s1)")
    assert notes[at : at + 3] == [
        "13. TruncateWal(node=s1)",
        "checkpoint, and the archive drops the records up to LWM 5",  # the step's note
        "WAL archive truncated: p0 history 5",
    ]
    assert "15. TruncateWal(node=s1) refused" in notes and "WAL archive truncated: p0 history 6" in notes
    assert [a for a in arrows if a[3] in (27, 29, 30)] == [
        ("s1", "->>", "s1", 27, "SingleMessage p0 lwm 6 OWNING WAL from 6"),
        ("s2", "->>", "s1", 29, "SingleMessage p0 lwm 6 OWNING WAL from 6"),
        ("s3", "->>", "s1", 30, "SingleMessage p0 lwm 3 OWNING"),
    ]
    assert _label_sent(result, 31) == ["Demand p0 full keys from 0 up to lwm 6"]
    assert ("s1", "->>", "s3", 39, "Supply p0 full key 5 cntr 6 (last)") in arrows
    _, page = write_outputs(result, tmp_path / "truncated.mmd")
    assert "lwm=6 hwm=6 OWNING history 6" in page.read_text(encoding="utf-8")


def test_without_the_truncation_the_same_join_is_rebalanced_from_the_wal(tmp_path: Path) -> None:
    data = _load(TRUNCATED)
    # Up to the join exchange's full message, without the truncations (the refused one after s1's single
    # message stays: the history it offered is reserved, truncated or not).
    data["steps"] = [
        {k: v for k, v in step.items() if k != "expect"}
        for i, step in enumerate(data["steps"][:32])
        if step["step"] != "TruncateWal" or i == 28
    ]
    data["expect"] = {}
    del data["idle_verify"], data["topology"]
    result = _run(_write(tmp_path, data))
    assert result.passed and result.timeline[-1].step == "FullMessage(node=s1)"
    assert _label_sent(result, len(data["steps"]) - 1) == ["Demand p0 historical counters 4..6"]
    assert _label_sent(_run(TRUNCATED), 31) == ["Demand p0 full keys from 0 up to lwm 6"]


def test_truncation_is_refused_while_the_single_message_reserves_the_history(tmp_path: Path) -> None:
    data = _load(TRUNCATED)
    # Before s1 sends its single message the truncation the scenario expects refused is possible.
    data["steps"].insert(27, data["steps"].pop(28))
    result = _run(_write(tmp_path, data))
    assert result.failure is None
    assert [(c.path, c.actual) for c in result.checks if not c.holds] == [("steps[27].refused", "enabled")]


def test_figure2_rebalances_the_rejoined_copy_from_the_wal() -> None:
    result = _run(FIGURE2)
    rows = {row.index: row for row in result.timeline}
    s3 = rows[18].nodes["s3"]
    # The join exchange: LWM raised to the max at once, the data still missing until rebalancing.
    assert (s3.counters[0].lwm, s3.copies) == (5, {0: "MOVING (init 3)"})
    assert rows[22].nodes["s3"].copies == {0: "OWNING"}
    assert {n: v.data[3].value for n, v in result.nodes.items()} == {"s1": "v3", "s2": "v3", "s3": "v3"}
    assert result.idle_verify is not None and result.idle_verify.clean


# --- a wrong expectation fails where it is ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "failing"),
    [
        (_set(["steps", 18, "expect", "s3", "init", "0"], 2), {"steps[18].expect.s3.init[0]"}),
        (
            _set(["steps", 18, "expect", "s3", "partitions", "0"], "OWNING"),
            {"steps[18].expect.s3.partitions[0]"},
        ),
        (_set(["steps", 18, "idle_verify", "skipped"], {}), {"steps[18].idle_verify.skipped"}),
        (_set(["idle_verify", "clean"], False), {"idle_verify.clean"}),
        (_set(["idle_verify", "counter_conflicts"], [0]), {"idle_verify.counter_conflicts"}),
        (_set(["expect", "s3", "partitions", "0"], "EVICTED"), {"expect.s3.partitions[0]"}),
        (_set(["expect", "s3", "counters", "0", "items"], [[3, 2]]), {"expect.s3.counters[0].items"}),
    ],
)
def test_a_wrong_expectation_fails_at_that_expectation(
    damage: Callable[[dict[str, Any]], None], failing: set[str], tmp_path: Path
) -> None:
    data = copy.deepcopy(_load(FIGURE2))
    damage(data)
    assert _failing(data, tmp_path) == failing


@pytest.mark.parametrize(
    ("source", "damage", "failing"),
    [
        (
            TRUNCATED,
            _set(["steps", 13, "expect", "s1", "history", "0"], 3),
            {"steps[13].expect.s1.history[0]"},
        ),
        (
            TRUNCATED,
            _set(["steps", 34, "expect", "s1", "history", "0"], 6),
            {"steps[34].expect.s1.history[0]"},
        ),
        (TRUNCATED, _set(["expect", "s3", "history", "0"], 6), {"expect.s3.history[0]"}),
        (SWITCH, _set(["steps", 27, "topology", "version"], "3.0"), {"steps[27].topology.version"}),
        (SWITCH, _set(["steps", 27, "topology", "pending"], []), {"steps[27].topology.pending"}),
        (
            SWITCH,
            _set(["steps", 31, "topology", "owners", "0"], ["s2", "s1"]),
            {"steps[31].topology.owners[0]"},
        ),
        (SWITCH, _set(["topology", "ready"], "3.0"), {"topology.ready"}),
        (
            FIGURE2,
            _set(["expect", "s3", "rebalanced", "0", "mode"], "full"),
            {"expect.s3.rebalanced[0].mode"},
        ),
        (FIGURE2, _set(["expect", "s3", "rebalanced", "0", "from"], 0), {"expect.s3.rebalanced[0].from"}),
        (FIGURE2, _set(["expect", "s3", "rebalanced", "0", "to"], 4), {"expect.s3.rebalanced[0].to"}),
        (
            FIGURE2,
            _set(["expect", "s3", "rebalanced", "0", "supplier"], "s2"),
            {"expect.s3.rebalanced[0].supplier"},
        ),
        (FIGURE2, _set(["expect", "s3", "rebalanced", "0"], None), {"expect.s3.rebalanced[0]"}),
        (
            FIGURE2,
            _set(["expect", "s2", "rebalanced"], {"0": {"mode": "full"}}),
            {"expect.s2.rebalanced[0].mode"},
        ),
        (
            TRUNCATED,
            _set(["expect", "s3", "rebalanced", "0", "mode"], "historical"),
            {"expect.s3.rebalanced[0].mode"},
        ),
        (TRUNCATED, _set(["expect", "s3", "rebalanced", "0", "from"], 3), {"expect.s3.rebalanced[0].from"}),
        (SWITCH, _set(["steps", 2, "topology", "coordinator"], "s1"), {"steps[2].topology.coordinator"}),
        (SWITCH, _set(["topology", "coordinator"], "s1"), {"topology.coordinator"}),
    ],
)
def test_a_wrong_history_topology_rebalance_or_coordinator_expectation_fails_at_it(
    source: Path, damage: Callable[[dict[str, Any]], None], failing: set[str], tmp_path: Path
) -> None:
    data = copy.deepcopy(_load(source))
    damage(data)
    assert _failing(data, tmp_path) == failing


def test_a_wrong_expectation_exits_1_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _load(FIGURE2)
    data["steps"][18]["expect"]["s3"]["init"]["0"] = 5  # as if the copy rebalanced from the max LWM
    path = _write(tmp_path, data)
    assert main(["scenario", str(path), "--out", str(tmp_path / "f.mmd")]) == 1
    assert "steps[18].expect.s3.init[0]: expected 5, got 3" in capsys.readouterr().out


def test_a_refused_step_that_is_possible_fails_and_is_not_taken(tmp_path: Path) -> None:
    data = _load(FIGURE2)
    # After the join, s1 may send its single message: expecting it refused is wrong.
    data["steps"].insert(15, {"step": "SendSingle", "node": "s1", "refused": True})
    result = _run(_write(tmp_path, data))
    assert result.failure is None
    assert [(c.path, c.expected, c.actual) for c in result.checks if not c.holds] == [
        ("steps[15].refused", "refused", "enabled")
    ]
    # Not taken: the next step, the same SendSingle, still runs, and the rest of the scenario holds.
    assert [row.step for row in result.timeline[16:18]] == [
        "SendSingle(node=s1) NOT refused (not taken)",
        "SendSingle(node=s1)",
    ]


def test_a_refused_step_that_is_impossible_holds_and_changes_nothing(tmp_path: Path) -> None:
    result = _run(LOST)
    [check] = [c for c in result.checks if c.path == "steps[13].refused"]
    assert (check.expected, check.actual, check.holds) == ("refused", "refused", True)
    row = result.timeline[14]
    assert row.step == "TxStart(tx=t2) refused" and row.messages == []
    assert row.nodes == result.timeline[13].nodes and result.txs["t2"] == "idle"


def test_a_step_that_is_not_enabled_stops_the_run_naming_the_enabled_ones(tmp_path: Path) -> None:
    data = _load(FIGURE2)
    data["steps"].insert(18, {"step": "Supply", "node": "s1", "part": 0, "peer": "s3"})  # no demand yet
    result = _run(_write(tmp_path, data))
    assert result.failure is not None and not result.passed
    assert result.failure.startswith(
        "steps[18]: Supply(node=s1, part=0, peer=s3) is not enabled here; enabled:"
    )
    assert "FullMessage(node=s1)" in result.failure


# --- malformed files --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "damage", "location", "message"),
    [
        (
            FIGURE2,
            _set(["steps", 3], {"step": "Exchange"}),
            "steps[3].step",
            "Exchange is a step of protocol '2pc'",
        ),
        (FIGURE2, _drop(["steps", 19, "part"]), "steps[19].part", "Field required"),
        (FIGURE2, _set(["steps", 19, "peer"], "s9"), "steps[19].peer", "unknown server 's9'"),
        (FIGURE2, _set(["steps", 20, "node"], "s9"), "steps[20].node", "unknown server 's9'"),
        (FIGURE2, _set(["steps", 20, "part"], 1), "steps[20].part", "no partition 1"),
        (FIGURE2, _set(["steps", 20, "part"], -1), "steps[20].part", "greater than or equal to 0"),
        (FIGURE2, _set(["steps", 14, "tx"], "t1"), "steps[14].tx", "Extra inputs are not permitted"),
        (FIGURE2, _set(["protocol"], "3pc"), "protocol", "Input should be '2pc', 'pme', 'hazelcast' or"),
        (FIGURE2, _set(["counter"], "no-out-of-order-tracking"), "counter", "does not run on protocol 'pme'"),
        (
            FIGURE2,
            _set(["cluster", "owners"], {"0": ["s2", "s1", "s3"]}),
            "cluster.owners[0]",
            "every partition is owned by the first backups+1 servers",
        ),
        (FIGURE2, _set(["cluster", "batch_size"], 0), "cluster.batch_size", "greater than or equal to 1"),
        (FIGURE2, _set(["idle_verify"], {}), "idle_verify", "give at least one of clean"),
        (FIGURE2, _set(["idle_verify", "skipped"], {"0": {"s9": "MOVING"}}), "idle_verify.skipped", "'s9'"),
        (
            FIGURE2,
            _set(["idle_verify", "skipped"], {"0": {"s3": "OWNING"}}),
            "idle_verify.skipped[0].s3",
            "Input should be 'MOVING', 'RENTING' or 'LOST'",
        ),
        (
            FIGURE2,
            _set(["expect", "s3", "partitions", "0"], "GONE"),
            "expect.s3.partitions[0]",
            "Input should be",
        ),
        (FIGURE2, _set(["expect", "s3", "init"], {"1": 0}), "expect.s3.init[1]", "no partition 1"),
        (
            FIGURE2,
            _set(["expect", "c1", "init"], {"0": 0}),
            "expect.c1.init",
            "the client holds only transactions",
        ),
        (
            FIGURE1,
            _set(["steps", 2], {"step": "Join", "node": "s1"}),
            "steps[2].step",
            "Join is a step of protocol 'pme'",
        ),
        (
            FIGURE1,
            _set(["cluster", "batch_size"], 2),
            "cluster.batch_size",
            "protocol '2pc' does not rebalance",
        ),
        (
            FIGURE1,
            _set(["idle_verify"], {"clean": True}),
            "idle_verify",
            "protocol '2pc' has no idle_verify",
        ),
        (
            FIGURE1,
            _set(["steps", 19, "idle_verify"], {"clean": True}),
            "steps[19].idle_verify",
            "has no idle_verify",
        ),
        (
            FIGURE1,
            _set(["expect", "s2", "partitions", "0"], "LOST"),
            "expect.s2.partitions[0]",
            "copy state of",
        ),
        (
            FIGURE1,
            _set(["expect", "s2", "init"], {"0": 0}),
            "expect.s2.init",
            "protocol '2pc' has no MOVING copies",
        ),
        (
            LOST,
            _set(["steps", 19, "keys"], {"2": "other"}),
            "steps[19].keys",
            "transaction 't2' writes {2: 'v2'} at steps[13]",
        ),
        (LOST, _set(["steps", 13, "refused"], False), "steps[19].tx", "transaction 't2' already started"),
        (TRUNCATED, _set(["steps", 13, "part"], 0), "steps[13].part", "Extra inputs are not permitted"),
        (TRUNCATED, _drop(["steps", 13, "node"]), "steps[13].node", "Field required"),
        (TRUNCATED, _set(["steps", 13, "node"], "s9"), "steps[13].node", "unknown server 's9'"),
        (
            FIGURE1,
            _set(["steps", 2], {"step": "TruncateWal", "node": "s1"}),
            "steps[2].step",
            "TruncateWal is a step of protocol 'pme'",
        ),
        (
            FIGURE1,
            _set(["expect", "s2", "history"], {"0": 0}),
            "expect.s2.history",
            "protocol '2pc' does not truncate the WAL archive",
        ),
        (TRUNCATED, _set(["expect", "s1", "history"], {"1": 0}), "expect.s1.history[1]", "no partition 1"),
        (
            TRUNCATED,
            _set(["expect", "s1", "history", "0"], -1),
            "expect.s1.history[0]",
            "greater than or equal",
        ),
        (
            TRUNCATED,
            _set(["expect", "c1", "history"], {"0": 0}),
            "expect.c1.history",
            "the client holds only transactions",
        ),
        (SWITCH, _set(["topology", "version"], "3"), "topology.version", "String should match pattern"),
        (SWITCH, _set(["topology", "pending"], ["moved"]), "topology.pending[0]", "Input should be 'left'"),
        (SWITCH, _set(["topology", "owners"], {"0": ["s1", "s9"]}), "topology.owners[0][1]", "'s9'"),
        (SWITCH, _set(["topology", "owners"], {"0": ["s1", "s1"]}), "topology.owners[0][1]", "listed twice"),
        (SWITCH, _set(["topology", "owners"], {"1": ["s1"]}), "topology.owners[1]", "no partition 1"),
        (SWITCH, _set(["steps", 27, "topology"], {}), "steps[27].topology", "give at least one of version"),
        (SWITCH, _set(["topology", "primary"], "s1"), "topology.primary", "Extra inputs are not permitted"),
        (FIGURE1, _set(["topology"], {"pending": []}), "topology.pending", "nothing is ever pending"),
    ],
)
def test_a_malformed_scenario_is_refused_naming_the_file_and_field(
    source: Path, damage: Callable[[dict[str, Any]], None], location: str, message: str, tmp_path: Path
) -> None:
    data = copy.deepcopy(_load(source))
    damage(data)
    path = _write(tmp_path, data)
    with pytest.raises(TidemarkError) as error:
        load_scenario(path)
    assert (error.value.source, error.value.location) == (str(path), location)
    assert message in error.value.message
    assert error.value.expected


def test_a_malformed_pme_scenario_exits_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _load(FIGURE2)
    data["steps"][3] = {"step": "Exchange"}
    path = _write(tmp_path, data)
    out = tmp_path / "out" / "flow.mmd"
    assert main(["scenario", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path}, steps[3].step: Exchange is a step of protocol '2pc'" in err
    assert "SendSingle" in err and not out.parent.exists()


# --- idle_verify in the output ----------------------------------------------------------------------------


def test_json_reports_counter_and_hash_conflicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _load(FIGURE3)
    # Stop after t2 committed on s1 and s2 but not on s3: the OWNING copies disagree.
    data["steps"] = data["steps"][:14]
    data["expect"] = {}
    del data["idle_verify"]
    path = _write(tmp_path, data)
    assert main(["scenario", str(path), "--json", "--out", str(tmp_path / "f.mmd")]) == 0
    verify = json.loads(capsys.readouterr().out)["idle_verify"]
    assert verify["clean"] is False
    assert verify["counter_conflicts"] == {
        "0": {
            "s1": {"lwm": 0, "items": [[3, 2]]},
            "s2": {"lwm": 0, "items": [[3, 2]]},
            "s3": {"lwm": 0, "items": []},
        }
    }
    hashes = verify["hash_conflicts"]["0"]
    assert hashes["s1"] == hashes["s2"] != hashes["s3"]
    assert (verify["skipped"], verify["lost"]) == ({}, [])


def test_json_and_text_report_the_lost_partition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", str(LOST), "--json", "--out", str(tmp_path / "f.mmd")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["idle_verify"] == {
        "clean": True,
        "counter_conflicts": {},
        "hash_conflicts": {},
        "skipped": {"0": {"s2": "LOST"}},
        "lost": [0],
    }
    nodes = report["nodes"]
    assert (nodes["s1"]["partitions"], nodes["s2"]["partitions"], nodes["s3"]["partitions"]) == (
        {"0": "OFFLINE"},
        {"0": "LOST"},
        {},
    )
    assert main(["scenario", str(LOST), "--out", str(tmp_path / "f.mmd")]) == 0
    assert "idle_verify: clean; skipped p0: s2 LOST; lost p0" in capsys.readouterr().out


def test_json_reports_the_topology_and_the_truncated_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scenario", str(TRUNCATED), "--json", "--out", str(tmp_path / "f.mmd")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["topology"] == {
        "version": "3.0",
        "ready": "3.0",
        "owners": {"0": ["s1", "s2", "s3"]},
        "pending": [],
        "coordinator": "s1",
    }
    assert {n: v["history"] for n, v in report["nodes"].items()} == {"s1": {"0": 6}, "s2": {"0": 6}, "s3": {}}


def test_the_topology_events_are_impl_pmes() -> None:
    assert set(get_args(EventName)) == {e.value for e in Event}


def test_the_timeline_page_shows_the_pending_affinity_exchange(tmp_path: Path) -> None:
    _, page = write_outputs(_run(SWITCH), tmp_path / "switch.mmd")
    text = page.read_text(encoding="utf-8")
    assert "ver 3.1 (exchange pending: affinity; ready 3.0)\nowners s2, s1" in text
    assert "ver 3.1\nowners s1, s2" in text


def test_the_2pc_json_has_no_idle_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", str(FIGURE1), "--json", "--out", str(tmp_path / "f.mmd")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["protocol"], report["idle_verify"]) == ("2pc", None)


# --- timeline and diagram ---------------------------------------------------------------------------------


def test_the_figure2_diagram_shows_the_exchange_and_the_demand_supply_flow() -> None:
    participants, arrows, notes = _mermaid_structure(mermaid_diagram(_run(FIGURE2)))
    assert participants == ["c1", "s1", "s2", "s3"]
    exchange = [a for a in arrows if a[3] in range(15, 19)]
    assert exchange == [
        ("s1", "->>", "s1", 15, "SingleMessage p0 lwm 5 OWNING"),
        ("s2", "->>", "s1", 16, "SingleMessage p0 lwm 5 OWNING"),
        ("s3", "->>", "s1", 17, "SingleMessage p0 lwm 3 OWNING"),
        ("s1", "->>", "s2", 18, "FullMessage ver 3.0 p0 lwm 5"),
        ("s1", "->>", "s3", 18, "FullMessage ver 3.0 p0 lwm 5"),
    ]
    assert [a for a in arrows if a[3] >= 19] == [
        ("s3", "->>", "s1", 19, "Demand p0 historical counters 4..5"),
        ("s1", "->>", "s3", 20, "Supply p0 historical key 3 cntr 4"),
        ("s3", "->>", "s1", 21, "Demand p0 historical counter 5"),
        ("s1", "->>", "s3", 22, "Supply p0 historical key 4 cntr 5 (last)"),
    ]
    # Copy states as they change: demoted at the exchange, OWNING after the last batch.
    assert "p0 lwm=5 hwm=5#59; p0 OWNING → MOVING (init 3)" in notes
    assert notes[-1] == "p0 MOVING (init 3) → OWNING"


def test_the_timeline_lists_the_demand_sent_by_the_full_message(tmp_path: Path) -> None:
    result = _run(FIGURE2)
    full = result.timeline[19]  # row 0 is the initial state
    assert full.step == "FullMessage(node=s1)" and full.in_flight == 1
    assert full.messages[-1] == MessageEvent(
        kind="sent", sender="s3", receiver="s1", label="Demand p0 historical counters 4..5"
    )


def test_a_topology_event_loses_the_rebalancing_messages(tmp_path: Path) -> None:
    data = _load(FIGURE2)
    data["steps"] = [*data["steps"][:19], {"step": "NodeFail", "node": "s2"}]
    data["expect"] = {}
    del data["idle_verify"]
    result = _run(_write(tmp_path, data))
    assert result.passed
    failed = result.timeline[-1]
    assert failed.messages == [
        MessageEvent(kind="lost", sender="s3", receiver="s1", label="Demand p0 historical counters 4..5")
    ]
    assert failed.in_flight == 0 and failed.nodes["s3"].copies == {0: "MOVING (init 3)"}
    _, arrows, _ = _mermaid_structure(mermaid_diagram(result))
    assert arrows[-1] == ("s3", "-x", "s1", 19, "Demand p0 historical counters 4..5 (lost)")


def test_a_baseline_change_moves_the_partition_and_evicts_the_old_copy(tmp_path: Path) -> None:
    # s1 and s2 own p0; s1 fails, the baseline becomes {s2, s3} (s3 gets a MOVING copy, fully
    # rebalanced), then s1 comes back outside the baseline: its copy is RENTING until evicted.
    data = {
        "name": "baseline-change",
        "protocol": "pme",
        "cluster": {
            "servers": ["s1", "s2", "s3"],
            "clients": ["c1"],
            "backups": 1,
            "initial_data": {"1": "a1", "2": "a2"},
            "batch_size": 2,
        },
        "steps": [
            {"step": "NodeFail", "node": "s1"},
            {"step": "SendSingle", "node": "s2"},
            {"step": "SendSingle", "node": "s3", "note": "s3 holds no copy"},
            {"step": "FullMessage", "node": "s2"},
            {"step": "BaselineChange"},
            {"step": "SendSingle", "node": "s2"},
            {"step": "SendSingle", "node": "s3"},
            {
                "step": "FullMessage",
                "node": "s2",
                "expect": {"s3": {"partitions": {"0": "MOVING"}, "init": {"0": 0}, "data": {}}},
            },
            {"step": "Supply", "node": "s2", "part": 0, "peer": "s3"},
            {"step": "Rebalance", "node": "s3", "part": 0},
            {"step": "Evict", "node": "s1", "part": 0, "refused": True, "note": "s1's copy is not RENTING"},
            {"step": "Restart", "node": "s1"},
            {"step": "Join", "node": "s1"},
            {"step": "SendSingle", "node": "s1"},
            {"step": "SendSingle", "node": "s2"},
            {"step": "SendSingle", "node": "s3"},
            {
                "step": "FullMessage",
                "node": "s2",
                "expect": {"s1": {"partitions": {"0": "RENTING"}, "data": {"1": "a1", "2": "a2"}}},
                "idle_verify": {"clean": True, "skipped": {"0": {"s1": "RENTING"}}},
            },
            {"step": "Evict", "node": "s1", "part": 0},
        ],
        "expect": {
            "s1": {"partitions": {"0": "EVICTED"}, "data": {}},
            "s2": {
                "partitions": {"0": "OWNING"},
                "counters": {"0": {"lwm": 2}},
                "data": {"1": "a1", "2": "a2"},
            },
            "s3": {
                "partitions": {"0": "OWNING"},
                "counters": {"0": {"lwm": 2}},
                "data": {"1": "a1", "2": "a2"},
            },
        },
        "idle_verify": {"clean": True, "skipped": {}},
    }
    result = _run(_write(tmp_path, data))
    assert result.passed, [c for c in result.checks if not c.holds] or result.failure
    _, arrows, notes = _mermaid_structure(mermaid_diagram(result))
    assert ("s2", "->>", "s3", 9, "Supply p0 full key 1 cntr 1, key 2 cntr 2 (last)") in arrows
    assert {"p0 lwm=2 hwm=2#59; p0 EVICTED → MOVING (init 0)", "p0 OWNING → RENTING"} <= set(notes)
    assert notes[-2:] == ["17. Evict(node=s1, part=0)", "p0 RENTING → EVICTED"]


def test_pme_outputs_are_deterministic(tmp_path: Path) -> None:
    first = write_outputs(run_scenario(load_scenario(FIGURE2)), tmp_path / "a" / "flow.mmd")
    again = write_outputs(run_scenario(load_scenario(FIGURE2)), tmp_path / "b" / "flow.mmd")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    page = first[1].read_text(encoding="utf-8")
    assert "idle_verify: clean" in page and "Demand p0 historical counters 4..5" in page


# --- how a copy was rebalanced, and the coordinator ---------------------------------------------------------


def test_the_rebalanced_copy_names_mode_range_and_supplier_once_its_last_batch_is_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _load(FIGURE2)
    # After the full message the copy is MOVING: its rebalancing has started, not completed.
    data["steps"][18]["expect"]["s3"]["rebalanced"] = {"0": None}
    data["steps"][22]["expect"] = {
        "s1": {"rebalanced": {"0": None}},
        "s3": {"rebalanced": {"0": {"mode": "historical"}}},
    }
    assert _failing(data, tmp_path) == set()
    assert main(["scenario", str(FIGURE2), "--json", "--out", str(tmp_path / "f.mmd")]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    assert {n: v["rebalanced"] for n, v in nodes.items()} == {
        "s1": {},
        "s2": {},
        "s3": {"0": {"mode": "historical", "from": 3, "to": 5, "supplier": "s1"}},
    }


def test_the_full_rebalance_is_from_counter_0_up_to_the_max_lwm() -> None:
    [check] = [c for c in _run(TRUNCATED).checks if c.path == "expect.s3.rebalanced[0].from"]
    assert (check.expected, check.actual, check.holds) == (0, 0, True)


def test_the_coordinator_is_the_oldest_live_server_and_a_rejoined_one_is_the_youngest(tmp_path: Path) -> None:
    result = _run(SWITCH)
    coordinators = [row.topology.coordinator for row in result.timeline]
    # s1 until it fails (step 0); s2 from then on, also after s1 restarted and joined again (step 11).
    assert coordinators[0] == "s1" and set(coordinators[1:]) == {"s2"}
    assert result.topology.coordinator == "s2"
    _, page = write_outputs(result, tmp_path / "switch.html")
    assert "ver 2.0\nowners s2\ncoordinator s2" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "location", "message"),
    [
        (_set(["topology"], {"coordinator": "s1"}), "topology.coordinator", "run by no coordinator"),
        (_set(["expect", "s2", "rebalanced"], {"0": None}), "expect.s2.rebalanced", "does not rebalance"),
    ],
)
def test_the_2pc_protocol_has_no_coordinator_and_no_rebalancing(
    damage: Callable[[dict[str, Any]], None], location: str, message: str, tmp_path: Path
) -> None:
    data = copy.deepcopy(_load(FIGURE1))
    damage(data)
    with pytest.raises(TidemarkError, match=message) as error:
        load_scenario(_write(tmp_path, data))
    assert error.value.location == location and error.value.expected is not None
    assert "\"protocol\": 'pme'" in error.value.expected


@pytest.mark.parametrize(
    ("damage", "location", "message"),
    [
        (_set(["topology", "coordinator"], "s9"), "topology.coordinator", "unknown server 's9'"),
        (
            _set(["expect", "s3", "rebalanced", "0", "supplier"], "s9"),
            "expect.s3.rebalanced[0].supplier",
            "'s9'",
        ),
        (
            _set(["expect", "s3", "rebalanced", "0"], {}),
            "expect.s3.rebalanced[0]",
            "give at least one of mode, from",
        ),
        (
            _set(["expect", "s3", "rebalanced", "0", "mode"], "partial"),
            "expect.s3.rebalanced[0].mode",
            "'historical'",
        ),
        (_set(["expect", "s3", "rebalanced", "1"], None), "expect.s3.rebalanced[1]", "no partition 1"),
    ],
)
def test_a_malformed_rebalance_or_coordinator_expectation_is_refused(
    damage: Callable[[dict[str, Any]], None], location: str, message: str, tmp_path: Path
) -> None:
    data = copy.deepcopy(_load(SWITCH if "topology" in location else FIGURE2))
    damage(data)
    with pytest.raises(TidemarkError, match=message) as error:
        load_scenario(_write(tmp_path, data))
    assert error.value.location == location
