"""Tests for conformance.tlc.values: parsing TLC's printed values and states, printing, ordering and ITF."""

from __future__ import annotations

import json
import pickle
import random
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc import parse, values
from tidemark.conformance.tlc.parse import TlaValueError, parse_state, parse_value
from tidemark.conformance.tlc.values import (
    Function,
    ModelValue,
    Record,
    Value,
    canonical_json,
    canonical_state_json,
    canonical_text,
    format_state,
    format_value,
    from_itf,
    make_function,
    state_from_itf,
    state_to_itf,
    to_itf,
    value_sort_key,
)

EXAMPLE_STATE = (
    '/\\ action = [name |-> "Commit", copy |-> "b", start |-> 2, delta |-> 1]\n'
    '/\\ counter = ("b" :> [lwm |-> 1, hwm |-> 0, items |-> <<<<3, 1>>>>, first |-> TRUE] @@ '
    '"p" :> [lwm |-> 3, hwm |-> 5, items |-> <<>>, first |-> FALSE])\n'
    '/\\ pending = ("b" :> {<<4, 1>>} @@ "p" :> {})\n'
    '/\\ done = ("b" :> {1, 4} @@ "p" :> {1, 2, 3})'
)


def same(a: Value, b: Value) -> bool:
    """Strict equality: Python's == has 1 == TRUE, value_sort_key tags each value with its kind."""
    return value_sort_key(a) == value_sort_key(b)


# --- parsing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("-3", -3),
        ("0", 0),
        ("TRUE", True),
        ("FALSE", False),
        ('"Commit"', "Commit"),
        ('""', ""),
        ("s1", ModelValue("s1")),
        ("NoNode", ModelValue("NoNode")),
        ("1a", ModelValue("1a")),
        ("<<>>", ()),
        ('<<1, "a", TRUE>>', (1, "a", True)),
        ("<<<<3, 1>>>>", ((3, 1),)),
        ("{}", frozenset()),
        ("{3, 1, 2}", frozenset({1, 2, 3})),
        ("{<<4, 1>>, <<>>}", frozenset({(4, 1), ()})),
        ("1..3", frozenset({1, 2, 3})),
        ("-1..1", frozenset({-1, 0, 1})),
        ("3..1", frozenset()),
        ("[a |-> 1, b |-> <<>>]", Record(a=1, b=())),
        ("[]", ()),
        ("(s1 :> 1 @@ s2 :> {})", Function({ModelValue("s1"): 1, ModelValue("s2"): frozenset()})),
        ('(2 :> "x")', Function({2: "x"})),
        ("(<<1, 2>> :> TRUE @@ <<3>> :> FALSE)", Function({(1, 2): True, (3,): False})),
    ],
)
def test_parse_value_reads_each_construct(text: str, expected: Value) -> None:
    parsed = parse_value(text)
    assert parsed == expected
    assert same(parsed, expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # How TLC prints a function depends on its domain, so the parser picks the same representation.
        ('("b" :> 1 @@ "a" :> 2)', Record(a=2, b=1)),
        ('(1 :> "x" @@ 2 :> "y")', ("x", "y")),
        ('(2 :> "y" @@ 1 :> "x")', ("x", "y")),
        ('("a b" :> 1)', Function({"a b": 1})),
        ('("WF_x" :> 1)', Function({"WF_x": 1})),
        ('("TRUE" :> 1)', Record(TRUE=1)),
    ],
)
def test_functions_take_the_representation_tlc_prints(text: str, expected: Value) -> None:
    parsed = parse_value(text)
    assert type(parsed) is type(expected)
    assert parsed == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r'"a\"b"', 'a"b'),
        (r'"back\\slash"', "back\\slash"),
        (r'"line\nbreak\ttab\rcr\fff"', "line\nbreak\ttab\rcr\fff"),
        (r'"kept \q literally"', "kept \\q literally"),
        ('"a, b [c] {d} (e) <<f>>"', "a, b [c] {d} (e) <<f>>"),
        ('"  spaced  "', "  spaced  "),
        ('"|-> :> @@ /\\\\ ="', "|-> :> @@ /\\ ="),
    ],
)
def test_strings_unescape_and_keep_punctuation_and_spaces(text: str, expected: str) -> None:
    assert parse_value(text) == expected


