"""The deep models (conformance/deep.py) and the reachability report (conformance/coverage.py): CI runs a
bounded deep check - the fixed protocol's deep model up to 14 steps - and the standard model's
reachability; `tidemark verify --deep` runs the whole (docs/pme.md, section 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.conformance.campaign import run_campaign
from tidemark.conformance.coverage import campaign_reach, model_reach
from tidemark.conformance.deep import (
    DEEP_MODELS,
    DEEP_ZOO,
    Check,
    DeepModelReport,
    DeepReport,
    catch_in_deep_model,
    reached,
    with_constants,
)
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.report import html_page
from tidemark.conformance.tlc.output import Outcome, parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.verify import VerifyReport
from tidemark.conformance.zoo.entries import ZOO

PME_DEEP = next(m for m in DEEP_MODELS if m.name == "PME-deep")


def test_the_deep_models_and_their_zoo_entries_exist() -> None:
    for model in DEEP_MODELS:
        assert model.config.is_file() and model.faithful.is_file() and model.spec.is_file()
        assert Path(f"docs/findings/{model.finding}.md").is_file(), model.finding
        assert "CONSTRAINT RecordReach" in model.config.read_text()
        assert model.residual is None or model.residual.is_file()
    assert set(DEEP_ZOO) <= {e.name for e in ZOO}
    assert {c.model for c in DEEP_ZOO.values()} <= {m.name for m in DEEP_MODELS}


def test_a_zoo_entry_changes_only_the_named_constants_of_its_deep_model() -> None:
    text = PME_DEEP.config.read_text()
    changed = with_constants(text, (("WalRebalanceThreshold", "2"), ("MaxFailures", "1")), PME_DEEP.config)
    assert "    WalRebalanceThreshold = 2\n" in changed and "    MaxFailures = 1\n" in changed
    assert "WalRebalanceThreshold = 1" not in changed
    assert changed.replace("= 2\n", "= 1\n").replace("MaxFailures = 1", "MaxFailures = 2") == text
    with pytest.raises(TidemarkError, match="no constant Servers"):
        with_constants(text, (("Servers", "4"),), PME_DEEP.config)
    for catch in DEEP_ZOO.values():  # every changed constant is one of the model's
        model = next(m for m in DEEP_MODELS if m.name == catch.model)
        with_constants(model.config.read_text(), catch.constants, model.config)


@pytest.mark.tlc
@pytest.mark.deep
def test_the_deep_model_catches_the_inclusive_wal_threshold(tmp_path: Path) -> None:
    catch = catch_in_deep_model("wal-threshold-inclusive", tmp_path, TlcOptions(workers=2, timeout=1800))
    assert catch.caught and catch.invariant == "RebalanceModeAsIgnite"
    assert "WalRebalanceThreshold = 2" in (tmp_path / "configs" / "wal-threshold-inclusive.cfg").read_text()


def test_reached_reads_what_tlc_printed() -> None:
    output = '<<"tidemark-reached", "two failures">>\nnoise\n<<"tidemark-reached", "key 0">>\n'
    assert reached(output) == ["key 0", "two failures"]


@pytest.mark.tlc
@pytest.mark.deep
def test_a_bounded_deep_check_holds_and_records_what_it_reaches(tmp_path: Path) -> None:
    config = tmp_path / "bounded.cfg"
    config.write_text(
        PME_DEEP.config.read_text().replace("CONSTRAINT RecordReach", "CONSTRAINT RecordReach CiBound")
    )
    run = run_tlc(PME_DEEP.spec, config, TlcOptions(workers=2, timeout=1800))
    result = parse_output(run, source="bounded deep check")
    assert result.outcome == Outcome.OK and result.depth is not None and result.depth <= 16
    assert {"key 0", "two failures"} <= set(reached(run.output))


@pytest.mark.tlc
def test_the_standard_model_reaches_few_of_the_boundaries(tmp_path: Path) -> None:
    row = model_reach(Path("spec/PME.tla"), Path("spec/PME.cfg"), tmp_path, TlcOptions(workers=2))
    assert row is not None and "key 0" in row.reached
    assert "two failures" not in row.reached and "total outage" not in row.reached  # one crash only
    assert (
        model_reach(Path("spec/UpdateCounter.tla"), Path("spec/UpdateCounter.cfg"), tmp_path, TlcOptions())
        is None
    )


def _page(**parts: object) -> str:
    return html_page(VerifyReport.model_validate({"specs": [], "traces": 0, "steps": 0, "seed": 0, **parts}))


def test_the_report_sections() -> None:
    fixed = Check(
        spec="spec/PMEReach.tla",
        config="spec/PMEFixed-deep.cfg",
        outcome=Outcome.OK,
        distinct_states=12,
        seconds=3.0,
    )
    faithful = Check(
        spec="spec/PME.tla",
        config="spec/PME-deep.cfg",
        outcome=Outcome.INVARIANT_VIOLATED,
        invariant="PrimaryHwmCovers",
        trace=24,
        seconds=1.0,
    )
    model = DeepModelReport(
        name="PME-deep", fixed=fixed, reached=["key 0"], faithful=faithful, finding="merged-left-keeps-gaps"
    )
    deep = DeepReport(models=[model], zoo=[])
    assert deep.holds and model.holds
    page = _page(deep=deep)
    assert "PrimaryHwmCovers" in page and "merged-left-keeps-gaps" in page and "12 states" in page
    broken = model.model_copy(
        update={"faithful": fixed}
    )  # Ignite's protocol no longer losing data: a failure
    assert not broken.holds
    # Where the fixes leave a loss on the model itself, TLC must find it there.
    assert model.model_copy(update={"fixes_hold": False, "fixed": faithful}).holds
    assert not model.model_copy(update={"fixes_hold": False}).holds
    # Where the fixes leave a loss, TLC must still find it on the residual model.
    assert model.model_copy(update={"residual": faithful}).holds
    assert not model.model_copy(update={"residual": fixed}).holds
    assert "left by the fixes: PrimaryHwmCovers" in _page(
        deep=deep.model_copy(update={"models": [model.model_copy(update={"residual": faithful})]})
    )
    campaign = run_campaign(walks=5, steps=20, seed=2, corpus=())
    row = campaign_reach(campaign)
    page = _page(reachability=[row], campaign=campaign)
    assert '<section id="reach">' in page and "<code>campaign (5 walks, seed 2)</code>" in page
    assert "5 walks" in page and "walks/s" in page and "<script" not in page
