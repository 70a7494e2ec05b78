"""`tidemark audit`: Ignite's idle_verify over a snapshot, the verdict per partition, the report.

The copies' figures come from an engine (conformance/audit/engine.py); each copy becomes its
PartitionHashRecord and each partition's records are compared by tidemark.impl.idle_verify, the definition the
model's idle_verify (impl.pme) uses too. Given a later snapshot of the same cluster, a partition whose
copies' states or counters moved in between is "not idle" and not compared (Ignite stops the whole check
with GridNotIdleException when a counter moves while it hashes; two snapshots let the rest be compared).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tidemark.conformance.audit.engine import CopyFigures, copies_here, copies_on_spark, copy_figures
from tidemark.conformance.audit.kernel import KernelOptions
from tidemark.conformance.audit.snapshot import Snapshot, open_snapshot
from tidemark.conformance.errors import TidemarkError
from tidemark.impl.affinity import hash_string
from tidemark.impl.idle_verify import (
    HashRecord,
    RecordState,
    compare,
    counter_text,
    parse_missed,
    record,
    reported_state,
)


def group_id(name: str) -> int:
    """CU.cacheId: the group name's String.hashCode, 1 instead of 0."""
    return hash_string(name) or 1


class Record(BaseModel):
    """A copy's PartitionHashRecord."""

    node: str
    primary: bool
    state: RecordState
    counter: str = Field(description="the counter's comparable text, e.g. [lwm=5, missed=[], hwm=5]")
    size: int = Field(description="entries; Long.MIN_VALUE for a MOVING copy")
    part_hash: int
    ver_hash: int

    @classmethod
    def of(cls, r: HashRecord) -> Record:
        return cls(**asdict(r))

    def hash_record(self) -> HashRecord:
        return HashRecord(
            self.node, self.primary, self.state, self.counter, self.size, self.part_hash, self.ver_hash
        )


def dump_order(records: Sequence[Record]) -> list[Record]:
    """Ignite's order in a dump: the primary first, then by consistent id, descending."""
    return sorted(sorted(records, key=lambda r: r.node, reverse=True), key=lambda r: not r.primary)


class PartitionAudit(BaseModel):
    """One partition: its records and its verdict."""

    group: str
    group_id: int
    partition: int
    records: list[Record]
    counter_conflict: bool = False
    hash_conflict: bool = False
    moving: bool = False
    lost: bool = False
    not_idle: bool = False
    later: list[Record] = Field(default_factory=list, description="not idle: the later snapshot's records")

    @property
    def noteworthy(self) -> bool:
        return self.counter_conflict or self.hash_conflict or self.moving or self.lost or self.not_idle

    def outliers(self) -> tuple[list[str], list[str]]:
        """Nodes whose OWNING copy differs from the primary's (or, if the primary is not OWNING, from the
        first OWNING copy's) counter, and hashes."""
        owning = [r for r in self.records if r.state is RecordState.OWNING]
        if not owning:
            return [], []
        ref = next((r for r in owning if r.primary), owning[0])
        return (
            [r.node for r in owning if r.counter != ref.counter] if self.counter_conflict else [],
            [r.node for r in owning if (r.part_hash, r.ver_hash) != (ref.part_hash, ref.ver_hash)]
            if self.hash_conflict
            else [],
        )


class Tally(BaseModel):
    counter: int = 0
    hash: int = 0


class AuditReport(BaseModel):
    """What `tidemark audit` found; `partitions` holds every partition, in Ignite's dump order."""

    snapshot: str
    later: str | None = None
    engine: str = Field(description="the Spark master, or 'this process'")
    key_type: str
    caches: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    groups: int
    copies: int
    rows: int
    entries: int
    counter_conflicts: int
    hash_conflicts: int
    moving: int
    lost: int
    not_idle: int
    per_group: dict[str, Tally] = Field(description="conflict partitions per group")
    per_node: dict[str, Tally] = Field(
        description="copies differing from their partition's primary, per node"
    )
    seconds: float = 0.0
    partitions: list[PartitionAudit] = Field(default_factory=list)

    @property
    def conflict(self) -> bool:
        return bool(self.counter_conflicts or self.hash_conflicts)

    def findings(self) -> list[PartitionAudit]:
        return [p for p in self.partitions if p.noteworthy]

    def payload(self) -> dict[str, Any]:
        """The JSON of --json: the figures and the partitions with something to say."""
        data = self.model_dump(mode="json", exclude={"partitions"})
        data["conflict"] = self.conflict
        data["partitions"] = [p.model_dump(mode="json") for p in self.findings()]
        return data


