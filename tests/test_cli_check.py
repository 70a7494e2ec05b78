"""End-to-end tests of `tidemark check` (tidemark.conformance.cli.main.main) with real TLC runs."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.tlc.output import shown_path

pytestmark = pytest.mark.tlc

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "tlc"


def check_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["check", *args, "--json", "--heap", "256m", "--timeout", "120"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.fixture(scope="module")
def standard_model() -> tuple[int, str, str]:
    """`tidemark check spec/UpdateCounter.tla --json`, run once (~15 s)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", str(ROOT / "spec" / "UpdateCounter.tla"), "--json"])
    return code, out.getvalue(), err.getvalue()


def test_standard_model_holds(standard_model: tuple[int, str, str]) -> None:
    code, out, err = standard_model
    assert code == 0, out + err
    assert err == ""
    assert out.count("\n") == 1  # one JSON object on one line
    result = json.loads(out)
    assert result["outcome"] == "ok"
    assert result["exit_code"] == 0
    assert result["distinct_states"] >= 10_000
    assert result["generated_states"] >= result["distinct_states"]
    assert result["depth"] > 1
    assert result["violation"] is None
    assert result["error"] is None


def test_broken_spec_exits_1_with_the_violation(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", str(FIXTURES / "InvariantViolation.tla"), "--json", "--heap", "256m"])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    result = json.loads(captured.out)
    assert result["outcome"] == "invariant violated"
    violation = result["violation"]
    assert violation["invariant"] == "LogShort"
    assert [step["action"] for step in violation["trace"]] == ["Init", "Write", "Write", "Tick"]
    assert [step["state"]["n"] for step in violation["trace"]] == [0, 1, 2, 3]


def test_spec_broken_in_its_initial_state_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    # An invariant broken by the initial state: TLC prints no trace messages, so this runs end to end today.
    code, result, _ = check_json(capsys, str(FIXTURES / "InitViolation.tla"))
    assert code == 1
    assert result["outcome"] == "invariant violated"
    assert result["violation"]["invariant"] == "Positive"


def test_parse_error_is_bad_input_naming_its_place(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", str(FIXTURES / "UnknownOperator.tla"), "--json", "--heap", "256m"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""  # no verdict, no JSON object
    where = shown_path(FIXTURES / "UnknownOperator.tla")
    assert f"error: {where}, line 6, column 14: parse error: Unknown operator: `Bump'." in captured.err


def test_config_in_another_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "Other.cfg"
    config.write_text("INIT Init\nNEXT Next\nINVARIANT NoSuchInvariant\n", encoding="utf-8")
    code = main(["check", str(FIXTURES / "Ok.tla"), "--config", str(config), "--heap", "256m"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert f"error: {config}: config error: The invariant NoSuchInvariant specified in the" in err


def test_nonexistent_spec_exits_2_naming_the_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["check", "Nope.tla", "--json"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    # Rich may break the line at a space; the path itself has none.
    assert str(tmp_path / "Nope.tla") in "".join(captured.err.split())
    assert "no such spec" in " ".join(captured.err.split())


def test_nonexistent_spec_with_a_long_path_is_named_intact(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / ("a-directory-with-a-rather-long-name-" * 4) / ("and-another-one-" * 8) / "Nope.tla"
    code = main(["check", str(spec), "--json"])
    captured = capsys.readouterr()
    assert code == 2
    assert str(spec) in captured.err
