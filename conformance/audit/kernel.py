"""The per-batch work of the audit: check a batch of snapshot rows, hash them as Ignite does, and sum them
per copy. Both engines (Spark's mapInArrow and the single-process reader) map this one function over
Arrow record batches, so a figure cannot depend on the engine.

`partials(batch, options)` returns one row per copy (group, partition, node) seen in the batch: its
per-copy columns as the copy's first row in the batch has them, its row and entry counts, and the sums of
its key + value hashes and of its version hashes (int64: a batch's sums are exact, the wrap to a Java int
happens once, on the total). A row that breaks the format yields instead one error row naming the row
(its file id and row number, columns `_file` and `_row` of the batch) and the column.

Hashing is vectorized with numpy over the Arrow buffers and agrees with tidemark.impl.idle_verify's scalar
definitions (tests/test_audit_kernel.py): Java's hashCode of int, long, string (UTF-16 code units) and
UUID keys, Arrays.hashCode of the value bytes, GridCacheVersion.hashCode of the versions.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from tidemark.impl.affinity import INT_MAX, INT_MIN, MAX_PARTITIONS, hash_string, hash_uuid
from tidemark.impl.idle_verify import COPY_STATES, NODE_ORDER_MAX, check_counter, parse_missed

# The columns a snapshot has (issue 18), the optional parts of an entry's version, and the row's place.
COPY_COLUMNS: Final = ("node", "group", "partition", "state", "primary", "lwm", "gaps", "hwm")
ENTRY_COLUMNS: Final = ("key", "value", "version")
VERSION_PARTS: Final = ("version_topology", "version_node")
PLACE: Final = ("_file", "_row")
KEY_TYPES: Final = ("int", "long", "string", "uuid")

PARTIAL_SCHEMA: Final = pa.schema(
    [
        ("group", pa.string()),
        ("partition", pa.int32()),
        ("node", pa.string()),
        ("state", pa.string()),
        ("primary", pa.bool_()),
        ("lwm", pa.int64()),
        ("gaps", pa.string()),
        ("hwm", pa.int64()),
        ("rows", pa.int64()),
        ("entries", pa.int64()),
        ("part_hash", pa.int64()),
        ("ver_hash", pa.int64()),
        ("error", pa.string()),
        ("error_column", pa.string()),
        ("error_file", pa.int64()),
        ("error_row", pa.int64()),
    ]
)
_SQL_TYPES: Final = {pa.string(): "string", pa.int32(): "int", pa.int64(): "bigint", pa.bool_(): "boolean"}
PARTIAL_DDL: Final = ", ".join(f"`{f.name}` {_SQL_TYPES[f.type]}" for f in PARTIAL_SCHEMA)

_POW31: Final = np.cumprod(np.full(1 << 16, 31, dtype=np.uint32), dtype=np.uint32)
_POW31[1:] = _POW31[:-1].copy()
_POW31[0] = 1  # _POW31[k] = 31^k mod 2^32


@dataclass(frozen=True)
class KernelOptions:
    """What a batch is checked and hashed with: the Java type of the keys and the group filter (Ignite's
    cache-name regexps: a group is audited when it fully matches one of `caches`, if any, and none of
    `exclude`)."""

    key_type: str
    caches: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def selects(self, group: str) -> bool:
        return _selects(group, self.caches, self.exclude)


@lru_cache(maxsize=4096)
def _selects(group: str, caches: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    included = not caches or any(re.fullmatch(p, group) for p in caches)
    return included and not any(re.fullmatch(p, group) for p in exclude)


class RowError(Exception):
    """A row breaks the snapshot's format: its position in the batch, the column and what is wrong."""

    def __init__(self, index: int, column: str, message: str) -> None:
        super().__init__(message)
        self.index, self.column, self.message = index, column, message


# --- Java hash codes over Arrow buffers --------------------------------------------------------------


