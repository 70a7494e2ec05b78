"""The `tidemark` command: thin wrappers that parse arguments, call the library and print results.

Human output goes through rich; --json prints one JSON object on stdout when the command reaches a
verdict. Exit codes (tidemark.conformance.errors.exit_code): 0 the check holds, 1 it does not (violation,
mismatch), 2 bad input or usage, 3 environment or internal error, 130 interrupted; the message of an
error goes to stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from tidemark.conformance.cli import options as opt
from tidemark.conformance.cli.outputs import emit as _emit
from tidemark.conformance.cli.progress import Status, console, out, progress
from tidemark.conformance.errors import Terminated, TidemarkError, exit_code
from tidemark.conformance.resources import resource
from tidemark.conformance.runinfo import invocation
from tidemark.conformance.scratch import signals_unwind
from tidemark.conformance.spark import executor_python
from tidemark.conformance.tlc.output import TlcResult
from tidemark.conformance.tlc.runner import TlcOptions

# The standard model of every spec the main job verifies, in dependency order.
STANDARD_SPECS = [
    resource("spec/UpdateCounter.tla"),
    resource("spec/TxCounters.tla"),
    resource("spec/PME.tla"),
    resource("spec/HazelcastAntiEntropy.tla"),
    resource("spec/NCachePartitionReplica.tla"),
]


def _standard_specs(names: list[str] | None) -> list[Path]:
    """The standard models, or the named ones (`verify --only`; a TidemarkError for an unknown name)."""
    known = {spec.stem: spec for spec in STANDARD_SPECS}
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise TidemarkError(
            f"unknown standard model {unknown[0]!r}", source="--only", expected=f"one of {list(known)}"
        )
    return [known[name] for name in names] if names else list(STANDARD_SPECS)


def _progress(args: argparse.Namespace) -> AbstractContextManager[Status]:
    return progress(console, json=args.json, quiet=args.quiet, verbose=args.verbose)


def _tlc_options(args: argparse.Namespace) -> TlcOptions:
    return TlcOptions(workers=args.workers, timeout=args.timeout, heap=args.heap)


def _print_tlc(
    result: TlcResult, spec: Path, config: Path | None = None, documented: str | None = None, ok: bool = True
) -> None:
    style = "green" if ok else "red"
    model = f" ({config})" if config is not None else ""
    verdict = documented if documented is not None else result.outcome
    out.print(f"[bold]{spec}[/]{model}: [{style}]{verdict}[/]")
    table = Table(show_header=False, box=None, pad_edge=False)
    for label, value in (
        ("distinct states", result.distinct_states),
        ("states generated", result.generated_states),
        ("depth", result.depth),
        ("seconds", result.seconds),
    ):
        if value is not None:
            table.add_row(f"  {label}", f"{value:,}" if isinstance(value, int) else str(value))
    out.print(table)
    if result.violation is not None:
        from tidemark.conformance.counterexample import definition, render, violation_path

        name = result.violation.invariant
        render(out, violation_path(result, spec, config), definition(spec, name) if name else None)


def _run_check(spec: Path, config: Path | None, args: argparse.Namespace) -> TlcResult:
    from tidemark.conformance.tlc.output import parse_output, tlc_failure
    from tidemark.conformance.tlc.runner import run_tlc

    with _progress(args) as status:
        status.phase(f"model checking {spec} with TLC" + (f" ({config})" if config else ""))
        run = run_tlc(spec, config, _tlc_options(args), status.line)
    result = parse_output(run, source=f"TLC on {spec}")
    if (error := tlc_failure(result, spec, config or spec.with_suffix(".cfg"))) is not None:
        raise error
    return result


def cmd_check(args: argparse.Namespace) -> int:
    """The model given (or the standard one and then every documented-violation model next to the spec,
    conformance/expectations.py): each must hold, or violate exactly what it documents. The JSON is the
    first model's result, with every documented model's run in `documented`."""
    from tidemark.conformance.expectations import documented_models, documented_run, expectation, verdict

    configs = [args.config] if args.config else [None, *documented_models(args.spec)]
    holds, first, documented = True, None, []
    for config in configs:
        result = _run_check(args.spec, config, args)
        first = first or result
        expected = expectation(config) if config is not None else None
        words: str | None = None
        if expected is None:
            ok = result.outcome == "ok"
        else:
            ok, words = verdict(expected, result)
            documented.append(documented_run(expected, result, ok, words))
        holds = holds and ok
        if args.out is not None and result.violation is not None and config is configs[0]:
            from tidemark.conformance.counterexample import violation_path, write_itf

            write_itf(violation_path(result, args.spec, config), args.out)
        if not args.json:
            _print_tlc(result, args.spec, config, words, ok)
    code = 0 if holds else 1
    if args.json:
        assert first is not None
        return _emit("check", first, code, documented=documented)
    return code


def _step_text(action: Any) -> str:
    """A path's action, short: Commit(copy=b, delta=1, start=0) for [name |-> "Commit", copy |-> "b", ...]."""
    if isinstance(action, dict) and isinstance(action.get("name"), str):
        rest = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in action.items() if k != "name"]
        return f"{action['name']}({', '.join(rest)})"
    return json.dumps(action)


