"""Reading TLC's printed values and states into tidemark's values (conformance/tlc/values.py): a tokenizer
and a small recursive-descent parser, with errors that name the place."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import islice
from operator import length_hint
from typing import TypeAlias, TypeVar

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.values import (
    _CACHE_LIMIT,
    _KNOWN_NAMES,
    ModelValue,
    Value,
    _canonical_function,
    _is_name,
    _new_record,
    _strictly_distinct,
)

# Parsing: a tokenizer and a small recursive-descent parser over its token list.
#
# The master regex _TOKEN is the authoritative tokenizer. Most TLC output is tokenized faster by padding
# brackets and commas with spaces and splitting on whitespace (str methods run in C); that cuts strings
# with spaces or brackets into pieces no rule accepts, and such a text is simply read again with _TOKEN,
# which also gives the positions for errors. Every piece the parser accepts is a whole token of _TOKEN's
# kind (a name, number, string or operator bounded by spaces or brackets), so when the quick reading
# succeeds it has seen exactly _TOKEN's tokens.

_TOKEN = re.compile(
    r"""\s*(
      [0-9_]*[^\W\d_]\w*              # identifier: TRUE, FALSE, a model value, a field or variable name
    | -?[0-9]+\s*\.\.\s*-?[0-9]+      # an interval lo..hi: how TLC prints an IntervalValue
    | -?[0-9]+
    | "[^"\\]*(?:\\.[^"\\]*)*"        # a string with backslash escapes
    | <<|>>|\|->|:>|@@|/\\|[{}\[\](),=]
    | \S                              # any other character: no rule accepts it, so its position is reported
    )""",
    re.VERBOSE | re.DOTALL,
)
_SCALAR = re.compile(
    r"""(?P<int>-?[0-9]+)
    | (?P<string>"[^"\\]*(?:\\.[^"\\]*)*")
    | (?P<name>[0-9_]*[^\W\d_]\w*)
    | (?P<interval>(?P<low>-?[0-9]+)\s*\.\.\s*(?P<high>-?[0-9]+))""",
    re.VERBOSE | re.DOTALL,
)
_PADS = tuple((punct, f" {punct} ") for punct in ("<<", ">>", "{", "}", "[", "]", "(", ")", ","))
_END = ""  # appended after the last token; no token is empty
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f"}  # as StringValue prints
# Scalar tokens repeat across states (small numbers, "b", TRUE): remember what each one denotes.
_SCALARS: dict[str, Value] = {}


class TlaValueError(TidemarkError, ValueError):
    """Text that is not a TLA+ value (or state) as TLC prints it; names the place and what was expected."""

    expected: str

    def __init__(self, expected: str, found: str, *, source: str | None, line: int, column: int) -> None:
        self.line = line
        self.column = column
        self.found = found
        super().__init__(
            f"expected {expected} but found {found}",
            source=source,
            location=f"line {line}, column {column}",
            expected=expected,
        )

    def describe(self) -> str:
        # The message already says what was expected; the base class would repeat it.
        return ", ".join(part for part in (self.source, self.location) if part) + ": " + self.message


class _Unexpected(Exception):
    """Raised at the last token read; parse_value/parse_state turn it into a TlaValueError with a position."""

    def __init__(self, expected: str, found: str | None = None) -> None:
        self.expected = expected
        self.found = found


_Next: TypeAlias = Callable[[], str]
_T = TypeVar("_T")


def _scalar(tok: str) -> Value:
    match = _SCALAR.fullmatch(tok)
    kind = match.lastgroup if match else None
    value: Value
    if kind == "int":
        if len(tok) > 4000:  # int() refuses over 4300 digits (sys.int_info.default_max_str_digits)
            raise _Unexpected("an integer of at most 4000 digits")
        value = int(tok)
    elif kind == "string":
        body = tok[1:-1]
        value = _ESCAPE.sub(lambda m: _UNESCAPES.get(m[1], m[0]), body) if "\\" in body else body
    elif kind == "name":
        value = True if tok == "TRUE" else False if tok == "FALSE" else ModelValue(tok)
    elif match and kind == "interval":
        return frozenset(range(int(match["low"]), int(match["high"]) + 1))
    elif tok[:1] == '"':
        raise _Unexpected("a string closed by '\"'", "an unterminated string")
    else:
        raise _Unexpected("a value")
    if len(_SCALARS) < _CACHE_LIMIT:
        _SCALARS[tok] = value
    return value


def _value(tok: str, nxt: _Next) -> Value:
    """The value starting with `tok` (reading more tokens with `nxt` if it opens a collection)."""
    value = _SCALARS.get(tok)
    if value is not None:
        return value
    opener = _OPENERS.get(tok)
    return _scalar(tok) if opener is None else opener(nxt)


def _sequence(nxt: _Next) -> Value:
    tok = nxt()
    if tok == ">>":
        return ()
    items = []
    while True:
        items.append(_value(tok, nxt))
        tok = nxt()
        if tok == ",":
            tok = nxt()
        elif tok == ">>":
            return tuple(items)
        else:
            raise _Unexpected("',' or '>>'")


def _set(nxt: _Next) -> Value:
    tok = nxt()
    if tok == "}":
        return frozenset()
    items = []
    while True:
        items.append(_value(tok, nxt))
        tok = nxt()
        if tok == ",":
            tok = nxt()
        elif tok == "}":
            break
        else:
            raise _Unexpected("',' or '}'")
    elements = frozenset(items)
    if len(elements) != len(items) and _strictly_distinct(items) != len(elements):
        raise _Unexpected("a set TLC can build (not mixing 1/0 with TRUE/FALSE)", "a set that does")
    return elements


def _record(nxt: _Next) -> Value:
    tok = nxt()
    if tok == "]":
        return ()  # TLC's empty record, which is the empty function
    fields: dict[str, Value] = {}
    while True:
        if tok not in _KNOWN_NAMES and not _is_name(tok):
            raise _Unexpected("a field name")
        if tok in fields:
            raise _Unexpected("a field name not already in the record", f"field {tok!r} again")
        name = tok
        if nxt() != "|->":
            raise _Unexpected("'|->'")
        tok = nxt()
        fields[name] = _value(tok, nxt)
        tok = nxt()
        if tok == ",":
            tok = nxt()
        elif tok == "]":
            break
        else:
            raise _Unexpected("',' or ']'")
    names = list(fields)
    if names != sorted(names):  # TLC prints records normalized, so this is rare
        fields = {name: fields[name] for name in sorted(names)}
    return _new_record(fields)


def _function(nxt: _Next) -> Value:
    by_key: dict[Value, Value] = {}
    while True:
        tok = nxt()
        key = _value(tok, nxt)
        if key in by_key:
            raise _Unexpected(
                "a key not already in the function (nor 1/0 beside TRUE/FALSE)", "a repeated key"
            )
        if nxt() != ":>":
            raise _Unexpected("':>'")
        tok = nxt()
        by_key[key] = _value(tok, nxt)
        tok = nxt()
        if tok == ")":
            return _canonical_function(by_key)
        if tok != "@@":
            raise _Unexpected("'@@' or ')'")


_OPENERS: dict[str, Callable[[_Next], Value]] = {"<<": _sequence, "{": _set, "[": _record, "(": _function}


def _whole_value(nxt: _Next) -> Value:
    value = _value(nxt(), nxt)
    if nxt() != _END:
        raise _Unexpected("end of input")
    return value


def _whole_state(nxt: _Next) -> dict[str, Value]:
    state: dict[str, Value] = {}
    tok = nxt()
    conjunction = tok == "/\\"
    while tok != _END:
        if conjunction:
            tok = nxt()
        if tok not in _KNOWN_NAMES and not _is_name(tok):
            raise _Unexpected("a variable name")
        if tok in state:
            raise _Unexpected("a variable not already in the state", f"{tok!r} again")
        name = tok
        if nxt() != "=":
            raise _Unexpected("'='")
        state[name] = _value(nxt(), nxt)
        tok = nxt()
        if tok != _END and not (conjunction and tok == "/\\"):
            raise _Unexpected("'/\\' or end of input" if conjunction else "end of input")
    return state


def _parse(text: str, parser: Callable[[_Next], _T], source: str | None, line_offset: int) -> _T:
    quick = text
    for punct, padded in _PADS:
        quick = quick.replace(punct, padded)
    tokens = quick.split()
    tokens.append(_END)
    try:
        return parser(iter(tokens).__next__)
    except (_Unexpected, RecursionError):
        pass  # read it again with the master regex: it may still be valid, else it places the error
    tokens = _TOKEN.findall(text)
    tokens.append(_END)
    it = iter(tokens)
    try:
        return parser(it.__next__)
    except _Unexpected as problem:
        raise _fail(text, tokens, it, problem, source, line_offset) from None
    except RecursionError:
        too_deep = _Unexpected("a less deeply nested value")
        raise _fail(text, tokens, it, too_deep, source, line_offset) from None


def _fail(
    text: str, tokens: list[str], it: Iterator[str], problem: _Unexpected, source: str | None, offset: int
) -> TlaValueError:
    """The error for the token last taken from `it` (the parser raises right after reading the culprit)."""
    index = len(tokens) - length_hint(it) - 1
    if index >= len(tokens) - 1:
        position, found = len(text.rstrip()), "end of input"
    else:
        position = next(islice(_TOKEN.finditer(text), index, None)).start(1)
        shown = tokens[index] if len(tokens[index]) <= 40 else tokens[index][:37] + "..."
        found = f"'{shown}'"
    line = text.count("\n", 0, position) + 1
    column = position - text.rfind("\n", 0, position)
    return TlaValueError(
        problem.expected, problem.found or found, source=source, line=line + offset, column=column
    )


def parse_value(text: str, *, source: str | None = None) -> Value:
    """The value TLC printed as `text` (whitespace, including line breaks, may separate any two tokens)."""
    return _parse(text, _whole_value, source, 0)


def parse_state(text: str, *, source: str | None = None, line_offset: int = 0) -> dict[str, Value]:
    """The state TLC printed as ``/\\ var = value`` lines (or ``var = value`` for a one-variable spec).

    `line_offset` is added to line numbers in errors, for a state cut out of a longer file.
    """
    return _parse(text, _whole_state, source, line_offset)