def test_tokens_may_be_glued_or_spread_over_lines() -> None:
    glued = parse_value('[a|->1,b|-><<2,3>>,c|->(s1:>"x"@@s2:>{})]')
    spread = parse_value(
        '[ a\n   |->\n 1 ,\n\tb |-> <<\n 2\n ,\n 3 >> ,\n c |-> ( s1 :>\n "x" @@ s2 :> { } ) ]\n'
    )
    expected = Record(a=1, b=(2, 3), c=Function({ModelValue("s1"): "x", ModelValue("s2"): frozenset()}))
    assert glued == expected
    assert spread == expected
    assert parse_value("1 .. 3") == frozenset({1, 2, 3})


def test_parse_state_reads_the_example_state() -> None:
    state = parse_state(EXAMPLE_STATE)
    assert list(state) == ["action", "counter", "pending", "done"]
    assert state["action"] == Record(name="Commit", copy="b", start=2, delta=1)
    assert state["counter"] == Record(
        b=Record(lwm=1, hwm=0, items=((3, 1),), first=True),
        p=Record(lwm=3, hwm=5, items=(), first=False),
    )
    assert state["pending"] == Record(b=frozenset({(4, 1)}), p=frozenset())
    assert state["done"] == Record(b=frozenset({1, 4}), p=frozenset({1, 2, 3}))
    counter = state["counter"]
    assert isinstance(counter, Record)
    copy_b = counter["b"]
    assert isinstance(copy_b, Record)
    assert copy_b["first"] is True


def test_parse_state_reads_wrapped_values_and_one_variable_specs() -> None:
    wrapped = textwrap.dedent(
        """\
        /\\ log = << [term |-> 1, cmd |-> "put"],
                    [term |-> 2, cmd |-> "get"] >>
        /\\ n = -7
        """
    )
    assert parse_state(wrapped) == {
        "log": (Record(term=1, cmd="put"), Record(term=2, cmd="get")),
        "n": -7,
    }
    assert parse_state("x = {s1,\n  s2}\n") == {"x": frozenset({ModelValue("s1"), ModelValue("s2")})}
    assert parse_state("/\\ x = 1") == {"x": 1}
    assert parse_state("  \n") == {}


def test_scalars_are_shared_but_values_stay_correct_across_calls() -> None:
    # The parser remembers scalar tokens; a later parse must not be confused by an earlier one.
    assert parse_value('<<"1", 1, TRUE, "TRUE", a1>>') == ("1", 1, True, "TRUE", ModelValue("a1"))
    assert same(parse_value('<<"1", 1, TRUE>>'), ("1", 1, True))


# --- errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "expected", "found"),
    [
        ("<<1, 2", 1, 7, "',' or '>>'", "end of input"),
        ("{1 2}", 1, 4, "',' or '}'", "'2'"),
        ("[a |-> 1,\n  b 2]", 2, 5, "'|->'", "'2'"),
        ("<<1,\n\t 2 3>>", 2, 5, "',' or '>>'", "'3'"),
        ('"abc', 1, 1, "a string closed by '\"'", "an unterminated string"),
        ('<<"a b", 2 3>>', 1, 12, "',' or '>>'", "'3'"),
        ("(1 :> 2 @@ 1 :> 3)", 1, 12, "a key not already in the function", "a repeated key"),
        ("(1 :> 2 @@ TRUE :> 3)", 1, 12, "a key not already in the function", "a repeated key"),
        ("(1 @@ 2)", 1, 4, "':>'", "'@@'"),
        ("(1 :> 2", 1, 8, "'@@' or ')'", "end of input"),
        ("{1, TRUE}", 1, 9, "a set TLC can build", "a set that does"),
        ("{<<0>>, <<FALSE>>}", 1, 18, "a set TLC can build", "a set that does"),
        ("[a |-> 1, a |-> 2]", 1, 11, "a field name not already in the record", "field 'a' again"),
        ("[a |-> ]", 1, 8, "a value", "']'"),
        ("[WF_x |-> 1]", 1, 2, "a field name", "'WF_x'"),
        ("[1 |-> 1]", 1, 2, "a field name", "'1'"),
        ("<<1>> x", 1, 7, "end of input", "'x'"),
        ("", 1, 1, "a value", "end of input"),
        ("   \n  ", 1, 1, "a value", "end of input"),
        ("@", 1, 1, "a value", "'@'"),
        ("<1>", 1, 1, "a value", "'<'"),
        ("+5", 1, 1, "a value", "'+'"),
        ("1_000", 1, 2, "end of input", "'_'"),
        ("<<1, 2>>\n  >>", 2, 3, "end of input", "'>>'"),
    ],
)
def test_malformed_values_name_line_column_and_expectation(
    text: str, line: int, column: int, expected: str, found: str
) -> None:
    with pytest.raises(TlaValueError) as caught:
        parse_value(text, source="trace.out")
    error = caught.value
    assert (error.line, error.column) == (line, column)
    assert error.expected.startswith(expected)
    assert error.found == found
    assert error.source == "trace.out"
    assert (
        str(error) == f"trace.out, line {line}, column {column}: expected {error.expected} but found {found}"
    )


