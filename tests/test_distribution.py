"""conformance/lab/distribution.py: metrics on hand-made assignments, then one small real Spark sweep."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tidemark.conformance.lab.distribution import (
    Algorithm,
    DistributionConfig,
    DistributionReport,
    evaluate_trial,
    html_table,
    ideal_change,
    load_stats,
    markdown_table,
    movement,
    node_loads,
    owner_change,
    run_distribution,
    trial_topology,
    write_distribution_artifacts,
)


def test_node_loads_split_primaries_and_backups() -> None:
    loads = node_loads(((0, 1), (1, 2), (0, 2), (0, 1)), 3)
    assert loads.primaries == (3, 1, 0)
    assert loads.backups == (0, 2, 2)
    assert loads.total == (3, 3, 2)


def test_load_stats_exact() -> None:
    stats = load_stats([3, 3, 2])  # mean 8/3
    assert stats.peak_mean == pytest.approx(9 / 8)
    assert stats.min_mean == pytest.approx(3 / 4)
    assert stats.cv == pytest.approx(math.sqrt(2 / 9) / (8 / 3))
    assert stats.chi_square == pytest.approx((1 / 9 + 1 / 9 + 4 / 9) / (8 / 3))
    even = load_stats([5, 5, 5, 5])
    assert (even.peak_mean, even.min_mean, even.cv, even.chi_square) == (1.0, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        load_stats([0, 0])


def test_owner_change_compares_owner_sets_by_name() -> None:
    before = ((0,), (1,), (2,), (0, 1))
    # After a join the list is reordered: indices differ, names decide.
    after_nodes = ["c", "a", "d", "b"]
    after = ((1,), (2,), (0,), (3, 1))  # a, d, c, {b, a}
    assert owner_change(before, ["a", "b", "c"], after, after_nodes) == 0.25
    assert owner_change(before, ["a", "b", "c"], before, ["a", "b", "c"]) == 0.0


def test_ideal_change() -> None:
    assert ideal_change(16, 1, "join") == pytest.approx(1 / 17)
    assert ideal_change(16, 1, "leave") == pytest.approx(1 / 16)
    assert ideal_change(16, 3, "leave") == pytest.approx(3 / 16)
    assert ideal_change(2, 3, "join") == 1.0


def test_movement_on_a_join_counts_parasitic_moves() -> None:
    before = ((0,), (1,), (2,), (0,))
    # d takes partition 0 (fine); partition 1 moves b -> c, between old nodes (parasitic).
    after = ((3,), (2,), (2,), (0,))
    result = movement(before, ["a", "b", "c"], after, ["a", "b", "c", "d"], "d", "join")
    assert result.model_dump() == {"changed": 0.5, "ideal": 0.25, "ratio": 2.0, "parasitic": 0.25}


def test_movement_on_a_leave_counts_parasitic_moves() -> None:
    before = ((0, 1), (1, 2), (2, 3), (3, 0))  # a b c d, two copies each
    # b leaves: p0 and p1 replace b (fine); p2 swaps d for a without cause (parasitic); p3 stays.
    after = ((0, 1), (1, 2), (1, 0), (2, 0))  # over a c d
    result = movement(before, ["a", "b", "c", "d"], after, ["a", "c", "d"], "b", "leave")
    assert result.model_dump() == {"changed": 0.75, "ideal": 0.5, "ratio": 1.5, "parasitic": 0.25}


def test_trial_topology_is_deterministic() -> None:
    names, joiner, leaver = trial_topology(7, 16, 3)
    assert (names, joiner, leaver) == trial_topology(7, 16, 3)
    assert len(set(names)) == 16 and joiner not in names and 0 <= leaver < 16
    assert trial_topology(7, 16, 4)[0] != names


def test_config_validation() -> None:
    with pytest.raises(ValidationError):
        DistributionConfig(node_counts=(1, 4))
    with pytest.raises(ValidationError):
        DistributionConfig(algorithms=(Algorithm(kind="jump"), Algorithm(kind="jump")))
    with pytest.raises(ValidationError):
        DistributionConfig(partitions=65001)
    assert Algorithm(kind="bounded", eps=0.05).label == "bounded-0.05"
    assert Algorithm(kind="ring", vnodes=1).label == "ring-1"


def test_modulo_trial_moves_almost_everything() -> None:
    config = DistributionConfig(partitions=1024, node_counts=(16,), trials=1)
    result = evaluate_trial(config, Algorithm(kind="modulo"), 16, 0)
    assert result.total.peak_mean == 1.0
    assert result.join.changed == 1 - 64 / 1024  # p stays iff p mod 272 < 16
    assert result.join.ratio > 15
    assert result.join.parasitic > 0.8  # modulo reshuffles the old nodes too


SMALL = DistributionConfig(
    partitions=256,
    backups=0,
    node_counts=(8, 16),
    trials=3,
    seed=11,
    algorithms=(
        Algorithm(kind="modulo"),
        Algorithm(kind="rendezvous"),
        Algorithm(kind="bounded", eps=0.05),
        Algorithm(kind="ncache"),
    ),
)


@pytest.fixture(scope="module")
def report(spark: Any) -> DistributionReport:
    return run_distribution(spark, SMALL)


@pytest.mark.spark
def test_spark_sweep_structure_and_sanity(report: DistributionReport) -> None:
    assert len(report.trials) == 4 * 2 * 3
    assert [(r.algorithm, r.nodes) for r in report.summary] == [
        (a, n) for a in ("modulo", "rendezvous", "bounded-0.05", "ncache") for n in (8, 16)
    ]
    # Spark ran the same pure function the driver would.
    assert report.trials[5] == evaluate_trial(SMALL, SMALL.algorithms[0], 16, 2)
    rows = {(r.algorithm, r.nodes): r for r in report.summary}
    for nodes in (8, 16):
        assert rows["modulo", nodes].join_changed > 0.8
        assert 0.5 < rows["rendezvous", nodes].join_ratio < 1.6
        assert 0.5 < rows["rendezvous", nodes].leave_ratio < 1.6
        # Minimal disruption: rendezvous and NCache never move data between the other nodes.
        for name in ("rendezvous", "ncache"):
            assert rows[name, nodes].join_parasitic == rows[name, nodes].leave_parasitic == 0.0
        capacity = math.ceil(1.05 * 256 / nodes)
        assert rows["bounded-0.05", nodes].worst_peak_mean <= capacity / (256 / nodes)
        assert rows["ncache", nodes].peak_mean == pytest.approx(1.0, abs=0.1)
        assert rows["rendezvous", nodes].peak_mean > rows["bounded-0.05", nodes].peak_mean


@pytest.mark.spark
def test_artifacts(report: DistributionReport, tmp_path: Path) -> None:
    table_marker = '<table class="distribution">'
    written = write_distribution_artifacts(report, tmp_path)
    assert sorted(p.name for p in written) == [
        "index.html",
        "movement.png",
        "peak_mean.png",
        "report.json",
        "table.html",
    ]
    page = (tmp_path / "index.html").read_text()
    assert '<img src="peak_mean.png"' in page and '<img src="movement.png"' in page and table_marker in page
    for png in ("movement.png", "peak_mean.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert DistributionReport.model_validate(json.loads((tmp_path / "report.json").read_text())) == report
    table = html_table(report)
    assert table.count("<tr>") == 1 + len(report.summary) and "<th>peak/mean</th>" in table
    assert markdown_table(report, nodes=16).count("\n") == 2 + 4
