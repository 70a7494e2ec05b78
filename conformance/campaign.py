"""A random-walk campaign over impl/pme.py at sizes TLC cannot reach, shrinking a failure to a scenario.

TLC's models stop at 3 servers and two failures; the data-loss paths of issue 20 needed more to show. A
campaign runs many random walks of `PmeCluster`, each on a configuration of its own drawn from `Shape`
(up to 5 servers, 3 partitions, 3 crashes, baseline changes, WAL rebalance thresholds 0..2, supply
batches of 1..3 entries, checkpoints and WAL truncation, transactions over keys from 0), and checks every
spec/PME.tla invariant restated on the implementation (conformance/invariants.py) after every step. It
also records which boundary situations the walks reached (conformance/reach.py).

Everything is seeded: walk i of seed s draws its configuration and its steps from its own
random.Random("tidemark-campaign:s:i"), so a walk is the same wherever Spark runs it. The walks run as a
Spark job (or in this process); a failing walk is shrunk (delta debugging over its steps, then over its
transactions) and written as a scenario file that `tidemark scenario` replays.

By default the cluster runs with the proposed fixes on (impl.cluster.Fix): without them it loses data
in the two ways Ignite does (docs/pme.md, section 9), which the campaign then finds - `fixes=()` shows it.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, Field

from conformance.errors import TidemarkError
from conformance.invariants import violations
from conformance.mutants import PME_MUTANTS
from conformance.reach import BOUNDARIES, impl_reached
from impl.cluster import Fix, Step, StepNotEnabled, parse_step
from impl.pme import PmeCluster, PmeConfig, idle_verify

# Steps that change the topology or the disks rather than carry the protocol forward: drawn with odds
# 1 in FAULT_ODDS, else a walk would mostly crash and restart.
FAULTS = frozenset({"NodeFail", "Restart", "Join", "Checkpoint", "BaselineChange", "TruncateWal"})
FAULT_ODDS = 6


@dataclass(frozen=True)
class Shape:
    """The ranges a walk's configuration is drawn from (both ends included)."""

    servers: tuple[int, int] = (2, 5)
    partitions: tuple[int, int] = (1, 3)
    backups: tuple[int, int] = (0, 2)
    failures: tuple[int, int] = (1, 3)
    thresholds: tuple[int, int] = (0, 2)
    batch_sizes: tuple[int, int] = (1, 3)
    transactions: tuple[int, int] = (2, 4)
    keys_per_tx: tuple[int, int] = (1, 2)


@dataclass(frozen=True)
class WalkConfig:
    """One walk's cluster and the bounds on its environment."""

    cluster: PmeConfig
    max_failures: int
    baseline_changes: bool
    truncation: bool


def draw_config(rng: random.Random, shape: Shape, fixes: frozenset[Fix]) -> WalkConfig:
    servers = tuple(f"s{i}" for i in range(1, rng.randint(*shape.servers) + 1))
    partitions = rng.randint(*shape.partitions)
    backups = rng.randint(shape.backups[0], min(shape.backups[1], len(servers) - 1))
    keys = range(0, 2 * partitions + 1)  # from 0: the smallest key is a real key
    txs = {}
    for i in range(1, rng.randint(*shape.transactions) + 1):
        txs[f"t{i}"] = frozenset(rng.sample(keys, rng.randint(*shape.keys_per_tx)))
    owners = servers[: backups + 1]
    config = PmeConfig(
        servers=servers,
        owners=dict.fromkeys(range(partitions), owners),
        transactions=txs,
        fixes=fixes,
        wal_rebalance_threshold=rng.randint(*shape.thresholds),
        batch_size=rng.randint(*shape.batch_sizes),
    )
    return WalkConfig(config, rng.randint(*shape.failures), rng.random() < 0.7, rng.random() < 0.3)


