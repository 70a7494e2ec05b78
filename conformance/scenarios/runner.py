"""The protocol-neutral runner: a scenario's steps in order through a System (adapters/), a timeline row
and the expectations checked after each, the final expectations at the end.

Each step costs what the step and its expectations ask for: the runner keeps no history it walks again
(the timeline only grows), and the checks observe only the values they name.
"""

from __future__ import annotations

from collections.abc import Callable

from tidemark.conformance.scenarios.adapters import SYSTEMS
from tidemark.conformance.scenarios.adapters.base import StepFailed, StepRefused, System
from tidemark.conformance.scenarios.checks import check, exchange_checks, expectation_checks
from tidemark.conformance.scenarios.format import ScenarioFile, ScenarioStep, step_text
from tidemark.conformance.scenarios.result import Check, MessageEvent, ScenarioResult, TimelineRow


def run_scenario(
    scenario: ScenarioFile,
    system: str = "impl",
    *,
    watch: Callable[[int | None, System], None] | None = None,
) -> ScenarioResult:
    """Run the steps in order, checking each step's expectations after it and the final ones at the end.

    A step that is not possible (or that fails with a named error) stops the run: the scenario fails -
    unless the step says `refused` or names the `error` it must fail with: that is checked, and the run
    goes on from the state before the step. `watch(index, system)` is called at the start (index None)
    and after each step that ran, refused ones included (conformance/scenarios/compare.py observes there)."""
    with SYSTEMS[system][scenario.protocol](scenario) as run:
        timeline = [timeline_row(None, "initial state", None, [], run)]
        if watch is not None:
            watch(None, run)
        checks: list[Check] = []
        failure = None
        for index, entry in enumerate(scenario.steps):
            text = step_text(entry)
            try:
                shown, events, outcome = _take(index, entry, text, run)
            except StepRefused as refused:
                enabled = ", ".join(run.enabled()) or "none"
                why = f" ({refused.reason})" if refused.reason else ""
                failure = f"steps[{index}]: {text} is not enabled here{why}; enabled: {enabled}"
                break
            except StepFailed as error:
                failure = f"steps[{index}]: {text} failed: {error}"
                break
            checks += outcome
            timeline.append(timeline_row(index, shown, entry.note, events, run))
            if watch is not None:
                watch(index, run)
            checks += expectation_checks(
                f"steps[{index}]", entry.expect, entry.topology, entry.idle_verify, run
            )
            if entry.exchange is not None:
                checks += exchange_checks(f"steps[{index}].exchange", entry.exchange, run)
        else:
            checks += expectation_checks("", scenario.expect, scenario.topology, scenario.idle_verify, run)
        return ScenarioResult(
            name=scenario.name,
            description=scenario.description,
            protocol=scenario.protocol,
            system=system,
            counter=scenario.counter,
            client=run.client,
            servers=list(run.servers),
            passed=failure is None and all(c.holds for c in checks),
            failure=failure,
            timeline=timeline,
            checks=checks,
            nodes={n: run.node_view(n) for n in run.servers},
            topology=run.topology(),
            txs=run.client_txs(),
            idle_verify=run.idle_verify(),
        )


def _take(
    index: int, entry: ScenarioStep, text: str, run: System
) -> tuple[str, list[MessageEvent], list[Check]]:
    """Take one step, or check that it is refused or fails as expected: (the timeline's text for it, its
    messages, the check of its outcome)."""
    if entry.refused:
        allowed = run.allows(entry)
        outcome = check(f"steps[{index}].refused", "refused", "enabled" if allowed else "refused")
        return (f"{text} NOT refused (not taken)" if allowed else f"{text} refused"), [], [outcome]
    if entry.error is None:
        return text, run.take(entry), []
    try:
        events = run.take(entry)
    except StepFailed as error:
        outcome = check(f"steps[{index}].error", entry.error, error.name)
        return f"{text} failed: {error.name}", [], [outcome]
    except StepRefused:
        return f"{text} not enabled", [], [check(f"steps[{index}].error", entry.error, "not enabled")]
    return f"{text} did NOT fail (taken)", events, [check(f"steps[{index}].error", entry.error, "no error")]


def timeline_row(
    index: int | None, step: str, note: str | None, messages: list[MessageEvent], run: System
) -> TimelineRow:
    nodes, topology, in_flight = run.snapshot()
    return TimelineRow.model_construct(
        index=index,
        step=step,
        note=note,
        messages=messages,
        in_flight=in_flight,
        topology=topology,
        nodes=nodes,
    )