def test_value_error_is_a_project_error_and_a_value_error() -> None:
    with pytest.raises(TlaValueError) as caught:
        parse_value("{1 2}")
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, TidemarkError)
    assert str(caught.value) == "line 1, column 4: expected ',' or '}' but found '2'"
    assert caught.value.describe() == str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "column", "expected"),
    [
        ("/\\ x = 1\n/\\ y 2", 2, 6, "'='"),
        ("/\\ x = 1\n/\\ x = 2", 2, 4, "a variable not already in the state"),
        ("x = 1 y = 2", 1, 7, "end of input"),
        ("/\\ x = 1 /\\", 1, 12, "a variable name"),
        ("/\\ x = 1\n/\\ y = <<1,\n   2", 3, 5, "',' or '>>'"),
        ("/\\ = 1", 1, 4, "a variable name"),
    ],
)
def test_malformed_states_name_line_column_and_expectation(
    text: str, line: int, column: int, expected: str
) -> None:
    with pytest.raises(TlaValueError) as caught:
        parse_state(text, source="MC.out")
    assert (caught.value.line, caught.value.column) == (line, column)
    assert caught.value.expected.startswith(expected)
    with pytest.raises(TlaValueError) as shifted:
        parse_state(text, source="MC.out", line_offset=100)
    assert (shifted.value.line, shifted.value.column) == (line + 100, column)
    assert str(shifted.value).startswith(f"MC.out, line {line + 100}, column {column}: expected ")


def test_too_deep_nesting_is_a_value_error_not_a_crash() -> None:
    with pytest.raises(TlaValueError) as caught:
        parse_value("<<" * 5000 + ">>" * 5000)
    assert caught.value.expected == "a less deeply nested value"
    assert caught.value.line == 1


# --- the value model -------------------------------------------------------------------------------------


def test_record_is_an_immutable_hashable_mapping_in_field_order() -> None:
    record = Record({"b": 1, "a": 2})
    assert record == Record(b=1, a=2) == Record([("a", 2)], b=1)
    assert hash(record) == hash(Record(a=2, b=1))
    assert list(record) == ["a", "b"]
    assert list(record.items()) == [("a", 2), ("b", 1)]
    assert record["a"] == 2
    assert "a" in record
    assert "c" not in record
    assert len(record) == 2
    assert record != {"a": 2, "b": 1}
    assert record != Record(a=2, b=2)
    with pytest.raises(TypeError):
        record["a"] = 3  # type: ignore[index]
    assert {record: "x"}[Record(a=2, b=1)] == "x"


@pytest.mark.parametrize("fields", [{}, {"a b": 1}, {"WF_x": 1}, {"": 1}, {1: 1}])
def test_record_refuses_what_tlc_would_not_print_as_a_record(fields: dict[object, Value]) -> None:
    with pytest.raises(ValueError, match=r"Record needs a field|not a record field name"):
        Record(fields)  # type: ignore[arg-type]


def test_function_refuses_domains_that_have_another_representation() -> None:
    with pytest.raises(ValueError, match=r'<<"a", "b">>; use make_function'):
        Function({1: "a", 2: "b"})
    with pytest.raises(ValueError, match=r"\[a \|-> 1\]; use make_function"):
        Function({"a": 1})
    with pytest.raises(ValueError, match=r"<<>>; use make_function"):
        Function({})
    with pytest.raises(ValueError, match="distinct"):
        Function([(2, "a"), (2, "b")])
    with pytest.raises(ValueError, match="distinct"):
        Function([(1, "a"), (True, "b")])


