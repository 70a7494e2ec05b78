"""The `tidemark` command: thin wrappers that parse arguments, call the library and print results.

Human output goes through rich; --json prints one JSON object on stdout when the command reaches a
verdict. Exit codes (conformance.errors.exit_code): 0 the check holds, 1 it does not (violation,
mismatch), 2 bad input or usage, 3 environment or internal error, 130 interrupted; the message of an
error goes to stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from conformance import options as opt
from conformance.errors import Terminated, TidemarkError, exit_code
from conformance.progress import Status, progress
from conformance.scratch import signals_unwind
from conformance.tlc.output import TlcResult
from conformance.tlc.runner import TlcOptions

# soft_wrap: paths and messages are never broken mid-word when output is not a terminal.
# Tables get a readable width when output goes to a file or CI log (rich assumes 80 there).
_WIDTH = None if sys.stdout.isatty() else 140
console = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True, width=_WIDTH)

# The standard model of every spec the main job verifies, in dependency order.
STANDARD_SPECS = [
    Path("spec/UpdateCounter.tla"),
    Path("spec/TxCounters.tla"),
    Path("spec/PME.tla"),
    Path("spec/HazelcastAntiEntropy.tla"),
]


def _progress(args: argparse.Namespace) -> AbstractContextManager[Status]:
    return progress(console, json=args.json, quiet=args.quiet, verbose=args.verbose)


def _emit(command: str, result: BaseModel, code: int, **extra: Any) -> int:
    """Print the command's one JSON object (conformance/outputs.py: its result, whether it holds and the
    exit code) and return that code."""
    from conformance.outputs import dump

    print(dump(command, result, code, **extra))
    return code


def _tlc_options(args: argparse.Namespace) -> TlcOptions:
    return TlcOptions(workers=args.workers, timeout=args.timeout, heap=args.heap)


def _print_tlc(result: TlcResult, spec: Path) -> None:
    style = "green" if result.outcome == "ok" else "red"
    out.print(f"[bold]{spec}[/]: [{style}]{result.outcome}[/]")
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
        from conformance.counterexample import definition, render, violation_path

        name = result.violation.invariant
        render(out, violation_path(result, spec, None), definition(spec, name) if name else None)


def cmd_check(args: argparse.Namespace) -> int:
    from conformance.tlc.output import parse_output, tlc_failure
    from conformance.tlc.runner import run_tlc

    with _progress(args) as status:
        status.phase(f"model checking {args.spec} with TLC")
        run = run_tlc(args.spec, args.config, _tlc_options(args), status.line)
    result = parse_output(run, source=f"TLC on {args.spec}")
    if (error := tlc_failure(result, args.spec, args.config or args.spec.with_suffix(".cfg"))) is not None:
        raise error
    if args.out is not None and result.violation is not None:
        from conformance.counterexample import violation_path, write_itf

        write_itf(violation_path(result, args.spec, args.config), args.out)
    if args.json:
        return _emit("check", result, 0 if result.outcome == "ok" else 1)
    _print_tlc(result, args.spec)
    return 0 if result.outcome == "ok" else 1


def cmd_conform(args: argparse.Namespace) -> int:
    from conformance.conform import conform

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
        )
    from conformance.counterexample import first_mismatch_path, write_itf

    path = first_mismatch_path(result, args.spec, args.config, args.run_dir, args.mutant)
    if path is not None and args.out is not None:
        write_itf(path, args.out)
    if args.junit is not None:
        from conformance.junit import conform_case, suite, write

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
    out.print(f"  {tlc}, replay {result.replay_seconds:.1f} s {escape(result.engine)}")
    coverage = ", ".join(f"{name} {count:,}" for name, count in result.coverage.items())
    out.print(f"  coverage: {coverage}")
    for example in result.examples[:5]:
        what = escape(f"action {example.action}")
        out.print(f"  [red]{example.kind} mismatch[/] at state {example.src}, {what}")
        for line in [*example.diff, *([example.error] if example.error else [])]:
            out.print(f"    {escape(line)}")
        if example.missing:
            out.print(f"    spec takes, impl does not enable: {escape(str(example.missing))}")
        if example.extra:
            out.print(f"    impl enables, spec does not take: {escape(str(example.extra))}")
    if path is not None:
        from conformance.counterexample import render

        out.print("[bold]the first mismatch, from an initial state:[/]")
        render(out, path)
        if args.out is not None:
            out.print(f"  trace: {args.out} (replay it: tidemark explain {args.out})")
    return 0 if result.holds else 1


def cmd_explain(args: argparse.Namespace) -> int:
    from conformance.explain import explain

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
    from conformance.tlc.runner import find_jar, find_java
    from conformance.zoo import ZooResult, run_zoo

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
        from conformance.junit import suite, write, zoo_cases

        write(args.junit, [suite("zoo", zoo_cases(report))])
    if args.json:
        return _emit("zoo", report, 0 if report.all_caught else 1)
    else:
        caught = sum(r.caught for r in report.entries)
        style = "green" if report.all_caught else "red"
        out.print(f"[{style}]{caught}/{len(report.entries)} bugs caught on both sides[/]")
    return 0 if report.all_caught else 1


def cmd_simulate(args: argparse.Namespace) -> int:
    from conformance.simulate import simulate

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
    from conformance.prove.counter import prove_counter

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

    from conformance.locks import locked
    from conformance.report import summary_table, write_report
    from conformance.verify import verify

    with locked(args.out, wait=not args.no_wait), _progress(args) as status:
        report = verify(
            STANDARD_SPECS,
            master=args.master,
            local=args.local,
            options=_tlc_options(args),
            traces=args.traces,
            steps=args.steps,
            seed=args.seed,
            zoo=not args.skip_zoo,
            on_line=status.line,
            on_phase=status.phase,
            wait=not args.no_wait,
        )
        page = write_report(report, args.out)
    if args.junit is not None:
        from conformance.junit import verify_suites, write

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
        out.print(
            f"[red]FAILS: {', '.join(failing)}[/]" if failing else "[green]everything holds[/]",
            f"({report.total_seconds:.1f} s); report: {escape(str(page))}",
        )
    return 0 if report.holds else 1


def cmd_validate(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from conformance.traces import read_traces
    from conformance.validate import resolve_model, validate_traces

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
    return 0 if report.holds else 1


def cmd_scenario(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from conformance.scenarios import (
        load_scenario,
        output_paths,
        run_scenario,
        timeline_table,
        write_outputs,
    )

    scenario = load_scenario(args.file)
    target = output_paths(args.out, scenario.name)[0]  # checked before the run
    result = run_scenario(scenario)
    diagram, page = write_outputs(result, target)
    if args.junit is not None:
        from conformance.junit import scenario_cases, suite, write

        write(args.junit, [suite(f"scenario {result.name}", scenario_cases(result))])
    if args.json:
        return _emit("scenario", result, 0 if result.passed else 1, diagram=str(diagram), page=str(page))
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


def _parse_key(text: str, kind: str) -> object:
    """A key as the Java object it stands for: int and long keep Java's ranges (their hashCode)."""
    import uuid

    from impl.affinity import INT_MAX, INT_MIN, JavaLong

    try:
        if kind == "int":
            if not INT_MIN <= (value := int(text)) <= INT_MAX:
                raise ValueError(f"outside the Java int range [{INT_MIN}, {INT_MAX}]")
            return value
        if kind == "long":
            return JavaLong(int(text))
        if kind == "uuid":
            return uuid.UUID(text)
    except ValueError as error:
        raise TidemarkError(
            f"{text!r} is not a Java {kind}: {error}", source="KEY", expected=f"a Java {kind}"
        ) from error
    return text


