"""The main job's result: VerifyReports from real small runs (one holding, one failing with mismatches,
rejected walks and a TLC counterexample), the HTML report rendered in a real headless chromium
(screenshot, DOM, console), its links to the run's files, determinism, and `tidemark verify` end to end
on check-only specs."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import assert_output_schema, headless_chromium
from junitparser import JUnitXml
from PIL import Image

from tidemark.conformance.cli import main as cli
from tidemark.conformance.counterexample import read_itf
from tidemark.conformance.replay import Mismatch
from tidemark.conformance.report import (
    action_text,
    counterexample_diagram,
    html_page,
    mismatch_diagram,
    write_report,
)
from tidemark.conformance.tlc.output import Outcome
from tidemark.conformance.traces import read_traces
from tidemark.conformance.verify import SpecReport, Timings, VerifyReport, verify_spec

SPEC = Path("spec/UpdateCounter.tla")
SMALL = Path("tests/models/UpdateCounter-small.cfg")
MUTANT = "no-out-of-order-tracking"
# 20 walks of 20 steps from seed 0: the mutant's walks 12 and 18 commit a later range first (TLC rejects
# them); the model's restarts and exchanges leave few commits per walk.
TRACES, STEPS, SEED = 20, 20, 0
WIDTH, HEIGHT = 1280, 2000
HOLDS_GREEN, FAILS_RED = (0x17, 0x69, 0x2B), (0xB3, 0x12, 0x1F)  # the report's verdict colours (style.css)

pytestmark = pytest.mark.tlc

# A model whose invariant is false on purpose: an exchange after a commit is an ordinary behavior, so
# TLC prints a counterexample naming both copies. No mapping has this name: it is only model-checked.
FALSIFIED = """---- MODULE UpdateCounterFalsified ----
EXTENDS UpdateCounter
NoExchangeAfterCommit == ~(action.name = "Exchange" /\\ action.lwm >= 1)
====
"""


# --- real runs ----------------------------------------------------------------------------------------


def _report(*specs: SpecReport) -> VerifyReport:
    return VerifyReport(specs=list(specs), traces=TRACES, steps=STEPS, seed=SEED)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Shared: the mutant's run reuses the holding run's state graph (same spec, model and TLC).
    return tmp_path_factory.mktemp("run")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report directory the runs write their files to, and the pages are rendered in."""
    return tmp_path_factory.mktemp("reports")


def _holding_spec(run_dir: Path, reports: Path) -> SpecReport:
    return verify_spec(
        SPEC,
        SMALL,
        local=True,
        run_dir=run_dir,
        traces=TRACES,
        steps=STEPS,
        seed=SEED,
        report_dir=reports,
    )


@pytest.fixture(scope="module")
def falsified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("falsified")
    shutil.copy(SPEC, directory / SPEC.name)  # TLC finds EXTENDed modules beside the spec
    spec = directory / "UpdateCounterFalsified.tla"
    spec.write_text(FALSIFIED)
    model = SMALL.read_text().replace("INVARIANTS\n", "INVARIANTS\n    NoExchangeAfterCommit\n")
    spec.with_suffix(".cfg").write_text(model)
    return spec


@pytest.fixture(scope="module")
def holding(run_dir: Path, reports: Path) -> VerifyReport:
    return _report(_holding_spec(run_dir, reports))


@pytest.fixture(scope="module")
def failing(run_dir: Path, reports: Path, falsified: Path, holding: VerifyReport) -> VerifyReport:
    mutant = verify_spec(
        SPEC,
        SMALL,
        local=True,
        mutant=MUTANT,
        run_dir=run_dir,
        traces=TRACES,
        steps=STEPS,
        seed=SEED,
        report_dir=reports,
    )
    return _report(mutant, verify_spec(falsified, report_dir=reports))


