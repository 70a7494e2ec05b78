"""Tests for tidemark.conformance.tlc.config.read_config on model config texts, good and bad."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.config import ModelConfig, read_config
from tidemark.conformance.tlc.values import Function, ModelValue, Record

SPEC_DIR = Path(__file__).resolve().parent.parent / "spec"


def write_config(tmp_path: Path, text: str, name: str = "Model.cfg") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def config_error(tmp_path: Path, text: str) -> TidemarkError:
    path = write_config(tmp_path, text)
    with pytest.raises(TidemarkError) as caught:
        read_config(path)
    assert str(path) in str(caught.value)
    return caught.value


def test_constants_of_every_value_kind(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """\
        CONSTANTS
            N = 3
            Neg = -2
            Flag = TRUE
            Off = FALSE
            Name = "p"
            Quoted = "a\\"b"
            Copies = {"p", "b"}
            Server = s1
            Servers = {s1, s2}
            Seq = <<1, "a", <<>>>>
            Rec = [lwm |-> 1, hwm |-> 4, items |-> <<<<2, 1>>>>]
            Range = 1..3
            Fn = ("b" :> 1 @@ "a" :> 2 @@ 3 :> 4)
            Empty = {}
            Nested = {[a |-> {1}], [a |-> {}]}
        """,
    )
    config = read_config(path)
    assert config.constants == {
        "N": 3,
        "Neg": -2,
        "Flag": True,
        "Off": False,
        "Name": "p",
        "Quoted": 'a"b',
        "Copies": frozenset({"p", "b"}),
        "Server": ModelValue("s1"),
        "Servers": frozenset({ModelValue("s1"), ModelValue("s2")}),
        "Seq": (1, "a", ()),
        "Rec": Record(lwm=1, hwm=4, items=((2, 1),)),
        "Range": frozenset({1, 2, 3}),
        "Fn": Function([("a", 2), ("b", 1), (3, 4)]),
        "Empty": frozenset(),
        "Nested": frozenset({Record(a=frozenset({1})), Record(a=frozenset())}),
    }
    # Strictly typed: TRUE is a bool, not the int 1 Python would also accept as equal.
    assert type(config.constants["Flag"]) is bool
    assert type(config.constants["N"]) is int
    assert config.substitutions == {}


def test_a_value_may_span_lines(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """\
        CONSTANTS
            Copies = {"p",
                      "b"}
            Rec = [lwm |-> 1,
                   hwm |-> 2]
        INIT Init
        """,
    )
    config = read_config(path)
    assert config.constants == {"Copies": frozenset({"p", "b"}), "Rec": Record(lwm=1, hwm=2)}
    assert config.init == "Init"


def test_substitutions_and_constants_mixed(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """\
        CONSTANT N = 2
        CONSTANTS
            Nat <- SmallNat
            Servers = {s1, s2}
            Max <- [model]MaxOf
        """,
    )
    config = read_config(path)
    assert config.constants == {"N": 2, "Servers": frozenset({ModelValue("s1"), ModelValue("s2")})}
    assert config.substitutions == {"Nat": "SmallNat", "Max": "[model]MaxOf"}


def test_comments_are_ignored(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """\
        \\* A model. INVARIANT NotMe
        (* A block comment
           CONSTANTS Hidden = 1
           INVARIANT AlsoNotMe *)
        CONSTANTS
            N = 3 \\* the bound, INVARIANT NorMe
            (* inline *) M = 4
        INIT Init (* the initial predicate *)
        NEXT Next \\* the next-state relation
        INVARIANT TypeOK (* INVARIANT Hidden *) Safe
        """,
    )
    config = read_config(path)
    assert config.constants == {"N": 3, "M": 4}
    assert config.init == "Init"
    assert config.next == "Next"
    assert config.invariants == ["TypeOK", "Safe"]


def test_invariant_and_invariants_accumulate(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """\
        SPECIFICATION Spec
        INVARIANT TypeOK
        INVARIANTS
            Safe
            Live
        INVARIANT Last
        PROPERTIES
            P1 P2
        PROPERTY P3
        """,
    )
    config = read_config(path)
    assert config.specification == "Spec"
    assert config.invariants == ["TypeOK", "Safe", "Live", "Last"]
    assert config.properties == ["P1", "P2", "P3"]
    assert (config.init, config.next) == (None, None)


def test_other_keywords(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """\
        INIT Init
        NEXT Next
        VIEW Abstract
        SYMMETRY Perms
        CONSTRAINT Bounded
        CONSTRAINTS Small Short
        ACTION_CONSTRAINT NoReset
        """,
    )
    config = read_config(path)
    assert (config.init, config.next, config.view, config.symmetry) == ("Init", "Next", "Abstract", "Perms")
    assert config.constraints == ["Bounded", "Small", "Short", "NoReset"]


def test_the_standard_model_config() -> None:
    config = read_config(SPEC_DIR / "UpdateCounter.cfg")
    assert config == ModelConfig(
        path=SPEC_DIR / "UpdateCounter.cfg",
        constants={
            "Copies": frozenset({"p", "b"}),
            "Primary": "p",
            "MaxCounter": 4,
            "Deltas": frozenset({1, 2}),
            "MaxMissedUpdates": 2,
        },
        specification="Spec",
        invariants=[
            "TypeOK",
            "ItemsWellFormed",
            "ItemsWithinLimit",
            "LwmBelowHighestApplied",
            "LwmIsDurable",
            "CounterIsExact",
            "HwmCoversLwm",
            "NoGapsAfterExchange",
            "ExchangeCoversEveryCopy",
        ],
        properties=["ReplayIsNoop"],
    )


def test_empty_config(tmp_path: Path) -> None:
    config = read_config(write_config(tmp_path, "\\* nothing yet\n"))
    assert config == ModelConfig(path=tmp_path / "Model.cfg")


# ---------------------------------------------------------------------------------------------------------
# Bad configs: a TidemarkError naming the file and the line.


def test_unparseable_constant_value(tmp_path: Path) -> None:
    error = config_error(tmp_path, "CONSTANTS N = {1, 2\nINIT Init\n")
    assert error.location == "line 1"
    assert "constant N has a value TLC would not accept" in error.message
    assert error.expected == "',' or '}'"


# Library bug (conformance/tlc/config.py, _statements and _constants): a statement's line is computed
# from the start of the match of `^\s*KEYWORD`, and `\s*` swallows the blank (or comment-only) lines
# before the keyword, so the line reported is the first of those; an error in a constant reports the line
# of its CONSTANTS keyword, and "text before the first keyword" reports the keyword's line.
def test_unparseable_constant_names_its_own_line(tmp_path: Path) -> None:
    error = config_error(tmp_path, "CONSTANTS\n    N = 1\n    M = [a |-> ]\nINIT Init\n")
    assert "constant M has a value TLC would not accept" in error.message
    assert error.location == "line 3"


def test_error_after_blank_and_comment_lines_names_the_keywords_line(tmp_path: Path) -> None:
    error = config_error(tmp_path, "INIT Init\n\n\\* the specification\nSPECIFICATION Spec Other\n")
    assert error.message == "SPECIFICATION takes one name, found 2"
    assert error.location == "line 4"


def test_constant_value_with_trailing_garbage(tmp_path: Path) -> None:
    error = config_error(tmp_path, "CONSTANT M = 1 2\n")
    assert "constant M has a value TLC would not accept" in error.message
    assert error.location == "line 1"
    assert error.expected == "end of input"


def test_text_before_the_first_keyword(tmp_path: Path) -> None:
    error = config_error(tmp_path, "hello\nINIT Init\n")
    assert error.message == "text before the first keyword"
    assert error.location is not None
    assert error.location.startswith("line ")


def test_text_before_the_first_keyword_names_its_line(tmp_path: Path) -> None:
    error = config_error(tmp_path, "\n\nhello\nINIT Init\n")
    assert error.message == "text before the first keyword"
    assert error.location == "line 3"


def test_specification_with_two_names(tmp_path: Path) -> None:
    error = config_error(tmp_path, "INIT Init\nSPECIFICATION Spec Other\n")
    assert error.location == "line 2"
    assert error.message == "SPECIFICATION takes one name, found 2"


@pytest.mark.parametrize("keyword", ["INIT", "NEXT", "VIEW", "SYMMETRY"])
def test_single_name_keywords_refuse_none(tmp_path: Path, keyword: str) -> None:
    error = config_error(tmp_path, f"{keyword}\nINVARIANT TypeOK\n")
    assert error.location == "line 1"
    assert error.message == f"{keyword} takes one name, found 0"


def test_constant_without_name(tmp_path: Path) -> None:
    error = config_error(tmp_path, "CONSTANTS\n    = 3\n")
    assert error.location == "line 2"
    assert "unexpected '= 3'" in error.message


def test_check_deadlock_is_refused_as_tlc_215_does(tmp_path: Path) -> None:
    error = config_error(tmp_path, "INIT Init\nNEXT Next\nCHECK_DEADLOCK FALSE\n")
    assert error.location == "line 3"
    assert "does not support CHECK_DEADLOCK" in error.message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "NoSuch.cfg"
    with pytest.raises(TidemarkError) as caught:
        read_config(path)
    assert caught.value.source == str(path)
    assert str(path) in str(caught.value)
    assert "No such file or directory" in caught.value.message
