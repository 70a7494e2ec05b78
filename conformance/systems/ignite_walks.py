"""Random walks on tidemark's implementation and on real Ignite, every observation compared.

A walk is drawn on impl/pme.py's cluster inside a model of spec/PME.tla (its constants: servers, backups,
the transactions' keys, crashes allowed, baseline changes and WAL truncation on or off): from the initial
state, a step the implementation enables and the model allows, chosen by a random.Random seeded from (seed,
walk index), again and again. Steps the harness cannot drive are left out (TxRemap and LockRemap: Ignite
remaps a transaction by itself; Checkpoint: a stuttering step of the spec), and a Restart is followed by
the server's Join at once (Ignite joins a server as it starts). The walk becomes a scenario
(protocol pme, each transaction writing its keys with its own name as the value, as the spec's data
does) and runs side by side (conformance/scenarios/compare.py): every difference the known behaviours of
Ignite do not explain is a finding; `shrink` cuts its walk down to a minimal scenario that still shows it.

`run_walks` runs walks on one harness JVM; `run_walks_on_spark` fans them out as Spark tasks, one JVM per
task (local[2]: two at a time). Each result is a plain dict (JSON), the walk's scenario included.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.mappings.tx_counters import TxCountersMapping, TxReplay, step_value
from tidemark.conformance.resources import resource
from tidemark.conformance.scenarios.compare import SideBySide, side_by_side
from tidemark.conformance.scenarios.format import STEP_TAGS, ScenarioFile
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import Record
from tidemark.conformance.traces import Trace
from tidemark.impl.cluster import Step, StepNotEnabled
from tidemark.impl.pme import PmeCluster

DEFAULT_MODEL = resource("spec/PME-ignite.cfg")
UNDRIVABLE = frozenset({"TxRemap", "LockRemap", "Checkpoint"})


@dataclass(frozen=True)
class WalkModel:
    """The model walks stay in: a spec/PME.tla config's constants, through its conformance mapping."""

    config: Path
    mapping: TxCountersMapping

    @classmethod
    def read(cls, config: Path = DEFAULT_MODEL) -> WalkModel:
        mapping = mapping_for("PME", read_config(config).constants)
        assert isinstance(mapping, TxCountersMapping)
        return cls(config, mapping)

    def initial(self) -> PmeCluster:
        cluster = PmeCluster.initial(self.mapping.config)
        assert isinstance(cluster, PmeCluster)
        return cluster

    def options(self, cluster: PmeCluster) -> list[Step]:
        """The steps a walk may take here: enabled, allowed by the model, drivable on Ignite (a Restart only
        where its Join can follow at once: with no exchange pending)."""
        quiet = cluster.top_ver == cluster.ready_ver
        return [
            s
            for s in cluster.enabled()
            if s.name not in UNDRIVABLE
            and self.mapping._allowed(s, cluster)
            and (s.name != "Restart" or quiet)
        ]


def walk_steps(model: WalkModel, seed: int, index: int, steps: int) -> list[Step]:
    """Walk number `index` of `seed`: the same steps wherever and whenever it is drawn."""
    rng = random.Random(f"tidemark-ignite-walk:{seed}:{index}")
    cluster, taken = model.initial(), []
    for _ in range(steps):
        options = model.options(cluster)
        if not options:
            break
        step = rng.choice(options)
        cluster = cast(PmeCluster, cluster.apply(step))
        taken.append(step)
        if step.name == "Restart":
            join = Step("Join", node=step.node)
            cluster = cast(PmeCluster, cluster.apply(join))
            taken.append(join)
    return taken


def walk_trace(model: WalkModel, name: str, steps: list[Step]) -> Trace:
    """The walk as a trace of spec states (through the model's mapping), for `tidemark validate`: the steps
    driven on Ignite are a behavior of spec/PME.tla when TLC accepts it."""
    cluster: PmeCluster = model.initial()
    states = [model.mapping.abstract(TxReplay(cluster, Record(name="Init")))]
    for step in steps:
        cluster = cast(PmeCluster, cluster.apply(step))
        states.append(model.mapping.abstract(TxReplay(cluster, step_value(step))))
    return Trace(id=name, spec="PME", states=tuple(states), config=str(model.config))


def as_scenario(model: WalkModel, name: str, steps: list[Step]) -> ScenarioFile:
    """The walk as a scenario file (no expectations: the comparison is the check)."""
    config = model.mapping.config
    keys = {tx: {k: tx for k in sorted(ks)} for tx, ks in config.transactions.items()}
    rows = []
    for step in steps:
        row: dict[str, Any] = {"step": step.name, **step.params()}
        if step.name == "TxStart":
            row["keys"] = keys[str(step.tx)]
        rows.append(STEP_TAGS[step.name].model_validate(row))
    cluster = {
        "servers": list(config.servers),
        "clients": ["c1"],
        "partitions": config.partitions,
        "backups": len(config.owners[0]) - 1,
        "wal_rebalance_threshold": getattr(config, "wal_rebalance_threshold", 0),
        "batch_size": getattr(config, "batch_size", 1),
    }
    return ScenarioFile.model_validate({"name": name, "protocol": "pme", "cluster": cluster, "steps": rows})


def replays(model: WalkModel, steps: list[Step]) -> bool:
    """Whether every step is enabled in turn from the initial state (a cut walk must still be one)."""
    cluster = model.initial()
    for i, step in enumerate(steps):
        if step not in model.options(cluster):
            return False
        if step.name == "Restart" and steps[i + 1 : i + 2] != [Step("Join", node=step.node)]:
            return False
        try:
            cluster = cast(PmeCluster, cluster.apply(step))
        except StepNotEnabled:
            return False
    return True


