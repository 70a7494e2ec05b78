"""Ignite's words for an idle_verify result: its printed verdict, its --dump file, and a reader of dumps.

The texts follow Ignite 2.18 (IdleVerifyResult.print, VerifyBackupPartitionsDumpTask.writeResult, the
toString of PartitionKey and PartitionHashRecord), checked against a real cluster's output in
tests/test_audit_ignite.py. Where Ignite's order is a HashMap's (conflict partitions, the nodes' records
in a conflict), tidemark sorts: partitions by group id and partition, records as the dump orders them
(the primary first, then by consistent id, descending).

`read_dump` reads a dump file, Ignite's or tidemark's, back into per-partition records, so a user can put
their cluster's figures beside tidemark's (`tidemark audit --against FILE`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from tidemark.conformance.audit.audit import AuditReport, PartitionAudit, Record, dump_order
from tidemark.conformance.errors import TidemarkError
from tidemark.impl.idle_verify import MOVING_SIZE, RecordState, zero

FOUND_NONE: Final = "The check procedure has finished, no conflicts have been found.\n"
_SEPARATOR: Final = "\n\n-----------------------------------\n\n"


def key_text(group: str, group_id: int, partition: int) -> str:
    return f"PartitionKey [grpId={group_id}, grpName={group}, partId={partition}]"


def record_text(r: Record) -> str:
    head = (
        f"PartitionHashRecord [isPrimary={str(r.primary).lower()}, consistentId={r.node}, "
        f"updateCntr={r.counter}, partitionState={r.state.value}"
    )
    if r.size == MOVING_SIZE:
        return head + ", state=MOVING]"
    return head + f", size={r.size}, partHash={r.part_hash}, partVerHash={r.ver_hash}]"


def records_text(records: Iterable[Record]) -> str:
    return "[" + ", ".join(record_text(r) for r in records) + "]"


def args_text(caches: Sequence[str], exclude: Sequence[str]) -> str:
    """CacheIdleVerifyCommand's first line: the arguments it ran with."""
    return (
        "The check procedure task was executed with the following args: "
        f"caches=[{', '.join(caches)}], excluded=[{', '.join(exclude)}], cacheFilter=[DEFAULT]\n"
    )


def _section(partitions: Iterable[PartitionAudit], title: str) -> str:
    lines = []
    for p in partitions:
        lines.append(f"{title}: {key_text(p.group, p.group_id, p.partition)}\n")
        lines.append(f"Partition instances: {records_text(p.records)}\n")
    return "".join(lines)


def _skipped(partitions: list[PartitionAudit], what: str) -> str:
    if not partitions:
        return ""
    text = f"Verification was skipped for {len(partitions)} {what} partitions:\n"
    return text + _section(partitions, "Skipped partition") + "\n"


def verdict_text(report: AuditReport) -> str:
    """IdleVerifyResult.print: the conflicts, then the skipped MOVING and LOST partitions; tidemark adds
    the partitions that were not idle between two snapshots, as skipped ones."""
    counter = [p for p in report.partitions if p.counter_conflict]
    hashed = [p for p in report.partitions if p.hash_conflict]
    if not counter and not hashed:
        text = FOUND_NONE
    else:
        text = (
            "The check procedure has failed, conflict partitions has been found: "
            f"[counterConflicts={len(counter)}, hashConflicts={len(hashed)}]\n"
        )
        if counter:
            text += "Update counter conflicts:\n" + _section(counter, "Conflict partition") + "\n"
        if hashed:
            text += "Hash conflicts:\n" + _section(hashed, "Conflict partition")
        text += "\nTotal:\n"
        groups: dict[str, list[int]] = {}
        for p in sorted({(p.group, p.partition) for p in counter + hashed}):
            groups.setdefault(p[0], []).append(p[1])
        for group, parts in sorted(groups.items()):
            text += f"{group} ({len(parts)})\n{','.join(map(str, parts))}\n\n"
    moving = [p for p in report.partitions if p.moving]
    if moving:
        text += "Possible results are not full due to rebalance still in progress.\n"
    text += _skipped(moving, "MOVING")
    text += _skipped([p for p in report.partitions if p.lost], "LOST")
    return text + _skipped([p for p in report.partitions if p.not_idle], "not idle")


def idle_verify_text(report: AuditReport) -> str:
    """What `control.sh --cache idle_verify` prints."""
    return args_text(report.caches, report.exclude) + verdict_text(report)


