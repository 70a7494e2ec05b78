"""Conformance through the driver protocol against in-process replay, on the same state graph, in the
same run: replay seconds, edges/s and the ratio to in-process replay, for the Java update counter of
examples/java and for impl/ behind the protocol (conformance/kit/python_driver.py), edge by edge
(`load`) with 1 and 2 driver processes. The graph is dumped once (TLC) and reused by every replay.

    python bench/bench_kit.py [--config spec/UpdateCounter.cfg] [--repeat 1]
    python bench/bench_kit.py --config tests/models/UpdateCounter-small.cfg     # seconds, not minutes

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from conformance.conform import DriverOptions, dump_graph, replay_locally, replay_with_drivers
from conformance.tlc.config import read_config
from conformance.tlc.runner import TlcOptions

SPEC = Path("spec/UpdateCounter.tla")
JAVA = ["examples/java/run"]
PYTHON = [sys.executable, "-m", "conformance.kit.python_driver", "UpdateCounter"]


def _line(label: str, seconds: float, edges: int, baseline: float) -> str:
    return f"{label:<34} {seconds:8.1f} s {edges / seconds:10,.0f} edges/s {seconds / baseline:5.1f}x"


def _best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=SPEC.with_suffix(".cfg"))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each replay; the best is printed")
    args = parser.parse_args()
    constants = read_config(args.config).constants
    with tempfile.TemporaryDirectory(prefix="bench-kit-") as scratch:
        graph = Path(scratch)
        summary = dump_graph(SPEC, args.config, graph, TlcOptions(), None).graph
        assert summary is not None, "TLC did not finish"
        edges = summary.edges
        print(f"{SPEC} with {args.config}: {summary.states:,} states, {edges:,} edges")
        baseline = _best(args.repeat, lambda: replay_locally(graph, SPEC.stem, constants, None))
        print(_line("in this process", baseline, edges, baseline))
        for name, command in (("Java driver", JAVA), ("impl/ through the protocol", PYTHON)):
            for processes in (1, 2):
                options = DriverOptions(command=command, processes=processes)
                seconds = _best(
                    args.repeat, partial(replay_with_drivers, graph, SPEC.stem, constants, options)
                )
                print(
                    _line(
                        f"{name}, {processes} process{'es' if processes > 1 else ''}",
                        seconds,
                        edges,
                        baseline,
                    )
                )


if __name__ == "__main__":
    main()