def _plain(array: pa.Array) -> pa.Array:
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _segments(array: pa.Array) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """The offsets (n + 1, into `data`) and the data buffer of a string or binary array."""
    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    raw = np.frombuffer(array.buffers()[1], dtype=np.int64 if wide else np.int32)
    offsets: NDArray[np.int64] = raw[array.offset : array.offset + len(array) + 1].astype(np.int64)
    data_buffer = array.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return offsets, data


def polynomial_hash(offsets: NDArray[np.int64], units: NDArray[np.uint32], seed: int) -> NDArray[np.uint32]:
    """Java's h = seed; for each unit u: h = 31 * h + u (mod 2^32), per segment of `units`.

    Rows are bucketed by length and hashed column by column (Horner), so the work is a few numpy
    operations per byte position instead of a Python loop per row."""
    lengths = np.diff(offsets)
    out = np.empty(len(lengths), dtype=np.uint32)
    starts = offsets[:-1]
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        h = np.full(len(rows), seed, dtype=np.uint32)
        first = starts[rows]
        for j in range(int(length)):
            h = h * np.uint32(31) + units[first + j]
        out[rows] = h
    return out


def bytes_hashes(array: pa.Array) -> NDArray[np.uint32]:
    """Arrays.hashCode of every value of a binary array (nulls hash as empty)."""
    offsets, data = _segments(array)
    return polynomial_hash(offsets, data.view(np.int8).astype(np.uint32), 1)


def string_hashes(array: pa.Array) -> NDArray[np.uint32]:
    """String.hashCode of every value: over UTF-16 code units, which for ASCII text are its bytes; rows
    with other characters are hashed one by one (tidemark.impl.affinity.hash_string)."""
    offsets, data = _segments(array)
    out = polynomial_hash(offsets, data.astype(np.uint32), 0)
    high = data[offsets[0] : offsets[-1]] >= 0x80
    if high.any():
        per_row = np.add.reduceat(high, np.minimum(offsets[:-1] - offsets[0], len(high) - 1))
        lengths = np.diff(offsets)
        for i in np.flatnonzero((per_row > 0) & (lengths > 0)):
            out[i] = np.int32(hash_string(array[int(i)].as_py())).view(np.uint32)
    return out


def long_hashes(values: NDArray[np.int64]) -> NDArray[np.uint32]:
    """Long.hashCode: (int)(v ^ (v >>> 32))."""
    bits = values.view(np.uint64)
    return (bits ^ (bits >> np.uint64(32))).astype(np.uint32)


def _ints(array: pa.Array) -> NDArray[np.int64]:
    return np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def key_hashes(array: pa.Array, key_type: str, entry: NDArray[np.bool_]) -> NDArray[np.uint32]:
    """hashCode of every key as the Java object `key_type` says it is (KeyCacheObjectImpl.hashCode)."""
    if key_type == "string":
        return string_hashes(array)
    if key_type == "uuid":
        out = np.zeros(len(array), dtype=np.uint32)
        for i in np.flatnonzero(entry):
            text = array[int(i)].as_py()
            try:
                out[i] = np.int32(hash_uuid(uuid.UUID(text))).view(np.uint32)
            except ValueError:
                raise RowError(int(i), "key", f"{text!r} is not a UUID (--key-type uuid)") from None
        return out
    values = _ints(array)
    if key_type == "int":
        bad = entry & ((values < INT_MIN) | (values > INT_MAX))
        if bad.any():
            at = int(np.argmax(bad))
            raise RowError(at, "key", f"{values[at]} is outside the Java int range (--key-type int)")
        return values.astype(np.int32).view(np.uint32)
    return long_hashes(values)


