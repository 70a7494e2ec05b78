"""The exit-code contract (README, "Exit codes"), command by command: a usage error and bad input exit 2,
a missing Java or jar exits 3, an unexpected exception exits 3 with one line and no traceback, and an
interrupt exits 130. Verdicts (0 and 1) are tested with each command's own tests.

Usage errors, bad input and a missing Java are real. An internal error and an interrupt cannot be caused
from outside, so those two inject the exception at the first step of each command's work (named
`FIRST_STEP`): what is tested is only the mapping from the exception to the exit code and message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tidemark.conformance.cli import main as cli
from tidemark.conformance.cli.options import build_parser
from tidemark.conformance.errors import BAD_INPUT, ENVIRONMENT, INTERRUPTED, exit_code

SMALL = "tests/models/UpdateCounter-small.cfg"
VARIABLES = ["action", "committed", "counter", "done", "pending", "primary", "rejoined", "rolledBack"]


def _trace_file(directory: Path) -> Path:
    """A trace of UpdateCounter's variables: enough to reach TLC (the values do not matter there)."""
    state = {name: 0 for name in VARIABLES}
    trace = {"#meta": {"id": "t", "spec": "UpdateCounter"}, "vars": VARIABLES, "states": [state]}
    path = directory / "traces.jsonl"
    path.write_text(json.dumps(trace) + "\n", encoding="utf-8")
    return path


def _commands(tmp: Path) -> dict[str, list[str]]:
    """A valid invocation of every command (its work starts after these arguments are accepted)."""
    return {
        "check": ["check", "spec/UpdateCounter.tla", "--config", SMALL],
        "conform": [
            "conform",
            "spec/UpdateCounter.tla",
            "--config",
            SMALL,
            "--local",
            "--run-dir",
            str(tmp / "r"),
        ],
        "simulate": ["simulate", "spec/UpdateCounter.tla", "--local", "--traces", "2", "--depth", "3"],
        "zoo": ["zoo", "--only", "commit-without-wal", "--run-dir", str(tmp / "zoo")],
        "prove": ["prove", "--k", "1"],
        "affinity": ["affinity", "42", "--type", "int"],
        "distribution": ["distribution", "--nodes", "4", "--trials", "1", "--out", str(tmp / "dist")],
        "validate": ["validate", str(_trace_file(tmp)), "--config", SMALL],
        "scenario": ["scenario", "scenarios/figure1-backup-reordering.json", "--out", str(tmp / "s.mmd")],
        "verify": ["verify", "--local", "--skip-zoo", "--out", str(tmp / "reports")],
        "hazelcast-lab": [
            "hazelcast-lab",
            *("--partitions", "2", "--members", "3", "--drops", "0.5", "--parallel", "1", "--seeds", "1"),
            *("--out", str(tmp / "lab")),
        ],
        "ncache-lab": [
            "ncache-lab",
            "--keys",
            "50",
            "--nodes",
            "4",
            "--trials",
            "1",
            "--out",
            str(tmp / "nc"),
        ],
        "audit": ["audit", "--generate", str(tmp / "gen"), "--partitions", "4", "--entries", "100"],
        "doctor": ["doctor"],
        "campaign": ["campaign", "--local", "--walks", "2", "--steps", "3", "--out", str(tmp / "camp")],
    }


# One out-of-range or malformed value per command: argparse refuses it (exit 2) before any work.
USAGE = {
    "check": ["--workers", "0"],
    "conform": ["--timeout", "0"],
    "simulate": ["--traces", "0"],
    "zoo": ["--heap", "abc"],
    "prove": ["--k", "0"],
    "affinity": ["--partitions", "70000"],
    "distribution": ["--trials", "0"],
    "validate": ["--timeout", "-1"],
    "scenario": ["--out"],
    "verify": ["--steps", "0"],
    "hazelcast-lab": ["--seeds", "0"],
    "ncache-lab": ["--zipf", "5"],
    "audit": ["--copies", "0"],
    "doctor": ["--ignite-version"],
    "campaign": ["--walks", "0"],
}


def _bad_input(command: str, tmp: Path, argv: list[str]) -> list[str]:
    """The same command with an input that is wrong (a file that is not there or not valid)."""
    broken = tmp / "broken.json"
    broken.write_text("{", encoding="utf-8")
    replaced = {
        "check": ["check", str(tmp / "Nope.tla")],
        "conform": ["conform", "spec/UpdateCounter.tla", "--config", str(tmp / "nope.cfg"), "--local"],
        "simulate": ["simulate", "spec/UpdateCounter.tla", "--config", str(broken), "--local"],
        "zoo": ["zoo", "--only", "no-such-bug", "--run-dir", str(tmp / "zoo")],
        "prove": ["prove", "--k", "x"],  # prove reads no file: its only input is --k
        "affinity": ["affinity", "99999999999", "--type", "int"],
        "distribution": [*argv, "--algorithms", "fancy"],
        "validate": ["validate", str(broken)],
        "scenario": ["scenario", str(broken)],
        "verify": argv,  # its inputs are the standard models: one of them missing
        "hazelcast-lab": [*argv, "--members", "3", "3"],  # a member count twice
        "ncache-lab": [*argv, "--placements", "fancy"],
        "audit": ["audit", str(tmp / "nope.parquet"), "--local"],
        "campaign": [*argv, "--mutant", "no-such-mutant"],
    }
    return replaced[command]


