"""A snapshot: its files, their columns, and where a row is (for errors that name it).

A snapshot is one row per entry per copy (docs/audit.md): a Parquet file, a directory of Parquet files as
Spark writes it (files whose names start with "_" or "." are not data), or a CSV file with a header.
Every Parquet file's schema is read (its footer only) before any work, so a missing or mistyped column is
refused naming the file; the values are checked row by row in conformance/audit/kernel.py.

CSV has no types: its cells are read as text and converted here, a bad cell named by its line. Values
are hexadecimal there ("48656c6c6f"), and the keys' Java type must be given (--key-type).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from tidemark.conformance.audit.kernel import COPY_COLUMNS, ENTRY_COLUMNS, KEY_TYPES, VERSION_PARTS
from tidemark.conformance.errors import TidemarkError

BATCH_ROWS: Final = 1 << 16

_TEXT = "text (string)"
_INTEGER = "an integer"
_EXPECTED: Final = {
    "node": _TEXT,
    "group": _TEXT,
    "partition": _INTEGER,
    "state": _TEXT,
    "primary": "a boolean",
    "lwm": _INTEGER,
    "gaps": _TEXT,
    "hwm": _INTEGER,
    "key": "text (string) or an integer",
    "value": "binary",
    "version": _INTEGER,
    "version_topology": _INTEGER,
    "version_node": _INTEGER,
}


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return _is_text(t.value_type)
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _fits(name: str, t: pa.DataType) -> bool:
    if name == "key":
        return _is_text(t) or pa.types.is_integer(t)
    if name == "value":
        return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t))
    if name == "primary":
        return bool(pa.types.is_boolean(t))
    return _is_text(t) if _EXPECTED[name] == _TEXT else bool(pa.types.is_integer(t))


@dataclass(frozen=True)
class Snapshot:
    """A snapshot's files (sorted), its format, the Java type of its keys and the optional columns it has."""

    path: Path
    kind: str  # "parquet" or "csv"
    files: tuple[Path, ...]
    key_type: str
    optional: tuple[str, ...]

    @property
    def columns(self) -> list[str]:
        return [*COPY_COLUMNS, *ENTRY_COLUMNS, *self.optional]

    def where(self, file: int, row: int) -> tuple[str, str]:
        """(file, place in it) of row `row` (from 0) of file number `file`: its Parquet row group, or its
        CSV line (the header is line 1)."""
        path = self.files[file]
        if self.kind == "csv":
            return str(path), f"line {row + 2}"
        meta = pq.ParquetFile(path).metadata
        start = 0
        for group in range(meta.num_row_groups):
            if row < start + meta.row_group(group).num_rows:
                return str(path), f"row group {group}, row {row} (from 0)"
            start += meta.row_group(group).num_rows
        return str(path), f"row {row} (from 0)"


def _parquet_files(path: Path) -> tuple[Path, ...]:
    if path.is_file():
        return (path,)
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts)
    )
    if not files:
        raise TidemarkError("holds no data files", source=str(path), expected="Parquet files or a CSV file")
    return tuple(files)


def _key_type(kind: str, key: pa.DataType | None, given: str | None, source: str) -> str:
    if kind == "csv":
        if given is None:
            raise TidemarkError(
                "a CSV snapshot's keys have no Java type",
                source="--key-type",
                expected="int, long, string or uuid",
            )
        return given
    assert key is not None
    if pa.types.is_integer(key):
        if given in ("string", "uuid"):
            raise TidemarkError(
                f"column key holds integers, not {given}s", source=source, expected="--key-type int or long"
            )
        return given or ("int" if key.bit_width <= 32 else "long")
    if given in ("int", "long"):
        raise TidemarkError(
            f"column key holds text, not {given}s", source=source, expected="--key-type string or uuid"
        )
    return given or "string"