def test_the_small_model_holds(holding: VerifyReport) -> None:
    [spec] = holding.specs
    assert holding.holds and spec.holds
    assert spec.tlc.outcome == Outcome.OK and spec.tlc.distinct_states
    assert spec.conformance is not None and spec.conformance.edges_replayed == spec.conformance.edges > 0
    assert spec.validation is not None and spec.validation.accepted == spec.validation.traces == TRACES
    assert set(spec.validation.coverage) <= set(spec.conformance.coverage)


def test_the_failing_run_has_mismatches_rejections_and_a_counterexample(failing: VerifyReport) -> None:
    mutant, falsified = failing.specs
    assert not failing.holds and not mutant.holds and not falsified.holds
    assert mutant.tlc.outcome == Outcome.OK  # the spec is fine: the implementation is not
    assert mutant.conformance is not None and mutant.conformance.mismatches > 0
    assert mutant.validation is not None
    assert [r.id for r in mutant.validation.rejected] == ["walk-0-12", "walk-0-18"]
    assert (
        falsified.tlc.violation is not None and falsified.tlc.violation.invariant == "NoExchangeAfterCommit"
    )
    assert falsified.conformance is None and falsified.validation is None


def _without_timings(report: VerifyReport) -> VerifyReport:
    specs = [spec.model_copy(update={"timings": Timings()}) for spec in report.specs]
    return report.model_copy(update={"specs": specs, "total_seconds": 0.0})


def test_same_inputs_and_seed_give_the_same_report_and_page(
    run_dir: Path, reports: Path, holding: VerifyReport
) -> None:
    [spec] = holding.specs
    [walks] = [reports / path for path in spec.artefacts if path.endswith("walks.itf.jsonl")]
    first = walks.read_bytes()
    again = _report(_holding_spec(run_dir, reports))
    assert _without_timings(again) == _without_timings(holding)
    assert html_page(_without_timings(again)) == html_page(_without_timings(holding))
    assert walks.read_bytes() == first  # rewritten, byte for byte


def test_states_by_depth_add_up_to_the_graph(holding: VerifyReport) -> None:
    [spec] = holding.specs
    assert spec.conformance is not None
    levels = spec.conformance.states_by_depth
    # One initial state, every state reached from it, as deep as TLC's search went.
    assert levels[0] == 1 and all(levels) and sum(levels) == spec.conformance.states
    assert len(levels) == spec.tlc.depth


# --- the page in a real browser ------------------------------------------------------------------------


