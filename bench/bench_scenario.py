"""Scenario speed at 1k, 4k and 16k steps: steps/s of a whole run, of impl/ alone, and of the runner's own
share (figures only, no asserts).

Run: .venv/bin/python bench/bench_scenario.py [--sizes 1000 4000 16000] [--repeats 3]

Two generated scenarios, each written to a file and read back as `tidemark scenario` reads it:
- transactions (protocol 2pc): 3 servers, one partition, 2 backups; each transaction writes one of 64
  keys and takes its 11 steps (TxStart ... BackupCommit), with an expectation on the last backup's
  counter after it. The cluster keeps every transaction it ran (impl/cluster.py is a value holding
  them), so impl's own step cost grows with the number of transactions behind it.
- churn (protocol pme): a server fails, the exchange runs, it restarts, joins and the next exchange runs,
  again and again (10 steps a round, an expectation on the topology after each); nothing accumulates.

For each size: the best of --repeats CPU times (of this one process, so that other work on the machine
does not count) for loading the file, running it, and drawing its outputs once (Mermaid diagram, HTML
page, terminal table). Within the run, impl's own work (every Cluster.apply) is timed apart; the
runner's share is the rest: adapters, checks, timeline. The next three columns compare each rate with
the first size's: 1.00 is constant steps/s. The last one is the runner's own work for one step (its
timeline row and its checks) timed alone on the state after the last step, where no impl step runs
beside it: equal figures across sizes mean the runner never walks the history behind a state.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from tidemark.conformance.scenarios import load_scenario, run_scenario, timeline_table
from tidemark.conformance.scenarios.adapters import SYSTEMS
from tidemark.conformance.scenarios.checks import expectation_checks
from tidemark.conformance.scenarios.format import ScenarioFile
from tidemark.conformance.scenarios.runner import timeline_row
from tidemark.conformance.scenarios.views.diagram import mermaid_diagram
from tidemark.conformance.scenarios.views.page import timeline_html
from tidemark.impl.cluster import Cluster, Step

SERVERS = ["s1", "s2", "s3"]


def transactions(steps: int) -> dict[str, Any]:
    body: list[dict[str, Any]] = []
    i = 0
    while len(body) + 11 <= steps:
        tx = f"t{i}"
        last = {"expect": {"s2": {"counters": {"0": {"lwm": i + 1, "items": []}}}}}
        body += [
            {"step": "TxStart", "tx": tx, "keys": {str(i % 64): f"v{i}"}},
            {"step": "Lock", "tx": tx, "node": "s1"},
            {"step": "TxPrepare", "tx": tx},
            {"step": "Prepare", "tx": tx, "node": "s1"},
            {"step": "BackupPrepare", "tx": tx, "node": "s2"},
            {"step": "BackupPrepare", "tx": tx, "node": "s3"},
            {"step": "Prepared", "tx": tx, "node": "s1"},
            {"step": "TxCommit", "tx": tx},
            {"step": "Commit", "tx": tx, "node": "s1"},
            {"step": "BackupCommit", "tx": tx, "node": "s3"},
            {"step": "BackupCommit", "tx": tx, "node": "s2", **last},
        ]
        i += 1
    cluster = {"servers": SERVERS, "clients": ["c1"], "partitions": 1, "backups": 2}
    return {"name": f"transactions-{steps}", "cluster": cluster, "steps": body}


def churn(steps: int) -> dict[str, Any]:
    body: list[dict[str, Any]] = []
    while len(body) + 10 <= steps:
        body += [
            {"step": "NodeFail", "node": "s3"},
            {"step": "SendSingle", "node": "s1"},
            {"step": "SendSingle", "node": "s2"},
            {"step": "FullMessage", "node": "s1"},
            {"step": "Restart", "node": "s3"},
            {"step": "Join", "node": "s3"},
            {"step": "SendSingle", "node": "s1"},
            {"step": "SendSingle", "node": "s2"},
            {"step": "SendSingle", "node": "s3"},
            {"step": "FullMessage", "node": "s1", "topology": {"pending": [], "coordinator": "s1"}},
        ]
    cluster = {
        "servers": SERVERS,
        "clients": ["c1"],
        "partitions": 4,
        "backups": 2,
        "initial_data": {str(k): f"v{k}" for k in range(16)},
    }
    return {"name": f"churn-{steps}", "protocol": "pme", "cluster": cluster, "steps": body}


def _best(repeats: int, run: Callable[[], object]) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        value = run()
        best = min(best, time.process_time() - start)
    return best, value


class _ImplClock:
    """Times impl's own work inside a run: every Cluster.apply the adapter calls, and freeing the cluster
    value it replaces (a step copies the whole cluster; the adapter then drops the old one, which the
    clock holds until the next apply so that freeing it is timed too)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._apply = Cluster.apply
        self._replaced: Cluster | None = None

    def __enter__(self) -> _ImplClock:
        clock, apply = self, self._apply

        def timed(cluster: Cluster, step: Step) -> Cluster:
            start = time.process_time()
            try:
                clock._replaced = cluster
                return apply(cluster, step)
            finally:
                clock.seconds += time.process_time() - start

        Cluster.apply = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *error: object) -> None:
        Cluster.apply = self._apply  # type: ignore[method-assign]


