"""`tidemark scenario FILE`: run a scenario on tidemark's implementation (or, with --system, side by side
with a real system), print its timeline and expectations, write its diagram and page."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape

from tidemark.conformance.cli.outputs import emit
from tidemark.conformance.cli.progress import out


def run(args: argparse.Namespace) -> int:
    from tidemark.conformance.scenarios import (
        load_scenario,
        output_paths,
        run_scenario,
        timeline_table,
        write_outputs,
    )

    scenario = load_scenario(args.file)
    if args.system != "impl":
        from tidemark.conformance.scenarios.real import scenario_on_system

        return scenario_on_system(scenario, args, out)
    target = output_paths(args.out, scenario.name)[0]  # checked before the run
    result = run_scenario(scenario)
    diagram, page = write_outputs(result, target)
    if args.junit is not None:
        from tidemark.conformance.junit import scenario_cases, suite, write

        write(args.junit, [suite(f"scenario {result.name}", scenario_cases(result))])
    if args.json:
        return emit("scenario", result, 0 if result.passed else 1, diagram=str(diagram), page=str(page))
    out.print(timeline_table(result))
    for check in result.checks:
        if not check.holds:
            out.print(
                f"  [red]{escape(check.path)}[/]: expected {escape(json.dumps(check.expected))},"
                f" got {escape(json.dumps(check.actual))}"
            )
    if result.failure:
        out.print(f"  [red]{escape(result.failure)}[/]")
    holding = sum(check.holds for check in result.checks)
    style = "green" if result.passed else "red"
    out.print(
        f"[bold]{escape(scenario.name)}[/] (counter {scenario.counter}): [{style}]"
        f"{'holds' if result.passed else 'FAILS'}[/] — {holding}/{len(result.checks)} expectations hold;"
        f" diagram {escape(str(diagram))}, timeline {escape(str(page))}"
    )
    return 0 if result.passed else 1