def test_function_keeps_keys_in_canonical_order_and_compares_by_content() -> None:
    function = Function({ModelValue("s2"): 1, ModelValue("s1"): 2, 0: 3})
    assert list(function) == [0, ModelValue("s1"), ModelValue("s2")]
    assert function == Function([(ModelValue("s1"), 2), (0, 3), (ModelValue("s2"), 1)])
    assert hash(function) == hash(Function({0: 3, ModelValue("s1"): 2, ModelValue("s2"): 1}))
    assert function[ModelValue("s1")] == 2
    assert function != Function({ModelValue("s2"): 1, ModelValue("s1"): 2, 0: 4})


def test_make_function_picks_the_representation() -> None:
    assert make_function({}) == ()
    assert make_function({2: "b", 1: "a"}) == ("a", "b")
    assert make_function({0: "a", 1: "b"}) == Function({0: "a", 1: "b"})
    assert make_function({True: "a"}) == Function({True: "a"})
    assert same(next(iter(make_function({True: "a"}))), True)  # type: ignore[arg-type]
    record = make_function([("b", 1), ("a", 2)])
    assert isinstance(record, Record)
    assert list(record) == ["a", "b"]
    assert isinstance(make_function({"a": 1, ModelValue("a"): 2}), Function)
    with pytest.raises(ValueError, match="distinct"):
        make_function([(0, "a"), (False, "b")])


def test_model_values_are_identifiers_other_than_booleans() -> None:
    assert ModelValue("s1") < ModelValue("s2")
    assert ModelValue("s1") != "s1"  # type: ignore[comparison-overlap]
    for bad in ("TRUE", "FALSE", "a b", "12", "", '"x"'):
        with pytest.raises(ValueError, match="not a model value name"):
            ModelValue(bad)


def test_value_sort_key_tells_booleans_from_integers_and_orders_collections_like_tlc() -> None:
    assert value_sort_key(1) != value_sort_key(True)
    assert value_sort_key((0,)) != value_sort_key((False,))
    assert value_sort_key(Record(a=1)) != value_sort_key(Record(a=True))
    mixed: list[Value] = [Record(a=1), "b", (2,), 3, ModelValue("m"), frozenset({1}), True, Function({2: 1})]
    assert sorted(mixed, key=value_sort_key) == [
        True, 3, "b", ModelValue("m"), (2,), frozenset({1}), Record(a=1), Function({2: 1}),
    ]  # fmt: skip
    # TLC compares tuples, sets, records and functions by size first.
    assert format_value(frozenset({(1, 2), (3,)})) == "{<<3>>, <<1, 2>>}"
    assert format_value(frozenset({frozenset({1, 2}), frozenset({3})})) == "{{3}, {1, 2}}"


def test_values_pickle_and_rehash_in_another_process() -> None:
    # Spark ships values between processes whose string hashes differ: a cached hash must not travel.
    value = Record(a="x", b=frozenset({"y"}), c=Function({ModelValue("s1"): "z", "a b": 1}))
    assert pickle.loads(pickle.dumps(value)) == value
    script = (
        "import pickle, sys\n"
        "from tidemark.conformance.tlc.values import Record, Function, ModelValue\n"
        "v = Record(a='x', b=frozenset({'y'}), c=Function({ModelValue('s1'): 'z', 'a b': 1}))\n"
        "hash(v); hash(v['c'])\n"
        "sys.stdout.buffer.write(pickle.dumps(v))\n"
    )
    shipped = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, check=True, env={"PYTHONHASHSEED": "12345"}
    ).stdout
    received = pickle.loads(shipped)
    assert received == value
    assert hash(received) == hash(value)
    assert hash(received["c"]) == hash(value["c"])
    assert received in {value}


# --- printing --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ((1, "a"), '<<1, "a">>'),
        ((), "<<>>"),
        (frozenset({2, 1}), "{1, 2}"),
        (frozenset(), "{}"),
        (Record(b=2, a=1), "[a |-> 1, b |-> 2]"),
        (Function({ModelValue("s2"): "y", ModelValue("s1"): "x"}), '(s1 :> "x" @@ s2 :> "y")'),
        (True, "TRUE"),
        (False, "FALSE"),
        (-3, "-3"),
        ('a"b\\c\nd\te\rf\fg', r'"a\"b\\c\nd\te\rf\fg"'),
        (ModelValue("NoNode"), "NoNode"),
    ],
)
def test_format_value_prints_like_tlc(value: Value, text: str) -> None:
    assert format_value(value) == text
    assert same(parse_value(text), value)


