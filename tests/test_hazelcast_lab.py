"""conformance/lab/hazelcast.py: the permits' arithmetic on one partition, then a tiny real Spark sweep and
the `tidemark hazelcast-lab` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.conftest import assert_output_schema
from tidemark.conformance.cli.main import main
from tidemark.conformance.lab.hazelcast import (
    LabConfig,
    LabReport,
    evaluate_trial,
    markdown_table,
    run_lab,
    table,
    write_lab_artifacts,
)
from tidemark.conformance.systems.hazelcast_claims import NAMESPACES


def test_balanced_table() -> None:
    assert table(3, 0) == ("m1", "m2", "m3")
    assert table(3, 4) == ("m2", "m3", "m1")
    owners = [table(5, p)[0] for p in range(271)]
    assert max(owners.count(m) for m in set(owners)) - min(owners.count(m) for m in set(owners)) <= 1


@pytest.mark.parametrize(("parallel", "rounds"), [(1, 3), (2, 2), (3, 1), (10, 1)])
def test_one_round_repairs_as_many_namespaces_as_there_are_permits(parallel: int, rounds: int) -> None:
    # Every backup lost, so no jump: nothing is dirty, only anti-entropy finds the three namespaces behind
    # on replica 1, and the replica (and its owner) sync at most `parallel` of them per round.
    config = LabConfig(partitions=1, puts=2)
    trial = evaluate_trial(config, 3, 1.0, parallel, 0)
    assert trial.backups_sent == trial.backups_lost == 2 * len(NAMESPACES)
    assert trial.fragments_hit == len(NAMESPACES)
    assert trial.rounds == rounds
    assert trial.stale == (1,) * rounds + (0,)


def test_permits_are_shared_by_a_members_partitions() -> None:
    # Six partitions on three members: each owns two, whose replica 1 is the same next member. With three
    # permits per member a round repairs three of the six namespaces behind, not three per partition.
    config = LabConfig(partitions=6, puts=1)
    assert evaluate_trial(config, 3, 1.0, 3, 0).rounds == 2
    assert evaluate_trial(config, 3, 1.0, 6, 0).rounds == 1


def test_max_rounds_gives_up_and_config_is_checked() -> None:
    trial = evaluate_trial(LabConfig(partitions=1, max_rounds=2), 3, 1.0, 1, 0)
    assert trial.rounds is None and trial.stale == (1, 1, 1)
    with pytest.raises(ValidationError):
        LabConfig(drops=(0.5, 0.5))
    with pytest.raises(ValidationError):
        LabConfig(member_counts=(8,))


TINY = LabConfig(partitions=20, member_counts=(3, 4), drops=(0.0, 0.4, 0.9), parallel=(1, 4), seeds=2)


@pytest.fixture(scope="module")
def report(spark: Any) -> LabReport:
    return run_lab(spark, TINY)


@pytest.mark.spark
def test_spark_sweep(report: LabReport) -> None:
    assert len(report.trials) == 2 * 3 * 2 * 2 and len(report.summary) == 2 * 3 * 2
    # Spark ran the same pure function this process runs: the same results for the same seeds.
    for trial in report.trials[::5]:
        assert trial == evaluate_trial(TINY, trial.members, trial.drop, trial.parallel, trial.seed)
    by = {(t.members, t.drop, t.parallel, t.seed): t for t in report.trials}
    for t in report.trials:
        assert t.rounds is not None and t.stale[-1] == 0 and len(t.stale) == t.rounds + 1
        assert list(t.stale) == sorted(t.stale, reverse=True)  # a converged partition stays so
        if t.drop == 0:
            assert t.rounds == 0 and t.backups_lost == t.fragments_hit == 0
        else:
            assert t.fragments_hit > 0 and t.stale[0] > 0 and t.rounds > 0
            lower = by[t.members, TINY.drops[TINY.drops.index(t.drop) - 1], t.parallel, t.seed]
            # more losses never fewer backups lost or fragments to repair (the losses are nested)
            assert t.backups_lost >= lower.backups_lost and t.fragments_hit >= lower.fragments_hit
            assert t.backups_sent == lower.backups_sent
            # more permits never more rounds
            assert t.rounds <= by[t.members, t.drop, 1, t.seed].rounds  # type: ignore[operator]


@pytest.mark.spark
def test_artifacts(report: LabReport, tmp_path: Path) -> None:
    written = write_lab_artifacts(report, tmp_path)
    assert sorted(p.name for p in written) == [
        "index.html",
        "report.json",
        "rounds_vs_drop.png",
        "rounds_vs_members.png",
        "table.html",
        "table.md",
    ]
    for png in ("rounds_vs_drop.png", "rounds_vs_members.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert LabReport.model_validate(json.loads((tmp_path / "report.json").read_text())) == report
    assert (tmp_path / "table.md").read_text() == markdown_table(report)
    assert markdown_table(report).count("\n") == 2 + len(report.summary)
    page = (tmp_path / "index.html").read_text()
    assert '<img src="rounds_vs_drop.png"' in page and '<table class="hazelcast-lab">' in page


@pytest.mark.spark
def test_command_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["hazelcast-lab", "--partitions", "6", "--members", "3", "--drops", "0", "0.9"]
    code = main(
        [*argv, "--parallel", "2", "--seeds", "1", "--master", "local[2]", "--out", str(tmp_path), "--json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert_output_schema("hazelcast-lab", data)
    assert [row["drop"] for row in data["summary"]] == [0.0, 0.9]
    assert data["summary"][0]["mean_rounds"] == 0 and data["summary"][1]["mean_rounds"] > 0
    assert (tmp_path / "rounds_vs_drop.png").is_file()


def test_command_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hazelcast-lab", "--drops", "1.5", "--out", str(tmp_path)]) == 2
    assert "out of range" in capsys.readouterr().err
    assert main(["hazelcast-lab", "--members", "3", "3", "--out", str(tmp_path)]) == 2
    assert "distinct" in capsys.readouterr().err
