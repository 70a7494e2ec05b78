"""`tidemark scenario FILE --system NAME`: the scenario on tidemark's implementation and on a real system,
side by side (conformance/scenarios/compare.py), each difference explained by what the system is known to
do differently (conformance/systems/<system>_differences.py).

Exit code 0 when the scenario passes on the real system - it ran to its end, every expectation holds
there or the scenario's notes for the system say why not, every difference from the implementation is
explained - or when the scenario's notes say it cannot run there; 1 otherwise; 3 when the system cannot
start (the system's harness error, a ToolError).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from tidemark.conformance.scenarios.adapters import SYSTEMS
from tidemark.conformance.scenarios.compare import Explainer, SideBySide, side_by_side
from tidemark.conformance.scenarios.format import ScenarioFile
from tidemark.conformance.scenarios.outputs import output_paths, write_outputs
from tidemark.conformance.scenarios.views.side import side_by_side_summary, side_by_side_table


def _ignite(version: str) -> tuple[Explainer, Callable[[], Any]]:
    from tidemark.conformance.scenarios.adapters.ignite import shared_harness
    from tidemark.conformance.systems.ignite_differences import explain

    return explain, lambda: shared_harness(version)


def _hazelcast(version: str) -> tuple[Explainer, Callable[[], Any]]:
    from tidemark.conformance.scenarios.adapters.hazelcast_real import shared_harness
    from tidemark.conformance.systems.hazelcast_differences import explain

    return explain, lambda: shared_harness(version)


# Per real system: its explainer and a context manager sharing one harness JVM for the runs inside it.
REAL_SYSTEMS: dict[str, Callable[[str], tuple[Explainer, Callable[[], Any]]]] = {
    "ignite": _ignite,
    "hazelcast": _hazelcast,
}


def run_on_system(scenario: ScenarioFile, system: str, *, version: str) -> SideBySide:
    """The side-by-side run of one scenario on `system` (one harness process for it, stopped after)."""
    explain, harness = REAL_SYSTEMS[system](version)
    with harness():
        return side_by_side(scenario, system, explain)


def cannot_run(scenario: ScenarioFile, system: str) -> str | None:
    """Why the scenario is not run on `system`: another system's protocol, or its notes' reason."""
    if scenario.protocol not in SYSTEMS[system]:
        return (
            f"protocol {scenario.protocol} is another system's: its steps and observations have no "
            f"counterpart on {system}, which runs protocols {', '.join(SYSTEMS[system])}"
        )
    notes = scenario.systems.get(system)  # type: ignore[call-overload]
    return notes.cannot_run if notes else None


def scenario_on_system(scenario: ScenarioFile, args: argparse.Namespace, console: Console) -> int:
    """The command (`args`: system, SYSTEM_version, out, json): run, write the real run's diagram and page,
    print the table (or JSON, with `holds` and `exit_code` as every command's); the exit code."""
    system, out, as_json = args.system, args.out, args.json
    version = getattr(args, f"{system}_version")
    reason = cannot_run(scenario, system)
    if reason is not None:
        if as_json:
            not_run = {"name": scenario.name, "system": system, "run": False, "reason": reason}
            print(json.dumps({**not_run, "holds": True, "exit_code": 0}))
        else:
            console.print(f"[bold]{escape(scenario.name)}[/] is not run on {system}: {escape(reason)}")
        return 0
    target = output_paths(out, f"{scenario.name}-{system}")[0]  # checked before the run
    result = run_on_system(scenario, system, version=version)
    diagram, page = write_outputs(result.real, target)
    code = 0 if result.passed else 1
    if getattr(args, "junit", None) is not None:  # the real run's expectations, one case each
        from tidemark.conformance.junit import scenario_cases, suite, write

        write(args.junit, [suite(f"scenario {scenario.name} on {system}", scenario_cases(result.real))])
    if as_json:
        summary = side_by_side_summary(result, system)
        paths = {"diagram": str(diagram), "page": str(page)}
        print(json.dumps({**summary, "run": True, **paths, "holds": code == 0, "exit_code": code}))
        return code
    console.print(side_by_side_table(result, system))
    for check in result.failing_checks:
        console.print(
            f"  [red]{escape(check.path)}[/] on {system}: expected {escape(json.dumps(check.expected))},"
            f" got {escape(json.dumps(check.actual))}"
        )
    for pattern in result.unused_notes:
        console.print(f"  [yellow]note {escape(pattern)}[/]: no expectation it names failed on {system}")
    if result.real.failure:
        console.print(f"  [red]{escape(result.real.failure)}[/]")
    style = "green" if result.passed else "red"
    console.print(
        f"[bold]{escape(scenario.name)}[/] on {system}: [{style}]{'passes' if result.passed else 'FAILS'}[/]"
        f" — {len(result.differences)} differences from impl ({len(result.unexplained)} unexplained),"
        f" {len(result.explained_checks)} expectations differ as noted, {len(result.failing_checks)} fail;"
        f" diagram {escape(str(diagram))}, timeline {escape(str(page))}"
    )
    return code
