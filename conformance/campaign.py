"""A random-walk campaign over impl/pme.py at sizes TLC cannot reach, shrinking a failure to a scenario.

TLC's models stop at 3 servers and two failures; the data-loss paths of issue 20 needed more to show. A
campaign runs many random walks of `PmeCluster` and checks every spec/PME.tla invariant restated on the
implementation (conformance/invariants.py) after every step, recording which boundary situations the
walks reached (conformance/reach.py). A walk starts from one of two origins:

- a configuration of its own drawn from `Shape` (up to 5 servers, 3 partitions, 3 crashes, baseline
  changes, WAL rebalance thresholds 0..2, supply batches of 1..3 entries, checkpoints and WAL truncation,
  transactions over keys from 0);
- a state on the way of a shipped scenario (the corpus: scenarios/*.json of protocol pme): a random prefix
  of its steps, replayed, then random steps - the scenarios were written to reach situations a blind walk
  rarely does (a RENTING copy assigned again, a node left merged into a join exchange), as a fuzzer's
  seed corpus.

Each walk draws how it moves (swarm testing): how often faults come (1 in 2, 3 or 6 steps) and a weight
per kind of step, so that some walks rarely supply (rebalancing outlives topology events) or rarely commit
on backups (gaps). Everything is seeded: walk i of seed s draws from its own random.Random
("tidemark-campaign:s:i"), so a walk is the same wherever Spark runs it. The walks run as a Spark job (or
in this process); a failing walk is shrunk (delta debugging over its steps, then its transactions) and
written as a scenario file that `tidemark scenario` replays.

By default the cluster runs with the proposed fixes on (tidemark.impl.cluster.Fix): without them it loses data
in the ways Ignite does (docs/pme.md, section 9), which the campaign then finds - `fixes=()` shows it.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, Field
from rich.markup import escape

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.invariants import violations
from tidemark.conformance.reach import BOUNDARIES, impl_reached
from tidemark.conformance.resources import resource
from tidemark.conformance.scenarios.adapters.pme import PmeSystem
from tidemark.conformance.scenarios.format import ScenarioFile, TxStartStep, step_text
from tidemark.conformance.zoo.mutants import PME_MUTANTS
from tidemark.impl.cluster import Fix, Step, StepNotEnabled, parse_step
from tidemark.impl.pme import PME_STEPS, PmeCluster, idle_verify

CORPUS = resource("scenarios")
# The share of walks that start on the way of a corpus scenario.
CORPUS_SHARE = 0.5
# Steps that change the topology or the disks rather than carry the protocol forward: drawn with odds
# 1 in the walk's fault odds (one of FAULT_ODDS), else a walk would mostly crash and restart.
FAULTS = frozenset({"NodeFail", "Restart", "Join", "Checkpoint", "BaselineChange", "TruncateWal"})
FAULT_ODDS = (2, 3, 6)
# Swarm testing: each walk weighs every kind of step with one of these.
WEIGHTS = (0.1, 1.0, 5.0)


@dataclass(frozen=True)
class Shape:
    """The ranges a drawn configuration comes from (both ends included)."""

    servers: tuple[int, int] = (2, 5)
    partitions: tuple[int, int] = (1, 3)
    backups: tuple[int, int] = (0, 2)
    failures: tuple[int, int] = (1, 3)
    thresholds: tuple[int, int] = (0, 2)
    batch_sizes: tuple[int, int] = (1, 3)
    transactions: tuple[int, int] = (2, 4)
    keys_per_tx: tuple[int, int] = (1, 2)
    baseline_changes: float = 0.7  # the share of walks in which the operator changes the baseline


@dataclass(frozen=True)
class Origin:
    """Where a walk starts: a scenario's cluster section and transactions (TxStart's key -> value), and
    the steps of the corpus scenario it replays first (none for a drawn configuration)."""

    scenario: str | None
    cluster: dict[str, Any]
    keys: dict[str, dict[str, str]]
    prefix: tuple[str, ...]


@dataclass(frozen=True)
class Moves:
    """How a walk moves: its bounds and its odds."""

    max_failures: int
    baseline_changes: bool
    truncation: bool
    fault_odds: int
    weights: dict[str, float]


def load_corpus(directory: Path = CORPUS) -> tuple[str, ...]:
    """The shipped scenarios of protocol pme on the correct implementation, as JSON texts."""
    texts = []
    for path in sorted(directory.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        if data.get("protocol") == "pme" and data.get("mutant") is None and not data.get("fixes"):
            texts.append(text)
    return tuple(texts)


def _drawn(rng: random.Random, shape: Shape) -> Origin:
    servers = [f"s{i}" for i in range(1, rng.randint(*shape.servers) + 1)]
    partitions = rng.randint(*shape.partitions)
    backups = rng.randint(shape.backups[0], min(shape.backups[1], len(servers) - 1))
    keys = range(0, 2 * partitions + 1)  # from 0: the smallest key is a real key
    txs = {
        f"t{i}": {str(k): f"t{i}" for k in sorted(rng.sample(keys, rng.randint(*shape.keys_per_tx)))}
        for i in range(1, rng.randint(*shape.transactions) + 1)
    }
    cluster = {
        "servers": servers,
        "clients": ["c1"],
        "partitions": partitions,
        "backups": backups,
        "wal_rebalance_threshold": rng.randint(*shape.thresholds),
        "batch_size": rng.randint(*shape.batch_sizes),
    }
    return Origin(None, cluster, txs, ())


def _from_corpus(rng: random.Random, text: str) -> Origin:
    scenario = ScenarioFile.model_validate_json(text)
    keys = {
        s.tx: {str(k): v for k, v in s.keys.items()} for s in scenario.steps if isinstance(s, TxStartStep)
    }
    taken = [s for s in scenario.steps if not s.refused]
    prefix = tuple(step_text(s) for s in taken[: rng.randint(0, len(taken))])
    cluster = scenario.cluster.model_dump(mode="json", exclude_none=True)
    return Origin(scenario.name, cluster, keys, prefix)


def draw_origin(rng: random.Random, shape: Shape, corpus: Sequence[str]) -> Origin:
    if corpus and rng.random() < CORPUS_SHARE:
        return _from_corpus(rng, rng.choice(corpus))
    return _drawn(rng, shape)


def draw_moves(rng: random.Random, shape: Shape) -> Moves:
    return Moves(
        rng.randint(*shape.failures),
        rng.random() < shape.baseline_changes,
        rng.random() < 0.3,
        rng.choice(FAULT_ODDS),
        {name: rng.choice(WEIGHTS) for name in PME_STEPS},
    )


def scenario_file(
    origin: Origin, steps: Sequence[str], fixes: frozenset[Fix], mutant: str | None, name: str = "walk"
) -> dict[str, Any]:
    """A scenario file (conformance/scenarios' format) that starts where the walk did and takes `steps`."""
    entries: list[dict[str, Any]] = []
    for text in steps:
        step = parse_step(text)
        entry: dict[str, Any] = {"step": step.name, **step.params()}
        if step.name == "TxStart" and step.tx is not None:
            entry["keys"] = origin.keys[step.tx]
        entries.append(entry)
    return {
        "name": name,
        "protocol": "pme",
        "fixes": sorted(f.value for f in fixes),
        **({"mutant": mutant} if mutant else {}),
        "cluster": origin.cluster,
        "steps": entries,
    }


def initial_cluster(origin: Origin, fixes: frozenset[Fix], mutant: str | None) -> PmeCluster:
    """The cluster a walk from `origin` starts with (before the corpus prefix), as the scenario runner
    builds it: initial data committed, every declared transaction known."""
    steps: list[dict[str, Any]] = [
        {"step": "TxStart", "tx": tx, "keys": keys} for tx, keys in origin.keys.items()
    ]
    data = {
        **scenario_file(origin, [], fixes, mutant),
        "steps": steps or [{"step": "Activate", "refused": True}],
    }
    return PmeSystem(ScenarioFile.model_validate(data)).cluster


def allowed(step: Step, cluster: PmeCluster, moves: Moves) -> bool:
    """The walk's bounds on top of the cluster's guards."""
    if step.name == "NodeFail":
        return cluster.crashes < moves.max_failures
    if step.name == "BaselineChange":
        return moves.baseline_changes
    if step.name == "TruncateWal":
        return moves.truncation
    return True


def choose(rng: random.Random, cluster: PmeCluster, moves: Moves) -> Step | None:
    protocol: list[Step] = []
    faults: list[Step] = []
    for s in cluster.enabled():
        if allowed(s, cluster, moves):
            (faults if s.name in FAULTS else protocol).append(s)
    if not protocol and not faults:
        return None
    fault = not protocol or (bool(faults) and rng.randrange(moves.fault_odds) == 0)
    # The kind of step first (by the walk's weights), then which one: a step that exists once
    # (BaselineChange, FullMessage) is as likely as one every server offers (Checkpoint).
    pool = faults if fault else protocol
    kinds = sorted({s.name for s in pool})
    kind = rng.choices(kinds, weights=[moves.weights[k] for k in kinds])[0]
    return rng.choice([s for s in pool if s.name == kind])


def _apply(cluster: PmeCluster, step: Step) -> PmeCluster:
    return cast(PmeCluster, cluster.apply(step))


class Failure(BaseModel):
    """A walk that broke an invariant: where, and everything needed to run it again."""

    seed: int
    walk: int
    origin: str | None = Field(description="the corpus scenario it started on the way of; None: drawn")
    step: int = Field(description="the index of the step after which the invariant failed")
    violation: str
    steps: list[str] = Field(description="every step taken, the corpus prefix included")


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
    seed: int,
    index: int,
    steps: int,
    shape: Shape,
    fixes: frozenset[Fix],
    mutant: str | None,
    corpus: Sequence[str] = (),
) -> WalkResult:
    """Walk number `index` of `seed`: its origin (and corpus prefix), then up to `steps` random steps,
    every invariant checked after each."""
    rng = walk_rng(seed, index)
    origin = draw_origin(rng, shape, corpus)
    moves = draw_moves(rng, shape)
    cluster = initial_cluster(origin, fixes, mutant)
    taken: list[str] = []
    reached: set[str] = set()
    prefix = iter(origin.prefix)
    for i in range(len(origin.prefix) + steps):
        text = next(prefix, None)
        step = parse_step(text) if text is not None else choose(rng, cluster, moves)
        if step is None:
            break
        try:
            before, cluster = cluster, _apply(cluster, step)
        except StepNotEnabled:  # the prefix diverges here (the fixes, or a mutant): walk on from here
            prefix = iter(())
            continue
        taken.append(str(step))
        reached |= impl_reached(before, step, cluster)
        found = violations(cluster, before, step)
        if found:
            failure = Failure(
                seed=seed, walk=index, origin=origin.scenario, step=i, violation=found[0], steps=taken
            )
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