def version_hashes(batch: pa.RecordBatch, entry: NDArray[np.bool_]) -> NDArray[np.uint32]:
    """GridCacheVersion.hashCode of every entry's version (order, topology version, node order)."""
    order = _ints(batch.column("version"))
    _at_least(order, entry, 0, "version")
    h = np.zeros(len(order), dtype=np.uint32)
    for name in VERSION_PARTS:
        part = _ints(batch.column(name)) if name in batch.schema.names else np.zeros(len(order), np.int64)
        _at_least(part, entry, 0, name)
        if name == "version_node" and (bad := entry & (part > NODE_ORDER_MAX)).any():
            i = int(np.argmax(bad))
            raise RowError(i, name, f"node order {part[i]} is above GridCacheVersion's {NODE_ORDER_MAX}")
        if name == "version_topology" and (bad := entry & (part > INT_MAX)).any():
            i = int(np.argmax(bad))
            raise RowError(i, name, f"topology version {part[i]} is beyond a Java int")
        h = h * np.uint32(31) + part.astype(np.uint32)
    return h * np.uint32(31) + long_hashes(order)


# --- checks ------------------------------------------------------------------------------------------


def _at_least(values: NDArray[np.int64], rows: NDArray[np.bool_], low: int, column: str) -> None:
    bad = rows & (values < low)
    if bad.any():
        i = int(np.argmax(bad))
        raise RowError(i, column, f"{values[i]} is below {low}")


def _first_null(batch: pa.RecordBatch, columns: tuple[str, ...]) -> None:
    for name in columns:
        column = batch.column(name)
        if column.null_count:
            i = int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
            raise RowError(i, name, "is empty (null)")


@lru_cache(maxsize=65536)
def counter_problem(lwm: int, gaps: str, hwm: int) -> tuple[str, str] | None:
    """(column, problem) if the copy's counter columns are not a counter state Ignite prints."""
    try:
        ranges = parse_missed(gaps)
    except ValueError as error:
        return "gaps", str(error)
    try:
        check_counter(lwm, ranges, hwm)
    except ValueError as error:
        return ("hwm" if "hwm" in str(error) else "gaps"), str(error)
    return None


def _entries(batch: pa.RecordBatch) -> NDArray[np.bool_]:
    """Rows that are entries; a copy with none has one row with key, value and version all null."""
    nulls = [batch.column(name).is_null().to_numpy(zero_copy_only=False) for name in ENTRY_COLUMNS]
    for name, null in zip(ENTRY_COLUMNS[1:], nulls[1:], strict=True):
        if (odd := null != nulls[0]).any():
            i = int(np.argmax(odd))
            raise RowError(
                i,
                name if null[i] else "key",
                "key, value and version must be all null (a copy without entries) or all given",
            )
    entry: NDArray[np.bool_] = ~nulls[0]
    return entry


# --- the batch's partial sums ------------------------------------------------------------------------


def _codes(array: pa.Array) -> tuple[NDArray[np.int64], pa.Array]:
    encoded = pc.dictionary_encode(_plain(array))
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64), encoded.dictionary


def _sum(inverse: NDArray[np.int64], values: NDArray[Any], copies: int) -> NDArray[np.int64]:
    # float64 sums are exact here: at most 2^21 rows of |value| < 2^31 per batch.
    return np.bincount(inverse, weights=values, minlength=copies).astype(np.int64)


def _selected(batch: pa.RecordBatch, options: KernelOptions) -> pa.RecordBatch:
    if not options.caches and not options.exclude:
        return batch
    codes, groups = _codes(batch.column("group"))
    keep = np.array([options.selects(g) for g in groups.to_pylist()], dtype=bool)
    return batch.filter(pa.array(keep[codes])) if not keep.all() else batch


def _check_values(batch: pa.RecordBatch) -> None:
    partition = _ints(batch.column("partition"))
    if (bad := (partition < 0) | (partition >= MAX_PARTITIONS)).any():
        i = int(np.argmax(bad))
        raise RowError(i, "partition", f"{partition[i]} is not a partition id 0..{MAX_PARTITIONS - 1}")
    states = _plain(batch.column("state"))
    if not (known := pc.is_in(states, value_set=pa.array(COPY_STATES))).to_numpy(zero_copy_only=False).all():
        i = int(np.argmax(~known.to_numpy(zero_copy_only=False)))
        raise RowError(i, "state", f"unknown state {states[i].as_py()!r} (one of {', '.join(COPY_STATES)})")


