"""The bug zoo: known ways to break each protocol, each caught on both sides.

Every entry names one bug class of one protocol (its spec) twice:
- the spec side: a replacement operator in the protocol's zoo module (spec/PMEZoo.tla,
  spec/HazelcastZoo.tla), selected by a TLC definition override (`CONSTANT Op <- Replacement`) appended
  to a copy of the entry's model config; TLC must find a counterexample (an invariant or property
  violated);
- the implementation side: a mutant of the protocol's implementation (MUTANTS: conformance/zoo/mutants.py
  PME_MUTANTS for impl/pme.py, conformance/zoo/hazelcast_mutants.py for impl/hazelcast.py; same name),
  replayed against the correct spec's state graph of the same model; conformance must report a mismatch
  (an edge whose result differs, or a state where the enabled steps differ). The replay walks the graph
  in TLC's discovery order and stops at the first mismatch.

`run_zoo` writes the configs and graphs under a work directory (reused across runs: a graph is dumped
once per model and reopened while its inputs are unchanged), locked while it runs (conformance/locks.py).
docs/bugzoo.md describes each bug.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, computed_field

from tidemark.conformance.conform import GraphTables, dump_graph
from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.locks import locked
from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.replay import Mismatch, explain, replay_state
from tidemark.conformance.resources import resource
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome, Violation, parse_output
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.zoo.hazelcast_mutants import HAZELCAST_MUTANTS
from tidemark.conformance.zoo.mutants import PME_MUTANTS
from tidemark.conformance.zoo.ncache_mutants import NCACHE_MUTANTS

SPEC = resource("spec/PME.tla")
# The proposed fixes on: for models where Ignite's protocol loses data.
FIXED_SPEC = resource("spec/PMEFixed.tla")
ZOO_SPEC = resource("spec/PMEZoo.tla")
SMALL = resource("tests/models/PME-small.cfg")  # 2 servers, two single-key transactions, one crash
HISTORY = resource("tests/models/PME-history.cfg")  # the same with WAL archive truncation
HZ_SPEC = resource("spec/HazelcastAntiEntropy.tla")
HZ_ZOO_SPEC = resource("spec/HazelcastZoo.tla")
HZ_SMALL = resource("tests/models/HazelcastAntiEntropy-zoo.cfg")  # 2 members, a map and internal, 2 permits
HZ_PROMOTION = resource("tests/models/HazelcastAntiEntropy-promotion-zoo.cfg")  # 3 members, two crashes
HZ_LIVENESS = resource("spec/HazelcastAntiEntropy-liveness.cfg")  # convergence under fairness
MERGED = resource("tests/models/PME-merged.cfg")  # join exchange meets node left (PMEFixed)
RENTING = resource("tests/models/PME-renting.cfg")  # baseline changes, two crashes: RENTING copies reassigned
THRESHOLD = resource("tests/models/PME-threshold.cfg")  # a partition whose size equals the WAL threshold
OUTAGE = resource("tests/models/PME-outage.cfg")  # both servers fail, restart and the cluster is activated
NC_SPEC = resource("spec/NCachePartitionReplica.tla")
NC_ZOO_SPEC = resource("spec/NCacheZoo.tla")
NC_STANDARD = resource("spec/NCachePartitionReplica.cfg")  # 3 nodes, 3 buckets, sync, 3 writes, one leave
NC_MAINTENANCE = resource("spec/NCachePartitionReplica-maintenance.cfg")  # with a stop for maintenance
DEFAULT_WORK_DIR = Path("runs/zoo")

# Each protocol's implementation mutants, by its spec module's name.
MUTANTS: Mapping[str, Mapping[str, type]] = {
    "PME": PME_MUTANTS,
    "HazelcastAntiEntropy": HAZELCAST_MUTANTS,
    "NCachePartitionReplica": NCACHE_MUTANTS,
}


@dataclass(frozen=True)
class ZooEntry:
    name: str  # also the implementation mutant's name
    title: str
    override: str  # the TLC definition override selecting the bug in the zoo module
    model: Path
    spec: Path = SPEC  # the protocol's spec: its state graph is what the mutant is replayed on
    zoo: Path = ZOO_SPEC  # the zoo module: the spec extended with the replacement operators
    reproduces: str | None = None  # the real bug, e.g. "hazelcast/hazelcast#7759"

    @property
    def protocol(self) -> str:
        """The protocol whose implementation the mutant changes (a variant spec with fixes is the same)."""
        return self.spec.stem.removesuffix("Fixed")


ZOO: tuple[ZooEntry, ...] = (
    ZooEntry(
        "no-out-of-order-tracking",
        "No out-of-order tracking: LWM jumps to the end of the range applied",
        "Update <-[UpdateCounter] UpdateWithoutTracking",
        SMALL,
    ),
    ZooEntry(
        "stale-hwm-after-switch",
        "The new primary keeps its stale HWM after a primary switch",
        "FullUpdate <- FullUpdateKeepingHwm",
        SMALL,
    ),
    ZooEntry(
        "finalize-before-release",
        "Counters finalized before the exchange waited for transactions to be released",
        "Released <- ReleasedAtOnce",
        SMALL,
    ),
    ZooEntry(
        "any-owning-supplies",
        "Supplier elected without comparing counters (not the max LWM among OWNING copies)",
        "Suppliers <- AnyOwningSupplies",
        SMALL,
    ),
    ZooEntry(
        "primary-rollback-first",
        "The primary writes its rollback record before the backups finished",
        "Rollback <-[TxCounters] RollbackFirst",
        SMALL,
    ),
    ZooEntry(
        "non-atomic-primary-switch",
        "Non-atomic primary switch: a transaction mapped to another owner's primary on the same version",
        "TxStart <-[TxCounters] TxStartAnyOwner",
        SMALL,
    ),
    ZooEntry(
        "gaps-not-persisted",
        "Gaps not persisted: a restarted copy believes it is sequential",
        "RestoredCounter <- RestoredSequential",
        SMALL,
    ),
    ZooEntry(
        "commit-without-wal",
        "LWM increased before the update is durable in the WAL",
        "CommitWal <-[TxCounters] CommitWalLost",
        SMALL,
    ),
    ZooEntry(
        "historical-without-wal",
        "Historical rebalance although the supplier's WAL no longer covers the demander's counter",
        "Historical <- HistoricalIgnoringWal",
        HISTORY,
    ),
    ZooEntry(
        "node-left-without-finalize",
        "A node-left exchange that demotes nothing but skips finalization",
        "FinalizesCounters <- NeverFinalizes",
        SMALL,
    ),
    ZooEntry(
        "full-rebalance-skips-key-0",
        "A full rebalance starts after key 0: the smallest key is never supplied",
        "FullFirst <- FullFirstAfterZero",
        SMALL,
    ),
    ZooEntry(
        "merged-left-finalizes-joiner",
        "A server left merged into a join exchange finalizes the rejoining copy's holes as rollbacks",
        "FinalizesCounters <- FinalizesOnAnyLeft",
        MERGED,
        FIXED_SPEC,
    ),
    ZooEntry(
        "renting-keeps-counter",
        "A RENTING copy assigned again is rebalanced from its own LWM, which it got before its data",
        "Reassigned <- ReassignedAtLwm",
        RENTING,
    ),
    ZooEntry(
        "wal-threshold-inclusive",
        "Historical rebalance for a partition with exactly the threshold's entries (Ignite needs more)",
        "EnoughEntries <- EnoughEntriesAtThreshold",
        THRESHOLD,
    ),
    ZooEntry(
        "activation-without-demotion",
        "The activation after a total outage demotes no lagging OWNING copy",
        "Demote <- DemoteWithoutActivation",
        OUTAGE,
    ),
    *(
        ZooEntry(name, title, override, model, HZ_SPEC, HZ_ZOO_SPEC, reproduces)
        for name, title, override, model, reproduces in (
            (
                "stale-backup-applied",
                "A backup runs without the stale check: a reordered older backup overwrites newer data",
                "Stale <- NeverStale",
                HZ_SMALL,
                "hazelcast/hazelcast#7759",
            ),
            (
                "jump-keeps-versions",
                "A jump is applied but the versions stay behind: later stale backups look new",
                "Update <- UpdateKeepingVersionsOnJump",
                HZ_SMALL,
                "hazelcast/hazelcast#9205",
            ),
            (
                "jump-not-dirty",
                "A jump is applied without marking the fragment dirty: the skipped update is forgotten",
                "Update <- UpdateWithoutDirty",
                HZ_SMALL,
                "hazelcast/hazelcast#8517",
            ),
            (
                "failed-backup-advances",
                "A failed backup still sets the versions: the replica claims data it lacks",
                "Failed <- FailedAdvancing",
                HZ_SMALL,
                "hazelcast/hazelcast#4174",
            ),
            (
                "promotion-without-shift",
                "The promoted owner's vectors are not shifted",
                "Shift <- NoShift",
                HZ_PROMOTION,
                "hazelcast/hazelcast#4724",
            ),
            (
                "permit-back-twice",
                "A response after its request timed out gives the permit back a second time",
                "PermitsBack <- PermitsBackPerNamespace",
                HZ_SMALL,
                "hazelcast/hazelcast#16837",
            ),
            (
                "silent-owner-without-fragments",
                "An owner with no fragment left sends no anti-entropy: a destroyed map stays in backups",
                "Sends <- SendsWithFragments",
                HZ_LIVENESS,
                "hazelcast/hazelcast#10775",
            ),
            (
                "increments-capped-at-members",
                "Versions advanced only for existing replicas: a later replica looks in sync without data",
                "Increments <- LiveBackups",
                HZ_PROMOTION,
                None,
            ),
        )
    ),
    *(
        ZooEntry(name, title, override, NC_STANDARD, NC_SPEC, NC_ZOO_SPEC)
        for name, title, override in (
            (
                "log-not-replayed",
                "Operations logged during a bucket's transfer are not replayed before ownership switches",
                "Replayed <- NothingReplayed",
            ),
            (
                "map-not-consulted-in-transfer",
                "A bucket in transfer is served by its temporary owner instead of the map's permanent owner",
                "Route <- RouteToTemporary",
            ),
            (
                "replica-on-itself",
                "The last member's replica stays on itself instead of wrapping to the coordinator",
                "ReplicaHolder <- ReplicaHolderNoWrap",
            ),
            (
                "leave-keeps-transfers",
                "A leave does not revert the buckets in transfer to the leaver",
                "Reverts <- NeverReverts",
            ),
        )
    ),
    ZooEntry(
        "rejoin-without-pull",
        "A member back from maintenance serves its buckets without pulling them from its replica",
        "Pulled <- NothingPulled",
        NC_MAINTENANCE,
        NC_SPEC,
        NC_ZOO_SPEC,
    ),
)


class SpecCatch(BaseModel):
    """TLC on the spec variant."""

    caught: bool
    outcome: str
    invariant: str | None = Field(default=None, description="the invariant or property violated")
    trace: list[str] = Field(default_factory=list, description="the counterexample's actions")
    counterexample: Violation | None = Field(default=None, description="TLC's trace, with every state")
    seconds: float
    error: str | None = None

    def describe(self) -> str:
        if not self.caught:
            return f"not caught: {self.outcome}"
        return f"{self.invariant} violated after {len(self.trace)} states ({self.seconds:.1f} s)"


class ImplCatch(BaseModel):
    """Conformance replay of the mutant against the correct spec's state graph."""

    caught: bool
    check: str = Field(description="e.g. conformance replay against spec/PME.tla")
    states_replayed: int = Field(description="states replayed up to the first mismatch (or all)")
    seconds: float
    mismatch: Mismatch | None = None

    def describe(self) -> str:
        if self.mismatch is None:
            return f"not caught in {self.states_replayed:,} states"
        action = self.mismatch.action
        step = f"on {action['name']}" if isinstance(action, dict) else "in the actions enabled"
        return (
            f"{self.mismatch.kind} mismatch {step}, state {self.states_replayed:,} replayed"
            f" ({self.seconds:.1f} s)"
        )


