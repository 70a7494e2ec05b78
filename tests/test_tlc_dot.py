"""Tests for tidemark.conformance.tlc.dot: TLC's -dump dot files read into states and edges (Parquet).

Most dumps here are handmade fakes in TLC 2.15's format (FAKE_*); one test dumps a real state graph.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_values import STATES

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.dot import (
    EDGES_SCHEMA,
    STATES_SCHEMA,
    GraphSummary,
    _StateTexts,
    dot_to_parquet,
    read_dot,
)
from tidemark.conformance.tlc.output import parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.tlc.values import Value, format_state, state_digest

FIXTURES = Path(__file__).parent / "fixtures" / "tlc"

# A fake dump shaped like TLC's: two initial states (",style = filled"), parallel edges 1 -> 2 (different
# actions, and the same action twice), a self-loop, a state label with an escaped quote, backslash and
# newline inside a string, the envelope and the `{rank = same; ...}` lines, no newline after the last `}`.
FAKE_DUMP = r"""strict digraph DiskGraph {
nodesep=0.35;
subgraph cluster_graph {
color="white";
1 [label="/\\ msg = \"a\\\"b\\\\c\\nd\"\n/\\ x = 0",style = filled]
-5 [label="/\\ msg = \"\"\n/\\ x = 1",style = filled]
1 -> -5 [label="Inc",color="black",fontcolor="black"];
1 -> -5 [label="Rotate",color="black",fontcolor="black"];
1 -> -5 [label="Pick",color="black",fontcolor="black"];
1 -> -5 [label="Pick",color="black",fontcolor="black"];
-5 -> -5 [label="Stay",color="black",fontcolor="black"];
-5 -> 9223372036854775807 [label="Inc",color="black",fontcolor="black"];
9223372036854775807 [label="/\\ msg = \"end\"\n/\\ x = 2"];
{rank = same; 1;-5;}
{rank = same; 9223372036854775807;}
}
}"""

STATE_1 = {"msg": 'a"b\\c\nd', "x": 0}
STATE_MINUS_5 = {"msg": "", "x": 1}
STATE_MAX = {"msg": "end", "x": 2}

# A fake dump of a spec that records its action in a variable `action`.
FAKE_DUMP_WITH_ACTION = """strict digraph DiskGraph {
7 [label="/\\\\ action = [name |-> \\"Init\\"]\\n/\\\\ x = 0",style = filled]
7 -> 8 [label="Step",color="black",fontcolor="black"];
8 [label="/\\\\ action = [name |-> \\"Step\\", by |-> 2]\\n/\\\\ x = 2"];
}
"""


def convert(
    tmp_path: Path, text: str, **kwargs: int
) -> tuple[GraphSummary, list[dict[str, object]], list[dict[str, object]]]:
    dot = tmp_path / "graph.dot"
    dot.write_text(text, encoding="utf-8")
    summary = dot_to_parquet(dot, tmp_path / "states.parquet", tmp_path / "edges.parquet", **kwargs)
    states = pq.read_table(tmp_path / "states.parquet")
    edges = pq.read_table(tmp_path / "edges.parquet")
    assert states.schema.equals(STATES_SCHEMA)
    assert edges.schema.equals(EDGES_SCHEMA)
    return summary, states.to_pylist(), edges.to_pylist()


def written_files(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in tmp_path.iterdir() if path.name != "graph.dot")


def test_read_dot_yields_states_and_edges_in_file_order() -> None:
    rows = list(read_dot(iter(FAKE_DUMP.splitlines(keepends=True)), source="fake"))
    assert [kind for kind, _ in rows] == [
        "state",
        "state",
        "edge",
        "edge",
        "edge",
        "edge",
        "edge",
        "edge",
        "state",
    ]
    _, (fp, initial, state, action) = rows[0]
    assert (fp, initial, action) == (1, True, None)
    assert json.loads(str(state)) == STATE_1
    assert state == '{"msg":"a\\"b\\\\c\\nd","x":0}'  # canonical JSON text
    assert rows[2] == ("edge", (1, -5, "Inc"))
    assert rows[-1][1][:2] == (9223372036854775807, False)


def test_dot_to_parquet_keeps_parallel_edges_and_self_loops(tmp_path: Path) -> None:
    summary, states, edges = convert(tmp_path, FAKE_DUMP)
    assert summary == GraphSummary(states=3, edges=6, initial_states=2, self_loops=1, states_without_action=3)
    assert [(row["fp"], row["initial"], json.loads(str(row["state"])), row["action"]) for row in states] == [
        (1, True, STATE_1, None),
        (-5, True, STATE_MINUS_5, None),
        (9223372036854775807, False, STATE_MAX, None),
    ]
    # Replay compares successors by digest: the digest of each state's own canonical text.
    assert [row["digest"] for row in states] == [state_digest(str(row["state"])) for row in states]
    assert len({row["digest"] for row in states}) == 3
    assert [(row["src"], row["dst"], row["label"]) for row in edges] == [
        (1, -5, "Inc"),
        (1, -5, "Rotate"),
        (1, -5, "Pick"),
        (1, -5, "Pick"),
        (-5, -5, "Stay"),
        (-5, 9223372036854775807, "Inc"),
    ]
    assert written_files(tmp_path) == ["edges.parquet", "states.parquet"]


def test_the_action_variable_becomes_the_action_column(tmp_path: Path) -> None:
    summary, states, _ = convert(tmp_path, FAKE_DUMP_WITH_ACTION)
    assert summary.states_without_action == 0
    assert [row["action"] for row in states] == ['{"name":"Init"}', '{"by":2,"name":"Step"}']
    assert json.loads(str(states[1]["state"])) == {"action": {"by": 2, "name": "Step"}, "x": 2}


@pytest.mark.parametrize("chunk_rows", [1, 2, 50_000])
def test_chunking_does_not_change_the_tables(tmp_path: Path, chunk_rows: int) -> None:
    summary, states, edges = convert(tmp_path, FAKE_DUMP, chunk_rows=chunk_rows)
    assert (summary.states, summary.edges) == (3, 6)
    assert [row["fp"] for row in states] == [1, -5, 9223372036854775807]
    assert [row["label"] for row in edges] == ["Inc", "Rotate", "Pick", "Pick", "Stay", "Inc"]


# ---------------------------------------------------------------------------------------------------------
# Malformed dumps: an error naming the line, and nothing left behind.


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("this is not dot", "unexpected line 'this is not dot'"),
        ('1 -> [label="Inc"];', "unexpected line"),
        ('12 [label="/\\\\ x = "]', "state label does not parse"),
        ('12 [label="/\\\\ x = {1, 2"]', "state label does not parse"),
        ('abc [label="x = 1"]', "unexpected line"),
    ],
)
@pytest.mark.parametrize("chunk_rows", [1, 50_000])
def test_malformed_line_is_an_error_with_its_number(
    tmp_path: Path, bad_line: str, message: str, chunk_rows: int
) -> None:
    lines = FAKE_DUMP.splitlines()
    lines.insert(8, bad_line)  # after two states and two edges (written already when chunk_rows is 1)
    with pytest.raises(TidemarkError) as caught:
        convert(tmp_path, "\n".join(lines), chunk_rows=chunk_rows)
    error = caught.value
    assert error.location == "line 9"
    assert error.source == str(tmp_path / "graph.dot")
    assert message in error.message
    assert written_files(tmp_path) == []


def test_error_keeps_tables_from_an_earlier_run(tmp_path: Path) -> None:
    convert(tmp_path, FAKE_DUMP)
    before = pq.read_table(tmp_path / "edges.parquet").num_rows
    with pytest.raises(TidemarkError):
        convert(tmp_path, FAKE_DUMP + "\ngarbage\n")
    assert written_files(tmp_path) == ["edges.parquet", "states.parquet"]
    assert pq.read_table(tmp_path / "edges.parquet").num_rows == before


def test_empty_dump_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TidemarkError) as caught:
        convert(tmp_path, "strict digraph DiskGraph {\nnodesep=0.35;\n}\n")
    assert caught.value.message == "the dump holds no states"


def test_empty_dump_leaves_no_tables(tmp_path: Path) -> None:
    with pytest.raises(TidemarkError):
        convert(tmp_path, "strict digraph DiskGraph {\nnodesep=0.35;\n}\n")
    assert written_files(tmp_path) == []


def test_missing_dump_leaves_no_partial_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        dot_to_parquet(tmp_path / "nope.dot", tmp_path / "states.parquet", tmp_path / "edges.parquet")
    assert sorted(path.name for path in tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------------------
# A real dump.


@pytest.mark.tlc
def test_real_dump_of_a_tiny_spec(tmp_path: Path) -> None:
    dot = tmp_path / "parallel.dot"
    run = run_tlc(FIXTURES / "Parallel.tla", options=TlcOptions(dump_dot=dot, heap="256m", timeout=60))
    result = parse_output(run)
    assert result.outcome == "ok", run.output
    initial = re.search(r"Finished computing initial states: (\d+) distinct states generated", run.output)
    assert initial is not None
    initial_states = int(initial.group(1))
    assert (result.distinct_states, result.generated_states, initial_states) == (3, 17, 2)
    assert result.generated_states is not None

    summary = dot_to_parquet(dot, tmp_path / "states.parquet", tmp_path / "edges.parquet")
    assert summary.states == result.distinct_states
    assert summary.initial_states == initial_states
    # Every successor TLC generated is one edge line (parallel edges, repeated ones and self-loops
    # included): edges = states generated - initial states generated.
    assert summary.edges == result.generated_states - initial_states
    assert summary.self_loops == 3  # Stay, in each state
    assert summary.states_without_action == 3

    states = pq.read_table(tmp_path / "states.parquet").to_pylist()
    edges = pq.read_table(tmp_path / "edges.parquet").to_pylist()
    assert sorted(json.loads(str(row["state"]))["x"] for row in states) == [0, 1, 2]
    assert sorted(json.loads(str(row["state"]))["x"] for row in states if row["initial"]) == [0, 1]
    x_of = {row["fp"]: json.loads(str(row["state"]))["x"] for row in states}
    transitions = sorted((x_of[row["src"]], x_of[row["dst"]], row["label"]) for row in edges)
    expected = []
    for x in (0, 1, 2):
        successor = (x + 1) % 3
        expected += [(x, successor, "Inc"), (x, successor, "Rotate"), (x, successor, "Pick")]
        expected += [(x, successor, "Pick"), (x, x, "Stay")]
    assert transitions == sorted(expected)


@given(st.lists(STATES, min_size=1, max_size=4))
def test_chunk_memo_gives_the_whole_parse_text(states: list[dict[str, Value]]) -> None:
    texts = _StateTexts()
    for state in [*states, *states]:  # the second round is answered from the memo
        label = format_state(state)
        assert texts(label, "fake") == _StateTexts.whole(label, "fake")
