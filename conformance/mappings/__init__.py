"""One mapping module per spec: abstract / concretize / apply / enabled between spec states and impl values.

A mapping is built for one model (its constants) and is what replay needs to check an edge
s --a--> s' (apply(concretize(s), a) abstracts to s') and a state (enabled(concretize(s)) equals the
actions on s's outgoing edges). Mappings are plain Python: Spark workers import them by spec name.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Protocol

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.values import Record, Value, make_function

State = dict[str, Value]

# spec module name -> mapping module (spec/X.tla <-> impl/x.py <-> conformance/mappings/x.py), and its
# builder when it is not `build` (a variant spec maps onto the same implementation, configured otherwise)
MAPPINGS = {
    "UpdateCounter": "tidemark.conformance.mappings.counter",
    "TxCounters": "tidemark.conformance.mappings.tx_counters",
    "TxCountersFixed": "tidemark.conformance.mappings.tx_counters:build_fixed",
    "PME": "tidemark.conformance.mappings.pme",
    "HazelcastAntiEntropy": "tidemark.conformance.mappings.hazelcast",
    "PMEFixed": "tidemark.conformance.mappings.pme:build_fixed",
    "NCachePartitionReplica": "tidemark.conformance.mappings.ncache",
}


# Successors share most of their parts. Abstract values built through these caches make equal parts the
# same objects, which `canonical_text` prints once (it memoizes by identity) and which hash once. The
# arguments are the impl's values with one type per position (a field is always an int, or always a
# bool), so Python's 1 == True cannot make two different TLA+ values share an object.
_SHARED = 1 << 16


@lru_cache(maxsize=_SHARED)
def shared_record(**fields: Value) -> Record:
    return Record(fields)


def shared_function(pairs: Iterable[tuple[Value, Value]]) -> Value:
    """The function from impl keys (all strings or all ints, so sorted by key alone) to shared values,
    itself shared."""
    return _shared_function(tuple(sorted(pairs)))


@lru_cache(maxsize=_SHARED)
def _shared_function(pairs: tuple[tuple[Value, Value], ...]) -> Value:
    return make_function(pairs)


@lru_cache(maxsize=_SHARED)
def shared_set(elements: frozenset[Value]) -> frozenset[Value]:
    return elements


class ReplayError(Exception):
    """The implementation refused or contradicted a step the spec takes (reported as a mismatch)."""


class SpecMapping(Protocol):
    spec: str

    def concretize(self, state: State) -> Any: ...

    def apply(self, impl: Any, action: Value) -> Any: ...

    def abstract(self, impl: Any) -> State: ...

    def enabled(self, impl: Any) -> set[Value]: ...


def mapping_for(spec: str, constants: Mapping[str, Value], mutant: str | None = None) -> SpecMapping:
    """The mapping of spec module `spec` for a model with these constants (optionally a mutant impl)."""
    if spec not in MAPPINGS:
        raise TidemarkError(
            f"no conformance mapping for spec {spec}", source=spec, expected=f"one of {sorted(MAPPINGS)}"
        )
    module_name, _, builder = MAPPINGS[spec].partition(":")
    module = importlib.import_module(module_name)
    mapping: SpecMapping = getattr(module, builder or "build")(constants, mutant)
    return mapping