def allowed(step: Step, cluster: PmeCluster, walk: WalkConfig) -> bool:
    """The walk's bounds on top of the cluster's guards."""
    if step.name == "NodeFail":
        return cluster.crashes < walk.max_failures
    if step.name == "BaselineChange":
        return walk.baseline_changes
    if step.name == "TruncateWal":
        return walk.truncation
    return True


def choose(rng: random.Random, cluster: PmeCluster, walk: WalkConfig) -> Step | None:
    protocol: list[Step] = []
    faults: list[Step] = []
    for s in cluster.enabled():
        if allowed(s, cluster, walk):
            (faults if s.name in FAULTS else protocol).append(s)
    if not protocol and not faults:
        return None
    fault = not protocol or (bool(faults) and rng.randrange(FAULT_ODDS) == 0)
    return rng.choice(faults if fault else protocol)


def _apply(cluster: PmeCluster, step: Step) -> PmeCluster:
    return cast(PmeCluster, cluster.apply(step))


class Failure(BaseModel):
    """A walk that broke an invariant: where, and everything needed to run it again."""

    seed: int
    walk: int
    step: int = Field(description="the index of the step after which the invariant failed")
    violation: str
    steps: list[str]


class WalkResult(BaseModel):
    steps: int
    reached: list[str]
    failure: Failure | None = None


def _implementation(mutant: str | None) -> type[PmeCluster]:
    if mutant is None:
        return PmeCluster
    if mutant not in PME_MUTANTS:
        raise TidemarkError(
            f"unknown mutant {mutant!r}", source="--mutant", expected=f"one of {sorted(PME_MUTANTS)}"
        )
    return PME_MUTANTS[mutant]


def walk_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"tidemark-campaign:{seed}:{index}")


def run_walk(
    seed: int, index: int, steps: int, shape: Shape, fixes: frozenset[Fix], mutant: str | None
) -> WalkResult:
    """Walk number `index` of `seed`: its configuration, then up to `steps` random steps, every invariant
    checked after each."""
    rng = walk_rng(seed, index)
    walk = draw_config(rng, shape, fixes)
    cluster = _implementation(mutant).initial(walk.cluster)
    taken: list[str] = []
    reached: set[str] = set()
    for i in range(steps):
        step = choose(rng, cluster, walk)
        if step is None:
            break
        before, cluster = cluster, _apply(cluster, step)
        taken.append(str(step))
        reached |= impl_reached(before, step, cluster)
        found = violations(cluster, before, step)
        if found:
            failure = Failure(seed=seed, walk=index, step=i, violation=found[0], steps=taken)
            return WalkResult(steps=len(taken), reached=sorted(reached), failure=failure)
    return WalkResult(steps=len(taken), reached=sorted(reached))


# --- shrinking ---------------------------------------------------------------------------------------------


def _fails(cluster: PmeCluster, steps: Sequence[str], invariant: str) -> int | None:
    """The index of the first step after which `invariant` fails, replaying `steps` (None: a step is not
    enabled, or the invariant holds throughout)."""
    for i, text in enumerate(steps):
        step = parse_step(text)
        try:
            before, cluster = cluster, _apply(cluster, step)
        except StepNotEnabled:
            return None
        if any(v.startswith(invariant + ":") for v in violations(cluster, before, step)):
            return i
    return None