_SERVER = re.compile(r"\bs\d+\b")
_FAILED_STEP = re.compile(r"steps\[(\d+)\]: (\w+)")
# Explained differences after which a walk may take steps Ignite cannot: the two disagree on where a
# transaction goes (owner lists), on a copy's state, or on a transaction's outcome.
_DIVERGING = re.compile(r"^(topology\.owners|\w+\.p\d+\.state|c1\.)")


def signatures(result: SideBySide) -> list[str]:
    """What a run shows that nothing explains, servers abstracted (`s*.p0.lwm`): a difference, or the step
    Ignite could not take (`not possible: Supply`) unless an explained difference just before it made the
    two disagree on owners, copy states or a transaction's outcome (`diverged` then, in `divergence`)."""
    found = {_SERVER.sub("s*", d.path) for d in result.unexplained}
    if result.real.failure and divergence(result) is None:
        step = _FAILED_STEP.search(result.real.failure)
        found.add(f"not possible: {step.group(2) if step else result.real.failure[:60]}")
    return sorted(found)


def divergence(result: SideBySide) -> str | None:
    """The known difference after which the real run could not go on, if it stopped after one."""
    step = _FAILED_STEP.search(result.real.failure or "")
    if step is None:
        return None
    known = re.search(r"Ignite: ([a-z-]+): ", result.real.failure or "")
    if known:  # the driver names the known behaviour that keeps Ignite from the step
        return known.group(1)
    failed = int(step.group(1))
    before = [d for d in result.differences if d.why and (d.step or -1) < failed and _DIVERGING.match(d.path)]
    return before[-1].why if before else None


def walk_record(model: WalkModel, seed: int, index: int, steps: int, explain: Any) -> dict[str, Any]:
    """Draw walk `index` and run it side by side (on the harness the caller shares)."""
    taken = walk_steps(model, seed, index, steps)
    scenario = as_scenario(model, f"walk-{seed}-{index}", taken)
    started = time.monotonic()
    result = side_by_side(scenario, "ignite", explain)
    kinds: dict[str, int] = {}
    for d in result.differences:
        kinds[d.why or "unexplained"] = kinds.get(d.why or "unexplained", 0) + 1
    return {
        "walk": scenario.name,
        "index": index,
        "steps": len(taken),
        "seconds": round(time.monotonic() - started, 2),
        "signatures": signatures(result),
        "differences": kinds,
        "first_unexplained": result.unexplained[0].where if result.unexplained else None,
        "failure": result.real.failure,
        "diverged": divergence(result),
        "scenario": scenario.model_dump(mode="json", by_alias=True, exclude_defaults=True),
    }


def run_walks(
    config: Path, seed: int, steps: int, indices: Iterator[int], version: str, spool: Path | None = None
) -> Iterator[dict[str, Any]]:
    """Walks on one harness JVM, one fresh cluster each (the per-task function of the Spark job). A walk
    the harness fails on (a hung or dead JVM: IgniteError; a command it refuses: HarnessInputError) is
    recorded with its error, and the next walk gets a new JVM. With `spool`, each record is also appended
    to spool/walks-<first index>.jsonl as it is made (a long campaign shows its progress, and keeps what
    it did if it is stopped)."""
    for record in _walks(config, seed, steps, list(indices), version):
        if spool is not None:
            spool.mkdir(parents=True, exist_ok=True)
            with (spool / f"walks-{record['index'] // 1000:04d}-{os.getpid()}.jsonl").open("a") as f:
                f.write(json.dumps(record) + "\n")
        yield record


def _walks(config: Path, seed: int, steps: int, pending: list[int], version: str) -> Iterator[dict[str, Any]]:
    from tidemark.conformance.scenarios.adapters.ignite import shared_harness
    from tidemark.conformance.systems.ignite import HarnessInputError, IgniteError
    from tidemark.conformance.systems.ignite_differences import explain

    model = WalkModel.read(config)
    while pending:
        # A step Ignite takes at all takes a second or two; waiting longer only slows walks that diverged.
        with shared_harness(version, step_timeout=12):
            while pending:
                index = pending.pop(0)
                try:
                    yield walk_record(model, seed, index, steps, explain)
                except (IgniteError, HarnessInputError) as error:
                    yield {
                        "walk": f"walk-{seed}-{index}",
                        "index": index,
                        "steps": 0,
                        "error": str(error)[:500],
                        "signatures": ["harness error"],
                        "differences": {},
                        "diverged": None,
                    }
                    break


def run_walks_on_spark(
    spark: Any,
    config: Path,
    *,
    count: int,
    steps: int,
    seed: int,
    version: str,
    slices: int | None = None,
    spool: Path | None = None,
) -> list[dict[str, Any]]:
    """The walks as a Spark job: `slices` tasks (default two per core), each with its own harness JVM."""
    parallelism = spark.sparkContext.defaultParallelism
    slices = slices or max(1, min(count, parallelism * 2))
    job = partial(run_walks, config, seed, steps, version=version, spool=spool)
    records: list[dict[str, Any]] = (
        spark.sparkContext.parallelize(range(count), slices).mapPartitions(job).collect()
    )
    return records


def shrink(
    model: WalkModel, steps: list[Step], shows: Callable[[list[Step]], bool], budget: int = 40
) -> list[Step]:
    """The shortest cut of `steps` found (delta debugging, at most `budget` runs of `shows`) that is still
    a walk of the model and still `shows` the difference."""
    current, chunk, runs = list(steps), max(1, len(steps) // 2), 0
    while chunk >= 1 and runs < budget:
        cut = False
        start = 0
        while start < len(current) and runs < budget:
            candidate = current[:start] + current[start + chunk :]
            if candidate and replays(model, candidate):
                runs += 1
                if shows(candidate):
                    current, cut = candidate, True
                    continue
            start += chunk
        if not cut:
            chunk //= 2
    return current