def _records(copies: list[CopyFigures], source: str) -> dict[tuple[str, int], list[Record]]:
    per: dict[tuple[str, int], list[Record]] = defaultdict(list)
    primaries: dict[tuple[str, int], list[str]] = defaultdict(list)
    for c in copies:
        if c.primary:
            primaries[(c.group, c.partition)].append(c.node)
        state = reported_state(c.state)
        per.setdefault((c.group, c.partition), [])
        if state is None:
            continue
        counter = counter_text(c.lwm, parse_missed(c.gaps), c.hwm)
        hashed = record(c.node, c.primary, state, counter, c.entries, c.part_hash, c.ver_hash)
        per[(c.group, c.partition)].append(Record.of(hashed))
    for (group, partition), nodes in sorted(primaries.items()):
        if len(nodes) > 1:
            raise TidemarkError(
                f"partition {partition} of group {group!r} has {len(nodes)} primary copies"
                f" (on {', '.join(nodes)})",
                source=source,
                expected="at most one primary copy per partition",
            )
    return per


def _moved(first: list[CopyFigures], later: list[CopyFigures]) -> set[tuple[str, int]]:
    """Partitions whose copies' states or counters differ between the snapshots."""
    seen: dict[tuple[str, int], Counter[tuple[Any, ...]]] = defaultdict(Counter)
    for sign, copies in ((1, first), (-1, later)):
        for c in copies:
            seen[(c.group, c.partition)][(c.node, c.state, c.lwm, c.gaps, c.hwm)] += sign
    return {key for key, counts in seen.items() if any(counts.values())}


def _figures(snapshot: Snapshot, options: KernelOptions, spark: Any | None) -> list[CopyFigures]:
    table = copies_here(snapshot, options) if spark is None else copies_on_spark(spark, snapshot, options)
    return copy_figures(table, str(snapshot.path))


def audit_snapshots(
    first: Snapshot,
    later: Snapshot | None,
    options: KernelOptions,
    spark: Any | None = None,
    engine: str = "this process",
) -> AuditReport:
    """The audit of `first` (and `later`, for idleness) on Spark, or in this process without `spark`."""
    started = time.monotonic()
    copies = _figures(first, options, spark)
    if not copies and (options.caches or options.exclude):
        raise TidemarkError(
            "no group matches the filter",
            source="--caches/--exclude-caches",
            expected="a group of the snapshot",
        )
    later_copies = _figures(later, options, spark) if later is not None else []
    moved = _moved(copies, later_copies) if later is not None else set()
    later_records = _records(later_copies, str(later.path)) if later is not None else {}
    partitions = []
    for (group, partition), records in _records(copies, str(first.path)).items():
        audit = PartitionAudit(
            group=group, group_id=group_id(group), partition=partition, records=dump_order(records)
        )
        if (group, partition) in moved:
            audit.not_idle = True
            audit.later = dump_order(later_records.get((group, partition), []))
        else:
            verdict = compare([r.hash_record() for r in records])
            audit.counter_conflict, audit.hash_conflict = verdict.counter_conflict, verdict.hash_conflict
            audit.moving, audit.lost = verdict.moving, verdict.lost
        partitions.append(audit)
    partitions.sort(key=lambda p: (p.group_id, p.partition))
    per_group: dict[str, Tally] = defaultdict(Tally)
    per_node: dict[str, Tally] = defaultdict(Tally)
    for p in partitions:
        per_group[p.group].counter += p.counter_conflict
        per_group[p.group].hash += p.hash_conflict
        counters, hashes = p.outliers()
        for node in counters:
            per_node[node].counter += 1
        for node in hashes:
            per_node[node].hash += 1
    return AuditReport(
        snapshot=str(first.path),
        later=str(later.path) if later is not None else None,
        engine=engine,
        key_type=first.key_type,
        caches=list(options.caches),
        exclude=list(options.exclude),
        groups=len({p.group for p in partitions}),
        copies=len(copies),
        rows=sum(c.rows for c in copies),
        entries=sum(c.entries for c in copies),
        counter_conflicts=sum(p.counter_conflict for p in partitions),
        hash_conflicts=sum(p.hash_conflict for p in partitions),
        moving=sum(p.moving for p in partitions),
        lost=sum(p.lost for p in partitions),
        not_idle=sum(p.not_idle for p in partitions),
        per_group={g: per_group[g] for g in sorted({p.group for p in partitions})},
        per_node={n: per_node[n] for n in sorted({c.node for c in copies})},
        seconds=round(time.monotonic() - started, 3),
        partitions=partitions,
    )


def audit(
    path: Path,
    *,
    later: Path | None = None,
    key_type: str | None = None,
    caches: Sequence[str] = (),
    exclude: Sequence[str] = (),
    master: str | None = None,
    local: bool = False,
) -> AuditReport:
    """Open the snapshots (their columns checked first) and audit them: on Spark (`master`, local[*] by
    default) unless `local`."""
    first = open_snapshot(path, key_type)
    second = open_snapshot(later, first.key_type) if later is not None else None
    options = KernelOptions(first.key_type, tuple(caches), tuple(exclude))
    if local:
        return audit_snapshots(first, second, options)
    from tidemark.conformance.spark import spark_session
    from tidemark.conformance.tlc.runner import find_java

    find_java()
    with spark_session(master) as spark:
        return audit_snapshots(first, second, options, spark, spark.sparkContext.master)
