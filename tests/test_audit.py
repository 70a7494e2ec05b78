"""`tidemark audit` in this process (--local): it finds exactly the divergences the generator injects,
agrees with the model's idle_verify, writes Ignite's dump layout and reads it back, and refuses bad
snapshots naming the file, the row and the column, writing nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from conftest import assert_output_schema
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.conformance.audit.audit import AuditReport, audit
from tidemark.conformance.audit.generate import Expected, GenerateConfig, generate
from tidemark.conformance.audit.ignite_text import differences, dump_text, read_dump
from tidemark.conformance.audit.sources import model_snapshot
from tidemark.conformance.cli.main import main
from tidemark.conformance.scenarios import load_scenario
from tidemark.conformance.scenarios.adapters import SYSTEMS
from tidemark.impl.pme import idle_verify

ROOT = Path(__file__).resolve().parent.parent


def found(report: AuditReport) -> dict[str, list[tuple[str, int]]]:
    def where(flag: str) -> list[tuple[str, int]]:
        return sorted((p.group, p.partition) for p in report.partitions if getattr(p, flag))

    return {
        "counter_conflicts": where("counter_conflict"),
        "hash_conflicts": where("hash_conflict"),
        "moving": where("moving"),
        "lost": where("lost"),
        "not_idle": where("not_idle"),
    }


def wanted(expected: Expected) -> dict[str, list[tuple[str, int]]]:
    data = expected.model_dump(exclude={"injections"})
    return {k: [tuple(x) for x in v] for k, v in data.items()}


@settings(max_examples=20)
@given(
    groups=st.integers(1, 2),
    partitions=st.sampled_from([1, 5, 16, 64]),
    copies=st.integers(1, 4),
    entries=st.integers(0, 400),
    divergences=st.integers(0, 10),
    not_idle=st.integers(0, 3),
    seed=st.integers(0, 1 << 30),
)
def test_audit_finds_exactly_the_injected_divergences(
    tmp_path_factory: pytest.TempPathFactory, **params: Any
) -> None:
    config = GenerateConfig(**params)
    cells = config.groups * config.partitions
    if config.divergences + config.not_idle > cells or (config.entries == 0 and config.divergences > 0):
        return
    directory = tmp_path_factory.mktemp("generated")
    expected = generate(config, directory)
    later = directory / "later" if config.not_idle else None
    report = audit(directory / "snapshot", later=later, local=True)
    assert found(report) == wanted(expected)
    assert report.rows == sum(pq.ParquetFile(f).metadata.num_rows for f in (directory / "snapshot").iterdir())
    # The per-node tally blames the injected copy: a backup's, never the primary's.
    blamed = {i.node for i in expected.injections if i.kind in ("missing-entry", "value-differs", "gap-open")}
    assert blamed <= {n for n, t in report.per_node.items() if t.counter or t.hash}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Expected]:
    directory = tmp_path_factory.mktemp("audit")
    config = GenerateConfig(groups=2, partitions=32, entries=3000, divergences=8, not_idle=2, seed=3)
    return directory, generate(config, directory)


def test_cli_json_dump_round_trip_and_against(
    generated: tuple[Path, Expected], tmp_path: Path, capsys: Any
) -> None:
    directory, expected = generated
    dump, page = tmp_path / "dump.txt", tmp_path / "audit.html"
    args = [str(directory / "snapshot"), str(directory / "later"), "--local", "--dump", str(dump)]
    assert main(["audit", *args, "--report", str(page), "--json"]) == 1  # conflicts: exit 1
    payload = json.loads(capsys.readouterr().out)
    assert_output_schema("audit", payload)
    assert payload["counter_conflicts"] == len(expected.counter_conflicts) and payload["conflict"] is True
    assert payload["not_idle"] == 2 and payload["dump"] == str(dump)
    assert {(p["group"], p["partition"]) for p in payload["partitions"] if p["not_idle"]} == {
        tuple(x) for x in expected.not_idle
    }
    assert "hash conflicts per node" in page.read_text()
    # The dump reads back to the very records the audit computed, partition by partition.
    report = audit(directory / "snapshot", later=directory / "later", local=True)
    records = read_dump(dump)
    assert records == {(p.group, p.partition): p.records for p in report.partitions}
    assert differences(report, records) == []
    assert dump.read_text() == dump_text(report)
    # A dump whose figures differ: each difference named, exit 1 even without conflicts of its own.
    tampered = tmp_path / "tampered.txt"
    tampered.write_text(dump.read_text().replace("partHash=", "partHash=1", 1))
    assert main(["audit", *args[:-3], "--local", "--against", str(tampered)]) == 1
    out = capsys.readouterr().out
    assert "1 differences" in out and "partition" in out


def test_text_is_ignites_and_not_idle_is_skipped(generated: tuple[Path, Expected], capsys: Any) -> None:
    directory, _ = generated
    assert main(["audit", str(directory / "snapshot"), str(directory / "later"), "--local"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "The check procedure task was executed with the following args: caches=[], excluded=[]"
    )
    assert "conflict partitions has been found: [counterConflicts=2, hashConflicts=3]" in out
    assert "Verification was skipped for 2 not idle partitions:" in out
    assert "Verification was skipped for 1 MOVING partitions:" in out
    # Without the later snapshot the moved partitions are compared (and agree: only counters moved later).
    assert main(["audit", str(directory / "snapshot"), "--local"]) == 1
    assert "not idle" not in capsys.readouterr().out


def test_group_filter(generated: tuple[Path, Expected], capsys: Any) -> None:
    directory, _ = generated
    report = audit(directory / "snapshot", caches=["group-0"], local=True)
    assert {p.group for p in report.partitions} == {"group-0"}
    assert main(["audit", str(directory / "snapshot"), "--local", "--exclude-caches", "group-.*"]) == 2
    assert "no group matches" in capsys.readouterr().err


def test_skip_zeros_and_a_snapshot_without_entries(tmp_path: Path) -> None:
    generate(GenerateConfig(partitions=8, entries=5, copies=2, seed=1), tmp_path / "g")
    report = audit(tmp_path / "g" / "snapshot", local=True)
    empty = [p for p in report.partitions if all(r.size == 0 for r in p.records)]
    assert empty and "partitions was skipped" not in dump_text(report)
    text = dump_text(report, skip_zeros=True)
    assert f"{len(empty)} partitions was skipped" in text
    assert f"found {len(report.partitions) - len(empty)} partitions" in text
    generate(GenerateConfig(partitions=4, entries=0, copies=2), tmp_path / "none")
    report = audit(tmp_path / "none" / "snapshot", local=True)
    assert report.entries == 0 and len(report.partitions) == 4 and not report.conflict
    assert dump_text(report, skip_zeros=True).endswith("cacheFilter=[DEFAULT]\n4 partitions was skipped\n")


def test_csv_snapshot_audits_like_parquet(
    generated: tuple[Path, Expected], tmp_path: Path, capsys: Any
) -> None:
    directory, _ = generated
    table = pq.read_table(directory / "snapshot")
    hex_values = pa.array([None if v is None else v.hex() for v in table.column("value").to_pylist()])
    table = table.set_column(table.schema.get_field_index("value"), "value", hex_values)
    pcsv.write_csv(table, tmp_path / "s.csv")
    parquet = audit(directory / "snapshot", local=True)
    assert main(["audit", str(tmp_path / "s.csv"), "--key-type", "long", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["partitions"] == parquet.payload()["partitions"]
    assert main(["audit", str(tmp_path / "s.csv")]) == 2
    assert "--key-type" in capsys.readouterr().err


# --- bad input ------------------------------------------------------------------------------------------

ROWS = [
    {
        "node": n,
        "group": "g",
        "partition": 0,
        "state": "OWNING",
        "primary": n == "a",
        "lwm": 2,
        "gaps": "[]",
        "hwm": 2,
        "key": k,
        "value": b"v",
        "version": 1,
    }
    for n in ("a", "b")
    for k in (0, 1)
]


def _bad(tmp_path: Path, capsys: Any, rows: list[dict[str, Any]], *expected: str, csv: bool = False) -> None:
    path = tmp_path / ("s.csv" if csv else "s.parquet")
    if csv:

        def cell(v: Any) -> str | None:
            return (
                None
                if v is None
                else v.hex()
                if isinstance(v, bytes)
                else str(v).lower()
                if isinstance(v, bool)
                else str(v)
            )

        pcsv.write_csv(pa.Table.from_pylist([{k: cell(v) for k, v in r.items()} for r in rows]), path)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    dump, page = tmp_path / "d.txt", tmp_path / "p.html"
    extra = ["--key-type", "long"] if csv else []
    assert main(["audit", str(path), "--local", "--dump", str(dump), "--report", str(page), *extra]) == 2
    err = capsys.readouterr().err
    for part in (str(path), *expected):
        assert part in err, err
    assert not dump.exists() and not page.exists(), "nothing is written when the input fails"


def _with(index: int, **changes: Any) -> list[dict[str, Any]]:
    return [{**r, **changes} if i == index else r for i, r in enumerate(ROWS)]


def test_missing_and_mistyped_columns(tmp_path: Path, capsys: Any) -> None:
    _bad(tmp_path, capsys, [{k: v for k, v in r.items() if k != "gaps"} for r in ROWS], "column gaps missing")
    _bad(tmp_path, capsys, [{**r, "lwm": str(r["lwm"])} for r in ROWS], "column lwm is string", "an integer")


def test_unknown_state_names_the_row_group_row_and_column(tmp_path: Path, capsys: Any) -> None:
    _bad(
        tmp_path,
        capsys,
        _with(2, state="OWNED"),
        "row group 0, row 2",
        "column state",
        "unknown state 'OWNED'",
    )


def test_unparsable_gaps(tmp_path: Path, capsys: Any) -> None:
    rows = [{**r, "gaps": "[3 -]"} if r["node"] == "b" else r for r in ROWS]
    _bad(tmp_path, capsys, rows, "row 2", "column gaps", "'3 -'")
    rows = [{**r, "gaps": "[4]", "hwm": 5} if r["node"] == "b" else r for r in ROWS]
    _bad(tmp_path, capsys, rows, "row 2", "column gaps", "not lwm + 1")


def test_two_primary_copies(tmp_path: Path, capsys: Any) -> None:
    _bad(tmp_path, capsys, [{**r, "primary": True} for r in ROWS], "2 primary copies (on a, b)")


def test_a_copys_rows_disagree(tmp_path: Path, capsys: Any) -> None:
    _bad(tmp_path, capsys, _with(1, lwm=3, hwm=3), "row 1", "column lwm", "differs from row 0")


def test_entry_columns_null_together(tmp_path: Path, capsys: Any) -> None:
    _bad(tmp_path, capsys, _with(3, value=None), "row 3", "column value", "all null")


def test_csv_bad_cell_names_its_line(tmp_path: Path, capsys: Any) -> None:
    _bad(tmp_path, capsys, _with(2, lwm="two"), "line 4", "column lwm", "an integer", csv=True)
    _bad(tmp_path, capsys, _with(1, state="GONE"), "line 3", "column state", csv=True)


def test_no_snapshot_at_all(tmp_path: Path, capsys: Any) -> None:
    assert main(["audit", str(tmp_path / "nothing"), "--local"]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["audit", str(tmp_path / "empty"), "--local"]) == 2
    assert "holds no data files" in capsys.readouterr().err


# --- the model -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.json")), ids=lambda p: p.stem)
def test_model_snapshots_agree_with_the_models_idle_verify(path: Path, tmp_path: Path) -> None:
    """After every step of every PME scenario: the audit of a snapshot of the model's cluster finds the
    conflicts, MOVING and LOST partitions the model's own idle_verify reports."""
    scenario = load_scenario(path)
    if scenario.protocol != "pme":
        pytest.skip(f"protocol {scenario.protocol}: no idle_verify")
    with SYSTEMS["impl"]["pme"](scenario) as run:
        for index, step in enumerate(scenario.steps):
            if step.refused or step.error is not None:
                continue
            run.take(step)
            model = idle_verify(run.cluster)  # type: ignore[attr-defined]
            snapshot = tmp_path / f"step-{index}.parquet"
            pq.write_table(model_snapshot(run.cluster), snapshot)  # type: ignore[attr-defined]
            report = audit(snapshot, local=True)
            seen = found(report)
            assert [p for _, p in seen["counter_conflicts"]] == sorted(model.counter_conflicts), index
            assert [p for _, p in seen["hash_conflicts"]] == sorted(model.hash_conflicts), index
            moving = {p for p, nodes in model.skipped.items() if "MOVING" in nodes.values()}
            assert {p for _, p in seen["moving"]} == moving - set(model.lost), index
            assert {p for _, p in seen["lost"]} == {
                p for p, nodes in model.skipped.items() if "LOST" in nodes.values()
            }, index
