"""`tidemark affinity` and `tidemark distribution` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_output_schema

from tidemark.conformance.cli.main import main
from tidemark.impl.affinity import RendezvousConfig, assign_partition, key_partition, make_node


def test_affinity_json_matches_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["affinity", "42", "-7", "--type", "int", "--nodes", "a", "b", "c", "--backups", "1", "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    nodes = [make_node(n) for n in ("a", "b", "c")]
    for row, key in zip(report["keys"], (42, -7), strict=True):
        partition = key_partition(key, 1024)
        owners = [
            str(nodes[i].consistent_id) for i in assign_partition(partition, nodes, RendezvousConfig(1024, 1))
        ]
        assert (row["partition"], [row["primary"], *row["backups"]]) == (partition, owners)
    assert report["keys"][0]["partition"] != report["keys"][1]["partition"]


def test_affinity_bad_key_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["affinity", "x1", "--type", "long"]) == 2
    assert "'x1' is not a Java long" in capsys.readouterr().err


def test_affinity_bad_partition_count_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["affinity", "k", "--partitions", "70000"]) == 2
    assert "--partitions" in capsys.readouterr().err


@pytest.mark.spark
def test_distribution_json_covers_every_algorithm_and_size(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    algorithms = ["modulo", "ring-100", "jump", "rendezvous", "bounded-0.05", "ncache"]
    argv = ["distribution", "--partitions", "128", "--nodes", "4", "8", "16", "32", "--trials", "1"]
    code = main([*argv, "--algorithms", *algorithms, "--out", str(tmp_path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert_output_schema("distribution", report)
    rows = {(row["algorithm"], row["nodes"]) for row in report["summary"]}
    assert rows == {(a, n) for a in algorithms for n in (4, 8, 16, 32)}
    modulo_join = {
        row["nodes"]: row["join_ratio"] for row in report["summary"] if row["algorithm"] == "modulo"
    }
    assert all(ratio > 2 for ratio in modulo_join.values())  # hashed modulo reshuffles nearly everything
    assert (tmp_path / "index.html").read_text().count("<img") == 2


def test_distribution_unknown_algorithm_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["distribution", "--algorithms", "fancy", "--out", str(tmp_path)]) == 2
    assert "unknown algorithms ['fancy']" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