# Where each command's work starts: an injected exception there stands for any failure inside it.
FIRST_STEP = {
    "check": "tidemark.conformance.tlc.runner.run_tlc",
    "conform": "tidemark.conformance.conform.run_tlc",
    "simulate": "tidemark.conformance.simulate.run_tlc",
    "zoo": "tidemark.conformance.zoo.entries.dump_graph",
    "prove": "tidemark.conformance.prove.counter.prove_counter",
    "affinity": "tidemark.impl.affinity.assign_partition",
    "distribution": "tidemark.conformance.lab.distribution.DistributionConfig",
    "validate": "tidemark.conformance.validate.run_tlc",
    "scenario": "tidemark.conformance.scenarios.run_scenario",
    "verify": "tidemark.conformance.verify.verify",
    "hazelcast-lab": "tidemark.conformance.lab.hazelcast.LabConfig",
    "ncache-lab": "tidemark.conformance.lab.ncache.LabConfig",
    "audit": "tidemark.conformance.audit.command._generate",
    "doctor": "tidemark.conformance.cli.doctor.findings",
    "campaign": "tidemark.conformance.campaign.run_campaign",
}
# The commands that need Java (TLC, or Spark's JVM).
JAVA = {
    "check",
    "conform",
    "simulate",
    "zoo",
    "distribution",
    "validate",
    "verify",
    "hazelcast-lab",
    "ncache-lab",
}
# The commands that read input beyond their options (doctor only looks at the machine).
READ_INPUT = sorted(set(FIRST_STEP) - {"doctor"})


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


@pytest.mark.parametrize("command", sorted(FIRST_STEP))
def test_a_usage_error_exits_2_before_any_work(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*_commands(tmp_path)[command], *USAGE[command]]
    with pytest.raises(SystemExit):  # refused by the parser, before any command code runs
        build_parser().parse_args(argv)
    capsys.readouterr()
    code, out, err = _run(argv, capsys)
    assert code == BAD_INPUT, err
    assert out == "" and f"tidemark {command}: error: argument {USAGE[command][0]}" in err
    assert not any(
        p.name in ("r", "zoo", "dist", "reports", "lab", "gen", "camp") for p in tmp_path.iterdir()
    )


@pytest.mark.parametrize("command", READ_INPUT)
def test_bad_input_exits_2_naming_it(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = _commands(tmp_path)[command]
    monkeypatch.setattr(cli, "STANDARD_SPECS", [tmp_path / "Nope.tla"])
    code, out, err = _run(_bad_input(command, tmp_path, argv), capsys)
    assert code == BAD_INPUT, err
    assert out == "" and "error:" in err and "Traceback" not in err


def test_verify_only_an_unknown_model_exits_2_naming_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(["verify", "--only", "UpdateCounter", "Nope", "--out", str(tmp_path / "r")], capsys)
    assert code == BAD_INPUT, err
    assert out == "" and "--only: unknown standard model 'Nope'" in err and "'PME'" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", sorted(JAVA))
def test_no_java_exits_3(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = _commands(tmp_path)[command]
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    code, out, err = _run(argv, capsys)
    assert code == ENVIRONMENT, err
    assert out == "" and "error: java: `java` was not found on PATH" in err
    # conform's and the zoo's run directories are not created without Java
    assert not (tmp_path / "r").exists() and not (tmp_path / "zoo").exists()


def test_a_missing_jar_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TLA2TOOLS_JAR", str(tmp_path / "nope.jar"))
    code, _, err = _run(_commands(tmp_path)["conform"], capsys)
    assert code == ENVIRONMENT and f"TLA2TOOLS_JAR={tmp_path / 'nope.jar'}: no such file" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", sorted(FIRST_STEP))
@pytest.mark.parametrize(
    ("injected", "expected", "shown"),
    [
        (RuntimeError("boom"), ENVIRONMENT, "internal error: RuntimeError: boom at test_exit_codes.py:"),
        (KeyboardInterrupt(), INTERRUPTED, "interrupted"),
    ],
    ids=["internal", "interrupted"],
)
def test_an_internal_error_or_interrupt_in_the_work(
    command: str,
    injected: BaseException,
    expected: int,
    shown: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(*_: object, **__: object) -> None:
        raise injected

    monkeypatch.setattr(FIRST_STEP[command], fail)
    code, out, err = _run(_commands(tmp_path)[command], capsys)
    assert code == expected, err
    assert out == "" and shown in err and "Traceback" not in err


def test_the_mapping() -> None:
    from tidemark.conformance.errors import TidemarkError, ToolError

    assert [
        exit_code(e) for e in (TidemarkError("x"), ToolError("x"), ValueError(), KeyboardInterrupt())
    ] == [
        2,
        3,
        3,
        130,
    ]
    assert exit_code(SystemExit(2)) == 2 and exit_code(SystemExit(0)) == 0