def test_format_state_prints_variables_alphabetically_like_tlc() -> None:
    assert format_state({"b": 2, "a": frozenset({1})}) == "/\\ a = {1}\n/\\ b = 2"
    assert format_state({"x": (1,)}) == "x = <<1>>"
    assert format_state({}) == ""
    state = parse_state(EXAMPLE_STATE)
    assert (
        format_state(state).splitlines()[0]
        == '/\\ action = [copy |-> "b", delta |-> 1, name |-> "Commit", start |-> 2]'
    )


def test_format_value_rejects_non_values() -> None:
    with pytest.raises(TypeError, match="not a TLA"):
        format_value([1, 2])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a TLA"):
        to_itf(1.5)  # type: ignore[arg-type]


# --- ITF -------------------------------------------------------------------------------------------------


def test_to_itf_uses_the_itf_encodings() -> None:
    assert to_itf(2**53 - 1) == 2**53 - 1
    assert to_itf(2**53) == {"#bigint": "9007199254740992"}
    assert to_itf(-(2**53)) == {"#bigint": "-9007199254740992"}
    assert to_itf(True) is True
    assert to_itf((1, "a")) == [1, "a"]
    assert to_itf(frozenset({3, 1, 2})) == {"#set": [1, 2, 3]}
    assert to_itf(ModelValue("s1")) == {"#unserializable": "s1"}
    assert to_itf(Record(a=1)) == {"a": 1}
    assert to_itf(Function({3: "c", 2: "b"})) == {"#map": [[2, "b"], [3, "c"]]}


def test_from_itf_reads_tuples_bigints_and_skips_state_metadata() -> None:
    assert from_itf({"#tup": [1, {"#bigint": "123456789012345678901234567890"}]}) == (
        1,
        123456789012345678901234567890,
    )
    assert from_itf({"#map": [[2, "b"], [1, "a"]]}) == ("a", "b")
    assert from_itf({}) == ()
    assert from_itf({"a b": 1}) == Function({"a b": 1})
    assert state_from_itf({"#meta": {"index": 0}, "x": {"#set": []}}) == {"x": frozenset()}


@pytest.mark.parametrize(
    "bad",
    [
        1.5,
        None,
        {"#set": 1},
        {"#bogus": 1},
        {"#map": [[1]]},
        {"#set": [1, True]},
        {"#bigint": "1e3"},
        {"a": 1, "#b": 2},
    ],
)
def test_from_itf_rejects_what_is_not_itf(bad: object) -> None:
    with pytest.raises(ValueError):
        from_itf(bad)


def test_state_to_itf_and_canonical_json_of_the_example() -> None:
    state = parse_state(EXAMPLE_STATE)
    text = canonical_json(state_to_itf(state))
    assert text == (
        '{"action":{"copy":"b","delta":1,"name":"Commit","start":2},'
        '"counter":{"b":{"first":true,"hwm":0,"items":[[3,1]],"lwm":1},'
        '"p":{"first":false,"hwm":5,"items":[],"lwm":3}},'
        '"done":{"b":{"#set":[1,4]},"p":{"#set":[1,2,3]}},'
        '"pending":{"b":{"#set":[[4,1]]},"p":{"#set":[]}}}'
    )
    assert state_from_itf(json.loads(text)) == state


# --- properties ------------------------------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-zA-Z0-9_]{0,5}", fullmatch=True)
MODEL_VALUES = (
    st.from_regex(r"[A-Z_][A-Za-z0-9_]{0,5}", fullmatch=True)
    .filter(lambda name: values._IDENT.fullmatch(name) is not None and name not in ("TRUE", "FALSE"))
    .map(ModelValue)
)
SCALARS = st.one_of(st.booleans(), st.integers(), st.integers(-3, 3), st.text(max_size=8), MODEL_VALUES)


def _no_python_collisions(elements: list[Value]) -> bool:
    return len(frozenset(elements)) == len(elements)


def _collections(children: st.SearchStrategy[Value]) -> st.SearchStrategy[Value]:
    distinct = st.lists(children, max_size=4, unique_by=value_sort_key).filter(_no_python_collisions)
    pairs = st.tuples(distinct, st.lists(children, min_size=4, max_size=4))
    return st.one_of(
        st.lists(children, max_size=4).map(tuple),
        distinct.map(frozenset),
        st.dictionaries(NAMES, children, min_size=1, max_size=4).map(Record),
        pairs.map(lambda kv: make_function(zip(kv[0], kv[1], strict=False))),
    )


