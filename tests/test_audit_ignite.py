"""The audit against a real Apache Ignite 2.18 cluster (systems/ignite harness): tidemark's audit of the
cluster's snapshot writes Ignite's own idle_verify dump file byte for byte, and Ignite's verdict."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tidemark.conformance.audit.audit import audit
from tidemark.conformance.audit.ignite_text import differences, dump_text, read_dump, verdict_text
from tidemark.conformance.audit.sources import ignite_snapshot
from tidemark.conformance.systems.ignite import IgniteHarness

pytestmark = pytest.mark.ignite


def test_audit_of_a_real_cluster_is_ignites_idle_verify(tmp_path: Path) -> None:
    with IgniteHarness() as h:
        h.start(3, partitions=64, backups=2)
        # Keys 0..44 in three transactions; some of the 64 partitions get none.
        for start in (0, 15, 30):
            h.call("put", writes={str(k): f"value-{k}" * (k % 4 + 1) for k in range(start, start + 15)})
        h.call("put", writes={"3": "rewritten"})  # a second version of one entry
        snapshot = ignite_snapshot(h.call("snapshot"))
        ignite_dump = h.call("idle_verify_dump", skip_zeros=False)["text"]
        ignite_dump_skipping = h.call("idle_verify_dump", skip_zeros=True)["text"]
        verdict = h.idle_verify()
    # A copy that was never written has no counter: Ignite prints updateCntr=0, a snapshot says lwm 0,
    # nothing missed, hwm 0 (docs/audit.md).
    never = "updateCntr=0, "
    assert never in ignite_dump
    ignite_dump, ignite_dump_skipping = (
        text.replace(never, "updateCntr=[lwm=0, missed=[], hwm=0], ")
        for text in (ignite_dump, ignite_dump_skipping)
    )
    pq.write_table(snapshot, tmp_path / "snapshot.parquet")
    report = audit(tmp_path / "snapshot.parquet", caches=["tidemark"], local=True)
    assert report.copies == 64 * 3 and report.entries == 45 * 3 and not report.conflict
    assert dump_text(report) == ignite_dump
    assert dump_text(report, skip_zeros=True) == ignite_dump_skipping
    # Keys 0..44 each fall in partition = key (an Integer's hash is itself): 19 partitions stay empty.
    assert f"{64 - 45} partitions was skipped" in ignite_dump_skipping
    assert verdict_text(report) == verdict.text and not verdict.has_conflicts
    dumped = tmp_path / "ignite-dump.txt"
    dumped.write_text(ignite_dump)
    assert differences(report, read_dump(dumped)) == []