def cmd_conform(args: argparse.Namespace) -> int:
    import shlex

    from tidemark.conformance.conform import DriverOptions, conform

    driver = None
    if args.driver is not None:
        if args.mutant or (args.walk and (args.master or args.spark)):
            raise TidemarkError(
                "--driver replays the driver's implementation (--walk: in this process)",
                source="--driver",
                expected="no --mutant with it, nor --master or --spark with --walk",
            )
        command = shlex.split(args.driver)
        if not command:
            raise TidemarkError("empty command", source="--driver", expected="a driver's command line")
        driver = DriverOptions(
            command=command,
            processes=args.drivers,
            timeout=args.driver_timeout,
            walk=args.walk,
            spark=bool(args.spark or args.master),
        )
    with _progress(args) as status:
        result = conform(
            args.spec,
            args.config,
            master=args.master,
            local=True if args.local else False if args.spark else None,
            mutant=args.mutant,
            run_dir=args.run_dir,
            options=_tlc_options(args),
            on_line=status.line,
            on_phase=status.phase,
            wait=not args.no_wait,
            driver=driver,
        )
    from tidemark.conformance.counterexample import first_mismatch_path, write_itf

    # Through a driver each example carries its own path (the in-process rendering would replay impl/).
    path = None if driver else first_mismatch_path(result, args.spec, args.config, args.run_dir, args.mutant)
    if path is not None and args.out is not None:
        write_itf(path, args.out)
    if args.junit is not None:
        from tidemark.conformance.junit import conform_case, suite, write

        write(args.junit, [suite(result.spec, [conform_case(result)])])
    if args.json:
        return _emit("conform", result, 0 if result.holds else 1)
    if result.tlc is not None and result.outcome != "ok":
        _print_tlc(result.tlc, args.spec)
        return 1
    style = "green" if result.holds else "red"
    out.print(
        f"[bold]{args.spec}[/] conformance: [{style}]{'holds' if result.holds else 'FAILS'}[/]"
        f" — {result.states:,} states, {result.edges_replayed:,}/{result.edges:,} edges replayed,"
        f" {result.mismatches} edge mismatches, {result.enabledness_mismatches} enabledness mismatches"
    )
    tlc = (
        "TLC not run (graph reused from the run directory: same inputs)"
        if result.graph_reused
        else f"TLC {result.tlc_seconds:.1f} s, graph load {result.load_seconds:.1f} s"
    )
    if result.driver is not None:
        run = result.driver
        walks = f", {run.paths:,} walks" if run.mode == "paths" else ""
        out.print(
            f"  driver {escape(' '.join(run.command))} ({escape(run.implementation)}): capabilities"
            f" {', '.join(run.capabilities) or 'none'}; replayed by {run.mode}{walks}, {run.steps:,} steps,"
            f" {run.restarts} restarts"
        )
    out.print(f"  {tlc}, replay {result.replay_seconds:.1f} s {escape(result.engine)}")
    coverage = ", ".join(f"{name} {count:,}" for name, count in result.coverage.items())
    out.print(f"  coverage: {coverage}")
    for example in result.examples[:5]:
        what = escape(f"action {example.action}")
        out.print(f"  [red]{example.kind} mismatch[/] at state {example.src}, {what}")
        for line in [*example.diff, *([example.error] if example.error else [])]:
            out.print(f"    {escape(line)}")
        if example.path is not None and result.driver is not None:
            steps = " -> ".join(_step_text(step) for step in example.path) or "(the initial state)"
            out.print(f"    path from the initial state: {escape(steps)}")
        if example.missing:
            out.print(f"    spec takes, impl does not enable: {escape(str(example.missing))}")
        if example.extra:
            out.print(f"    impl enables, spec does not take: {escape(str(example.extra))}")
    if path is not None:
        from tidemark.conformance.counterexample import render

        out.print("[bold]the mismatch nearest an initial state, on its shortest path:[/]")
        render(out, path)
        if args.out is not None:
            out.print(f"  trace: {args.out} (replay it: tidemark explain {args.out})")
    return 0 if result.holds else 1