VALUES: st.SearchStrategy[Value] = st.recursive(SCALARS, _collections, max_leaves=12)
STATES = st.dictionaries(NAMES, VALUES, max_size=4)


def _rebuilt(value: Value, rng: random.Random) -> Value:
    """The same value constructed anew, with sets, records and functions filled in a shuffled order."""
    if isinstance(value, tuple):
        return tuple(_rebuilt(x, rng) for x in value)
    if isinstance(value, frozenset):
        elements = [_rebuilt(x, rng) for x in value]
        rng.shuffle(elements)
        return frozenset(elements)
    if isinstance(value, Record | Function):
        pairs = [(k, _rebuilt(x, rng)) for k, x in value.items()]
        rng.shuffle(pairs)
        return Record(pairs) if isinstance(value, Record) else Function(pairs)  # type: ignore[arg-type]
    return value


@given(VALUES)
def test_format_then_parse_gives_the_value_back(value: Value) -> None:
    parsed = parse_value(format_value(value))
    assert parsed == value
    assert same(parsed, value)


@given(VALUES, st.lists(st.sampled_from([" ", "\n", "\n     ", "\t", "  \r\n  "]), min_size=1))
def test_any_whitespace_between_tokens_gives_the_value_back(value: Value, gaps: list[str]) -> None:
    tokens = parse._TOKEN.findall(format_value(value))
    text = "".join(token + gaps[i % len(gaps)] for i, token in enumerate(tokens))
    assert same(parse_value(text), value)


@given(VALUES)
def test_to_itf_then_from_itf_gives_the_value_back(value: Value) -> None:
    itf = to_itf(value)
    assert same(from_itf(itf), value)
    assert same(from_itf(json.loads(canonical_json(itf))), value)


@given(VALUES, st.randoms(use_true_random=False))
def test_equal_values_built_in_any_order_have_equal_canonical_json(value: Value, rng: random.Random) -> None:
    rebuilt = _rebuilt(value, rng)
    assert rebuilt == value
    assert canonical_json(to_itf(rebuilt)) == canonical_json(to_itf(value))
    assert format_value(rebuilt) == format_value(value)


@given(VALUES, VALUES)
def test_value_sort_key_is_equal_exactly_for_strictly_equal_values(a: Value, b: Value) -> None:
    assert (value_sort_key(a) == value_sort_key(b)) == (
        canonical_json(to_itf(a)) == canonical_json(to_itf(b))
    )
    ordered = sorted([a, b], key=value_sort_key)
    assert value_sort_key(ordered[0]) <= value_sort_key(ordered[1])


@given(STATES, st.randoms(use_true_random=False))
def test_states_round_trip_through_text_and_itf(state: dict[str, Value], rng: random.Random) -> None:
    assert parse_state(format_state(state)) == state
    assert all(same(parse_state(format_state(state))[name], value) for name, value in state.items())
    assert state_from_itf(state_to_itf(state)) == state
    shuffled = list(state.items())
    rng.shuffle(shuffled)
    assert canonical_json(state_to_itf(dict(shuffled))) == canonical_json(state_to_itf(state))
    # The memoized text replay compares successors by is the same canonical text, asked twice.
    assert canonical_state_json(dict(shuffled)) == canonical_json(state_to_itf(state))
    assert canonical_state_json(state) == canonical_json(state_to_itf(state))


@given(VALUES)
def test_canonical_text_is_the_canonical_json_of_the_itf(value: Value) -> None:
    expected = canonical_json(to_itf(value))
    assert canonical_text(value) == expected
    assert canonical_text(value) == expected  # asked again: from the memo
    assert canonical_text(_rebuilt(value, random.Random(0))) == expected  # equal value, other objects


def test_canonical_text_tells_booleans_from_integers_in_shared_positions() -> None:
    # Equal in Python (1 == True), different TLA+ values: the memo is by identity, not equality.
    ints, bools = (1, 0), (True, False)
    assert ints == bools
    assert (canonical_text(ints), canonical_text(bools)) == ("[1,0]", "[true,false]")
    assert canonical_text(frozenset({Record(a=1)})) != canonical_text(frozenset({Record(a=True)}))
