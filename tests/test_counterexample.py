"""Readable counterexamples: `check` and `conform` print each step's action, parameters and changes,
write ITF traces that itf-py reads back, and `explain` replays them on the implementation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import itf_py
import pytest

from tidemark.conformance.cli.main import main
from tidemark.conformance.counterexample import definition, read_itf
from tidemark.conformance.errors import TidemarkError

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "tlc"
SMALL = ROOT / "tests" / "models" / "UpdateCounter-small.cfg"
SPEC = ROOT / "spec" / "UpdateCounter.tla"
MUTANT = "no-out-of-order-tracking"


def test_definition_is_the_spec_text_with_its_comment() -> None:
    text = definition(SPEC, "NoGapsAfterExchange")
    assert text is not None
    assert any(line.startswith("NoGapsAfterExchange ==") for line in text.splitlines())
    assert "items = <<>>" in text
    assert definition(SPEC, "NoSuchInvariant") is None


@pytest.mark.tlc
def test_check_prints_steps_changes_and_the_invariant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "violation.itf.json"
    code = main(["check", str(FIXTURES / "InvariantViolation.tla"), "--heap", "256m", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    assert "LogShort == ~(Len(log) = 2 /\\ n = 3)" in printed
    assert "4. Tick" in printed  # TLC's step name: this spec has no `action` variable
    assert "* n = 3 (was 2)" in printed
    assert "unchanged: log" in printed
    trace = itf_py.trace_from_json(json.loads(out.read_text()))
    assert [s.values["n"] for s in trace.states] == [0, 1, 2, 3]
    assert [s.meta["action"] for s in trace.states] == ["Init", "Write", "Write", "Tick"]
    assert trace.meta["description"] == "invariant violated: LogShort"


@pytest.fixture(scope="module")
def mismatch_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """`conform --mutant` on the small counter model, its first mismatch written as ITF."""
    tmp = tmp_path_factory.mktemp("mismatch")
    trace = tmp / "mismatch.itf.json"
    args = ["conform", str(SPEC), "--config", str(SMALL), "--local", "--mutant", MUTANT]
    args += ["--run-dir", str(tmp / "run"), "--out", str(trace), "--heap", "256m"]
    with pytest.MonkeyPatch.context() as patch:
        printed: list[str] = []
        patch.setattr(
            "tidemark.conformance.cli.main.out.print", lambda *a, **_: printed.append(" ".join(map(str, a)))
        )
        code = main(args)
    return code, "\n".join(printed), trace


@pytest.mark.tlc
def test_conform_mismatch_is_a_path_from_an_initial_state(mismatch_trace: tuple[int, str, Path]) -> None:
    code, printed, trace = mismatch_trace
    assert code == 1
    path = read_itf(trace)
    actions = [state["action"]["name"] for state in path.states]
    assert actions[0] == "Init"
    assert "1. Init" in printed and f"{len(actions)}. {actions[-1]}(" in printed
    assert path.meta["mutant"] == MUTANT and path.meta["mismatch"]
    assert any(line in printed for line in path.meta["mismatch"])


@pytest.mark.tlc
def test_explain_replays_the_mismatch(
    mismatch_trace: tuple[int, str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, trace = mismatch_trace
    steps = len(read_itf(trace).states)
    assert main(["explain", str(trace), "--json"]) == 1
    on_mutant: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert on_mutant["mutant"] == MUTANT
    assert [s["agrees"] for s in on_mutant["steps"]] == [True] * (steps - 1) + [False]
    assert on_mutant["steps"][-1]["diff"]
    assert main(["explain", str(trace), "--correct", "--json"]) == 0
    on_impl = json.loads(capsys.readouterr().out)
    assert len(on_impl["steps"]) == steps and all(s["agrees"] for s in on_impl["steps"])


@pytest.mark.tlc
def test_explain_reads_a_trace_of_another_tool(
    mismatch_trace: tuple[int, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without tidemark's metadata (as Apalache or Quint write it), and with every integer as #bigint."""
    _, _, trace = mismatch_trace
    raw = json.loads(trace.read_text())

    def bigints(value: Any) -> Any:
        if isinstance(value, bool | str):
            return value
        if isinstance(value, int):
            return {"#bigint": str(value)}
        if isinstance(value, list):
            return [bigints(v) for v in value]
        return {k: v if k == "#meta" else bigints(v) for k, v in value.items()}

    foreign = tmp_path / "foreign.itf.json"
    foreign.write_text(json.dumps({"vars": raw["vars"], "states": bigints(raw["states"])}))
    assert main(["explain", str(foreign), "--json"]) == 2  # which spec? it must be told
    assert "--spec" in capsys.readouterr().err
    code = main(["explain", str(foreign), "--spec", str(SPEC), "--config", str(SMALL), "--mutant", MUTANT])
    assert code == 1
    assert main(["explain", str(foreign), "--spec", str(SPEC), "--config", str(SMALL)]) == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "not JSON"),
        ('{"states": []}', "not an ITF trace"),
        ('{"vars": [], "states": []}', "no states"),
        ('{"vars": ["x"], "states": [{"x": {"#set": 3}}]}', "not an ITF trace"),
    ],
)
def test_bad_traces_name_the_file(tmp_path: Path, text: str, expected: str) -> None:
    bad = tmp_path / "bad.itf.json"
    bad.write_text(text)
    with pytest.raises(TidemarkError) as error:
        read_itf(bad)
    assert str(bad) in str(error.value) and expected in str(error.value)


@pytest.mark.parametrize("name", ["trace.json", "missing-dir/trace.itf.json"])
def test_out_must_be_an_itf_file_in_a_directory(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", str(FIXTURES / "InvariantViolation.tla"), "--out", str(tmp_path / name)])
    assert code == 2
    assert name.split("/")[0] in capsys.readouterr().err