def cmd_explain(args: argparse.Namespace) -> int:
    from tidemark.conformance.explain import explain

    result = explain(args.trace, args.spec, args.config, args.mutant, correct=args.correct)
    if args.json:
        return _emit("explain", result, 0 if result.holds else 1)
    who = f"mutant {result.mutant}" if result.mutant else "the implementation"
    out.print(f"[bold]{escape(result.trace)}[/] ({result.spec}) on {who}:")
    for step in result.steps:
        mark = "[green]agrees[/]" if step.agrees else "[red]differs[/]"
        out.print(f"  {step.index}. {escape(step.action)}: {mark}")
        for line in step.diff:
            out.print(f"      {escape(line)}", highlight=False)
    if result.holds:
        out.print(f"[green]{who} takes every step of the trace[/]")
    else:
        out.print(f"[red]{who} leaves the trace at step {result.steps[-1].index}[/]")
    return 0 if result.holds else 1


def cmd_zoo(args: argparse.Namespace) -> int:
    from tidemark.conformance.tlc.runner import find_jar, find_java
    from tidemark.conformance.zoo.entries import ZooResult, run_zoo

    find_java()  # before the run directory is made
    find_jar()

    def shown(result: ZooResult) -> None:
        if args.json:
            return
        mark = "[green]caught[/]" if result.caught else "[red]MISSED[/]"
        out.print(f"{mark} [bold]{result.name}[/]: {escape(result.title)}")
        out.print(f"    spec (TLC): {escape(result.spec.describe())}")
        out.print(f"    impl (conformance): {escape(result.impl.describe())}")

    with _progress(args) as status:
        status.phase("bug zoo: TLC on each spec variant, conformance on each mutant")
        report = run_zoo(args.run_dir, args.only, _tlc_options(args), on_entry=shown, wait=not args.no_wait)
    if args.junit is not None:
        from tidemark.conformance.junit import suite, write, zoo_cases

        write(args.junit, [suite("zoo", zoo_cases(report))])
    if args.json:
        return _emit("zoo", report, 0 if report.all_caught else 1)
    else:
        caught = sum(r.caught for r in report.entries)
        style = "green" if report.all_caught else "red"
        out.print(f"[{style}]{caught}/{len(report.entries)} bugs caught on both sides[/]")
    return 0 if report.all_caught else 1


def cmd_simulate(args: argparse.Namespace) -> int:
    from tidemark.conformance.simulate import simulate

    with _progress(args) as status:
        result = simulate(
            args.spec,
            args.config,
            traces=args.traces,
            depth=args.depth,
            seed=args.seed,
            master=args.master,
            local=args.local,
            mutant=args.mutant,
            options=_tlc_options(args),
            on_line=status.line,
        )
    if args.json:
        return _emit("simulate", result, 0 if result.holds else 1)
    if result.tlc is not None and result.outcome != "ok":
        _print_tlc(result.tlc, args.spec)
    else:
        style = "green" if result.holds else "red"
        out.print(
            f"[bold]{args.spec}[/] simulation: [{style}]{'holds' if result.holds else 'FAILS'}[/]"
            f" — {result.traces:,} traces, {result.steps_replayed:,}/{result.steps:,} steps replayed,"
            f" {result.mismatches} traces diverge;"
            f" TLC {result.tlc_seconds:.1f} s, replay {result.replay_seconds:.1f} s"
        )
        for example in result.examples[:5]:
            out.print(
                f"  [red]trace {example.trace}, step {example.step}[/]"
                + escape(f" {example.action}: {example.reason}")
            )
            for line in example.diff:
                out.print(f"    {escape(line)}")
    return 0 if result.holds else 1


