"""Documented violations: models whose counterexample is the point.

Some systems lose data by design (NCache: asynchronous replication and an abrupt leave; a second leave
while the first one's buckets are still served from a replica). Each such loss window is a model of its
own, spec/X-<window>.cfg, whose header records the property it must violate:

    \\* tidemark: expect AckedWritesSurvive violated

`tidemark check spec/X.tla` runs the standard model and then every such model next to it; a documented
model passes when TLC finds exactly that violation ("violated, as documented") and fails when the property
holds or something else is violated.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.output import Outcome, TlcResult

_DIRECTIVE = re.compile(r"^\\\*\s*tidemark:\s*expect\s+(\S+)(?:\s+(\S+))?\s*$", re.M)


class Expectation(BaseModel):
    config: str
    violated: str  # the invariant TLC must report violated


def expectation(config: Path) -> Expectation | None:
    """The documented violation a model config records, None for an ordinary model."""
    found = _DIRECTIVE.search(config.read_text(encoding="utf-8"))
    if found is None:
        return None
    if found.group(2) != "violated":
        raise TidemarkError(
            f"unreadable expectation {found.group(0)!r}",
            source=str(config),
            expected="\\* tidemark: expect PROPERTY violated",
        )
    return Expectation(config=str(config), violated=found.group(1))


def documented_models(spec: Path) -> list[Path]:
    """The models next to spec/X.tla (spec/X-*.cfg) that record a documented violation, by name."""
    return [c for c in sorted(spec.parent.glob(f"{spec.stem}-*.cfg")) if expectation(c) is not None]


def documented_run(expected: Expectation, result: TlcResult, ok: bool, words: str) -> dict[str, Any]:
    """A documented model's run as `tidemark check --json` lists it under `documented`."""
    violation = result.violation.model_dump(mode="json") if result.violation else None
    return {
        "config": expected.config,
        "violated": expected.violated,
        "as_documented": ok,
        "verdict": words,
        "outcome": result.outcome.value,
        "violation": violation,
    }


def verdict(expected: Expectation, result: TlcResult) -> tuple[bool, str]:
    """Whether a run of a documented model came out as documented, and the words for it."""
    violation = result.violation
    if result.outcome == Outcome.OK:
        return False, f"{expected.violated} unexpectedly holds"
    if violation is not None and violation.invariant == expected.violated:
        return True, f"{expected.violated} violated, as documented"
    named = violation.invariant if violation is not None else None
    return False, f"expected {expected.violated} violated, got {named or result.outcome.value}"