class ZooResult(BaseModel):
    name: str
    title: str
    protocol: str = Field(description="the spec module, e.g. PME")
    reproduces: str | None = Field(default=None, description="the real bug, e.g. hazelcast/hazelcast#7759")
    override: str
    model: str
    spec: SpecCatch
    impl: ImplCatch

    @computed_field  # type: ignore[prop-decorator]
    @property
    def caught(self) -> bool:
        return self.spec.caught and self.impl.caught


class ZooReport(BaseModel):
    entries: list[ZooResult]
    all_caught: bool


def entries_named(names: list[str] | None) -> list[ZooEntry]:
    """The zoo's entries, or the named ones (a TidemarkError for an unknown name)."""
    if not names:
        return list(ZOO)
    known = {e.name: e for e in ZOO}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise TidemarkError(
            f"unknown zoo entry {unknown[0]!r}", source="--only", expected=f"one of {sorted(known)}"
        )
    return [known[n] for n in names]


def variant_config(entry: ZooEntry, work_dir: Path) -> Path:
    """A copy of the entry's model config that selects the bug with its definition override."""
    text = entry.model.read_text(encoding="utf-8")
    found = re.search(r"^SPECIFICATION \w+$", text, re.M)
    if found is None:
        raise TidemarkError(
            "no SPECIFICATION line", source=str(entry.model), expected=f"a {entry.protocol} model config"
        )
    path = work_dir / "configs" / f"{entry.name}.cfg"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"\\* The bug zoo's {entry.name}: {entry.model} with one operator replaced ({entry.zoo}).\n"
    at = found.end()
    path.write_text(header + text[:at] + f"\nCONSTANT {entry.override}" + text[at:])
    return path


