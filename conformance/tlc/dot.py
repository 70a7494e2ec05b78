"""Streaming reader of TLC's state-graph dumps (-dump dot,actionlabels) into Parquet tables.

The dump is read line by line and written in chunks, so graphs larger than memory work. Every edge
line is kept: parallel edges (same source and target, different actions) and self-loops are real
transitions of the spec, which a graph library keyed on (src, dst) would silently drop.

Tables:
- states: fp (int64, TLC's fingerprint), initial (bool), state (ITF JSON text, canonical),
          action (the state's `action` variable as ITF JSON, null if the spec has none),
          digest (int64, `state_digest` of the state's text: what replay compares successors by)
- edges:  src (int64), dst (int64), label (the TLA+ action name TLC printed)
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.parse import TlaValueError, parse_state
from tidemark.conformance.tlc.values import canonical_json, canonical_text, state_digest, state_to_itf

STATES_SCHEMA = pa.schema(
    [
        ("fp", pa.int64()),
        ("initial", pa.bool_()),
        ("state", pa.string()),
        ("action", pa.string()),
        ("digest", pa.int64()),
    ]
)
# Bumped whenever the tables' layout changes: run directories holding an older layout are rebuilt.
GRAPH_FORMAT = 2
EDGES_SCHEMA = pa.schema([("src", pa.int64()), ("dst", pa.int64()), ("label", pa.string())])

# The label is the line's last quoted string: a greedy match backtracks only over the closing chars.
_STATE = re.compile(r'^(-?\d+) \[label="(.*)"(,style = filled)?\];?$')
_EDGE = re.compile(r'^(-?\d+) -> (-?\d+) \[label="([^"]*)"[^\]]*\];?$')
_ESCAPE = re.compile(r"\\(.)")
# Lines of the dot envelope that carry no state or edge (and the stuttering self-loops TLC draws dashed
# when the model checks liveness: no step to replay).
_ENVELOPE = re.compile(
    r'^(strict digraph \w+ \{|nodesep=[\d.]+;|subgraph \w+ \{|color="\w+";|\}|\{rank = same;.*\}|'
    r'-?\d+ -> -?\d+ \[style="dashed"\];|)$'
)


class GraphSummary(BaseModel):
    states: int
    edges: int
    initial_states: int
    self_loops: int
    states_without_action: int


def _unescape(label: str) -> str:
    return _ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), label)


class _ChunkedWriter:
    """Buffers rows and writes them to a Parquet file a chunk at a time."""

    def __init__(self, path: Path, schema: pa.Schema, chunk_rows: int) -> None:
        self._writer = pq.ParquetWriter(path, schema)
        self._schema = schema
        self._columns: list[list[object]] = [[] for _ in schema.names]
        self._chunk_rows = chunk_rows
        self.rows = 0

    def add(self, *row: object) -> None:
        for column, value in zip(self._columns, row, strict=True):
            column.append(value)
        self.rows += 1
        if len(self._columns[0]) >= self._chunk_rows:
            self.flush()

    def flush(self) -> None:
        if self._columns[0]:
            self._writer.write_table(pa.Table.from_arrays(self._columns, schema=self._schema))
            self._columns = [[] for _ in self._schema.names]

    def close(self) -> None:
        self.flush()
        self._writer.close()


class _StateTexts:
    """TLC state labels -> canonical ITF text of the state and of its `action`.

    A label is ``/\\ var = value`` lines (continuations indented; strings never hold a raw newline).
    Across a graph most variables repeat the same value text, so each ``var = value`` chunk is parsed
    and printed once; a label that does not split that way is parsed whole.
    """

    _LIMIT = 1 << 17

    def __init__(self) -> None:
        self._chunks: dict[str, tuple[str, str]] = {}  # "var = value" -> (JSON name, value's text)

    def __call__(self, label: str, source: str) -> tuple[str, str | None]:
        if not label.startswith("/\\ "):
            return self.whole(label, source)
        parts = []
        for chunk in label[3:].split("\n/\\ "):
            known = self._chunks.get(chunk)
            if known is None:
                [(name, value)] = parse_state(chunk, source=source).items()
                if len(self._chunks) >= self._LIMIT:
                    self._chunks.clear()
                known = self._chunks[chunk] = (json.dumps(name), canonical_text(value))
            parts.append(known)
        parts.sort()
        action = next((text for name, text in parts if name == '"action"'), None)
        return "{" + ",".join(f"{name}:{text}" for name, text in parts) + "}", action

    @staticmethod
    def whole(label: str, source: str) -> tuple[str, str | None]:
        itf = state_to_itf(parse_state(label, source=source))
        return canonical_json(itf), canonical_json(itf["action"]) if "action" in itf else None


def read_dot(lines: IO[str] | Iterator[str], *, source: str) -> Iterator[tuple[str, tuple[object, ...]]]:
    """Yield ("state", (fp, initial, state, action)) and ("edge", (src, dst, label)) from a dot dump.

    States and actions are canonical ITF JSON text: equal values have equal text.
    """
    state_texts = _StateTexts()
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        if (edge := _EDGE.match(line)) is not None:
            yield "edge", (int(edge.group(1)), int(edge.group(2)), _unescape(edge.group(3)))
        elif (state := _STATE.match(line)) is not None:
            label = _unescape(state.group(2))
            try:
                text, action = state_texts(label, source)
            except (TlaValueError, ValueError):
                # Read whole: a label that does not split into `var = value` chunks, and parse errors
                # located in the whole label.
                try:
                    text, action = _StateTexts.whole(label, source)
                except TlaValueError as error:
                    raise TidemarkError(
                        f"state label does not parse: {error.message}",
                        source=source,
                        location=f"line {number}",
                    ) from error
            yield "state", (int(state.group(1)), state.group(3) is not None, text, action)
        elif _ENVELOPE.match(line.strip()) is None:
            raise TidemarkError(
                f"unexpected line {line[:80]!r}",
                source=source,
                location=f"line {number}",
                expected="a state '<fp> [label=\"...\"]', an edge '<fp> -> <fp> [label=...]' or dot syntax",
            )


def dot_to_parquet(
    dot: Path, states_path: Path, edges_path: Path, *, chunk_rows: int = 50_000
) -> GraphSummary:
    """Convert a TLC dot dump into the states and edges Parquet tables, streaming.

    Files are written next to their targets and renamed at the end, so an error or interrupt
    never leaves a half-written table behind.
    """
    partial_states = states_path.with_name(states_path.name + ".partial")
    partial_edges = edges_path.with_name(edges_path.name + ".partial")
    states = _ChunkedWriter(partial_states, STATES_SCHEMA, chunk_rows)
    edges = _ChunkedWriter(partial_edges, EDGES_SCHEMA, chunk_rows)
    initial = self_loops = without_action = 0
    try:
        with dot.open(encoding="utf-8") as handle:
            for kind, row in read_dot(handle, source=str(dot)):
                if kind == "state":
                    states.add(*row, state_digest(str(row[2])))
                    initial += bool(row[1])
                    without_action += row[3] is None
                else:
                    edges.add(*row)
                    self_loops += row[0] == row[1]
        states.close()
        edges.close()
        if states.rows == 0:
            raise TidemarkError("the dump holds no states", source=str(dot), expected="a TLC -dump dot file")
        partial_states.replace(states_path)
        partial_edges.replace(edges_path)
    except BaseException:
        for writer in (states, edges):
            with contextlib.suppress(Exception):  # the original error matters more than a failing cleanup
                writer.close()
        partial_states.unlink(missing_ok=True)
        partial_edges.unlink(missing_ok=True)
        raise
    return GraphSummary(
        states=states.rows,
        edges=edges.rows,
        initial_states=initial,
        self_loops=self_loops,
        states_without_action=without_action,
    )