def shrunk_scenario(
    failure: Failure, shape: Shape, fixes: frozenset[Fix], mutant: str | None, corpus: Sequence[str]
) -> dict[str, Any]:
    """The failing walk made minimal (fewer steps, only the transactions they start), as a scenario file
    whose expectations are what the implementation ended with: it replays the failing run exactly."""
    origin = draw_origin(walk_rng(failure.seed, failure.walk), shape, corpus)
    invariant = failure.violation.split(":", 1)[0]
    steps = shrink(initial_cluster(origin, fixes, mutant), failure.steps, invariant)
    used = {parse_step(s).tx for s in steps} - {None}
    origin = Origin(origin.scenario, origin.cluster, {t: k for t, k in origin.keys.items() if t in used}, ())
    cluster = initial_cluster(origin, fixes, mutant)
    found: list[str] = []
    for text in steps:
        step = parse_step(text)
        before, cluster = cluster, _apply(cluster, step)
        found = violations(cluster, before, step)
    violation = next(v for v in found if v.startswith(invariant + ":"))
    name = f"campaign-{failure.seed}-{failure.walk}"
    data = scenario_file(origin, steps, fixes, mutant, name)
    data["steps"][-1]["note"] = f"breaks {violation}"[:500]
    started = f"on the way of scenario {origin.scenario}" if origin.scenario else "on a drawn configuration"
    data["description"] = (
        f"Found by the random-walk campaign (seed {failure.seed}, walk {failure.walk}, {started}) and shrunk"
        f" to {len(steps)} steps: the implementation{' (mutant ' + mutant + ')' if mutant else ''} breaks "
        f"{violation}. The expectations are what it ended with."
    )[:4000]
    data["expect"] = _observed(cluster, origin)
    data["idle_verify"] = {"clean": idle_verify(cluster).clean}
    return data