def cmd_prove(args: argparse.Namespace) -> int:
    from tidemark.conformance.prove.counter import prove_counter

    report = prove_counter(args.k)
    if args.json:
        return _emit("prove", report, 0 if report.all_primary_proved and report.backup_refuted else 1)
    else:
        table = Table("operation", "case", "role", "claim", "status", "s")
        for ob in report.obligations:
            style = "green" if (ob.status == "proved") == (ob.role == "primary") else "red"
            table.add_row(
                ob.operation, ob.case, ob.role, ob.claim, f"[{style}]{ob.status}[/]", f"{ob.seconds:.2f}"
            )
        out.print(table)
        for ob in report.obligations:
            if ob.counterexample is not None and ob.role == "backup":
                out.print(f"backup counterexample ({ob.claim}): {ob.counterexample.model_dump_json()}")
                break
        out.print(f"primary invariants inductive (k={report.k}): {report.all_primary_proved}")
        out.print(f"backup HWM >= LWM refuted: {report.backup_refuted}")
    return 0 if report.all_primary_proved and report.backup_refuted else 1


def cmd_verify(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from tidemark.conformance.coverage import coverage_lines
    from tidemark.conformance.locks import locked
    from tidemark.conformance.report import summary_table, write_report
    from tidemark.conformance.verify import verify

    specs = _standard_specs(args.only)
    with locked(args.out, wait=not args.no_wait), _progress(args) as status:
        report = verify(
            specs,
            master=args.master,
            local=args.local,
            options=_tlc_options(args),
            traces=args.traces,
            steps=args.steps,
            seed=args.seed,
            zoo=not args.skip_zoo,
            campaign_walks=args.walks,
            reach=True,
            deep=args.deep,
            on_line=status.line,
            on_phase=status.phase,
            wait=not args.no_wait,
            report_dir=args.out,
        )
        page = write_report(report, args.out)
    if args.junit is not None:
        from tidemark.conformance.junit import verify_suites, write

        write(args.junit, verify_suites(report))
    if args.json:
        return _emit("verify", report, 0 if report.holds else 1)
    else:
        failing = [spec.spec for spec in report.specs if not spec.holds]
        if report.zoo is not None and not report.zoo.all_caught:
            failing.append("the bug zoo")
        out.print(summary_table(report))
        if report.zoo is not None:
            caught = sum(entry.caught for entry in report.zoo.entries)
            out.print(f"bug zoo: {caught}/{len(report.zoo.entries)} bugs caught by TLC and by conformance")
        if report.audit is not None:
            failing += [] if report.audit.holds else ["the audit"]
            out.print(
                f"audit: {report.audit.report.rows:,} generated rows, the injected divergences"
                f" {'found exactly' if report.audit.holds else 'NOT found exactly'}"
            )
        lines, broken = coverage_lines(report.campaign, report.deep, report.reachability)
        for line in lines:
            out.print(line)
        failing += broken
        out.print(
            f"[red]FAILS: {', '.join(failing)}[/]" if failing else "[green]everything holds[/]",
            f"({report.total_seconds:.1f} s); report: {escape(str(page))}",
        )
    return 0 if report.holds else 1


def cmd_campaign(args: argparse.Namespace) -> int:
    from tidemark.conformance.campaign import run_campaign, summary_lines, write_scenario
    from tidemark.conformance.spark import spark_session
    from tidemark.impl.cluster import Fix

    with nullcontext() if args.local else spark_session(args.master) as spark:
        report = run_campaign(
            walks=args.walks,
            steps=args.steps,
            seed=args.seed,
            mutant=args.mutant,
            fixes=() if args.faithful else tuple(Fix),
            spark=spark,
        )
    scenario = write_scenario(report, args.out) if report.first_failure else None
    code = 0 if report.holds else 1
    if args.json:
        return _emit("campaign", report, code, scenario=str(scenario) if scenario else None)
    out.print("\n".join(summary_lines(report, scenario)))
    return code


def cmd_validate(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from tidemark.conformance.traces import read_itf_trace, read_traces
    from tidemark.conformance.validate import resolve_model, validate_traces

    if args.mapping is not None:
        return _validate_log(args)
    if args.traces.name.endswith(".itf.json"):  # one trace, e.g. Apalache's or Quint's
        traces = [read_itf_trace(args.traces, args.spec.stem if args.spec else None)]
    else:
        traces = read_traces(args.traces)
    spec, config = resolve_model(traces, args.spec, args.config)
    report = validate_traces(traces, spec, config, _tlc_options(args))
    if args.json:
        return _emit("validate", report, 0 if report.holds else 1)
    style = "green" if report.holds else "red"
    out.print(
        f"[bold]{escape(str(args.traces))}[/]: [{style}]{report.accepted}/{report.traces} traces accepted[/]"
        f" by {escape(str(spec))} with {escape(str(config))} (TLC {report.tlc_seconds:.1f} s)"
    )
    for rejection in report.rejected:
        out.print(
            f"  [red]{escape(rejection.id)}[/] rejected at step {rejection.step}"
            f" ({escape(rejection.action or 'no action recorded')}): {escape(rejection.reason)}"
        )
        for line in rejection.diff:
            out.print(f"    {escape(line)}")
    for broken in report.broken:
        out.print(
            f"  [red]{escape(broken.id)}[/] state {broken.step} breaks {escape(', '.join(broken.invariants))}"
        )
    return 0 if report.holds else 1


def _validate_log(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from tidemark.conformance.kit.logs import validate_log

    report = validate_log(args.traces, args.mapping, args.spec, args.config, _tlc_options(args))
    if args.json:
        return _emit("validate --mapping", report, 0 if report.holds else 1)
    style = "green" if report.holds else "red"
    out.print(
        f"[bold]{escape(str(args.traces))}[/]:"
        f" [{style}]{report.explained}/{report.events} events explained[/]"
        f" by {escape(report.spec)} with {escape(report.config)} (TLC {report.tlc_seconds:.1f} s)"
    )
    if (rejection := report.rejection) is not None:
        out.print(
            f"  [red]event {rejection.event}[/] (line {rejection.line}, {escape(rejection.kind)}):"
            f" {escape(rejection.reason)}"
        )
        for line in rejection.diff:
            out.print(f"    {escape(line)}")
        out.print(
            f"  {rejection.candidates} spec state(s) consistent with the events before it (--json shows them)"
        )
    return 0 if report.holds else 1


# Each command's function, or "module:function" for those that live beside what they run (imported when
# used, so that the CLI starts quickly).
COMMANDS: dict[str, Callable[[argparse.Namespace], int] | str] = {
    "check": cmd_check,
    "conform": cmd_conform,
    "simulate": cmd_simulate,
    "zoo": cmd_zoo,
    "explain": cmd_explain,
    "prove": cmd_prove,
    "affinity": "tidemark.conformance.cli.placement:cmd_affinity",
    "distribution": "tidemark.conformance.cli.placement:cmd_distribution",
    "hazelcast-lab": "tidemark.conformance.lab.hazelcast:cmd_hazelcast_lab",
    "ncache-lab": "tidemark.conformance.lab.ncache:cmd_ncache_lab",
    "validate": cmd_validate,
    "scenario": "tidemark.conformance.scenarios.command:run",
    "verify": cmd_verify,
    "audit": "tidemark.conformance.audit.command:run",
    "doctor": "tidemark.conformance.cli.doctor:cmd_doctor",
    "campaign": cmd_campaign,
}


class _Notices(logging.Handler):
    """One line on stderr for each notice the library logs (e.g. a corrupt cache discarded)."""

    def emit(self, record: logging.LogRecord) -> None:
        console.print(f"[yellow]notice:[/] {escape(record.getMessage())}", highlight=False)


def _show(error: BaseException) -> None:
    """The one line a user sees for an error: never a traceback."""
    if isinstance(error, TidemarkError):
        console.print(f"[red]error:[/] {escape(error.describe())}", highlight=False)
    elif isinstance(error, KeyboardInterrupt):
        console.print(
            "[yellow]terminated (SIGTERM)[/]" if isinstance(error, Terminated) else "[yellow]interrupted[/]"
        )
    elif not isinstance(error, SystemExit):  # argparse has printed its usage message
        frame = error.__traceback__
        while frame is not None and frame.tb_next is not None:
            frame = frame.tb_next
        where = f" at {Path(frame.tb_frame.f_code.co_filename).name}:{frame.tb_lineno}" if frame else ""
        console.print(
            f"[red]internal error:[/] {escape(type(error).__name__)}: {escape(str(error))}{where}",
            highlight=False,
        )


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    command = COMMANDS[name]
    if isinstance(command, str):
        module, function = command.split(":")
        found: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), function)
        return found
    return command


def main(argv: Sequence[str] | None = None) -> int:
    logger = logging.getLogger("tidemark")
    if not any(isinstance(handler, _Notices) for handler in logger.handlers):
        logger.addHandler(_Notices())
    try:
        args = opt.build_parser(__doc__.splitlines()[0] if __doc__ else None).parse_args(argv)
        logger.setLevel(logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO)
        with signals_unwind(), executor_python(getattr(args, "executor_python", None)), invocation(args):
            code: int = _command(args.command)(args)
    except BaseException as error:  # every way a command ends maps to an exit code, in one place
        _show(error)
        return exit_code(error)
    return code


if __name__ == "__main__":
    sys.exit(main())
