"""Every command's JSON says whether its check holds and which exit code it returns, and both agree with
the code the command really returns (a failing conform once printed "outcome": "ok")."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import assert_output_schema

from tidemark.conformance.cli.main import main
from tidemark.conformance.cli.outputs import OUTPUTS, write_schemas

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "UpdateCounter.tla"
SMALL = ROOT / "tests" / "models" / "UpdateCounter-small.cfg"
FIXTURES = ROOT / "tests" / "fixtures" / "tlc"
SCENARIO = ROOT / "scenarios" / "figure2-outdated-node-rejoins.json"


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, object]]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


CASES = {
    "check holds": ["check", str(FIXTURES / "Ok.tla"), "--heap", "256m"],
    "check violated": ["check", str(FIXTURES / "InvariantViolation.tla"), "--heap", "256m"],
    "conform mutant": [
        *["conform", str(SPEC), "--config", str(SMALL), "--local", "--heap", "256m"],
        *["--mutant", "no-out-of-order-tracking"],
    ],
    "scenario": ["scenario", str(SCENARIO)],
    "affinity": ["affinity", "0", "1", "--type", "int"],
    "prove": ["prove", "--k", "2"],  # k = 1 cannot merge a range on both sides: not all cases occur
}


@pytest.mark.tlc
@pytest.mark.parametrize("name", list(CASES))
def test_holds_and_exit_code_agree_with_the_exit_code(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = CASES[name]
    if argv[0] == "conform":
        argv = [*argv, "--run-dir", str(tmp_path / "run")]
    if argv[0] == "scenario":
        argv = [*argv, "--out", str(tmp_path / "s.mmd")]
    code, data = run_json(capsys, argv)
    assert data["exit_code"] == code and data["holds"] is (code == 0)
    assert code == (1 if name in ("check violated", "conform mutant") else 0)
    assert_output_schema(argv[0], data)
    _assert_run(argv, data)
    if argv[0] == "conform":  # its mismatch, replayed by explain
        trace = tmp_path / "mismatch.itf.json"
        assert main([*argv, "--out", str(trace)]) == 1
        capsys.readouterr()
        code, data = run_json(capsys, ["explain", str(trace)])
        assert code == 1
        assert_output_schema("explain", data)


def _assert_run(argv: list[str], data: dict[str, object]) -> None:
    """The command's inputs and timings: every file it was given with its digest, its model's constants,
    its phases and its whole time."""
    run = data["run"]
    assert (
        isinstance(run, dict) and run["command"].split()[0] == argv[0] and run["python"] and run["tidemark"]
    )
    files = [Path(a) for a in argv[1:] if Path(a).is_file()]
    assert all(run["inputs"][str(f)] == hashlib.sha256(f.read_bytes()).hexdigest() for f in files)
    timings = run["timings"]
    assert timings["total"] > 0 and all(seconds <= timings["total"] for seconds in timings.values())
    if argv[0] in ("check", "conform"):
        assert run["arguments"]["spec"] == argv[1] and run["java"] and run["tlc"]
        assert ("tlc" if argv[0] == "conform" else "check") in timings
    if argv[0] == "conform":
        assert set(timings) == {"tlc", "load", "replay", "total"}
        assert run["constants"]["Primary"] == "p"  # tests/models/UpdateCounter-small.cfg's
        assert run["arguments"]["mutant"] == "no-out-of-order-tracking"


def test_audit_generate_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", "--generate", str(tmp_path / "g"), "--partitions", "16", "--entries", "200"]
    code, data = run_json(capsys, argv)
    assert code == 0
    assert_output_schema("audit-generate", data)
    _assert_run(argv, data)
    assert data["run"]["arguments"]["partitions"] == 16 and data["run"]["arguments"]["seed"] == 0


def test_published_schemas_are_the_generated_ones(tmp_path: Path) -> None:
    """`python -m tidemark.conformance.cli.outputs` was run after the last change to a command's output."""
    written = write_schemas(tmp_path)
    assert len(written) == len(OUTPUTS)
    for path in written:
        published = ROOT / "conformance" / "schemas" / "output" / path.name
        assert published.read_text() == path.read_text(), (
            f"{published}: run python -m tidemark.conformance.cli.outputs"
        )