def partials(batch: pa.RecordBatch, options: KernelOptions) -> pa.RecordBatch:
    """One row per copy in `batch` (see the module docstring), or one error row."""
    try:
        return _partials(batch, options)
    except RowError as error:
        return pa.RecordBatch.from_pylist(
            [
                {
                    "error": error.message,
                    "error_column": error.column,
                    "error_file": batch.column("_file")[error.index].as_py(),
                    "error_row": batch.column("_row")[error.index].as_py(),
                }
            ],
            schema=PARTIAL_SCHEMA,
        )


def _partials(batch: pa.RecordBatch, options: KernelOptions) -> pa.RecordBatch:
    _first_null(batch, COPY_COLUMNS)
    batch = _selected(batch, options)
    if batch.num_rows == 0:
        return pa.RecordBatch.from_pylist([], schema=PARTIAL_SCHEMA)
    _check_values(batch)
    entry = _entries(batch)
    lwm, hwm = _ints(batch.column("lwm")), _ints(batch.column("hwm"))
    _at_least(lwm, np.ones(len(lwm), bool), 0, "lwm")
    # Which copy each row belongs to: codes of group and node, with the partition, in one int64.
    group_codes, _ = _codes(batch.column("group"))
    node_codes, nodes = _codes(batch.column("node"))
    partition = _ints(batch.column("partition"))
    copy_key = (group_codes * MAX_PARTITIONS + partition) * len(nodes) + node_codes
    copy_codes, _ = _codes(pa.array(copy_key))
    copies = int(copy_codes.max()) + 1
    # A copy's first row in the batch: dictionary codes number values in order of first appearance.
    first = np.flatnonzero(np.diff(np.maximum.accumulate(copy_codes), prepend=-1) > 0)
    state_codes, _ = _codes(batch.column("state"))
    gaps_codes, _ = _codes(batch.column("gaps"))
    primary = np.asarray(batch.column("primary").to_numpy(zero_copy_only=False), dtype=bool)
    for name, values in (
        ("state", state_codes),
        ("primary", primary),
        ("lwm", lwm),
        ("gaps", gaps_codes),
        ("hwm", hwm),
    ):
        if (odd := values != values[first][copy_codes]).any():
            i = int(np.argmax(odd))
            other = batch.column("_row")[int(first[copy_codes[i]])].as_py()
            raise RowError(
                i,
                name,
                f"differs from row {other} of the same copy (a copy's rows share its"
                " state, primary flag and counter)",
            )
    gaps = _plain(batch.column("gaps"))
    for row in first.tolist():
        problem = counter_problem(int(lwm[row]), gaps[row].as_py(), int(hwm[row]))
        if problem is not None:
            raise RowError(row, *problem)
    keys = key_hashes(_plain(batch.column("key")), options.key_type, entry)
    hashes = keys.view(np.int32).astype(np.int64) + bytes_hashes(batch.column("value")).view(np.int32)
    versions = version_hashes(batch, entry).view(np.int32).astype(np.float64)
    weight = entry.astype(np.float64)
    taken = batch.take(pa.array(first))
    return pa.RecordBatch.from_arrays(
        [
            _plain(taken.column("group")).cast(pa.string()),
            pa.array(partition[first], pa.int32()),
            _plain(taken.column("node")).cast(pa.string()),
            _plain(taken.column("state")).cast(pa.string()),
            pa.array(primary[first]),
            pa.array(lwm[first]),
            gaps.take(pa.array(first)).cast(pa.string()),
            pa.array(hwm[first]),
            pa.array(np.bincount(copy_codes, minlength=copies).astype(np.int64)),
            pa.array(_sum(copy_codes, weight, copies)),
            pa.array(_sum(copy_codes, hashes.astype(np.float64) * weight, copies)),
            pa.array(_sum(copy_codes, versions * weight, copies)),
            *(pa.nulls(copies, f.type) for f in list(PARTIAL_SCHEMA)[12:]),
        ],
        schema=PARTIAL_SCHEMA,
    )
