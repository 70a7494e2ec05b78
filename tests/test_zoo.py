"""The bug zoo: every entry is wired on both sides, a quick run catches its bugs, a harmless model misses
them, and the report shows the result."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import assert_output_schema
from junitparser import JUnitXml

from tidemark.conformance.cli import main as cli
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.report import html_page
from tidemark.conformance.verify import VerifyReport
from tidemark.conformance.zoo.entries import MUTANTS, SMALL, ZOO, ZooEntry, ZooReport, entries_named, run_zoo
from tidemark.conformance.zoo.hazelcast_mutants import HAZELCAST_MUTANTS
from tidemark.conformance.zoo.mutants import PME_MUTANTS
from tidemark.conformance.zoo.ncache_mutants import NCACHE_MUTANTS

QUICK = ["non-atomic-primary-switch", "commit-without-wal"]


def test_every_entry_has_a_mutant_a_replacement_operator_and_a_model() -> None:
    assert len(ZOO) >= 10
    assert [e.name for e in ZOO if e.protocol == "PME"] == list(PME_MUTANTS)
    assert [e.name for e in ZOO if e.protocol == "HazelcastAntiEntropy"] == list(HAZELCAST_MUTANTS)
    assert [e.name for e in ZOO if e.protocol == "NCachePartitionReplica"] == list(NCACHE_MUTANTS)
    assert set(MUTANTS) == {e.protocol for e in ZOO}
    for entry in ZOO:
        replaced, replacement = re.fullmatch(r"(\w+) <-(?:\[\w+\])? (\w+)", entry.override).groups()  # type: ignore[union-attr]
        assert re.search(rf"^{replacement}(\(.*\))? ==", entry.zoo.read_text(), re.M), entry.override
        # PME's zoo extends the spec through spec/PMEFixed.tla, so that a bug can go into a fixed model too.
        assert re.search(rf"^EXTENDS {entry.protocol}(Fixed)?$", entry.zoo.read_text(), re.M), entry.zoo
        assert replaced != replacement and entry.model.is_file() and entry.spec.is_file()


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> ZooReport:
    return run_zoo(tmp_path_factory.mktemp("zoo"), QUICK)


@pytest.mark.tlc
def test_the_quick_entries_are_caught_on_both_sides(quick: ZooReport) -> None:
    assert quick.all_caught and [e.name for e in quick.entries] == QUICK
    switch, wal = quick.entries
    # Two primaries reserve counters from their own HWM: TLC finds a primary below a copy's counter.
    assert switch.spec.invariant == "PrimaryHwmCovers" and switch.spec.trace[0] == "Init"
    assert "TxStart" in switch.spec.trace and switch.spec.seconds > 0
    assert switch.impl.mismatch is not None and switch.impl.mismatch.action["name"] == "TxStart"
    # The counter covers an update whose data record never reached the WAL.
    assert wal.spec.invariant == "CounterReflectsWal"
    assert wal.impl.mismatch is not None and any(line.startswith("wal.") for line in wal.impl.mismatch.diff)


@pytest.mark.tlc
def test_a_model_that_cannot_reach_the_bug_misses_it(tmp_path: Path) -> None:
    """Without a crash no exchange finalizes: skipping finalize is invisible on both sides."""
    model = tmp_path / "PME-no-crash.cfg"
    model.write_text(SMALL.read_text().replace("MaxFailures = 1", "MaxFailures = 0"))
    entry = next(e for e in ZOO if e.name == "node-left-without-finalize")
    report = run_zoo_entries(tmp_path, replace(entry, model=model))
    [result] = report.entries
    assert not result.spec.caught and result.spec.outcome == "ok"
    assert not result.impl.caught and result.impl.states_replayed > 100
    assert not report.all_caught


def run_zoo_entries(work_dir: Path, entry: ZooEntry) -> ZooReport:
    """run_zoo on an entry of our own (the registry is swapped for the call)."""
    import tidemark.conformance.zoo.entries as zoo

    saved = zoo.ZOO
    zoo.ZOO = (entry,)
    try:
        return run_zoo(work_dir, [entry.name])
    finally:
        zoo.ZOO = saved


def test_an_unknown_entry_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TidemarkError, match="unknown zoo entry 'nope'"):
        entries_named(["nope"])
    assert cli.main(["zoo", "--only", "nope"]) == 2
    assert "unknown zoo entry 'nope'" in capsys.readouterr().err


@pytest.mark.tlc
def test_cli_zoo_json_and_the_verify_report(
    quick: ZooReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "zoo.xml"
    argv = ["zoo", "--only", *QUICK, "--run-dir", str(tmp_path / "run"), "--json", "--junit", str(junit)]
    assert cli.main(argv) == 0
    [suite] = JUnitXml.fromfile(str(junit))
    assert [(case.name, case.is_passed) for case in suite] == [(name, True) for name in QUICK]
    data = json.loads(capsys.readouterr().out)
    assert_output_schema("zoo", data)
    assert data["all_caught"] is True
    assert [(e["name"], e["caught"], e["spec"]["caught"], e["impl"]["caught"]) for e in data["entries"]] == [
        (name, True, True, True) for name in QUICK
    ]
    page = html_page(VerifyReport(specs=[], zoo=quick, traces=0, steps=0, seed=0))
    assert '<section id="zoo"><h2>Bug zoo <span class="holds">holds</span>' in page
    assert "PrimaryHwmCovers violated after" in page and "edge mismatch on TxStart" in page
    # Each entry's counterexample in full: its steps with their parameters, its diagram, the mismatch.
    switch = quick.entries[0]
    assert switch.spec.counterexample is not None
    assert f"{switch.name}: the counterexample and the mismatch" in page
    assert f"Counterexample: PrimaryHwmCovers violated after {len(switch.spec.trace)} states" in page
    assert "TxStart(" in page and page.count("sequenceDiagram") >= 2 * len(QUICK)
    missed = quick.model_copy(update={"all_caught": False})
    assert not VerifyReport(specs=[], zoo=missed, traces=0, steps=0, seed=0).holds


HAZELCAST_QUICK = ["failed-backup-advances", "permit-back-twice"]


@pytest.mark.tlc
def test_hazelcast_entries_are_caught_on_both_sides(tmp_path: Path) -> None:
    report = run_zoo(tmp_path, HAZELCAST_QUICK)
    assert report.all_caught and [e.protocol for e in report.entries] == ["HazelcastAntiEntropy"] * 2
    failed, permit = report.entries
    # A failed backup that still sets the versions: the replica claims the owner's data without it.
    assert failed.spec.invariant == "VersionsMeanData" and failed.spec.trace == [
        "Init",
        "Put",
        "BackupFailure",
    ]
    assert failed.impl.mismatch is not None and failed.impl.mismatch.action["name"] == "BackupFailure"
    assert failed.reproduces == "hazelcast/hazelcast#4174"
    # A response after its request timed out: the permit comes back twice.
    assert permit.spec.invariant == "PermitsConserved" and permit.spec.trace[-2:] == [
        "SyncTimeout",
        "SyncResponse",
    ]
    assert permit.impl.mismatch is not None and any(
        line.startswith("permits.") for line in permit.impl.mismatch.diff
    )
