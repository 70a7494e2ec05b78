"""Runs side by side give the answers runs alone give (docs/concurrency.md).

Eight concurrent runs each of check, validate, simulate, scenario and conform --local, every result
compared with the result of the same command run alone; and a Spark job at local[4] whose tasks
validate small batches of traces with TLC side by side, compared with the same batches validated one
after the other. Small models, so that the whole file stays within a few minutes on two cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Isolated

from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.traces import Trace, write_traces
from tidemark.conformance.validate import initial_states
from tidemark.conformance.walks import random_walks

pytestmark = pytest.mark.tlc

SPEC = "spec/UpdateCounter.tla"
SMALL = "tests/models/UpdateCounter-small.cfg"
RUNS = 8
# What differs between two runs with the same answer: timings, the paths each run writes to, and the
# run's own record (its start, arguments and timings).
VOLATILE = {"seconds", "tlc_seconds", "replay_seconds", "load_seconds", "diagram", "page", "run"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items() if key not in VOLATILE}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Walks of the small counter model and, every fourth, one played backwards (rejected by TLC)."""
    spec, config = Path(SPEC), Path(SMALL)
    mapping = mapping_for(spec.stem, read_config(config).constants)
    walks = random_walks(mapping, initial_states(spec, config), count=24, steps=15, seed=11, config=SMALL)
    for index in range(0, len(walks), 4):
        walk = walks[index]
        walks[index] = Trace(
            id=f"{walk.id}-backwards", spec=walk.spec, states=walk.states[::-1], config=SMALL
        )
    path = tmp_path_factory.mktemp("traces") / "walks.jsonl"
    write_traces(path, walks)
    return path


def _commands(traces: Path, out: Path) -> dict[str, Callable[[str], list[str]]]:
    """Each command's arguments for the run named `run` (its own output paths)."""
    tlc = ["--json", "--heap", "256m"]
    return {
        "check": lambda run: ["check", SPEC, "--config", SMALL, *tlc],
        "validate": lambda run: ["validate", str(traces), *tlc],
        "simulate": lambda run: [
            *("simulate", SPEC, "--config", SMALL, "--traces", "20", "--depth", "20", "--seed", "3"),
            *("--local", *tlc),
        ],
        "scenario": lambda run: [
            *("scenario", "scenarios/figure2-outdated-node-rejoins.json", "--json"),
            *("--out", str(out / run / "figure2.mmd")),
        ],
        "conform": lambda run: [
            *("conform", SPEC, "--config", SMALL, "--local", "--run-dir", str(out / run / "run"), *tlc)
        ],
    }


def test_eight_runs_side_by_side_give_the_result_of_one_alone(
    isolated: Isolated, traces: Path, tmp_path: Path
) -> None:
    for name, arguments in _commands(traces, tmp_path).items():
        alone = isolated.run(*arguments("alone"))
        assert alone.returncode in (0, 1), (name, alone.stderr)
        expected = (alone.returncode, _stable(json.loads(alone.stdout)))
        runs = [isolated.start(*arguments(f"run-{i}")) for i in range(RUNS)]
        results = []
        for run in runs:
            stdout, stderr = run.communicate(timeout=600)
            results.append((run.returncode, _stable(json.loads(stdout)) if stdout else stderr))
        assert results == [expected] * RUNS, name
    # The validate runs did reject the backward walks: the comparison covered TLC's second run too.
    report = json.loads(isolated.run(*_commands(traces, tmp_path)["validate"]("again")).stdout)
    assert len(report["rejected"]) == 6 and report["accepted"] == 18
    assert isolated.clean(timeout=10), (isolated.processes(), isolated.left())


# Run in a process of its own, whose temporary directory is private like the CLI runs above.
SPARK_JOB = """
import json, sys
from pathlib import Path
from tidemark.conformance.spark import spark_session
from tidemark.conformance.tlc.runner import TlcOptions
from tidemark.conformance.traces import read_traces
from tidemark.conformance.validate import validate_traces

traces = read_traces(Path(sys.argv[1]))
spec, config = Path(sys.argv[2]), Path(sys.argv[3])
batches = [traces[i : i + 2] for i in range(0, len(traces), 2)]

def report(batch):
    result = validate_traces(batch, spec, config, TlcOptions(heap="256m"))
    return result.model_dump_json(exclude={"tlc_seconds"})

with spark_session("local[4]") as spark:
    side_by_side = spark.sparkContext.parallelize(batches, len(batches)).map(report).collect()
one_by_one = [report(batch) for batch in batches]
print(json.dumps({"side_by_side": side_by_side, "one_by_one": one_by_one}))
"""


@pytest.mark.spark
def test_spark_tasks_validating_side_by_side_agree_with_one_by_one(isolated: Isolated, traces: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SPARK_JOB, str(traces), str(ROOT / SPEC), str(ROOT / SMALL)],
        cwd=ROOT,
        env=isolated.env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    side_by_side = [json.loads(report) for report in results["side_by_side"]]
    one_by_one = [json.loads(report) for report in results["one_by_one"]]
    assert len(side_by_side) == 12
    assert side_by_side == one_by_one
    # Every fourth walk is played backwards: batches 0, 2, 4, ... hold one rejected trace each.
    assert [len(report["rejected"]) for report in one_by_one] == [1, 0] * 6
    assert isolated.clean(timeout=15), (isolated.processes(), isolated.left())