def open_snapshot(path: Path, key_type: str | None = None) -> Snapshot:
    """The snapshot at `path`, its files' columns checked; TidemarkError (exit 2) naming the file if not."""
    if not path.exists():
        raise TidemarkError("no such file or directory", source=str(path), expected="a snapshot")
    assert key_type is None or key_type in KEY_TYPES
    if path.is_file() and path.suffix.lower() == ".csv":
        header = _csv_header(path)
        _require(header, str(path))
        optional = tuple(c for c in VERSION_PARTS if c in header)
        return Snapshot(path, "csv", (path,), _key_type("csv", None, key_type, str(path)), optional)
    files = _parquet_files(path)
    types: dict[str, tuple[pa.DataType, Path]] = {}
    present: set[str] = set()
    for file in files:
        try:
            schema = pq.read_schema(file)
        except (pa.ArrowInvalid, OSError) as error:
            raise TidemarkError(f"not a Parquet file: {error}", source=str(file)) from error
        _require(schema.names, str(file))
        for name in (*COPY_COLUMNS, *ENTRY_COLUMNS, *VERSION_PARTS):
            if name not in schema.names:
                continue
            present.add(name)
            t = schema.field(name).type
            if not _fits(name, t):
                raise TidemarkError(f"column {name} is {t}", source=str(file), expected=_EXPECTED[name])
            if name in types and types[name][0] != t:
                raise TidemarkError(
                    f"column {name} is {t}, but {types[name][0]} in {types[name][1]}",
                    source=str(file),
                    expected="one type per column across a snapshot's files",
                )
            types.setdefault(name, (t, file))
    optional = tuple(c for c in VERSION_PARTS if c in present)
    for name in optional:
        missing = [f for f in files if name not in pq.read_schema(f).names]
        if missing:
            raise TidemarkError(
                f"column {name} is missing", source=str(missing[0]), expected="in every file or none"
            )
    return Snapshot(
        path, "parquet", files, _key_type("parquet", types["key"][0], key_type, str(files[0])), optional
    )


def _require(names: list[str], source: str) -> None:
    missing = [c for c in (*COPY_COLUMNS, *ENTRY_COLUMNS) if c not in names]
    if missing:
        raise TidemarkError(
            f"column{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing",
            source=source,
            expected=f"the columns {', '.join((*COPY_COLUMNS, *ENTRY_COLUMNS))}",
        )


def _csv_header(path: Path) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError) as error:
        raise TidemarkError(f"cannot read it: {error}", source=str(path)) from error


# --- reading in this process -------------------------------------------------------------------------


class CellError(Exception):
    """A CSV cell that is not of its column's type: its row (from 0), its column and what is wrong."""

    def __init__(self, row: int, column: str, message: str) -> None:
        super().__init__(message)
        self.row, self.column, self.message = row, column, message


Unit = tuple[int, int, int]  # (file number, row group or -1 for a whole CSV file, the unit's first row)


def units(snapshot: Snapshot) -> list[Unit]:
    """The pieces the audit's tasks read: each Parquet row group, each CSV file whole."""
    if snapshot.kind == "csv":
        return [(number, -1, 0) for number in range(len(snapshot.files))]
    found = []
    for number, file in enumerate(snapshot.files):
        meta, first = pq.ParquetFile(file).metadata, 0
        for group in range(meta.num_row_groups):
            found.append((number, group, first))
            first += meta.row_group(group).num_rows
    return found


