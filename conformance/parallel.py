"""Replaying a graph on this machine without Spark: one process per core, each a contiguous share.

The rows (a state, its text, its outgoing edges) are replayed in TLC's discovery order; share i holds
the i-th contiguous run of states (shares balanced by edges) and writes `part-0000i.parquet`, so the
results table reads, part after part, exactly as one process would have written it. The shares run in
forked processes: they inherit the rows and the mapping's inputs instead of receiving them pickled,
and each dies with this process (PR_SET_PDEATHSIG), so none outlives an interrupted run.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow.parquet as pq

from tidemark.conformance.replay import RESULTS_SCHEMA, replay_states, results_batches
from tidemark.conformance.tlc.values import Value

Row = tuple[int, str, list[tuple[int, int, str]]]
T = TypeVar("T")

# Below this many edges one process replays alone: starting the others costs more than they save.
PARALLEL_EDGES = 20_000

_PR_SET_PDEATHSIG = 1

# What a forked share runs: set before the processes fork, inherited by them, never pickled.
_inherited: Callable[[int, int, int], Any] | None = None


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def shares(rows: Sequence[Row], count: int) -> list[tuple[int, int]]:
    """`count` contiguous (start, stop) ranges of `rows` with about as many edges each (empty ones left
    out); every row counts at least one, for its enabledness check."""
    weights = [max(1, len(out)) for _, _, out in rows]
    bounds: list[tuple[int, int]] = []
    total, start, done = sum(weights), 0, 0
    for index, weight in enumerate(weights):
        done += weight
        if done * count >= total * (len(bounds) + 1) and len(bounds) < count - 1:
            bounds.append((start, index + 1))
            start = index + 1
    bounds.append((start, len(rows)))
    return [(a, b) for a, b in bounds if b > a]


def _run_share(index: int, start: int, stop: int) -> Any:
    assert _inherited is not None, "a share runs in a process forked by in_shares"
    return _inherited(index, start, stop)


def _share_process() -> None:
    """A share's process dies with this one, and quietly: Ctrl-C (sent to the whole process group) is
    this process's to handle, and SIGTERM (how the pool stops its processes) ends it at once, not
    through the handler it inherited that unwinds with a traceback."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def in_shares(rows: Sequence[Row], processes: int, work: Callable[[int, int, int], T]) -> list[T]:
    """`work(index, start, stop)` for each share of `rows` (at most `processes`), each in a forked process
    (in this one when there is only one share); their answers in share order."""
    global _inherited
    ranges = shares(rows, processes)
    if len(ranges) <= 1:
        return [work(0, 0, len(rows))]
    _inherited = work
    try:
        context = multiprocessing.get_context("fork")
        # Leaving the block terminates the processes: an error or an interrupt does not wait for them.
        with context.Pool(len(ranges), initializer=_share_process) as pool:
            return pool.starmap(_run_share, [(i, a, b) for i, (a, b) in enumerate(ranges)], chunksize=1)
    finally:
        _inherited = None


def replay_in_shares(
    directory: Path,
    rows: Sequence[Row],
    spec: str,
    constants: Mapping[str, Value],
    mutant: str | None,
    processes: int,
) -> None:
    """Write the results table of `rows` into `directory` (which exists), with up to `processes`
    processes, share i into `part-0000i.parquet`."""

    def replay_share(index: int, start: int, stop: int) -> None:
        results = replay_states(spec, constants, mutant, rows[start:stop])
        with pq.ParquetWriter(directory / f"part-{index:05d}.parquet", RESULTS_SCHEMA) as writer:
            for batch in results_batches(results):
                writer.write_batch(batch)

    in_shares(rows, processes, replay_share)