def cmd_affinity(args: argparse.Namespace) -> int:
    from impl.affinity import RendezvousConfig, assign_partition, key_partition, make_node

    if len(args.nodes) > (most := int(opt.LIMITS["affinity --nodes"].high)):
        raise TidemarkError(f"{len(args.nodes):,} node ids", source="--nodes", expected=f"at most {most:,}")
    if len(set(args.nodes)) != len(args.nodes):
        repeated = sorted({node for node in args.nodes if args.nodes.count(node) > 1})
        raise TidemarkError(
            f"node ids repeated: {repeated}", source="--nodes", expected="distinct consistent ids"
        )
    config = RendezvousConfig(partitions=args.partitions, backups=args.backups)
    nodes = [make_node(node) for node in args.nodes]
    keys = [_parse_key(text, args.type) for text in args.keys]  # every key checked before any output
    rows = []
    for text, key in zip(args.keys, keys, strict=True):
        partition = key_partition(key, args.partitions)
        owners = [str(nodes[i].consistent_id) for i in assign_partition(partition, nodes, config)]
        rows.append(
            {
                "key": text,
                "type": args.type,
                "partition": partition,
                "primary": owners[0],
                "backups": owners[1:],
            }
        )
    if args.json:
        from conformance.outputs import AffinityOutput

        found = AffinityOutput.model_validate(
            {"partitions": args.partitions, "nodes": args.nodes, "keys": rows}
        )
        return _emit("affinity", found, 0)
    table = Table("key", "partition", "primary", "backups")
    for row in rows:
        table.add_row(str(row["key"]), str(row["partition"]), str(row["primary"]), ", ".join(row["backups"]))
    out.print(table)
    return 0