class _Page(HTMLParser):
    """The text of a page, the text of each <pre class="mermaid"> block, the attributes of each
    diagram Mermaid drew in one, the labels of the SVG charts and the links' targets."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.text: list[str] = []
        self.mermaid: list[str] = []
        self.drawn: list[dict[str, str | None]] = []
        self.charts: list[str] = []
        self.links: list[str] = []
        self.console: list[str] = []  # set by _render
        self._in_mermaid = self._in_style = False
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a" and (href := dict(attrs).get("href")) is not None:
            self.links.append(href)
        if tag == "svg" and ("role", "img") in attrs:
            self.charts.append(dict(attrs).get("aria-label") or "")
        if tag == "pre" and ("class", "mermaid") in attrs:
            self._in_mermaid = True
            self.mermaid.append("")
        elif tag == "svg" and self._in_mermaid:
            self.drawn.append(dict(attrs))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_mermaid = self._in_mermaid and tag != "pre"
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            return
        self.text.append(data)
        if self._in_mermaid:
            self.mermaid[-1] += data

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())


def _chromium(page: Path, profile: Path, *arguments: str, console: list[str] | None = None) -> str:
    # The virtual time budget lets Mermaid finish drawing before the screenshot or the DOM dump.
    return headless_chromium(
        page, profile, "--virtual-time-budget=10000", *arguments, window=(WIDTH, HEIGHT), console=console
    )


def _render(report: VerifyReport, reports: Path, directory: Path) -> tuple[Image.Image, _Page]:
    """Write the report in `reports`, screenshot it and dump its DOM (and console) after scripts ran."""
    page = write_report(report, reports)
    # Nothing partial left behind; beside the page Mermaid, the JSON, the JUnit XML and the artefacts.
    assert sorted(p.name for p in page.parent.iterdir()) == [
        "artefacts",
        "index.html",
        "junit.xml",
        "mermaid.min.js",
        "report.json",
    ]
    assert not list(reports.rglob("*.partial")) and not list(reports.rglob(".*"))
    screenshot = directory / "page.png"
    _chromium(page, directory / "profile", f"--screenshot={screenshot}")
    assert screenshot.stat().st_size > 20_000, "a near-empty screenshot"
    image = Image.open(screenshot)
    image.load()
    console: list[str] = []
    parsed = _Page(_chromium(page, directory / "profile", "--dump-dom", console=console))
    parsed.console = console
    return image, parsed


def _has_colour(image: Image.Image, colour: tuple[int, int, int]) -> bool:
    colours = image.convert("RGB").getcolors(maxcolors=WIDTH * HEIGHT) or []
    return any(rgb == colour for _, rgb in colours)


def test_the_holding_report_renders(holding: VerifyReport, reports: Path, tmp_path: Path) -> None:
    image, page = _render(holding, reports, tmp_path)
    assert page.console == []  # no error, no warning, nothing logged
    assert image.format == "PNG" and image.size == (WIDTH, HEIGHT)
    assert _has_colour(image, HOLDS_GREEN) and not _has_colour(image, FAILS_RED)
    [spec] = holding.specs
    assert spec.conformance is not None and spec.validation is not None and spec.tlc.distinct_states
    text = page.all_text
    assert "tidemark verify: holds" in text and "FAILS" not in text
    assert f"UpdateCounter holds spec/UpdateCounter.tla with model {SMALL}" in text
    assert f"distinct states {spec.tlc.distinct_states:,}" in text
    assert f"edges replayed {spec.conformance.edges_replayed:,} / {spec.conformance.edges:,}" in text
    assert f"accepted by TLC {TRACES} / {TRACES}" in text
    assert "state-graph edges replayed, per action" in text  # the SVG chart's title, drawn as text
    assert all(f"{name} {count:,}" in text for name, count in spec.conformance.coverage.items())
    assert page.mermaid == []  # nothing failed: nothing to draw
    # ... so the page neither loads Mermaid nor credits it for diagrams it does not have.
    assert "Diagrams drawn by Mermaid" not in text and "mermaid.min.js" not in html_page(holding)


def test_the_failing_report_renders(failing: VerifyReport, reports: Path, tmp_path: Path) -> None:
    image, page = _render(failing, reports, tmp_path)
    assert page.console == []  # Mermaid drew every diagram without a complaint
    assert image.size == (WIDTH, HEIGHT) and _has_colour(image, FAILS_RED)
    mutant = failing.specs[0]
    assert mutant.conformance is not None and mutant.validation is not None
    text = page.all_text
    assert "tidemark verify: FAILS" in text
    assert f"mutant implementation {MUTANT}" in text
    assert "Diagrams drawn by Mermaid" in text
    first = mutant.conformance.examples[0]
    assert first.diff and all(line in text for line in first.diff)
    assert f"edge mismatch at state {first.src}, action {action_text(first.action)}" in text
    assert all(line in text for line in mutant.validation.rejected[0].diff)
    assert "Counterexample: NoExchangeAfterCommit violated" in text
    # One diagram per mismatch drawn in full (at most 5) and one for the counterexample: the page holds
    # their source, and in the browser Mermaid drew each as a sequence diagram with the same labels.
    source = _Page(html_page(failing))
    assert len(source.mermaid) == min(5, len(mutant.conformance.examples)) + 1
    assert all(block.startswith("sequenceDiagram") for block in source.mermaid)
    assert f"spec->>impl: {action_text(first.action)}" in source.mermaid[0]
    assert "violated: NoExchangeAfterCommit" in source.mermaid[-1]
    assert len(page.drawn) == len(page.mermaid) == len(source.mermaid)
    assert all(svg["aria-roledescription"] == "sequence" for svg in page.drawn)
    assert action_text(first.action) in page.mermaid[0] and "sequenceDiagram" not in page.mermaid[0]
    assert "violated: NoExchangeAfterCommit" in page.mermaid[-1]


def test_every_link_reaches_a_file_of_the_run_wherever_the_reports_go(
    holding: VerifyReport, failing: VerifyReport, reports: Path, tmp_path: Path
) -> None:
    report = _report(*holding.specs, *failing.specs)
    _, page = _render(report, reports, tmp_path)
    assert page.console == []
    # The plots: per spec with a state graph its states by depth, per spec its seconds per phase.
    assert {f"{s.spec}: distinct states by depth" for s in report.specs if s.conformance} <= set(page.charts)
    assert all(f"{s.spec}: seconds per phase" in page.charts for s in report.specs)
    # Links inside the page name an element of it; the others are relative paths to files that exist in a
    # copy of the directory made elsewhere.
    ids = set(re.findall(r'id="([^"]+)"', html_page(report, ["report.json", "junit.xml"])))
    anchors = [link for link in page.links if link.startswith("#")]
    files = [link for link in page.links if not link.startswith("#")]
    assert anchors and all(link[1:] in ids for link in anchors)
    elsewhere = tmp_path / "copied" / "reports"
    shutil.copytree(reports, elsewhere)
    assert all(":" not in link and not link.startswith("/") and ".." not in link for link in files)
    assert all((elsewhere / link).is_file() for link in files)
    assert {"report.json", "junit.xml"} <= set(files)
    assert sorted(files) == sorted({*files})  # each file linked once
    # Each spec's files are linked, and they are what the run found.
    holding_spec, mutant, falsified = report.specs
    names = {
        spec.spec + (spec.mutant or ""): {Path(p).name: elsewhere / p for p in spec.artefacts}
        for spec in report.specs
    }
    assert all(path in files for spec in report.specs for path in spec.artefacts)
    kept = names["UpdateCounter"]
    assert {"states.parquet", "edges.parquet", "summary.json", "walks.itf.jsonl"} <= set(kept)
    assert "mismatch.itf.json" not in kept and "counterexample.itf.json" not in kept
    assert holding_spec.conformance is not None
    assert pq.read_metadata(kept["states.parquet"]).num_rows == holding_spec.conformance.states
    assert pq.read_metadata(kept["edges.parquet"]).num_rows == holding_spec.conformance.edges
    assert len(read_traces(kept["walks.itf.jsonl"])) == TRACES
    wrong = names["UpdateCounter" + MUTANT]
    assert mutant.validation is not None and mutant.conformance is not None
    rejected = {t.id for t in read_traces(wrong["walks.itf.jsonl"])} & {
        r.id for r in mutant.validation.rejected
    }
    assert rejected == {"walk-0-12", "walk-0-18"}
    assert read_itf(wrong["mismatch.itf.json"]).meta["mutant"] == MUTANT
    violation = falsified.tlc.violation
    assert violation is not None
    path = read_itf(names["UpdateCounterFalsified"]["counterexample.itf.json"])
    assert len(path.states) == len(violation.trace) and "NoExchangeAfterCommit" in path.what


# --- diagrams and escaping ------------------------------------------------------------------------------


def test_a_counterexample_is_drawn_on_the_copies_it_names(failing: VerifyReport) -> None:
    violation = failing.specs[1].tlc.violation
    assert violation is not None
    diagram = counterexample_diagram(violation).splitlines()
    assert diagram[1:3] == ["    participant P0 as b", "    participant P1 as p"]
    assert "    Note over P0,P1: 1. Init" in diagram  # steps naming no copy span them all
    assert "    P1->>P1: 2. Reserve(copy=p, delta=1, start=0)" in diagram
    # The exchange names no single copy (its parameters: gaps per survivor, lwm, primary).
    notes = [line for line in diagram if line.startswith("    Note over P0,P1: ")]
    assert any(". Exchange(" in line and "lwm=" in line for line in notes)


def test_mismatch_diagrams_show_expected_against_actual() -> None:
    edge = Mismatch(
        kind="edge",
        src=7,
        dst=8,
        action={"name": "Commit", "copy": "b", "start": 1, "delta": 1},
        source_state={},
        diff=["counter.b.lwm: expected 0, got 2", "counter: not a spec variable; #1"],
    )
    assert mismatch_diagram(edge).splitlines()[4:] == [
        "    spec->>impl: Commit(copy=b, delta=1, start=1)",
        "    impl-->>spec: counter.b.lwm",
        "    Note left of spec: 0",
        "    Note right of impl: 2",
        "    Note over spec,impl: counter: not a spec variable#59; #35;1",  # Mermaid entities
    ]
    enabledness = Mismatch(kind="enabledness", src=7, source_state={}, extra=[{"name": "Exchange", "lwm": 1}])
    assert (
        mismatch_diagram(enabledness).splitlines()[-1]
        == "    impl-xspec: Exchange(lwm=1) (spec does not take it)"
    )


def test_everything_on_the_page_is_escaped(holding: VerifyReport) -> None:
    [spec] = holding.specs
    hostile = "<script>alert(1)</script>"
    tlc = spec.tlc.model_copy(update={"error": hostile})
    page = html_page(_report(spec.model_copy(update={"tlc": tlc, "config": hostile})))
    assert hostile not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f'aria-label="{spec.spec}: seconds per phase"' in page  # the phases' chart
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # no CDN, no network
    assert "https://" not in page


# --- the command ---------------------------------------------------------------------------------------

OK_SPEC = Path("tests/fixtures/tlc/Ok.tla")


def test_cli_verify_json_and_exit_codes(
    monkeypatch: pytest.MonkeyPatch, falsified: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Specs without a mapping are model-checked only: a quick main job end to end.
    monkeypatch.setattr(cli, "STANDARD_SPECS", [OK_SPEC])
    argv = ["verify", "--skip-zoo", "--heap", "256m"]
    assert cli.main([*argv, "--json", "--out", str(tmp_path / "ok")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert_output_schema("verify", data)
    assert data["holds"] is True and data["specs"][0]["holds"] is True  # computed, and in the JSON
    report = VerifyReport.model_validate(data)
    assert report.holds and [s.spec for s in report.specs] == ["Ok"] and report.traces == 100
    assert (tmp_path / "ok" / "index.html").is_file()
    # What the verdict is about: the inputs' digests and the tools' versions, on the page too.
    assert report.run is not None and report.run.tlc and report.run.java
    digest = hashlib.sha256(OK_SPEC.read_bytes()).hexdigest()
    assert report.run.inputs[str(OK_SPEC)] == digest
    assert digest in (tmp_path / "ok" / "index.html").read_text()

    monkeypatch.setattr(cli, "STANDARD_SPECS", [OK_SPEC, falsified])
    junit = tmp_path / "verify.xml"
    assert cli.main([*argv, "--out", str(tmp_path / "bad"), "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    assert "FAILS: UpdateCounterFalsified" in out and str(tmp_path / "bad" / "index.html") in out
    assert "invariant violated" in out
    # JUnit: per spec its check (failed for the falsified one), conform and validate (skipped: no mapping).
    suites = {suite.name: {case.name: case for case in suite} for suite in JUnitXml.fromfile(str(junit))}
    assert set(suites) == {"Ok", "UpdateCounterFalsified", "audit"} and suites["audit"]["audit"].is_passed
    assert suites["Ok"]["check"].is_passed and suites["Ok"]["conform"].is_skipped
    [failure] = suites["UpdateCounterFalsified"]["check"].result
    assert "invariant violated" in failure.message
