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
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from tidemark.conformance.replay import RESULTS_SCHEMA, replay_states, results_batches
from tidemark.conformance.tlc.values import Value

Row = tuple[int, str, list[tuple[int, int, str]]]

# Below this many edges one process replays alone: starting the others costs more than they save.
PARALLEL_EDGES = 20_000

_PR_SET_PDEATHSIG = 1

# What a forked share reads: set before the processes fork, inherited by them, never pickled.
_inherited: tuple[Sequence[Row], str, Mapping[str, Value], str | None] | None = None


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


def replay_share(target: Path, start: int, stop: int) -> None:
    """Replay rows[start:stop] of the inherited rows into the results table file `target`."""
    assert _inherited is not None, "replay_share runs in a process forked by replay_in_shares"
    rows, spec, constants, mutant = _inherited
    results = replay_states(spec, constants, mutant, rows[start:stop])
    with pq.ParquetWriter(target, RESULTS_SCHEMA) as writer:
        for batch in results_batches(results):
            writer.write_batch(batch)


def _share_process() -> None:
    """A share's process dies with this one, and quietly: Ctrl-C (sent to the whole process group) is
    this process's to handle, and SIGTERM (how the pool stops its processes) ends it at once, not
    through the handler it inherited that unwinds with a traceback."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def replay_in_shares(
    directory: Path,
    rows: Sequence[Row],
    spec: str,
    constants: Mapping[str, Value],
    mutant: str | None,
    processes: int,
) -> None:
    """Write the results table of `rows` into `directory` (which exists), with up to `processes`
    processes; one share is replayed in this process."""
    global _inherited
    ranges = shares(rows, processes)
    _inherited = (rows, spec, constants, mutant)
    try:
        if len(ranges) <= 1:
            replay_share(directory / "part-00000.parquet", 0, len(rows))
            return
        context = multiprocessing.get_context("fork")
        # Leaving the block terminates the processes: an error or an interrupt does not wait for them.
        with context.Pool(len(ranges), initializer=_share_process) as pool:
            pool.starmap(
                replay_share,
                [
                    (directory / f"part-{index:05d}.parquet", start, stop)
                    for index, (start, stop) in enumerate(ranges)
                ],
                chunksize=1,
            )
    finally:
        _inherited = None
