"""TLA+ values as TLC 2.15 prints them in states: parse, print, order, and convert to and from ITF JSON.

Each TLA+ value has one Python representation, so a value parsed from TLC and the same value built by
a mapping compare equal:

======================  =====================  ==========================================
TLA+ value              TLC prints             Python
======================  =====================  ==========================================
integer                 ``-3``                 ``int``
Boolean                 ``TRUE``               ``bool``
string                  ``"a\\"b"``            ``str``
model value             ``s1``                 ``ModelValue("s1")``
function on ``1..n``    ``<<1, "a">>``         ``tuple`` (``()`` for every empty function)
set                     ``{1, 2}``, ``1..3``   ``frozenset``
function on names       ``[a |-> 1]``          ``Record`` (non-empty; keys are field names)
any other function      ``(k :> v @@ ...)``    ``Function`` (non-empty, not one of the above)
======================  =====================  ==========================================

TLC prints a function whose domain consists of name-like strings as a record and one on ``1..n``
as a sequence, whatever built it, so ``make_function`` (used by the parser and ``from_itf``) picks
the representation and ``Record`` / ``Function`` refuse contents that belong to another one.

Integers and Booleans: Python has ``1 == True``, so a frozenset, a dict key or ``==`` on tuples
cannot tell them apart. TLC never compares an integer with a Boolean (it stops with an error), so
no TLC set or function domain mixes them; the parser and the constructors reject one that does
instead of silently merging elements. To compare two values strictly, compare their
``value_sort_key``s, which tag every value with its kind.

Not covered: values TLC prints symbolically (``SUBSET S``, ``[S -> T]``, ``[a : S]``, lambdas) are
refused, except that a bare name such as ``Nat`` reads as a model value; an interval ``lo..hi`` is
read as the set of its elements.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from pydantic_core import to_json

__all__ = [
    "JSON",
    "Function",
    "ModelValue",
    "Record",
    "SortKey",
    "Value",
    "canonical_json",
    "canonical_state_json",
    "canonical_text",
    "format_state",
    "format_value",
    "from_itf",
    "make_function",
    "state_digest",
    "state_from_itf",
    "state_from_json",
    "state_to_itf",
    "to_itf",
    "value_sort_key",
]

# A TLA+ identifier: letters, digits and underscores with at least one letter (so `1a` is one, `12` is not).
_IDENT = re.compile(r"[0-9_]*[^\W\d_]\w*")
# The parser's memo tables stop growing at this many entries (they only save time).
_CACHE_LIMIT = 1 << 16
# Names already checked: field names repeat in every record the parser reads.
_KNOWN_NAMES: set[str] = set()


def _is_name(s: str) -> bool:
    """Whether TLC prints a function with this string in its domain as a record field (FcnRcdValue.isName)."""
    if s in _KNOWN_NAMES:
        return True
    if _IDENT.fullmatch(s) is None or (len(s) >= 4 and s.startswith(("WF_", "SF_"))):
        return False
    if len(_KNOWN_NAMES) < _CACHE_LIMIT:
        _KNOWN_NAMES.add(s)
    return True


@dataclass(frozen=True, order=True, slots=True)
class ModelValue:
    """An uninterpreted constant of the model (``s1``, ``NoNode``), printed bare by TLC."""

    name: str

    def __post_init__(self) -> None:
        # Anything else would print as a different value (or not parse back at all).
        if _IDENT.fullmatch(self.name) is None or self.name in ("TRUE", "FALSE"):
            raise ValueError(f"{self.name!r} is not a model value name (an identifier other than TRUE/FALSE)")


# Mapping keys are invariant: this lets a dict[int, str] or dict[ModelValue, ...] through the type checker.
_Key = TypeVar("_Key", bound="Value")


_K = TypeVar("_K")


class _FrozenMap(Mapping[_K, "Value"]):
    """The immutable, hashable mapping behind Record and Function: equal only to its own kind."""

    __slots__ = ("_data", "_hash")
    _data: dict[_K, Value]
    _hash: int | None

    def __getitem__(self, key: _K) -> Value:
        return self._data[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def keys(self) -> KeysView[_K]:
        return self._data.keys()

    def items(self) -> ItemsView[_K, Value]:
        return self._data.items()

    def values(self) -> ValuesView[Value]:
        return self._data.values()

    def __eq__(self, other: object) -> bool:
        # Only the same kind: a dict, or a Record vs a Function with the same items, is another value.
        if type(other) is type(self):
            return self._data == other._data
        return NotImplemented

    def __hash__(self) -> int:
        # A frozenset, not the key order: Python-equal keys (1 and TRUE) need not sort alike.
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def __reduce__(self) -> tuple[type, tuple[dict[_K, Value]]]:
        # Rebuilt, not copied: a cached string hash is only valid in the process that computed it.
        return (type(self), (self._data,))


class Record(_FrozenMap[str]):
    """An immutable record ``[a |-> 1, b |-> 2]``; fields are kept sorted by name, as TLC normalizes them.

    Field names must be names TLC prints as record fields (see ``make_function`` for other string keys)
    and there must be at least one: the empty record is the empty function, ``()``.
    """

    __slots__ = ()

    def __init__(
        self, fields: Mapping[str, Value] | Iterable[tuple[str, Value]] = (), /, **kwargs: Value
    ) -> None:
        given = dict(fields, **kwargs)
        if not given:
            raise ValueError("a Record needs a field: the empty record is the empty function, ()")
        for name in given:
            if not isinstance(name, str) or not _is_name(name):
                raise ValueError(f"{name!r} is not a record field name; use make_function for other keys")
        self._data = {name: given[name] for name in sorted(given)}
        self._hash = None


class Function(_FrozenMap["Value"]):
    """An immutable function ``(k1 :> v1 @@ k2 :> v2)`` whose domain is neither empty, ``1..n`` nor all
    field names (those are ``()``, a tuple and a ``Record``: ``make_function`` picks). Keys are kept in
    ``value_sort_key`` order.
    """

    __slots__ = ()

    def __init__(self, pairs: Mapping[_Key, Value] | Iterable[tuple[Value, Value]], /) -> None:
        made = make_function(pairs)
        if not isinstance(made, Function):
            raise ValueError(f"TLC prints this function as {format_value(made)}; use make_function")
        self._data = made._data
        self._hash = None


Value: TypeAlias = (
    int | str | bool | ModelValue | tuple["Value", ...] | frozenset["Value"] | Record | Function
)
JSON: TypeAlias = bool | int | float | str | list["JSON"] | dict[str, "JSON"] | None
SortKey: TypeAlias = tuple[object, ...]


def _new_record(fields: dict[str, Value]) -> Record:
    """A Record from fields already checked and sorted (the constructor's checks cost the parser)."""
    record = Record.__new__(Record)
    record._data = fields
    record._hash = None
    return record


def make_function(pairs: Mapping[_Key, Value] | Iterable[tuple[Value, Value]]) -> Value:
    """The TLA+ function with these (key, value) pairs, in the one representation TLC's printing implies:
    ``()`` if empty, a tuple on ``1..n``, a ``Record`` if every key is a field name, else a ``Function``.

    Raises ValueError on a repeated key (including 1 and TRUE, which Python cannot keep apart).
    """
    items: list[tuple[Value, Value]] = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
    by_key = dict(items)
    if len(by_key) != len(items):
        raise ValueError("a function's keys must be distinct (and not mix 1/0 with TRUE/FALSE)")
    return _canonical_function(by_key)


def _canonical_function(by_key: dict[Value, Value]) -> Value:
    n = len(by_key)
    if n == 0:
        return ()
    first = next(iter(by_key))
    if type(first) is int and all(type(k) is int for k in by_key) and by_key.keys() == set(range(1, n + 1)):
        return tuple(by_key[i] for i in range(1, n + 1))
    if type(first) is str:
        names = [k for k in by_key if type(k) is str and (k in _KNOWN_NAMES or _is_name(k))]
        if len(names) == n:
            names.sort()
            return _new_record({name: by_key[name] for name in names})
    function = Function.__new__(Function)
    function._data = {k: by_key[k] for k in _sorted_elements(by_key)}
    function._hash = None
    return function


def value_sort_key(v: Value) -> SortKey:
    """A key giving a total order over all values: by kind (Booleans, integers, strings, model values,
    tuples, sets, records, functions), then within a kind as TLC orders it (collections by size first),
    except that TLC orders model values by declaration and this by name. Equal keys iff strictly equal.
    """
    if isinstance(v, bool):
        return (0, v)
    if isinstance(v, int):
        return (1, v)
    if isinstance(v, str):
        return (2, v)
    if isinstance(v, ModelValue):
        return (3, v.name)
    if isinstance(v, tuple):
        return (4, len(v), tuple(map(value_sort_key, v)))
    if isinstance(v, frozenset):
        return (5, len(v), tuple(sorted(map(value_sort_key, v))))
    if isinstance(v, Record):
        return (6, len(v), tuple(v.keys()), tuple(map(value_sort_key, v.values())))
    if isinstance(v, Function):
        return (7, len(v), tuple(map(value_sort_key, v.keys())), tuple(map(value_sort_key, v.values())))
    raise TypeError(f"not a TLA+ value: {v!r}")


def _strictly_distinct(elements: Iterable[Value]) -> int:
    return len({value_sort_key(e) for e in elements})


# ---------------------------------------------------------------------------------------------------------
# Printing.

_ESCAPES = str.maketrans({'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f"})


# TLC's integers are Java ints: a value beyond them makes TLC stop ("can't handle a number this big").
TLC_INT_MIN, TLC_INT_MAX = -(1 << 31), (1 << 31) - 1


def integers_beyond_tlc(value: Value, path: str) -> Iterator[tuple[str, int]]:
    """The integers in `value` TLC cannot represent, each with its path (counter.b.lwm, log[2]); an
    element of a set or a function's key has its container's path."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not TLC_INT_MIN <= value <= TLC_INT_MAX:
            yield path, value
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from integers_beyond_tlc(item, f"{path}[{index}]")
    elif isinstance(value, frozenset):
        for item in value:
            yield from integers_beyond_tlc(item, path)
    elif isinstance(value, Record):
        for name, item in value.items():
            yield from integers_beyond_tlc(item, f"{path}.{name}")
    elif isinstance(value, Function):
        for key, item in value.items():
            yield from integers_beyond_tlc(key, path)
            yield from integers_beyond_tlc(item, f"{path}[{format_value(key)}]")


def format_value(v: Value) -> str:
    """`v` in TLA+ syntax, as TLC prints it (sets, records and functions in TLC's order)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.translate(_ESCAPES) + '"'
    if isinstance(v, ModelValue):
        return v.name
    if isinstance(v, tuple):
        return "<<" + ", ".join(map(format_value, v)) + ">>"
    if isinstance(v, frozenset):
        return "{" + ", ".join(map(format_value, sorted(v, key=value_sort_key))) + "}"
    if isinstance(v, Record):
        return "[" + ", ".join(f"{name} |-> {format_value(x)}" for name, x in v.items()) + "]"
    if isinstance(v, Function):
        return "(" + " @@ ".join(f"{format_value(k)} :> {format_value(x)}" for k, x in v.items()) + ")"
    raise TypeError(f"not a TLA+ value: {v!r}")


def format_state(state: Mapping[str, Value]) -> str:
    """`state` as TLC prints it: ``/\\ var = value`` lines in variable order, or ``var = value`` alone."""
    if len(state) == 1:
        [(name, value)] = state.items()
        return f"{name} = {format_value(value)}"
    return "\n".join(f"/\\ {name} = {format_value(state[name])}" for name in sorted(state))


# ---------------------------------------------------------------------------------------------------------
# ITF JSON (the Informal Trace Format of Apalache and Quint).

_SAFE_INT = 2**53


def _sorted_elements(values: Iterable[Value]) -> list[Value]:
    """Elements in ``value_sort_key`` order; plain sorting when all are ints or all strings (same order)."""
    elements = list(values)
    kinds = {type(x) for x in elements}
    if len(kinds) == 1 and (int in kinds or str in kinds):
        return sorted(elements, key=None)  # type: ignore[type-var]  # all ints or all strings
    return sorted(elements, key=value_sort_key)


def _record_to_itf(v: Record) -> JSON:
    return {name: to_itf(x) for name, x in v.items()}


def _function_to_itf(v: Function) -> JSON:
    return {"#map": [[to_itf(k), to_itf(x)] for k, x in v.items()]}


# Dispatch on the exact type: the hot path of replay converts every successor state.
_TO_ITF: dict[type, Callable[[Any], JSON]] = {
    bool: lambda v: v,
    str: lambda v: v,
    int: lambda v: v if -_SAFE_INT < v < _SAFE_INT else {"#bigint": str(v)},
    ModelValue: lambda v: {"#unserializable": v.name},
    tuple: lambda v: [to_itf(x) for x in v],
    frozenset: lambda v: {"#set": [to_itf(x) for x in _sorted_elements(v)]},
    Record: _record_to_itf,
    Function: _function_to_itf,
}


def to_itf(v: Value) -> JSON:
    """`v` as an ITF expression; sets and function keys in ``value_sort_key`` order."""
    convert = _TO_ITF.get(type(v))
    if convert is None:
        raise TypeError(f"not a TLA+ value: {v!r}")
    return convert(v)


def _itf_list(obj: object, what: str) -> list[object]:
    if not isinstance(obj, list):
        raise ValueError(f"{what} must hold a JSON array, not {obj!r:.80}")
    return obj


def from_itf(obj: object) -> Value:
    """The value of an ITF expression (the inverse of ``to_itf``; also reads ``#tup``). Raises ValueError."""
    if isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, list):
        return tuple(map(from_itf, obj))
    if isinstance(obj, dict):
        if len(obj) == 1:
            [(tag, body)] = obj.items()
            if tag == "#bigint" and isinstance(body, str) and re.fullmatch(r"-?[0-9]+", body):
                return int(body)
            if tag == "#tup":
                return tuple(map(from_itf, _itf_list(body, tag)))
            if tag == "#set":
                elements = [from_itf(x) for x in _itf_list(body, tag)]
                result = frozenset(elements)
                if len(result) != len(elements) and _strictly_distinct(elements) != len(result):
                    raise ValueError("an ITF #set mixes 1/0 with TRUE/FALSE, which Python cannot keep apart")
                return result
            if tag == "#map":
                pairs = []
                for pair in _itf_list(body, tag):
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise ValueError(f"a #map entry must be a [key, value] array, not {pair!r:.80}")
                    pairs.append((from_itf(pair[0]), from_itf(pair[1])))
                return make_function(pairs)
            if tag == "#unserializable" and isinstance(body, str):
                return ModelValue(body)
        if any(key.startswith("#") for key in obj):
            raise ValueError(f"not an ITF value: {obj!r:.80}")
        return make_function((key, from_itf(x)) for key, x in obj.items())
    raise ValueError(f"not an ITF value: {obj!r:.80}")


def state_to_itf(state: Mapping[str, Value]) -> dict[str, JSON]:
    """An ITF state: one key per variable."""
    return {name: to_itf(state[name]) for name in sorted(state)}


def state_from_itf(obj: object) -> dict[str, Value]:
    """The state of an ITF state object; keys starting with ``#`` (like ``#meta``) are not variables."""
    if not isinstance(obj, dict):
        raise ValueError(f"an ITF state must be a JSON object, not {obj!r:.80}")
    return {name: from_itf(x) for name, x in obj.items() if not name.startswith("#")}


# id(value) -> (value, its canonical text). Keyed by identity, not equality: Python's 1 == True would
# otherwise give <<TRUE>> the text of <<1>>. Holding the value keeps its id from being reused.
_TEXT_BY_ID: dict[int, tuple[Value, str]] = {}
# A string or variable name -> its JSON text; few distinct ones per model.
_STRING_TEXT: dict[str, str] = {}


def _string_text(s: str) -> str:
    text = _STRING_TEXT.get(s)
    if text is None:
        if len(_STRING_TEXT) >= _CACHE_LIMIT:
            _STRING_TEXT.clear()
        text = _STRING_TEXT[s] = json.dumps(s)
    return text


def canonical_text(v: Value) -> str:
    """``canonical_json(to_itf(v))``, printed directly, with the text of every collection memoized by
    identity: replay prints every successor, and the parts successors share are the same objects (the
    mappings build them through caches), so most of a new state's text is joined from known texts."""
    if type(v) is str:
        return _string_text(v)
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) is int:
        return str(v) if -_SAFE_INT < v < _SAFE_INT else f'{{"#bigint":"{v}"}}'
    known = _TEXT_BY_ID.get(id(v))
    if known is not None and known[0] is v:
        return known[1]
    if type(v) is tuple:
        text = "[" + ",".join(map(canonical_text, v)) + "]"
    elif type(v) is frozenset:
        text = '{"#set":[' + ",".join(map(canonical_text, _sorted_elements(v))) + "]}"
    elif type(v) is Record:
        text = "{" + ",".join(_string_text(n) + ":" + canonical_text(x) for n, x in v.items()) + "}"
    elif type(v) is Function:
        pairs = (f"[{canonical_text(k)},{canonical_text(x)}]" for k, x in v.items())
        text = '{"#map":[' + ",".join(pairs) + "]}"
    elif type(v) is ModelValue:
        text = '{"#unserializable":' + _string_text(v.name) + "}"
    else:
        raise TypeError(f"not a TLA+ value: {v!r}")
    if len(_TEXT_BY_ID) >= _CACHE_LIMIT:
        _TEXT_BY_ID.clear()
    _TEXT_BY_ID[id(v)] = (v, text)
    return text


def canonical_state_json(state: Mapping[str, Value]) -> str:
    """``canonical_json(state_to_itf(state))``, through `canonical_text`."""
    return (
        "{" + ",".join(_string_text(name) + ":" + canonical_text(state[name]) for name in sorted(state)) + "}"
    )


def state_digest(text: str) -> int:
    """A 64-bit digest of a state's canonical text, as a signed int (a Parquet int64): replay compares
    successors by digest, so the shuffled graph carries 8 bytes per edge instead of the target's text."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


_DECODER = json.JSONDecoder()
# A variable's ITF text -> its value. Keyed by text, so 1 and TRUE stay apart; values are immutable.
_VALUE_BY_TEXT: dict[str | bytes, Value] = {}  # JSON texts read, str from TLC's dumps, bytes from drivers


def state_from_json(text: str) -> dict[str, Value]:
    """``state_from_itf(json.loads(text))`` for an ITF state object's text, with each variable's value
    memoized by its text: across a state graph most variables repeat a few values, and building them
    from ITF is most of the cost of reading a state. Raises ValueError."""
    state: dict[str, Value] = {}
    end = len(text)
    position = _skip_space(text, 0)
    if position >= end or text[position] != "{":
        raise ValueError(f"an ITF state must be a JSON object, not {text[:80]!r}")
    position = _skip_space(text, position + 1)
    if text.startswith("}", position):
        return state
    while True:
        name, position = _DECODER.raw_decode(text, position)
        position = _skip_space(text, position)
        if not isinstance(name, str) or not text.startswith(":", position):
            raise ValueError(f"an ITF state's keys must be strings followed by ':' (at {position})")
        start = _skip_space(text, position + 1)
        itf, position = _DECODER.raw_decode(text, start)
        if not name.startswith("#"):
            state[name] = _memoized(text[start:position], itf)
        position = _skip_space(text, position)
        if text.startswith("}", position):
            return state
        if not text.startswith(",", position):
            raise ValueError(
                f"expected ',' or '}}' in an ITF state at {position}: {text[position : position + 20]!r}"
            )
        position = _skip_space(text, position + 1)


def state_from_parsed_itf(obj: Mapping[str, object]) -> dict[str, Value]:
    """``state_from_itf(obj)`` for a state already parsed from JSON (a driver's answer), with each
    variable's value memoized by its JSON text as in `state_from_json`: the answers of a replay repeat
    a few values per variable, and the memoized values' canonical texts are memoized too."""
    return {name: _memoized(to_json(itf), itf) for name, itf in obj.items() if not name.startswith("#")}


def _memoized(text: str | bytes, itf: object) -> Value:
    """The value of `itf`, whose JSON text is `text`, from the memo if it was read before."""
    value = _VALUE_BY_TEXT.get(text)
    if value is None:
        if len(_VALUE_BY_TEXT) >= _CACHE_LIMIT:
            _VALUE_BY_TEXT.clear()
        value = _VALUE_BY_TEXT[text] = from_itf(itf)
    return value


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def canonical_json(obj: JSON) -> str:
    """Compact JSON with sorted keys: equal values (``to_itf`` output, ITF states) give equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