def unit_batches(snapshot: Snapshot, unit: Unit, rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """A unit's rows as record batches with their place: `_file` (the file's number) and `_row` (the
    row's number in its file, from 0); CellError for a CSV cell of the wrong type."""
    number, group, done = unit
    file = snapshot.files[number]
    if snapshot.kind == "parquet":
        batches = pq.ParquetFile(file).iter_batches(
            batch_size=rows, row_groups=[group], columns=snapshot.columns
        )
    else:
        batches = _csv_batches(snapshot, file)
    for batch in batches:
        place = [
            pa.array(np.full(batch.num_rows, number, np.int64)),
            pa.array(np.arange(done, done + batch.num_rows)),
        ]
        yield pa.RecordBatch.from_arrays([*batch.columns, *place], [*batch.schema.names, "_file", "_row"])
        done += batch.num_rows


def _csv_batches(snapshot: Snapshot, file: Path) -> Iterator[pa.RecordBatch]:
    options = pcsv.ConvertOptions(
        column_types=dict.fromkeys(snapshot.columns, pa.string()),
        include_columns=snapshot.columns,
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,  # "" is an empty key; an empty cell is null
    )
    done = 0
    try:
        for batch in pcsv.open_csv(file, convert_options=options):
            yield _typed(snapshot, batch, done)
            done += batch.num_rows
    except pa.ArrowInvalid as error:
        raise CellError(done, "(all)", f"not a CSV table: {error}") from error


_INT = r"^-?[0-9]+$"
_BOOLEANS: Final = pa.array(["true", "false", "True", "False", "TRUE", "FALSE", "1", "0"])


def _bad(done: int, mask: pa.Array, column: str, what: str, cells: pa.Array) -> None:
    valid = np.asarray(mask.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)
    if not valid.all():
        i = int(np.argmax(~valid))
        raise CellError(done + i, column, f"{cells[i].as_py()!r} is not {what}")


def _typed(snapshot: Snapshot, batch: pa.RecordBatch, done: int) -> pa.RecordBatch:
    """A CSV batch of text cells converted to the snapshot's types (a bad cell named by its line)."""
    columns = []
    for name in snapshot.columns:
        cells = batch.column(name)
        if name == "value":
            columns.append(_hex(done, cells))
        elif name == "primary":
            _bad(done, pc.is_in(cells, value_set=_BOOLEANS), name, "true or false", cells)
            columns.append(pc.is_in(pc.utf8_lower(cells), value_set=pa.array(["true", "1"])).cast(pa.bool_()))
            columns[-1] = pc.if_else(cells.is_null(), pa.scalar(None, pa.bool_()), columns[-1])
        elif _EXPECTED[name] == _INTEGER or (name == "key" and snapshot.key_type in ("int", "long")):
            _bad(done, pc.match_substring_regex(cells, _INT), name, "an integer", cells)
            try:
                columns.append(cells.cast(pa.int64()))
            except pa.ArrowInvalid:  # beyond 64 bits: the first such cell named
                fits = [c is None or -(1 << 63) <= int(c) < (1 << 63) for c in cells.to_pylist()]
                _bad(done, pa.array(fits), name, "a 64-bit integer", cells)
                raise
        else:
            columns.append(cells)
    return pa.RecordBatch.from_arrays(columns, snapshot.columns)


_NIBBLES = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLES[_c] = _i
    _NIBBLES[ord(chr(_c).upper())] = _i


def _hex(done: int, cells: pa.Array) -> pa.Array:
    """Hexadecimal text to bytes, vectorized; a cell of odd length or with another character is named."""
    cells = cells.cast(pa.string())
    offsets = np.frombuffer(cells.buffers()[1], dtype=np.int32)[cells.offset : cells.offset + len(cells) + 1]
    data_buffer = cells.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    text = data[offsets[0] : offsets[-1]]
    nibbles = _NIBBLES[text]
    lengths = np.diff(offsets)
    bad_char = np.zeros(len(cells), dtype=bool)
    if (nibbles == 255).any():
        rows = np.repeat(np.arange(len(cells)), lengths)
        bad_char[rows[nibbles == 255]] = True
    _bad(done, pa.array(~(bad_char | (lengths % 2 == 1))), "value", "hexadecimal bytes", cells)
    raw = (nibbles[0::2] << 4) | nibbles[1::2]
    new_offsets = ((offsets - offsets[0]) // 2).astype(np.int32)
    validity = cells.buffers()[0]
    return pa.BinaryArray.from_buffers(
        pa.binary(),
        len(cells),
        [validity, pa.py_buffer(new_offsets.tobytes()), pa.py_buffer(raw.tobytes())],
        cells.null_count,
    )