def cmd_distribution(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from conformance.distribution import (
        DEFAULT_ALGORITHMS,
        DistributionConfig,
        markdown_table,
        run_distribution,
        write_distribution_artifacts,
    )
    from conformance.locks import locked
    from conformance.spark import spark_session
    from conformance.tlc.runner import find_java

    by_label = {a.label: a for a in DEFAULT_ALGORITHMS}
    unknown = [name for name in args.algorithms or [] if name not in by_label]
    if unknown:
        raise TidemarkError(
            f"unknown algorithms {unknown}", source="--algorithms", expected=f"some of {sorted(by_label)}"
        )
    try:
        config = DistributionConfig(
            partitions=args.partitions,
            backups=args.backups,
            node_counts=tuple(args.nodes),
            trials=args.trials,
            seed=args.seed,
            algorithms=tuple(by_label[name] for name in args.algorithms)
            if args.algorithms
            else DEFAULT_ALGORITHMS,
        )
    except ValidationError as error:
        first = error.errors()[0]
        raise TidemarkError(
            first["msg"], source="distribution options", location=".".join(map(str, first["loc"]))
        ) from error
    find_java()  # Spark's driver is a JVM
    with spark_session(args.master) as spark:
        report = run_distribution(spark, config)
    with locked(args.out):  # runs side by side publish whole sets of files, one after the other
        files = write_distribution_artifacts(report, args.out)
    if args.json:
        return _emit("distribution", report, 0)
    else:
        out.print(markdown_table(report))
        out.print(f"written: {', '.join(str(f) for f in files)}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from conformance.audit.command import run

    return run(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": cmd_check,
    "conform": cmd_conform,
    "simulate": cmd_simulate,
    "zoo": cmd_zoo,
    "explain": cmd_explain,
    "prove": cmd_prove,
    "affinity": cmd_affinity,
    "distribution": cmd_distribution,
    "validate": cmd_validate,
    "scenario": cmd_scenario,
    "verify": cmd_verify,
    "audit": cmd_audit,
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


def main(argv: Sequence[str] | None = None) -> int:
    logger = logging.getLogger("tidemark")
    if not any(isinstance(handler, _Notices) for handler in logger.handlers):
        logger.addHandler(_Notices())
    try:
        args = opt.build_parser(__doc__.splitlines()[0] if __doc__ else None).parse_args(argv)
        logger.setLevel(logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO)
        with signals_unwind():  # SIGTERM unwinds the run like Ctrl-C
            code: int = COMMANDS[args.command](args)
    except BaseException as error:  # every way a command ends maps to an exit code, in one place
        _show(error)
        return exit_code(error)
    return code


if __name__ == "__main__":
    sys.exit(main())
