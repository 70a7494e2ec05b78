"""conformance/lab/ncache.py: NCache's map by data size beside the hash placements, on Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.conftest import assert_output_schema
from tidemark.conformance.cli.main import main
from tidemark.conformance.lab.ncache import (
    PLACEMENTS,
    LabConfig,
    LabReport,
    bucket_weights,
    evaluate_trial,
    markdown_table,
    moved,
    ncache_maps,
    run_lab,
    write_lab_artifacts,
)
from tidemark.impl.ncache_balance import member_weights

SMALL = LabConfig(keys=5_000, node_counts=(4, 8), trials=2, seed=3)


def test_bucket_weights_are_seeded_and_zipf() -> None:
    weights = bucket_weights(SMALL, 4, 0)
    assert weights == bucket_weights(SMALL, 4, 0) and weights != bucket_weights(SMALL, 4, 1)
    top = SMALL.max_size
    # the k-th key weighs max_size / k^zipf: the total is the sum over the keys, the heaviest bucket has
    # the first key
    assert sum(weights) == sum(max(1, int(top / k**SMALL.zipf)) for k in range(1, SMALL.keys + 1))
    assert max(weights) >= top
    flat = bucket_weights(SMALL.model_copy(update={"zipf": 0.0}), 4, 0)
    assert sum(flat) == SMALL.keys * top


def test_moved_counts_bytes_ideal_and_parasitic() -> None:
    weights = [10, 30, 60]
    m = moved(["a", "b", "a"], ["c", "a", "a"], weights, "c", 0.5)
    assert m.bytes == pytest.approx(0.4) and m.buckets == pytest.approx(2 / 3)
    assert m.ratio == pytest.approx(0.8) and m.parasitic == pytest.approx(0.3)  # b -> a is parasitic


@pytest.mark.parametrize("kind", ["ncache-count", "ncache-shuffle", "ncache-bytes", "ncache-auto"])
def test_ncache_maps_keep_every_bucket_owned(kind: Any) -> None:
    weights = bucket_weights(SMALL, 8, 0)
    base, after_join, after_leave = ncache_maps(kind, weights, 8, 3)
    assert (
        set(base) == set(range(8)) and set(after_join) == set(range(9)) and set(after_leave) <= set(range(7))
    )
    if kind == "ncache-auto":
        return  # automatic balancing swaps buckets between old members too
    # a join only moves buckets to the joiner, a leave only the leaver's (no parasitic move)
    assert all(new in (old, 8) for old, new in zip(base, after_join, strict=True))
    kept = [o - (o > 3) for o in base]
    assert all(new == k for old, new, k in zip(base, after_leave, kept, strict=True) if old != 3)


def test_weighing_beats_counting_by_bytes_on_few_nodes() -> None:
    config = LabConfig(keys=20_000, zipf=1.0, node_counts=(4,), trials=1, seed=1)
    count, weighed = (evaluate_trial(config, p, 4, 0) for p in ("ncache-count", "ncache-bytes"))
    assert weighed.peak_mean < count.peak_mean
    assert count.floor == weighed.floor and weighed.peak_mean >= weighed.floor
    # the rendezvous map moves nothing parasitic and exactly the leaver's bytes on a leave
    rendezvous = evaluate_trial(config, "rendezvous", 4, 0)
    assert rendezvous.join.parasitic == rendezvous.leave.parasitic == 0
    assert rendezvous.leave.ratio == pytest.approx(1.0)


def test_auto_balancing_never_raises_the_peak() -> None:
    config = LabConfig(keys=20_000, zipf=0.9, node_counts=(16,), trials=1, seed=2)
    weights = bucket_weights(config, 16, 0)
    plain, auto = (
        ncache_maps("ncache-bytes", weights, 16, 0)[0],
        ncache_maps("ncache-auto", weights, 16, 0)[0],
    )
    assert max(member_weights(auto, weights, 16)) <= max(member_weights(plain, weights, 16))


def test_config_is_checked() -> None:
    with pytest.raises(ValidationError, match="unknown placement"):
        LabConfig(placements=("fancy",))
    with pytest.raises(ValidationError, match="distinct"):
        LabConfig(node_counts=(4, 4))


@pytest.fixture(scope="module")
def report(spark: Any) -> LabReport:
    return run_lab(spark, SMALL)


@pytest.mark.spark
def test_spark_sweep(report: LabReport) -> None:
    assert len(report.trials) == len(PLACEMENTS) * 2 * 2 and len(report.summary) == len(PLACEMENTS) * 2
    # Spark ran the same pure function this process runs
    for trial in report.trials[::7]:
        assert trial == evaluate_trial(SMALL, trial.placement, trial.nodes, trial.trial)
    for t in report.trials:
        assert t.peak_mean >= t.floor >= 1 and 0 < t.leave.bytes <= 1 and t.leave.ratio >= 1 - 1e-9


@pytest.mark.spark
def test_artifacts(report: LabReport, tmp_path: Path) -> None:
    written = write_lab_artifacts(report, tmp_path)
    names = ["bytes_moved.png", "bytes_peak_mean.png", "index.html", "report.json", "table.html", "table.md"]
    assert sorted(p.name for p in written) == names
    assert (tmp_path / "bytes_moved.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert LabReport.model_validate(json.loads((tmp_path / "report.json").read_text())) == report
    assert markdown_table(report, 4).count("\n") == 2 + len(PLACEMENTS)
    assert '<table class="ncache-lab">' in (tmp_path / "index.html").read_text()


@pytest.mark.spark
def test_command_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "ncache-lab",
        "--keys",
        "500",
        "--nodes",
        "4",
        "--trials",
        "1",
        "--placements",
        "jump",
        "ncache-bytes",
    ]
    code = main([*argv, "--master", "local[2]", "--out", str(tmp_path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert_output_schema("ncache-lab", data)
    assert [row["algorithm"] for row in data["summary"]] == ["jump", "ncache-bytes"]


def test_command_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ncache-lab", "--zipf", "9", "--out", str(tmp_path)]) == 2
    assert "out of range" in capsys.readouterr().err
    assert main(["ncache-lab", "--placements", "fancy", "--out", str(tmp_path)]) == 2
