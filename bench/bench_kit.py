"""Conformance through the driver protocol against in-process replay, on the same state graph, in the
same run: replay seconds, edges/s and the ratio to in-process replay, for the Java update counter of
examples/java and for impl/ behind the protocol (conformance/kit/python_driver.py), edge by edge
(`load`) with 1 and 2 driver processes. The graph is dumped once (TLC) and reused by every replay.
With --spark, the Java driver on Spark instead: local[1] and local[2], one driver per task (each task
replays its partition of the graph), against one driver in this process; the session is started before
the clock runs.

    python bench/bench_kit.py [--spec spec/UpdateCounter.tla] [--config SPEC.cfg] [--repeat 1] [--spark]
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

from tidemark.conformance.conform import DriverOptions, dump_graph, replay_locally
from tidemark.conformance.kit.local import replay_with_drivers
from tidemark.conformance.kit.spark import replay_with_spark_drivers
from tidemark.conformance.spark import spark_session
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.runner import TlcOptions
from tidemark.conformance.tlc.values import Value

JAVA = ["examples/java/run"]


def _line(label: str, seconds: float, edges: int, baseline: float) -> str:
    return f"{label:<34} {seconds:8.1f} s {edges / seconds:10,.0f} edges/s {seconds / baseline:5.1f}x"


def _best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _on_spark(graph: Path, spec: str, constants: dict[str, Value], edges: int, repeat: int) -> None:
    options = DriverOptions(command=JAVA, processes=1)
    one = _best(repeat, partial(replay_with_drivers, graph, spec, constants, options))
    print(_line("Java driver, 1 process, here", one, edges, one))
    for master in ("local[1]", "local[2]"):
        with spark_session(master, app_name="bench-kit") as spark:
            seconds = _best(
                repeat, partial(replay_with_spark_drivers, spark, graph, spec, constants, options)
            )
        print(_line(f"Java drivers on Spark {master}", seconds, edges, one))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=Path("spec/UpdateCounter.tla"))
    parser.add_argument("--config", type=Path, help="the model (default: the spec's standard model)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each replay; the best is printed")
    parser.add_argument("--spark", action="store_true", help="the Java driver on Spark local[1] and local[2]")
    args = parser.parse_args()
    spec, config = args.spec, args.config or args.spec.with_suffix(".cfg")
    constants = read_config(config).constants
    with tempfile.TemporaryDirectory(prefix="bench-kit-") as scratch:
        graph = Path(scratch)
        summary = dump_graph(spec, config, graph, TlcOptions(), None).graph
        assert summary is not None, "TLC did not finish"
        edges = summary.edges
        print(f"{spec} with {config}: {summary.states:,} states, {edges:,} edges")
        if args.spark:
            _on_spark(graph, spec.stem, dict(constants), edges, args.repeat)
            return
        baseline = _best(args.repeat, lambda: replay_locally(graph, spec.stem, constants, None))
        print(_line("in this process", baseline, edges, baseline))
        python = [sys.executable, "-m", "tidemark.conformance.kit.python_driver", spec.stem]
        for name, command in (("Java driver", JAVA), ("impl/ through the protocol", python)):
            for processes in (1, 2):
                options = DriverOptions(command=command, processes=processes)
                seconds = _best(
                    args.repeat, partial(replay_with_drivers, graph, spec.stem, constants, options)
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
