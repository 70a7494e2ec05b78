"""The files `tidemark verify` keeps for its report, per spec in reports/artefacts/<spec>-<model>[-mutant]/:
TLC's counterexample and the first conformance mismatch as ITF traces (`tidemark explain` replays them),
the implementation walks as ITF JSON Lines, and the state graph's Parquet tables with the replay's
summary. The report links to each relatively, so the reports directory can be copied elsewhere whole."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from tidemark.conformance.counterexample import Counterexample, write_itf
from tidemark.conformance.traces import Trace, write_traces

# The run directory's files kept (conformance/conform.py's layout); the dot dump is not kept there.
GRAPH_FILES = ("states.parquet", "edges.parquet", "mismatches.parquet", "summary.json")


class Artefacts:
    """One spec's artefact directory, emptied first so that it holds this run's files only."""

    def __init__(self, report_dir: Path, name: str) -> None:
        self.report_dir = report_dir
        self.directory = report_dir / "artefacts" / name
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        self.written: list[str] = []

    def _kept(self, path: Path) -> None:
        self.written.append(path.relative_to(self.report_dir).as_posix())

    def counterexample(self, path: Counterexample) -> None:
        self._kept(write_itf(path, self.directory / "counterexample.itf.json"))

    def mismatch(self, path: Counterexample) -> None:
        self._kept(write_itf(path, self.directory / "mismatch.itf.json"))

    def walks(self, walks: Sequence[Trace]) -> None:
        if walks:
            target = self.directory / "walks.itf.jsonl"
            write_traces(target, walks)
            self._kept(target)

    def graph(self, run_dir: Path) -> None:
        """The run directory's graph files: hard links where the file system allows (the run directory
        replaces its files by renaming, so a link keeps this run's content), copies elsewhere."""
        for name in GRAPH_FILES:
            source, target = run_dir / name, self.directory / name
            if not source.is_file():
                continue
            partial = target.with_name(f".{name}.{uuid.uuid4().hex}.partial")
            try:
                try:
                    os.link(source, partial)
                except OSError:
                    shutil.copy2(source, partial)
                partial.replace(target)
            finally:
                partial.unlink(missing_ok=True)
            self._kept(target)