def dump_text(report: AuditReport, skip_zeros: bool = False) -> str:
    """The file `idle_verify --dump [--skip-zeros]` writes: every partition's records, then the verdict."""
    kept = [
        p
        for p in report.partitions
        if not (skip_zeros and p.records and zero([r.hash_record() for r in p.records]))
    ]
    kept = [p for p in kept if p.records]
    skipped = len(report.partitions) - len(kept)
    text = f"The check procedure has finished, found {len(kept)} partitions\n" if kept else ""
    text += args_text(report.caches, report.exclude)
    if skipped and skip_zeros:
        text += f"{skipped} partitions was skipped\n"
    if not kept:
        return text
    text += "Cluster partitions:\n" + _section(kept, "Partition")
    regular = sum(p.records[0].size for p in kept if p.records[0].state is RecordState.OWNING)
    text += _SEPARATOR
    text += "CompactFooter statistic for keys [compactFooter=0, noCompactFooter=0, binary=0,"
    text += f" regular={regular}]\n\n"
    return text + verdict_text(report)


# --- reading a dump ----------------------------------------------------------------------------------

_KEY = re.compile(r"Partition: PartitionKey \[grpId=(-?\d+), grpName=(.*), partId=(\d+)\]")
_RECORD = re.compile(
    r"PartitionHashRecord \[isPrimary=(true|false), consistentId=(.*?), "
    r"updateCntr=(\[lwm=\d+, missed=\[[^\]]*\], hwm=\d+\]|-?\d+), partitionState=(OWNING|MOVING|LOST)"
    r"(?:, state=MOVING|, size=(-?\d+), partHash=(-?\d+), "
    r"partVerHash=(-?\d+))\]"
)


def parse_records(text: str) -> list[Record]:
    """The records of a "Partition instances: [...]" list."""
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError("a list of PartitionHashRecord in brackets")
    records, at, body = [], 0, text[1:-1]
    while at < len(body):
        match = _RECORD.match(body, at)
        if match is None:
            raise ValueError(f"a PartitionHashRecord at character {at + 2}")
        primary, node, counter, state, size, part, ver = match.groups()
        records.append(
            Record(
                node=node,
                primary=primary == "true",
                state=RecordState(state),
                counter=counter,
                size=MOVING_SIZE if size is None else int(size),
                part_hash=int(part or 0),
                ver_hash=int(ver or 0),
            )
        )
        at = match.end() + 2 if body.startswith(", ", match.end()) else match.end()
    return records


def read_dump(path: Path) -> dict[tuple[str, int], list[Record]]:
    """Every partition's records in an idle_verify dump file, by (group, partition)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise TidemarkError(f"cannot read it: {error}", source=str(path)) from error
    if not any(line.startswith("The check procedure task was executed with") for line in lines[:3]):
        raise TidemarkError(
            "not an idle_verify dump", source=str(path), location="line 1", expected="Ignite's dump file"
        )
    partitions: dict[tuple[str, int], list[Record]] = {}
    for number, line in enumerate(lines, 1):
        if line.startswith("CompactFooter statistic"):
            break
        match = _KEY.fullmatch(line)
        if match is None:
            continue
        following = lines[number] if number < len(lines) else ""
        if not following.startswith("Partition instances: "):
            raise TidemarkError(
                "a partition without its instances", source=str(path), location=f"line {number + 1}"
            )
        try:
            records = parse_records(following.removeprefix("Partition instances: "))
        except ValueError as error:
            raise TidemarkError(
                "unreadable records", source=str(path), location=f"line {number + 1}", expected=str(error)
            ) from None
        partitions[(match.group(2), int(match.group(3)))] = dump_order(records)
    return partitions


def differences(report: AuditReport, dump: dict[tuple[str, int], list[Record]]) -> list[str]:
    """Where the audit's records and a dump's differ: partitions or copies only one has, or figures."""
    ours = {(p.group, p.partition): p.records for p in report.partitions if p.records}
    found = []
    for key in sorted(set(ours) | set(dump)):
        group, partition = key
        if key not in dump or key not in ours:
            found.append(
                f"group {group} partition {partition}: only in"
                f" {'the dump' if key in dump else 'the snapshot'}"
            )
            continue
        mine, theirs = {r.node: r for r in ours[key]}, {r.node: r for r in dump[key]}
        for node in sorted(set(mine) | set(theirs)):
            a, b = mine.get(node), theirs.get(node)
            if a != b:
                found.append(
                    f"group {group} partition {partition} node {node}: snapshot "
                    f"{record_text(a) if a else 'no copy'}, dump {record_text(b) if b else 'no copy'}"
                )
    return found
