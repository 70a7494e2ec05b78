"""conformance/expectations.py: documented-violation models, read and judged (no TLC: results built here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.expectations import Expectation, documented_models, expectation, verdict
from tidemark.conformance.tlc.output import Outcome, TlcResult, Violation

EXPECTED = Expectation(config="m.cfg", violated="AckedWritesSurvive")


def result(outcome: Outcome, invariant: str | None = None) -> TlcResult:
    violation = Violation(kind=outcome, invariant=invariant) if invariant else None
    return TlcResult(outcome=outcome, tlc_exit_code=0, seconds=1.0, violation=violation)


def test_the_directive_names_the_property(tmp_path: Path) -> None:
    config = tmp_path / "X-loss.cfg"
    config.write_text("\\* why\n\\* tidemark: expect AckedWritesSurvive violated\nCONSTANTS\n")
    assert expectation(config) == Expectation(config=str(config), violated="AckedWritesSurvive")
    (tmp_path / "X-sim.cfg").write_text("CONSTANTS\n")
    (tmp_path / "X.cfg").write_text("\\* tidemark: expect Other violated\n")
    assert documented_models(tmp_path / "X.tla") == [config]


def test_a_garbled_directive_is_bad_input_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "X-loss.cfg"
    config.write_text("\\* tidemark: expect AckedWritesSurvive holds\n")
    with pytest.raises(TidemarkError, match="unreadable expectation") as raised:
        expectation(config)
    assert raised.value.source == str(config)


def test_verdicts() -> None:
    assert verdict(EXPECTED, result(Outcome.INVARIANT_VIOLATED, "AckedWritesSurvive")) == (
        True,
        "AckedWritesSurvive violated, as documented",
    )
    assert verdict(EXPECTED, result(Outcome.OK)) == (False, "AckedWritesSurvive unexpectedly holds")
    ok, words = verdict(EXPECTED, result(Outcome.INVARIANT_VIOLATED, "OneOwner"))
    assert not ok and "got OneOwner" in words
    ok, words = verdict(EXPECTED, result(Outcome.DEADLOCK))
    assert not ok and words.endswith(Outcome.DEADLOCK.value)
