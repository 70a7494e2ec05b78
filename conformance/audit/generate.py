"""`tidemark audit --generate`: synthetic snapshots with divergences injected where the seed says.

A snapshot of `groups` cache groups of `partitions` partitions, each on `copies` of `nodes` nodes (copy i
of partition p of group g on node (p + g + i) mod nodes, copy 0 the primary), holding `entries` keys in
all (Java longs 0..; Ignite's affinity puts each in its partition) with random values of 8 to 24 bytes and
random versions; every copy's counter is its partition's keys + 2, nothing missed. Then `divergences`
partitions, distinct, each get one of KINDS on one backup copy (or on all copies, for "lost"), and with
`not_idle` > 0 a later snapshot moves the counters of that many other partitions. `expected.json` says
what the audit must find: exactly the injected conflicts, skipped and not idle partitions.

Rows are written in blocks of partitions, so memory stays flat whatever the size: Parquet files of
`rows_per_file` rows in row groups of 131,072 (a directory as Spark writes one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numpy.typing import NDArray
from pydantic import BaseModel, Field

from tidemark.conformance.errors import TidemarkError
from tidemark.impl.affinity import MAX_PARTITIONS

KINDS: Final = (
    "missing-entry",  # hash conflict: a backup lacks an entry
    "value-differs",  # hash conflict: one value's bytes differ
    "version-differs",  # hash conflict through partVerHash alone: same value, another version (ABA)
    "counter-behind",  # counter conflict: a backup's counter one update behind, its data the same
    "gap-open",  # counter conflict: a backup missed an update and applied the next
    "moving",  # skipped: a backup MOVING, half rebalanced, its counter behind (no conflict)
    "lost",  # skipped: every copy LOST (no conflict)
    "renting",  # not reported: an extra, stale RENTING copy on another node (no conflict)
)
_COUNTER: Final = {"counter-behind", "gap-open"}
_HASH: Final = {"missing-entry", "value-differs", "version-differs"}
_ROW_GROUP: Final = 1 << 17
_BLOCK: Final = 64  # partitions generated at a time


class GenerateConfig(BaseModel):
    groups: int = Field(default=1, ge=1, le=1000)
    partitions: int = Field(default=1024, ge=1, le=MAX_PARTITIONS)
    copies: int = Field(default=3, ge=1, le=64)
    nodes: int | None = Field(default=None, ge=1, le=1000, description="default: copies + 1")
    entries: int = Field(default=100_000, ge=0, le=10**10, description="keys in all groups")
    divergences: int = Field(default=0, ge=0)
    not_idle: int = Field(default=0, ge=0)
    seed: int = 0
    rows_per_file: int = Field(default=1 << 20, ge=1)

    @property
    def node_count(self) -> int:
        return self.nodes or self.copies + 1


class Injection(BaseModel):
    kind: str
    group: str
    partition: int
    node: str | None = Field(description="the copy changed; None for all copies (lost)")


class Expected(BaseModel):
    """What the audit of the generated snapshot (and its later one) must find, sorted."""

    counter_conflicts: list[tuple[str, int]]
    hash_conflicts: list[tuple[str, int]]
    moving: list[tuple[str, int]]
    lost: list[tuple[str, int]]
    not_idle: list[tuple[str, int]]
    injections: list[Injection]


def _node(i: int) -> str:
    return f"node-{i}"


def _partition_of(keys: NDArray[np.int64], partitions: int) -> NDArray[np.int64]:
    """Ignite's RendezvousAffinityFunction.partition for Long keys (tidemark.impl.affinity, vectorized)."""
    bits = keys.view(np.uint64)
    h = (bits ^ (bits >> np.uint64(32))).astype(np.uint32).view(np.int32).astype(np.int64)
    if partitions & (partitions - 1) == 0:
        return (h ^ ((h & 0xFFFF_FFFF) >> 16)) & (partitions - 1)
    return np.abs(np.fmod(h, partitions))


@dataclass
class _Group:
    """A group's entries, sorted by partition: keys, values and versions, and each partition's slice."""

    name: str
    index: int
    table: pa.Table
    starts: NDArray[np.int64]  # partition p's entries are rows starts[p]..starts[p+1]


