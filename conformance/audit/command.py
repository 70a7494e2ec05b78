"""`tidemark audit`: the command around conformance/audit (its options are in conformance/cli/options.py).

`tidemark audit SNAPSHOT [LATER]` prints what Ignite's idle_verify would print for the snapshot (or the
JSON of --json), writes the dump (--dump), the page (--report), compares with a dump of the user's cluster
(--against), and exits 1 on a conflict or a difference from that dump. Every output is written only after
the audit has succeeded, each file whole or not at all.

`tidemark audit --generate DIR` writes a synthetic snapshot with injected divergences
(conformance/audit/generate.py) and prints what the audit of it must find.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tidemark.conformance.cli.outputs import finish
from tidemark.conformance.errors import TidemarkError


def write_whole(path: Path, text: str) -> None:
    """Write `text` to `path` through a partial file renamed over it (removed if writing fails)."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    except OSError as error:
        raise TidemarkError(f"cannot write it: {error.strerror}", source=str(path)) from error
    finally:
        partial.unlink(missing_ok=True)


def _generate(args: argparse.Namespace) -> int:
    from tidemark.conformance.audit.generate import GenerateConfig, generate

    target: Path = args.generate
    if target.exists() and any(target.iterdir()):
        raise TidemarkError("is not empty", source=str(target), expected="a new or empty directory")
    fields = ("groups", "partitions", "copies", "nodes", "entries", "divergences", "not_idle", "seed")
    config = GenerateConfig(**{name: getattr(args, name) for name in fields})
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".generate-", dir=target.parent))
    try:
        expected = generate(config, work)
        target.mkdir(exist_ok=True)
        for item in work.iterdir():
            item.rename(target / item.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = expected.model_dump(exclude={"injections"})
    summary = {"directory": str(target), "config": config.model_dump(), "expected": found}
    print(finish("audit --generate", summary, 0) if args.json else _generated_text(target, found))
    return 0


def _generated_text(target: Path, expected: dict[str, Any]) -> str:
    later = f" and {target / 'later'}" if expected["not_idle"] else ""
    found = ", ".join(
        f"{len(expected[k])} {k.replace('_', ' ')}"
        for k in ("counter_conflicts", "hash_conflicts", "moving", "lost", "not_idle")
    )
    return f"written: {target / 'snapshot'}{later}; the audit must find {found} ({target / 'expected.json'})"


def run(args: argparse.Namespace) -> int:
    if args.generate is not None:
        if args.snapshots:
            raise TidemarkError("give a snapshot to audit or --generate, not both", source="tidemark audit")
        return _generate(args)
    if not 1 <= len(args.snapshots) <= 2:
        raise TidemarkError(
            f"{len(args.snapshots)} snapshots given",
            source="tidemark audit",
            expected="SNAPSHOT [LATER], or --generate DIR",
        )
    if args.local and args.master:
        raise TidemarkError(
            "--local runs in this process, --master on Spark",
            source="--local/--master",
            expected="one of them",
        )
    for option in (args.dump, args.report):
        if option is not None and option.is_dir():
            raise TidemarkError("is a directory", source=str(option), expected="a file to write")
    from tidemark.conformance.audit.audit import audit
    from tidemark.conformance.audit.ignite_text import differences, dump_text, idle_verify_text, read_dump
    from tidemark.conformance.audit.page import audit_page

    against = read_dump(args.against) if args.against is not None else None  # read before the work
    report = audit(
        args.snapshots[0],
        later=args.snapshots[1] if len(args.snapshots) > 1 else None,
        key_type=args.key_type,
        caches=args.caches,
        exclude=args.exclude_caches,
        master=args.master,
        local=args.local,
    )
    differing = differences(report, against) if against is not None else []
    if args.dump is not None:
        write_whole(args.dump, dump_text(report, args.skip_zeros))
    if args.report is not None:
        write_whole(args.report, audit_page(report))
    if args.json:
        payload = report.payload()
        payload.update(
            dump=str(args.dump) if args.dump else None, report=str(args.report) if args.report else None
        )
        if against is not None:
            payload["against"] = {"dump": str(args.against), "differences": differing}
        code = 1 if report.conflict or differing else 0
        print(finish("audit", payload, code, report))
        return code
    else:
        print(idle_verify_text(report), end="")
        if against is not None:
            print(
                f"Compared with {args.against}: "
                + (f"{len(differing)} differences" if differing else "the same records")
            )
            for line in differing[:20]:
                print(f"  {line}")
        written = ", ".join(str(p) for p in (args.dump, args.report) if p is not None)
        print(
            f"tidemark audit: {report.rows:,} rows, {report.copies:,} copies in {report.groups} groups"
            f" on {report.engine} in {report.seconds:.1f} s" + (f"; written: {written}" if written else "")
        )
    return 1 if report.conflict or differing else 0