def _observed(cluster: PmeCluster, origin: Origin) -> dict[str, Any]:
    """Every server's state, counters, copies and data, named as the scenario names values."""
    values = {(tx, int(k)): v for tx, keys in origin.keys.items() for k, v in keys.items()}
    values.update({("initial", int(k)): v for k, v in origin.cluster.get("initial_data", {}).items()})
    expect: dict[str, Any] = {}
    for node in cluster.config.servers:
        up = node in cluster.alive | cluster.restarted
        view: dict[str, Any] = {"state": "alive" if node in cluster.alive else "restarted" if up else "down"}
        if up:
            n = cluster.nodes[node]
            view["counters"] = {
                str(p): {"lwm": c.lwm, "hwm": c.hwm, "items": [list(i) for i in c.items]}
                for p, c in sorted(n.counters.items())
            }
            view["data"] = {str(k): values[e.tx, k] for k, e in sorted(n.data.items())}
            view["partitions"] = {
                str(p): "LOST" if p in cluster.lost else c.state.value
                for p, c in sorted(cluster.states[node].items())
            }
        expect[node] = view
    return expect


# --- the campaign ------------------------------------------------------------------------------------------


class CampaignReport(BaseModel):
    """What a campaign did and found; timings apart, the same seed gives the same report."""

    seed: int
    walks: int
    steps_per_walk: int
    steps: int = Field(description="steps taken by all walks")
    mutant: str | None = None
    fixes: list[str]
    corpus: int = Field(description="scenarios walks may start on the way of")
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
    seed: int,
    steps: int,
    shape: Shape,
    fixes: frozenset[Fix],
    mutant: str | None,
    corpus: tuple[str, ...],
    indices: Iterator[int],
) -> Iterator[str]:
    for index in indices:
        yield run_walk(seed, index, steps, shape, fixes, mutant, corpus).model_dump_json()