def _group(config: GenerateConfig, index: int, count: int) -> _Group:
    rng = np.random.default_rng([config.seed, index])
    keys = np.arange(count, dtype=np.int64)
    parts = _partition_of(keys, config.partitions)
    order = np.argsort(parts, kind="stable")
    lengths = rng.integers(8, 25, count)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8)
    values = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    table = pa.table(
        {"key": keys, "value": values.cast(pa.binary()), "version": rng.integers(1, 1 << 40, count)}
    ).take(pa.array(order))
    starts = np.concatenate([[0], np.cumsum(np.bincount(parts, minlength=config.partitions))]).astype(
        np.int64
    )
    return _Group(f"group-{index}", index, table, starts)


def _plan(
    config: GenerateConfig, groups: list[_Group]
) -> tuple[dict[tuple[int, int], Injection], set[tuple[int, int]]]:
    """Where each divergence goes (distinct partitions, a backup copy) and which partitions move later."""
    rng = np.random.default_rng([config.seed, 1 << 20])
    cells = [(g.index, p) for g in groups for p in range(config.partitions)]
    wanted = config.divergences + config.not_idle
    if wanted > len(cells):
        raise TidemarkError(
            f"{wanted} partitions to change, the snapshot has {len(cells)}", source="--divergences"
        )
    # A conflict needs two copies to compare; a RENTING copy, a node without a copy of the partition.
    usable = [k for k in KINDS if config.copies > 1 or k not in _COUNTER | _HASH]
    usable = [k for k in usable if config.node_count > config.copies or k != "renting"]
    kinds = [usable[i % len(usable)] for i in range(config.divergences)]
    picked = [cells[i] for i in rng.permutation(len(cells))]
    with_entries = [c for c in picked if groups[c[0]].starts[c[1] + 1] > groups[c[0]].starts[c[1]]]
    plan: dict[tuple[int, int], Injection] = {}
    for kind in kinds:
        pool = with_entries if kind in ("missing-entry", "value-differs", "version-differs") else picked
        cell = next((c for c in pool if c not in plan), None)
        if cell is None:
            raise TidemarkError(
                f"no partition with entries left for a {kind} divergence", source="--divergences"
            )
        g, p = cell
        copy = 1 + int(rng.integers(0, config.copies - 1)) if config.copies > 1 else 0
        node = None if kind == "lost" else _node((p + g + copy) % config.node_count)
        if kind == "renting":
            node = _node((p + g + config.copies) % config.node_count)
        plan[cell] = Injection(kind=kind, group=groups[g].name, partition=p, node=node)
    return plan, set([c for c in picked if c not in plan][: config.not_idle])


def _segment(
    group: _Group,
    partition: int,
    node: str,
    primary: bool,
    state: str,
    lwm: int,
    gaps: str,
    hwm: int,
    rows: NDArray[np.int64],
) -> pa.Table:
    entries = (
        group.table.take(pa.array(rows))
        if len(rows)
        else pa.table(
            {
                "key": pa.nulls(1, pa.int64()),
                "value": pa.nulls(1, pa.binary()),
                "version": pa.nulls(1, pa.int64()),
            }
        )
    )
    n = entries.num_rows
    copy = pa.table(
        {
            "node": pa.array([node] * n),
            "group": pa.array([group.name] * n),
            "partition": pa.array(np.full(n, partition, np.int32)),
            "state": pa.array([state] * n),
            "primary": pa.array(np.full(n, primary)),
            "lwm": pa.array(np.full(n, lwm, np.int64)),
            "gaps": pa.array([gaps] * n),
            "hwm": pa.array(np.full(n, hwm, np.int64)),
        }
    )
    return pa.Table.from_arrays(
        [*copy.columns, *entries.columns], [*copy.schema.names, *entries.schema.names]
    )


