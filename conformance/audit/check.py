"""`tidemark verify`'s audit: a small generated snapshot (and a later one) audited on Spark, or in this
process with --local; it holds when the audit finds exactly the divergences the generator injected."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field

from tidemark.conformance.audit.audit import AuditReport, audit_snapshots
from tidemark.conformance.audit.generate import GenerateConfig, generate
from tidemark.conformance.audit.kernel import KernelOptions
from tidemark.conformance.audit.snapshot import open_snapshot
from tidemark.conformance.scratch import scratch_root

# Two groups of 64 partitions, 3 copies on 4 nodes, 20,000 keys (about 60,000 rows): every kind of
# divergence twice, and two partitions whose counters move before the later snapshot.
CONFIG = GenerateConfig(groups=2, partitions=64, copies=3, entries=20_000, divergences=16, not_idle=2, seed=0)

Cells = list[tuple[str, int]]


class AuditCheck(BaseModel):
    config: GenerateConfig
    expected: dict[str, Cells] = Field(description="what the generator injected")
    found: dict[str, Cells] = Field(description="what the audit reported")
    report: AuditReport

    @computed_field  # type: ignore[prop-decorator]
    @property
    def holds(self) -> bool:
        return self.expected == self.found


def findings(report: AuditReport) -> dict[str, Cells]:
    """The partitions of each kind the audit reported, as the generator's expected.json names them."""
    flags = {
        "counter_conflicts": "counter_conflict",
        "hash_conflicts": "hash_conflict",
        "moving": "moving",
        "lost": "lost",
        "not_idle": "not_idle",
    }
    return {
        kind: sorted((p.group, p.partition) for p in report.partitions if getattr(p, flag))
        for kind, flag in flags.items()
    }


def audit_check(spark: Any | None, config: GenerateConfig = CONFIG) -> AuditCheck:
    """Generate the snapshots in this process's scratch directory, audit them (on `spark`, or here)."""
    with tempfile.TemporaryDirectory(prefix="audit-", dir=scratch_root()) as scratch:
        expected = generate(config, Path(scratch))
        first = open_snapshot(Path(scratch) / "snapshot")
        later = open_snapshot(Path(scratch) / "later", first.key_type) if config.not_idle else None
        engine = spark.sparkContext.master if spark is not None else "this process"
        report = audit_snapshots(first, later, KernelOptions(first.key_type), spark, engine)
    report = report.model_copy(update={"snapshot": "generated", "later": "generated" if later else None})
    wanted = expected.model_dump(exclude={"injections"})
    return AuditCheck(
        config=config,
        expected={k: [tuple(x) for x in v] for k, v in wanted.items()},
        found=findings(report),
        report=report,
    )