def _run(scenario: ScenarioFile, repeats: int) -> tuple[float, float]:
    """The best run's CPU seconds, and impl's share of them."""
    best = (float("inf"), 0.0)
    for _ in range(repeats):
        with _ImplClock() as clock:
            start = time.process_time()
            result = run_scenario(scenario)
            seconds = time.process_time() - start
        assert result.passed, f"{scenario.name} does not hold"
        best = min(best, (seconds, clock.seconds))
    return best


def _row_cost(scenario: ScenarioFile, times: int = 5000) -> float:
    """Microseconds of the runner's own work for one step - its timeline row and its checks - on the
    state after the last step, timed apart from everything else: constant if the runner never walks
    the history behind the state."""
    system = SYSTEMS["impl"][scenario.protocol](scenario)
    for entry in scenario.steps:
        system.take(entry)
    last = scenario.steps[-1]
    start = time.process_time()
    for _ in range(times):
        timeline_row(len(scenario.steps) - 1, "step", None, [], system)
        expectation_checks("steps[-1]", last.expect, last.topology, last.idle_verify, system)
    return (time.process_time() - start) / times * 1e6


def _views(scenario: ScenarioFile) -> Callable[[], object]:
    result = run_scenario(scenario)

    def draw() -> None:
        timeline_html(result, mermaid_diagram(result))
        Console(file=io.StringIO(), width=200).print(timeline_table(result))

    return draw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"best of {args.repeats} runs; CPU time, one core; rates in steps/s")
    header = f"{'scenario':<22}{'steps':>7}{'load s':>8}{'run s':>8}{'run':>8}{'impl':>9}"
    print(header + f"{'runner':>9}{'views s':>9}{'run':>7}{'impl':>7}{'runner':>8}{'row µs':>8}")
    with tempfile.TemporaryDirectory() as scratch:
        for make in (transactions, churn):
            first: tuple[float, float, float] | None = None
            for size in args.sizes:
                path = Path(scratch) / f"{make.__name__}.json"
                path.write_text(json.dumps(make(size)), encoding="utf-8")
                load, loaded = _best(args.repeats, partial(load_scenario, path))
                assert isinstance(loaded, ScenarioFile)
                n = len(loaded.steps)
                run, impl = _run(loaded, args.repeats)
                views, _ = _best(1, _views(loaded))
                row = _row_cost(loaded)
                rates = (n / run, n / impl, n / (run - impl))
                first = first or rates
                ratios = "".join(f"{rate / base:>7.2f}" for rate, base in zip(rates, first, strict=True))
                print(
                    f"{make.__name__:<22}{n:>7}{load:>8.2f}{run:>8.2f}{rates[0]:>8.0f}{rates[1]:>9.0f}"
                    f"{rates[2]:>9.0f}{views:>9.2f}{ratios}{row:>8.1f}"
                )


if __name__ == "__main__":
    main()
