"""`tidemark explain TRACE.itf.json`: replay a counterexample on the implementation, step by step.

The implementation starts from the trace's first state (concretized through the spec's mapping) and
takes each later state's `action`; after every step its state (abstracted) is compared with the trace's.
The first step where they differ is shown with the differing variables, and the replay stops there:
what follows in the trace starts from a state the implementation is not in. The spec, its constants and
a mutant come from the trace's metadata (tidemark writes them) or from the command line (a trace written
by Apalache or Quint carries none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tidemark.conformance.counterexample import Counterexample, action_text, read_itf
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import ReplayError, mapping_for
from tidemark.conformance.replay import state_diff
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import Value, from_itf


class ExplainedStep(BaseModel):
    index: int = Field(description="1 for the initial state")
    action: str
    agrees: bool
    diff: list[str] = Field(default_factory=list, description="path: expected (trace) vs actual (impl)")


class Explanation(BaseModel):
    trace: str
    spec: str
    mutant: str | None
    steps: list[ExplainedStep]

    @property
    def holds(self) -> bool:
        """The implementation follows the whole trace."""
        return all(step.agrees for step in self.steps)


def _model(path: Counterexample, spec: Path | None, config: Path | None) -> tuple[str, dict[str, Value]]:
    """The spec's name and the model's constants: from the command line, else the trace's metadata."""
    if spec is not None or config is not None:
        spec = spec or Path(str(path.meta.get("spec", "")))
        model = read_config(config or spec.with_suffix(".cfg"))
        return spec.stem, dict(model.constants)
    if "spec" not in path.meta or "constants" not in path.meta:
        raise TidemarkError(
            "the trace does not say which spec and model it belongs to",
            source="--spec",
            expected="--spec SPEC.tla (and --config CFG) for a trace written by another tool",
        )
    constants = {name: from_itf(value) for name, value in dict(path.meta["constants"]).items()}
    return Path(str(path.meta["spec"])).stem, constants


def explain(
    source: Path,
    spec: Path | None = None,
    config: Path | None = None,
    mutant: str | None = None,
    *,
    correct: bool = False,
) -> Explanation:
    """Replay the trace on the implementation: `mutant` if given, else the trace's own mutant (a
    conformance mismatch found on one), else the correct one; `correct` ignores the trace's mutant."""
    path = read_itf(source)
    name, constants = _model(path, spec, config)
    if mutant is None and not correct:
        mutant = path.meta.get("mutant")
    mapping = mapping_for(name, constants, mutant)
    states = path.values()
    steps = [ExplainedStep(index=1, action=action_text(states[0].get("action")), agrees=True)]
    try:
        impl: Any = mapping.concretize(states[0])
    except (ReplayError, ValueError) as error:
        steps[0] = steps[0].model_copy(update={"agrees": False, "diff": [f"concretize: {error}"]})
        return Explanation(trace=str(source), spec=name, mutant=mutant, steps=steps)
    for index, expected in enumerate(states[1:], start=2):
        action = expected.get("action")
        step = ExplainedStep(index=index, action=action_text(action), agrees=True)
        try:
            if action is None:
                raise ReplayError("the state has no `action` variable: which step led to it is unknown")
            impl = mapping.apply(impl, action)
            diff = state_diff(expected, mapping.abstract(impl))
        except (ReplayError, ValueError, AssertionError, RuntimeError) as error:
            diff = [f"the implementation refuses the step: {type(error).__name__}: {error}"]
        steps.append(step.model_copy(update={"agrees": not diff, "diff": diff}))
        if diff:
            break
    return Explanation(trace=str(source), spec=name, mutant=mutant, steps=steps)
