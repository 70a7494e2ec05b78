"""Every size a user can type has a range checked before work starts; outputs are checked before work
starts; a corrupt cache in a run directory is discarded with a notice and rebuilt; a failing write
leaves nothing half-written. The README's table of limits is the one the parser enforces."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.cli.limits import LIMITS, limits_table
from tidemark.conformance.cli.main import main
from tidemark.conformance.cli.options import build_parser
from tidemark.conformance.errors import TidemarkError

SPEC = "spec/UpdateCounter.tla"
SMALL = "tests/models/UpdateCounter-small.cfg"
README = Path(__file__).parent.parent / "README.md"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


# --- sizes and counts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "option", "message"),
    [
        (["distribution", "--nodes", "4", "1000000"], "--nodes", "1000000 is out of range: 2 to 1,000"),
        (["distribution", "--partitions", "65001"], "--partitions", "65001 is out of range: 1 to 65,000"),
        (["distribution", "--trials", "1001"], "--trials", "1001 is out of range: 1 to 1,000"),
        (["affinity", "k", "--backups", "-1"], "--backups", "-1 is out of range: 0 to 2,147,483,647"),
        (["simulate", SPEC, "--traces", "0"], "--traces", "0 is out of range: 1 to 100,000"),
        (["simulate", SPEC, "--depth", "0"], "--depth", "0 is out of range: 1 to 100,000"),
        (["simulate", SPEC, "--seed", str(2**63)], "--seed", f"{2**63} is out of range"),
        (["check", SPEC, "--timeout", "nan"], "--timeout", "nan is out of range"),
        (["check", SPEC, "--timeout", "inf"], "--timeout", "inf is out of range"),
        (["check", SPEC, "--heap", "32m"], "--heap", "32m is out of range: 64m to this machine's"),
        (["check", SPEC, "--heap", "99999999g"], "--heap", "99999999g is out of range"),
        (["check", SPEC, "--workers", "100000"], "--workers", "100000 is out of range: 1 to"),
        (["prove", "--k", "33"], "--k", "33 is out of range: 1 to 32"),
        (["verify", "--traces", "0"], "--traces", "0 is out of range: 1 to 100,000"),
        (["conform", SPEC, "--master", "local[x]"], "--master", "'local[x]' is not a Spark master URL"),
    ],
)
def test_a_size_out_of_range_is_refused_at_once(
    argv: list[str], option: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):  # refused by the parser, before any command code runs
        build_parser().parse_args(argv)
    capsys.readouterr()
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert f"error: argument {option}: {message}" in err


def test_keys_keep_their_java_range(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["affinity", "99999999999", "--type", "int"], capsys)
    assert code == 2 and "'99999999999' is not a Java int: outside the Java int range" in err
    code, _, err = _run(["affinity", str(2**63), "--type", "long"], capsys)
    assert code == 2 and "is not a Java long" in err
    code, out, _ = _run(["affinity", str(2**31 - 1), str(-(2**31)), "--type", "int", "--json"], capsys)
    assert code == 0 and len(json.loads(out)["keys"]) == 2  # the extremes are keys like any other


def test_duplicate_node_ids_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["affinity", "k", "--nodes", "a", "b", "a"], capsys)
    assert code == 2 and out == "" and "error: --nodes: node ids repeated: ['a']" in err


def test_the_readme_documents_the_limits_the_parser_enforces() -> None:
    text = README.read_text(encoding="utf-8")
    assert limits_table() in text
    for name in LIMITS:  # each documented option is one the parser knows
        assert re.search(rf"`{re.escape(name)}`", text)


# --- outputs are checked before any work -----------------------------------------------------------------


def test_verify_out_naming_a_file_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.html"
    target.write_text("mine", encoding="utf-8")
    argv = ["verify", "--local", "--out", str(target)]
    with pytest.raises(SystemExit):  # refused by the parser: no model is checked first
        build_parser().parse_args(argv)
    capsys.readouterr()
    code, _, err = _run(argv, capsys)
    assert code == 2 and f"error: argument --out: {target} is a file, not a directory" in err
    assert target.read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["distribution", "--out", "/proc/tidemark/out"], "/proc/tidemark/out: cannot write in /proc"),
        (["verify", "--out", "README.md/reports"], "README.md/reports: README.md is a file, not a directory"),
        (["conform", SPEC, "--run-dir", "spec"], "spec holds other files, not a run's"),
        (["zoo", "--run-dir", "docs"], "docs holds other files, not a run's"),
    ],
)
def test_an_unwritable_or_clashing_output_is_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(argv, capsys)
    assert code == 2 and message in err


# --- a corrupt cache is rebuilt, a failing write leaves nothing ------------------------------------------


@pytest.mark.tlc
def test_a_corrupt_graph_in_the_run_directory_is_discarded_and_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["conform", SPEC, "--config", SMALL, "--local", "--run-dir", str(tmp_path), "--heap", "256m"]
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0 and err == "" and not json.loads(out)["graph_reused"]
    states = pq.read_metadata(tmp_path / "states.parquet").num_rows

    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0 and json.loads(out)["graph_reused"] and json.loads(out)["tlc_seconds"] == 0
    code, out, _ = _run(argv, capsys)  # the rerun says TLC did not run, with no TLC time
    assert code == 0 and "TLC not run (graph reused from the run directory" in out and "TLC 0" not in out

    (tmp_path / "inputs.json").write_text('{"fingerprint": ', encoding="utf-8")
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0 and not json.loads(out)["graph_reused"]
    assert f"notice: {tmp_path}: inputs.json is not a graph record" in err
    assert "rebuilding the state graph" in err

    table = tmp_path / "states.parquet"
    table.write_bytes(table.read_bytes()[:200])
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0 and not json.loads(out)["graph_reused"]
    assert f"notice: {tmp_path}: states.parquet is not a Parquet table" in err
    assert pq.read_metadata(table).num_rows == states  # rebuilt whole
    assert not list(tmp_path.glob("*.partial"))


def test_a_failing_distribution_write_leaves_the_directory_as_it_was(tmp_path: Path) -> None:
    from tidemark.conformance.lab.distribution import (
        DistributionConfig,
        DistributionReport,
        evaluate_trial,
        summarize,
        write_distribution_artifacts,
    )

    config = DistributionConfig(partitions=64, node_counts=(4,), trials=1)
    trials = tuple(evaluate_trial(config, algorithm, 4, 0) for algorithm in config.algorithms)
    report = DistributionReport(config=config, trials=trials, summary=summarize(trials))
    (tmp_path / "index.html").mkdir()  # the page cannot be renamed over a directory
    with pytest.raises(TidemarkError, match=r"index\.html there is a directory"):
        write_distribution_artifacts(report, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]  # no .partial, no half a report
    (tmp_path / "index.html").rmdir()
    files = write_distribution_artifacts(report, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in files)


def test_a_failing_report_write_leaves_no_partial_file(tmp_path: Path) -> None:
    from tidemark.conformance.report import write_report
    from tidemark.conformance.verify import VerifyReport

    (tmp_path / "index.html").mkdir()
    with pytest.raises(OSError):
        write_report(VerifyReport(specs=[], traces=1, steps=1, seed=0), tmp_path)
    assert not list(tmp_path.glob(".*.partial"))