def shrink(initial: PmeCluster, steps: Sequence[str], invariant: str) -> list[str]:
    """A short step list from `initial` that still breaks `invariant` (delta debugging: drop chunks of
    halving size while the failure stays)."""
    end = _fails(initial, steps, invariant)
    if end is None:
        raise TidemarkError(f"the failure of {invariant} does not replay", source="campaign")
    current = list(steps[: end + 1])
    chunk = max(1, len(current) // 2)
    while True:
        i, removed = 0, False
        while i < len(current):
            candidate = current[:i] + current[i + chunk :]
            end = _fails(initial, candidate, invariant) if candidate else None
            if end is not None:
                current, removed = candidate[: end + 1], True
            else:
                i += chunk
        if chunk == 1 and not removed:
            return current
        chunk = max(1, chunk // 2) if not removed else chunk


@dataclass
class Shrunk:
    config: PmeConfig
    steps: list[str]
    violation: str
    mutant: str | None
    final: PmeCluster = field(repr=False)


def shrink_failure(failure: Failure, shape: Shape, fixes: frozenset[Fix], mutant: str | None) -> Shrunk:
    """The failing walk made minimal: fewer steps, and only the transactions those steps use."""
    walk = draw_config(walk_rng(failure.seed, failure.walk), shape, fixes)
    invariant = failure.violation.split(":", 1)[0]
    cls = _implementation(mutant)
    steps = shrink(cls.initial(walk.cluster), failure.steps, invariant)
    used = {parse_step(s).tx for s in steps} - {None}
    config = PmeConfig(
        servers=walk.cluster.servers,
        owners=walk.cluster.owners,
        transactions={tx: keys for tx, keys in walk.cluster.transactions.items() if tx in used},
        fixes=fixes,
        wal_rebalance_threshold=walk.cluster.wal_rebalance_threshold,
        batch_size=walk.cluster.batch_size,
    )
    cluster = cls.initial(config)
    found: list[str] = []
    for text in steps:
        step = parse_step(text)
        before, cluster = cluster, _apply(cluster, step)
        found = violations(cluster, before, step)
    return Shrunk(config, steps, next(v for v in found if v.startswith(invariant + ":")), mutant, cluster)


def scenario_of(shrunk: Shrunk, name: str) -> dict[str, Any]:
    """The shrunk failure as a scenario file (conformance/scenario.py's format): its steps, and as
    expectations what the implementation ended with, so that it replays the failing run exactly."""
    config = shrunk.config
    steps: list[dict[str, Any]] = []
    for text in shrunk.steps:
        step = parse_step(text)
        entry: dict[str, Any] = {"step": step.name, **step.params()}
        if step.name == "TxStart" and step.tx is not None:
            entry["keys"] = {str(k): step.tx for k in sorted(config.transactions[step.tx])}
        steps.append(entry)
    steps[-1]["note"] = f"breaks {shrunk.violation}"
    cluster = shrunk.final
    expect: dict[str, Any] = {}
    for node in config.servers:
        n = cluster.nodes[node]
        view: dict[str, Any] = {
            "state": "alive"
            if node in cluster.alive
            else "restarted"
            if node in cluster.restarted
            else "down"
        }
        if node in cluster.alive | cluster.restarted:
            view["counters"] = {
                str(p): {"lwm": c.lwm, "hwm": c.hwm, "items": [list(i) for i in c.items]}
                for p, c in sorted(n.counters.items())
            }
            view["data"] = {str(k): e.tx for k, e in sorted(n.data.items())}
            view["partitions"] = {
                str(p): "LOST" if p in cluster.lost else c.state.value
                for p, c in sorted(cluster.states[node].items())
            }
        expect[node] = view
    report = idle_verify(cluster)
    fixes = ", ".join(sorted(f.value for f in config.fixes)) or "none"
    return {
        "name": name,
        "description": (
            f"Found by the random-walk campaign and shrunk to {len(steps)} steps: the implementation"
            f"{' (mutant ' + shrunk.mutant + ')' if shrunk.mutant else ''} (proposed fixes: {fixes}) breaks "
            f"{shrunk.violation}. The expectations are what it ended with."
        ),
        "protocol": "pme",
        "cluster": {
            "servers": list(config.servers),
            "clients": ["c1"],
            "partitions": config.partitions,
            "backups": config.backups,
            "wal_rebalance_threshold": config.wal_rebalance_threshold,
            "batch_size": config.batch_size,
        },
        "steps": steps,
        "expect": expect,
        "idle_verify": {"clean": report.clean},
    }


# --- the campaign ------------------------------------------------------------------------------------------


class CampaignReport(BaseModel):
    """What a campaign did and found; timings apart, the same seed gives the same report."""

    seed: int
    walks: int
    steps_per_walk: int
    steps: int = Field(description="steps taken by all walks")
    mutant: str | None = None
    fixes: list[str]
    failures: int
    first_failure: Failure | None = None
    reached: dict[str, int] = Field(description="walks that reached each boundary situation")
    master: str | None = Field(default=None, description="the Spark master; None when run in this process")
    seconds: float = 0.0

    @property
    def walks_per_second(self) -> float:
        return self.walks / self.seconds if self.seconds else 0.0

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0

    @property
    def holds(self) -> bool:
        return self.failures == 0


def _walk_partition(
    seed: int, steps: int, shape: Shape, fixes: frozenset[Fix], mutant: str | None, indices: Iterator[int]
) -> Iterator[str]:
    for index in indices:
        yield run_walk(seed, index, steps, shape, fixes, mutant).model_dump_json()


def _summarize(
    results: Iterable[WalkResult],
    seed: int,
    walks: int,
    steps: int,
    fixes: frozenset[Fix],
    mutant: str | None,
) -> CampaignReport:
    reached: Counter[str] = Counter()
    taken, failures, first = 0, 0, None
    for result in results:
        taken += result.steps
        reached.update(result.reached)
        if result.failure is not None:
            failures += 1
            first = first or result.failure
    return CampaignReport(
        seed=seed,
        walks=walks,
        steps_per_walk=steps,
        steps=taken,
        mutant=mutant,
        fixes=sorted(f.value for f in fixes),
        failures=failures,
        first_failure=first,
        reached={b: reached[b] for b in BOUNDARIES},
    )


def run_campaign(
    *,
    walks: int,
    steps: int,
    seed: int = 0,
    shape: Shape | None = None,
    fixes: Iterable[Fix] = tuple(Fix),
    mutant: str | None = None,
    spark: Any = None,
    until_failure: int = 0,
) -> CampaignReport:
    """`walks` seeded walks of up to `steps` steps, as a Spark job on `spark` (a session) or in this
    process; the first failure (in walk order) is kept for shrinking. With `until_failure` = n > 0 the
    walks run in rounds of n and stop after the first round that fails (hunting a known bug)."""
    shape = shape or Shape()
    chosen = frozenset(fixes)
    _implementation(mutant)
    started = time.monotonic()
    job = partial(_walk_partition, seed, steps, shape, chosen, mutant)
    results: list[WalkResult] = []
    rounds = (
        [range(walks)]
        if until_failure <= 0
        else [range(i, min(i + until_failure, walks)) for i in range(0, walks, until_failure)]
    )
    for indices in rounds:
        if spark is None:
            lines: Iterable[str] = job(iter(indices))
        else:
            slices = max(1, min(len(indices), spark.sparkContext.defaultParallelism * 4))
            lines = spark.sparkContext.parallelize(indices, slices).mapPartitions(job).collect()
        results += map(WalkResult.model_validate_json, lines)
        if until_failure > 0 and any(r.failure for r in results):
            break
    report = _summarize(results, seed, len(results), steps, chosen, mutant)
    report.seconds = round(time.monotonic() - started, 3)
    report.master = None if spark is None else spark.sparkContext.master
    return report


def write_scenario(report: CampaignReport, directory: Path, shape: Shape | None = None) -> Path:
    """Shrink the report's first failure and write it as DIRECTORY/campaign-SEED-WALK.json."""
    failure = report.first_failure
    if failure is None:
        raise TidemarkError("the campaign found no failure to shrink", source="campaign")
    fixes = frozenset(Fix(f) for f in report.fixes)
    shrunk = shrink_failure(failure, shape or Shape(), fixes, report.mutant)
    name = f"campaign-{failure.seed}-{failure.walk}"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    tmp = path.with_suffix(".json.partial")
    tmp.write_text(json.dumps(scenario_of(shrunk, name), indent=1) + "\n")
    tmp.replace(path)
    return path