def _copies(
    config: GenerateConfig, group: _Group, p: int, injection: Injection | None, moved: bool
) -> list[pa.Table]:
    rows = np.arange(group.starts[p], group.starts[p + 1])
    lwm = len(rows) + 2 + (1 if moved else 0)
    kind = injection.kind if injection else None
    tables = []
    for i in range(config.copies):
        node = _node((p + group.index + i) % config.node_count)
        state, counter, mine = "OWNING", (lwm, "[]", lwm), rows
        if kind == "lost":
            state = "LOST"
        elif injection is not None and node == injection.node:
            if kind == "missing-entry":
                mine = rows[1:]
            elif kind == "counter-behind":
                counter = (lwm - 1, "[]", lwm - 1)
            elif kind == "gap-open":
                counter = (lwm - 2, f"[{lwm - 1}]", lwm)
            elif kind == "moving":
                state, mine, counter = "MOVING", rows[: (len(rows) + 1) // 2], (lwm // 2, "[]", lwm // 2)
        table = _segment(group, p, node, i == 0, state, counter[0], counter[1], counter[2], mine)
        if injection is not None and node == injection.node and kind in ("value-differs", "version-differs"):
            table = _change_first(table, kind)
        tables.append(table)
    if kind == "renting" and injection is not None and injection.node is not None:
        tables.append(_segment(group, p, injection.node, False, "RENTING", lwm - 1, "[]", lwm - 1, rows[:-1]))
    return tables


def _change_first(table: pa.Table, kind: str) -> pa.Table:
    mask = pa.array(np.arange(table.num_rows) == 0)
    if kind == "version-differs":
        column, value = "version", pa.array([table.column("version")[0].as_py() + 1])
    else:
        first = table.column("value")[0].as_py()
        column, value = "value", pa.array([bytes([first[0] ^ 0xFF]) + first[1:]], pa.binary())
    changed = pc.replace_with_mask(table.column(column).combine_chunks(), mask, value)
    return table.set_column(table.schema.get_field_index(column), column, changed)


class _Files:
    """Parquet files of at most `rows_per_file` rows, part-00000.parquet, ... in `directory`."""

    def __init__(self, directory: Path, rows_per_file: int) -> None:
        self.directory, self.limit = directory, rows_per_file
        self.writer: pq.ParquetWriter | None = None
        self.files = self.rows = 0

    def write(self, table: pa.Table) -> None:
        while table.num_rows:
            if self.writer is None or self.rows >= self.limit:
                self.close()
                path = self.directory / f"part-{self.files:05d}.parquet"
                self.writer = pq.ParquetWriter(path, table.schema)
                self.files, self.rows = self.files + 1, 0
            take = min(table.num_rows, self.limit - self.rows)
            self.writer.write_table(table.slice(0, take), row_group_size=_ROW_GROUP)
            self.rows += take
            table = table.slice(take)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _write(
    config: GenerateConfig,
    groups: list[_Group],
    plan: dict[tuple[int, int], Injection],
    moved: set[tuple[int, int]],
    directory: Path,
) -> None:
    directory.mkdir(parents=True)
    files = _Files(directory, config.rows_per_file)
    try:
        for group in groups:
            for block in range(0, config.partitions, _BLOCK):
                tables = [
                    t
                    for p in range(block, min(block + _BLOCK, config.partitions))
                    for t in _copies(config, group, p, plan.get((group.index, p)), (group.index, p) in moved)
                ]
                files.write(pa.concat_tables(tables))
    finally:
        files.close()


def generate(config: GenerateConfig, directory: Path) -> Expected:
    """Write directory/snapshot (and directory/later with not_idle > 0) and directory/expected.json."""
    if config.copies > config.node_count:
        raise TidemarkError(
            f"{config.copies} copies on {config.node_count} nodes",
            source="--copies",
            expected="at most one copy per node",
        )
    counts = [
        config.entries // config.groups + (g < config.entries % config.groups) for g in range(config.groups)
    ]
    groups = [_group(config, g, n) for g, n in enumerate(counts)]
    plan, moved = _plan(config, groups)
    _write(config, groups, plan, set(), directory / "snapshot")
    if moved:
        _write(config, groups, plan, moved, directory / "later")
    names = {g.index: g.name for g in groups}

    def where(kinds: set[str]) -> list[tuple[str, int]]:
        return sorted((i.group, i.partition) for i in plan.values() if i.kind in kinds)

    expected = Expected(
        counter_conflicts=where(_COUNTER),
        hash_conflicts=where(_HASH),
        moving=where({"moving"}),
        lost=where({"lost"}),
        not_idle=sorted((names[g], p) for g, p in moved),
        injections=sorted(plan.values(), key=lambda i: (i.group, i.partition)),
    )
    (directory / "expected.json").write_text(json.dumps(expected.model_dump(), indent=1) + "\n")
    return expected