def summary_line(report: CampaignReport) -> str:
    """The verdict and the pace, in rich markup (tidemark campaign, tidemark verify)."""
    verdict = "[green]holds[/]" if report.holds else f"[red]{report.failures} failing walk(s)[/]"
    return (
        f"campaign: {verdict} - {report.walks:,} walks, {report.steps:,} steps in {report.seconds:.1f} s"
        f" ({report.walks_per_second:.1f} walks/s, {report.steps_per_second:,.0f} steps/s)"
    )


def summary_lines(report: CampaignReport, scenario: Path | None) -> list[str]:
    """tidemark campaign's report: the summary, what the walks reached, the first failure shrunk."""
    lines = [summary_line(report), "reached: " + ", ".join(f"{b} ({n})" for b, n in report.reached.items())]
    if report.first_failure is not None and scenario is not None:
        lines.append(f"[red]{escape(report.first_failure.violation)}[/]; shrunk: {escape(str(scenario))}")
    return lines


def run_campaign(
    *,
    walks: int,
    steps: int,
    seed: int = 0,
    shape: Shape | None = None,
    fixes: Iterable[Fix] = tuple(Fix),
    mutant: str | None = None,
    corpus: Sequence[str] | None = None,
    spark: Any = None,
    until_failure: int = 0,
) -> CampaignReport:
    """`walks` seeded walks of up to `steps` steps (after a corpus prefix), as a Spark job on `spark` (a
    session) or in this process; the first failure (in walk order) is kept for shrinking. `corpus`
    defaults to the shipped scenarios. With `until_failure` = n > 0 the walks run in rounds of n and stop
    after the first round that fails (hunting a known bug)."""
    shape = shape or Shape()
    chosen = frozenset(fixes)
    texts = load_corpus() if corpus is None else tuple(corpus)
    _implementation(mutant)
    started = time.monotonic()
    job = partial(_walk_partition, seed, steps, shape, chosen, mutant, texts)
    rounds = [
        range(i, min(i + (until_failure or walks), walks)) for i in range(0, walks, until_failure or walks)
    ]
    results: list[WalkResult] = []
    for indices in rounds:
        if spark is None:
            lines: Iterable[str] = job(iter(indices))
        else:
            slices = max(1, min(len(indices), spark.sparkContext.defaultParallelism * 4))
            lines = spark.sparkContext.parallelize(indices, slices).mapPartitions(job).collect()
        results += map(WalkResult.model_validate_json, lines)
        if until_failure > 0 and any(r.failure for r in results):
            break
    reached: Counter[str] = Counter(b for r in results for b in r.reached)
    failing = [r.failure for r in results if r.failure is not None]
    return CampaignReport(
        seed=seed,
        walks=len(results),
        steps_per_walk=steps,
        steps=sum(r.steps for r in results),
        mutant=mutant,
        fixes=sorted(f.value for f in chosen),
        corpus=len(texts),
        failures=len(failing),
        first_failure=failing[0] if failing else None,
        reached={b: reached[b] for b in BOUNDARIES},
        master=None if spark is None else spark.sparkContext.master,
        seconds=round(time.monotonic() - started, 3),
    )


def write_scenario(
    report: CampaignReport, directory: Path, shape: Shape | None = None, corpus: Sequence[str] | None = None
) -> Path:
    """Shrink the report's first failure and write it as DIRECTORY/campaign-SEED-WALK.json (atomically)."""
    failure = report.first_failure
    if failure is None:
        raise TidemarkError("the campaign found no failure to shrink", source="campaign")
    fixes = frozenset(Fix(f) for f in report.fixes)
    texts = load_corpus() if corpus is None else corpus
    data = shrunk_scenario(failure, shape or Shape(), fixes, report.mutant, texts)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{data['name']}.json"
    partial_path = path.with_suffix(".json.partial")
    partial_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    partial_path.replace(path)
    return path
