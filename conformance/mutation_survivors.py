"""Mutants of impl/ that conformance on the standard models does not kill, each with why.

`SURVIVORS[module][key] = (equivalent, explanation)`: `equivalent` is True when no input at all tells the
mutant from the module (it is left out of the score), False when some input does but the models never
produce it (the explanation says which input, and which unit test exposes it). Keys are
`conformance.mutation.Mutant.key`. docs/mutation.md presents the same list.
"""

from __future__ import annotations

SURVIVORS: dict[str, dict[str, tuple[bool, str]]] = {
    "impl/counter.py": {},
    "impl/cluster.py": {},
    "impl/pme.py": {},
}

# Whole scopes no model reaches by design, by the prefix of their mutants' keys.
OUT_OF_REACH: dict[str, dict[str, str]] = {
    "impl/counter.py": {},
}


def explanation(path: str, key: str) -> tuple[bool, str] | None:
    """(equivalent, why) for a listed survivor of the module at `path`, else None."""
    listed = SURVIVORS.get(path, {})
    if key in listed:
        return listed[key]
    scopes = [prefix for prefix in OUT_OF_REACH.get(path, {}) if key.startswith(prefix)]
    return (False, OUT_OF_REACH[path][max(scopes, key=len)]) if scopes else None