def catch_in_spec(entry: ZooEntry, work_dir: Path, options: TlcOptions) -> SpecCatch:
    started = time.monotonic()
    result = parse_output(
        run_tlc(entry.zoo, variant_config(entry, work_dir), options), source=f"TLC on {entry.name}"
    )
    seconds = round(time.monotonic() - started, 3)
    violation = result.violation
    caught = (
        result.outcome in (Outcome.INVARIANT_VIOLATED, Outcome.PROPERTY_VIOLATED) and violation is not None
    )
    named = violation.invariant if violation else None
    if violation is not None and named is None:
        # TLC does not name a violated temporal property: the model's only one, if it has one.
        properties = read_config(entry.model).properties
        named = properties[0] if len(properties) == 1 else None
    return SpecCatch(
        caught=caught,
        outcome=result.outcome.value,
        invariant=named,
        trace=[step.action for step in violation.trace] if violation else [],
        counterexample=violation.model_copy(update={"invariant": named}) if violation else None,
        seconds=seconds,
        error=result.error,
    )


def catch_in_impl(entry: ZooEntry, graph: Path) -> ImplCatch:
    started = time.monotonic()
    mapping = mapping_for(entry.spec.stem, read_config(entry.model).constants, entry.name)
    check = f"conformance replay against {entry.spec}"
    replayed = 0
    tables = GraphTables(graph)
    for fp, state, outgoing in tables.rows():
        replayed += 1
        result = replay_state(mapping, fp, state, outgoing)
        if result.examples:
            seconds = round(time.monotonic() - started, 3)
            first = result.examples[0]
            if first.dst is not None:
                first = explain(first, tables.texts[first.dst])
            return ImplCatch(
                caught=True, check=check, states_replayed=replayed, seconds=seconds, mismatch=first
            )
    seconds = round(time.monotonic() - started, 3)
    return ImplCatch(caught=False, check=check, states_replayed=replayed, seconds=seconds)


