"""The report's Mermaid sequence diagrams, as Mermaid source text: one per TLC counterexample (a message
per step, on the copy or node its action names) and one per conformance mismatch (what the spec expected
against what the implementation gave). The page puts each in a <pre class="mermaid"> block, escaped."""

from __future__ import annotations

from typing import Any

from tidemark.conformance.counterexample import action_text as value_action_text
from tidemark.conformance.replay import Mismatch
from tidemark.conformance.tlc.output import TraceStep, Violation
from tidemark.conformance.tlc.values import from_itf

# Action record fields naming the copy, node or member a step happens on (UpdateCounter: copy, TxCounters
# and PME: node, HazelcastAntiEntropy: member).
PARTICIPANT_FIELDS = ("copy", "node", "member")


def verdict(holds: bool) -> str:
    return "holds" if holds else "FAILS"


def action_text(action: Any) -> str:
    """An ITF action record as `Commit(copy=b, delta=1, start=1)` (`Init` without parameters);
    anything else in TLA+ syntax."""
    try:
        value = from_itf(action)
    except ValueError:
        return str(action)
    return value_action_text(value)


# One pass: replacing '#' and then ';' would mangle the ';' of the '#35;' just written.
_MERMAID_ENTITIES = str.maketrans({"#": "#35;", ";": "#59;"})


def _mermaid_text(text: str) -> str:
    """Text safe inside a Mermaid message or note: ';' and '#' would end or start an entity there."""
    return " ".join(text.translate(_MERMAID_ENTITIES).split())


def _split_diff(line: str) -> tuple[str, str, str] | None:
    """'path: expected X, got Y' (conformance.replay.value_diff) as (path, X, Y); None for other lines."""
    path, found, rest = line.partition(": expected ")
    expected, found_got, actual = rest.rpartition(", got ")
    return (path, expected, actual) if found and found_got else None


def mismatch_diagram(mismatch: Mismatch) -> str:
    """Source state -> action -> what the spec expected vs what the implementation gave."""
    lines = [
        "sequenceDiagram",
        "    participant spec as spec (expected)",
        "    participant impl as implementation (actual)",
        f"    Note over spec,impl: source state {mismatch.src}",
    ]
    if mismatch.kind == "enabledness":
        lines += [
            f"    spec-ximpl: {_mermaid_text(action_text(a))} (impl does not enable it)"
            for a in mismatch.missing
        ]
        lines += [
            f"    impl-xspec: {_mermaid_text(action_text(a))} (spec does not take it)" for a in mismatch.extra
        ]
        return "\n".join(lines)
    if mismatch.action is not None:
        lines.append(f"    spec->>impl: {_mermaid_text(action_text(mismatch.action))}")
    if mismatch.error:
        lines.append(f"    impl--xspec: {_mermaid_text(mismatch.error)}")
    for line in mismatch.diff:
        parts = _split_diff(line)
        if parts is None:
            lines.append(f"    Note over spec,impl: {_mermaid_text(line)}")
            continue
        path, expected, actual = map(_mermaid_text, parts)
        lines += [
            f"    impl-->>spec: {path}",
            f"    Note left of spec: {expected}",
            f"    Note right of impl: {actual}",
        ]
    return "\n".join(lines)


def _step_participant(step: TraceStep) -> str | None:
    action = step.state.get("action")
    if isinstance(action, dict):
        for field in PARTICIPANT_FIELDS:
            if isinstance(action.get(field), str):
                return str(action[field])
    return None


def step_action(step: TraceStep) -> str:
    # The recorded action record has the parameters; TLC's label (the action's name) is the fallback.
    action = step.state.get("action")
    return action_text(action) if action is not None else step.action


def _step_label(step: TraceStep) -> str:
    return f"{step.index}. {step_action(step)}"


def counterexample_diagram(violation: Violation) -> str:
    """One message per step, on the copy or node its action names; steps naming none span them all."""
    named = sorted({p for step in violation.trace if (p := _step_participant(step)) is not None})
    participants = named or ["spec"]
    ids = {name: f"P{i}" for i, name in enumerate(participants)}
    span = f"{ids[participants[0]]},{ids[participants[-1]]}"
    lines = ["sequenceDiagram"]
    lines += [f"    participant {ids[name]} as {_mermaid_text(name)}" for name in participants]
    for step in violation.trace:
        who = _step_participant(step)
        label = _mermaid_text(_step_label(step))
        if who is None and named:
            lines.append(f"    Note over {span}: {label}")
        else:
            target = ids[who or "spec"]
            lines.append(f"    {target}->>{target}: {label}")
    if violation.loops_back_to is not None:
        lines.append(f"    Note over {span}: back to state {violation.loops_back_to}")
    lines.append(
        f"    Note over {span}: violated: {_mermaid_text(violation.invariant or str(violation.kind))}"
    )
    return "\n".join(lines)