def run_zoo(
    work_dir: Path = DEFAULT_WORK_DIR,
    names: list[str] | None = None,
    options: TlcOptions | None = None,
    on_entry: Callable[[ZooResult], None] | None = None,
    wait: bool = True,
) -> ZooReport:
    """Every (or every named) entry: its spec variant under TLC, its mutant replayed on the graph. One
    run at a time works in `work_dir`: another one waits for it (or, unless `wait`, fails at once)."""
    options = options or TlcOptions()
    entries = entries_named(names)
    missing = sorted(e.name for e in entries if e.name not in MUTANTS.get(e.protocol, {}))
    if missing:
        raise TidemarkError(
            f"no implementation mutant for {missing}", source="conformance/zoo/entries.py MUTANTS"
        )
    with locked(work_dir, wait=wait):
        graphs: dict[tuple[Path, Path], Path] = {}
        for spec, model in dict.fromkeys((e.spec, e.model) for e in entries):
            graph = work_dir / "graphs" / model.stem
            dump = dump_graph(spec, model, graph, options, None)
            if dump.graph is None:
                raise TidemarkError(
                    f"the correct spec fails on {model}: {dump.tlc.outcome.value}",
                    source=str(model),
                    expected="a model the correct spec passes",
                )
            graphs[spec, model] = graph
        results = []
        for entry in entries:
            result = ZooResult(
                name=entry.name,
                title=entry.title,
                protocol=entry.protocol,
                reproduces=entry.reproduces,
                override=entry.override,
                model=str(entry.model),
                spec=catch_in_spec(entry, work_dir, options),
                impl=catch_in_impl(entry, graphs[entry.spec, entry.model]),
            )
            results.append(result)
            if on_entry is not None:
                on_entry(result)
        return ZooReport(entries=results, all_caught=all(r.caught for r in results))
