"""Hazelcast's correctness claims on real members and on tidemark's model, with the same inputs.

Each claim starts real members (systems/hazelcast), drives them, and plays the very same inputs on
impl/hazelcast.py, one model per partition whose table is the real partition's (the model is symmetric in
member names): the same puts in the same order, the same backups delivered, dropped or reordered (the harness
holds every backup; tidemark decides each one's fate with its own seeded random numbers, so both sides see
the same), the same kills, the same anti-entropy rounds. After the inputs and after every round both are
observed per partition and member: per namespace the version vector, dirty flag and entries; and the
members' free sync permits. The end states are compared; the rounds in between may differ in which syncs
completed, since Hazelcast answers a sync request for a partition it is already replicating with a retry
and the model does not (docs/real-hazelcast.md, convergence lab).

- `dropped_backups` (Hazelcast's AntiEntropyCorrectnessTest): a fraction of the backups (0.65) is dropped;
  anti-entropy rounds until every backup replica within the backup count has the owner's data and
  versions from its index upward, nothing dirty, every permit back.
- `reordered_backups` (the same test with sync disabled, max parallel replications 0): each key written
  several times, its backups delivered in a shuffled order; the data converges (a backup older than the
  one applied is stale and ignored; the newest is always applied) but a replica that saw a jump stays
  dirty - without permits no sync repairs it.
- `killed_members` (PartitionReplicaVersionsCorrectnessStressTest): 7 members, 6 backups, every backup
  delivered; 1, 3 or 6 members killed at once. The new owner's vector must be the old owner's with slots
  below some index i <= the smallest surviving replica index set to slot i's value (the old owner's
  vector itself when that index is <= 1); every other survivor's vector is unchanged.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tidemark.conformance.systems.hazelcast import (
    SLOTS,
    Convergence,
    HazelcastHarness,
    MessageView,
    Observation,
)
from tidemark.impl.hazelcast import Backup, HazelcastCluster, HazelcastConfig

MAPS = ("map1", "map2")
NAMESPACES = (*MAPS, "internal")
MEMBERS = tuple(f"m{i}" for i in range(1, 8))
# The steps that only deliver what is in flight (no fault, no new put): a model round runs them to the end.
DELIVERY = frozenset({"Backup", "BackupAntiEntropy", "SyncRequest", "SyncSend", "SyncResponse", "SyncRetry"})

# member -> namespace -> (versions, dirty, entries); members holding no replica of the partition are left out
State = dict[str, dict[str, tuple[tuple[int, ...], bool, dict[int, int]]]]


@dataclass
class ClaimRun:
    """One claim's run: per round (0: after the inputs) whether real and model converged, the differences
    between them per partition, and whether the claim held on each."""

    claim: str
    params: dict[str, Any]
    real_rounds: list[bool] = field(default_factory=list)
    model_rounds: list[bool] = field(default_factory=list)
    real_data_converged: bool = False
    model_data_converged: bool = False
    real_dirty: int = 0
    model_dirty: int = 0
    differences: list[str] = field(default_factory=list)
    promoted_from: list[int] = field(
        default_factory=list
    )  # killed_members: per partition the new owner's old index
    real_holds: bool = False
    model_holds: bool = False

    @property
    def rounds_real(self) -> int | None:
        """Anti-entropy rounds until the real members converged (None: not within the rounds run)."""
        return next((i for i, c in enumerate(self.real_rounds) if c), None)

    @property
    def rounds_model(self) -> int | None:
        return next((i for i, c in enumerate(self.model_rounds) if c), None)


# --- the model side -------------------------------------------------------------------------------------


def model_of(
    table: Sequence[str | None], members: Sequence[str], backups: int, max_parallel: int
) -> HazelcastCluster:
    """A model whose partition table is `table` (the real partition's, index 0 the owner)."""
    order = [m for m in table if m is not None] + [m for m in members if m not in table]
    config = HazelcastConfig(
        members=tuple(order), backup_count=backups, maps=frozenset(MAPS), max_parallel=max_parallel
    )
    return HazelcastCluster.initial(config)


def settle(c: HazelcastCluster, *, backups: bool = True, only: frozenset[str] = DELIVERY) -> HazelcastCluster:
    """Deliver everything in flight, and what it causes, in a fixed order (the first grant of permits);
    without `backups`, the backups in flight stay there (held on the members); `only` these steps
    (the convergence lab delivers one kind at a time across partitions)."""
    steps = only if backups else only - {"Backup"}
    while True:
        step = next((s for s in c.enabled(frozenset(), 0) if s.name in steps), None)
        if step is None:
            return c
        c = c.apply(step)


def model_round(c: HazelcastCluster) -> HazelcastCluster:
    """The owner's anti-entropy round, run to the end."""
    return settle(c.anti_entropy(c.owner)) if c.owner is not None else c


def find_backup(c: HazelcastCluster, m: MessageView) -> Backup | None:
    return next(
        (
            b
            for b in c.network
            if isinstance(b, Backup) and (b.to, b.ns, b.key, b.value) == (m.to, m.ns, m.key, m.value)
        ),
        None,
    )


def model_state(c: HazelcastCluster) -> State:
    out: State = {}
    for m in c.table:
        if m is None or m not in c.alive:
            continue
        out[m] = {}
        for ns in NAMESPACES:
            f = c.fragment(m, ns)
            out[m][ns] = (f.versions, f.dirty, dict(c.data_of(m, ns)))
    return out


def model_converged(c: HazelcastCluster) -> tuple[bool, bool, int]:
    """(converged, data converged, dirty fragments): the harness's convergence check on the model."""
    owner = c.owner
    if owner is None:
        return False, False, 0
    actual = min(c.config.backup_count, len(c.alive) - 1)
    behind = dirty = data = 0
    for r in range(1, actual + 1):
        m = c.table[r]
        for ns in NAMESPACES:
            if m is None:
                behind += 1
                continue
            mine, theirs = c.fragment(m, ns), c.fragment(owner, ns)
            behind += mine.versions[r - 1 : actual] != theirs.versions[r - 1 : actual]
            dirty += mine.dirty
            data += dict(c.data_of(m, ns)) != dict(c.data_of(owner, ns))
    permits_out = sum(c.config.max_parallel - c.members[m].permits for m in c.alive)
    return behind == dirty == data == permits_out == 0, data == 0, dirty


# --- the real side --------------------------------------------------------------------------------------


def real_state(obs: Observation, partition: int) -> State:
    out: State = {}
    for m in obs.table[partition]:
        copy = obs.copy_of(m, partition) if m is not None else None
        if m is None or copy is None:
            continue
        out[m] = {}
        for ns in NAMESPACES:
            f = copy.namespaces.get(ns)
            versions = f.versions if f else (0,) * SLOTS
            out[m][ns] = (versions, f.dirty if f else False, dict(copy.entries.get(ns, {})))
    return out


def quiet(h: HazelcastHarness, timeout: float = 15.0) -> Convergence:
    """Waits until the real members converged, or else until no sync was in flight and every permit was
    back for half a second (a round's operations travel between the members meanwhile: an earlier look
    can see none in flight before the replicas even asked); the convergence then."""
    end = time.monotonic() + timeout
    calm = 0
    while True:
        conv = h.convergence()
        if conv.converged:
            return conv
        calm = calm + 1 if conv.in_flight == 0 and conv.permits_out == 0 else 0
        if calm >= 10 or time.monotonic() > end:
            return conv
        time.sleep(0.05)


def compare_states(run: ClaimRun, when: str, obs: Observation, models: dict[int, HazelcastCluster]) -> None:
    for p, c in models.items():
        real, model = real_state(obs, p), model_state(c)
        for m in sorted(set(real) | set(model)):
            if real.get(m) != model.get(m):
                run.differences.append(f"{when} p{p} {m}: Hazelcast {real.get(m)}, model {model.get(m)}")
        real_permits = {m: v.permits for m, v in obs.members.items()}
        model_permits = {m: c.members[m].permits for m in c.alive}
        if p == 0 and real_permits != model_permits:
            run.differences.append(f"{when} permits: Hazelcast {real_permits}, model {model_permits}")


def _start(
    h: HazelcastHarness, members: int, partitions: int, backups: int, max_parallel: int, seed: int
) -> Observation:
    h.call("reset")
    return h.start(
        MEMBERS[:members],
        partitions=partitions,
        backups=backups,
        maps=MAPS,
        max_parallel=max_parallel,
        no_migration=True,
        seed=seed,
        backup_timeout_ms=300,
    )


def _play_held(
    h: HazelcastHarness, models: dict[int, HazelcastCluster], order: list[MessageView], dropped: set[int]
) -> list[str]:
    """Deliver the held backups in `order` (drop those in `dropped`) on the members and on the models."""
    missing = []
    for m in order:
        assert m.id is not None and m.partition is not None
        c = models[m.partition]
        msg = find_backup(c, m)
        if msg is None:
            missing.append(f"p{m.partition}: the model sent no backup {m.ns}[{m.key}]={m.value} to {m.to}")
            continue
        models[m.partition] = c.drop(msg) if m.id in dropped else c.backup(m.to, msg)
    h.discard([m.id for m in order if m.id in dropped and m.id is not None])
    h.release([m.id for m in order if m.id not in dropped and m.id is not None])
    for p, c in models.items():
        left = [b for b in c.network if isinstance(b, Backup)]
        missing += [f"p{p}: the model sent a backup Hazelcast did not: {b}" for b in left]
        models[p] = settle(c)  # the syncs the dirty fragments asked for, as on the members
    return missing


def _rounds(run: ClaimRun, h: HazelcastHarness, models: dict[int, HazelcastCluster], rounds: int) -> None:
    """Round 0 is the state after the inputs; then anti-entropy rounds on both until both converged."""
    for i in range(rounds + 1):
        if i:
            h.anti_entropy()
            for p in models:
                models[p] = model_round(models[p])
        conv = quiet(h)
        judged = [model_converged(c) for c in models.values()]
        run.real_rounds.append(conv.converged)
        run.model_rounds.append(all(j[0] for j in judged))
        run.real_data_converged, run.real_dirty = conv.data_converged, conv.dirty
        run.model_data_converged = all(j[1] for j in judged)
        run.model_dirty = sum(j[2] for j in judged)
        if run.real_rounds[-1] and run.model_rounds[-1]:
            break
    # compared at the end: the rounds in between may differ in which syncs completed (module docstring)
    compare_states(run, "end", h.observe(), models)


def dropped_backups(
    h: HazelcastHarness,
    *,
    drop: float = 0.65,
    members: int = 3,
    partitions: int = 4,
    backups: int = 2,
    per_partition: int = 5,
    batches: int = 1,
    rounds: int = 8,
    seed: int = 0,
) -> ClaimRun:
    """`batches` times `per_partition` puts per partition and namespace, each backup dropped with
    probability `drop`, an anti-entropy round after each batch but the last (the convergence lab's
    interval: puts between rounds); then rounds until both converged (`real_rounds` counts from the last
    put on)."""
    params = dict(
        drop=drop,
        members=members,
        partitions=partitions,
        backups=backups,
        per_partition=per_partition,
        batches=batches,
        seed=seed,
    )
    run = ClaimRun("dropped_backups", params)
    obs = _start(h, members, partitions, backups, 10, seed)
    models = {p: model_of(obs.table[p], MEMBERS[:members], backups, 10) for p in range(partitions)}
    rng = random.Random(seed)
    for batch in range(batches):
        if batch:
            h.anti_entropy()
            models = {p: model_round(c) for p, c in models.items()}
            quiet(h)
        h.rule("hold", ["backup"])
        for put in h.fill(per_partition, NAMESPACES):
            p = put["partition"]
            models[p] = models[p].put(put["ns"], put["key"], put["value"])
        h.unrule()
        held = sorted(h.held(), key=lambda m: m.id or 0)
        dropped = {m.id for m in held if m.id is not None and rng.random() < drop}
        run.differences += _play_held(h, models, held, dropped)
    _rounds(run, h, models, rounds)
    run.real_holds = run.real_rounds[-1]
    run.model_holds = run.model_rounds[-1]
    return run


def reordered_backups(
    h: HazelcastHarness,
    *,
    members: int = 3,
    partitions: int = 2,
    backups: int = 2,
    writes: int = 3,
    seed: int = 0,
) -> ClaimRun:
    params = dict(members=members, partitions=partitions, backups=backups, writes=writes, seed=seed)
    run = ClaimRun("reordered_backups", params)
    obs = _start(h, members, partitions, backups, 0, seed)
    models = {p: model_of(obs.table[p], MEMBERS[:members], backups, 0) for p in range(partitions)}
    h.rule("hold", ["backup"])
    for p in range(partitions):
        key = int(h.call("keys", partition=p, count=1)[0])
        for ns in MAPS:
            for _ in range(writes):
                put = h.put(ns, key)
                models[p] = models[p].put(ns, key, int(put["value"]))
    h.unrule()
    held = sorted(h.held(), key=lambda m: m.id or 0)
    random.Random(seed).shuffle(held)
    run.differences += _play_held(h, models, held, set())
    _rounds(run, h, models, 1)
    # data converges; dirty flags may stay (no permits, no sync)
    run.real_holds = run.real_data_converged
    run.model_holds = run.model_data_converged
    return run


def accepted_promotion(before: tuple[int, ...], after: tuple[int, ...], smallest: int) -> bool:
    """The stress test's rule: `after` is `before` with slots 1..i-1 set to slot i's value of `after`, for
    some i <= the smallest surviving replica index; `before` itself when that index is <= 1."""
    if smallest <= 1:
        return after == before
    return any(after == (after[i - 1],) * (i - 1) + before[i - 1 :] for i in range(1, smallest + 1))


def killed_members(
    h: HazelcastHarness, *, kills: int, partitions: int = 4, per_partition: int = 3, seed: int = 0
) -> ClaimRun:
    run = ClaimRun(
        "killed_members", dict(kills=kills, partitions=partitions, per_partition=per_partition, seed=seed)
    )
    backups = 6
    obs = _start(h, 7, partitions, backups, 10, seed)
    models = {p: model_of(obs.table[p], MEMBERS, backups, 10) for p in range(partitions)}
    for put in h.fill(per_partition, NAMESPACES):
        p = put["partition"]
        models[p] = settle(models[p].put(put["ns"], put["key"], put["value"]))
    quiet(h)
    before = h.observe()
    compare_states(run, "before", before, models)
    model_before = {p: model_state(c) for p, c in models.items()}
    victims = random.Random(seed).sample(MEMBERS, kills)
    h.kill(victims)
    quiet(h)
    after = h.observe()
    for p, c in models.items():
        for m in sorted(victims, key=lambda v: v == c.owner):  # the owner last: one promotion, as at once
            c = c.crash(m)
        models[p] = c
    compare_states(run, "after", after, models)
    old_tables = {p: before.table[p] for p in range(partitions)}
    run.real_holds = _promotion_holds(
        {p: real_state(before, p) for p in range(partitions)},
        {p: real_state(after, p) for p in range(partitions)},
        {p: after.table[p][0] for p in range(partitions)},
        old_tables,
        victims,
        run,
        "Hazelcast",
    )
    run.model_holds = _promotion_holds(
        model_before,
        {p: model_state(c) for p, c in models.items()},
        {p: c.owner for p, c in models.items()},
        old_tables,
        victims,
        run,
        "model",
    )
    return run


def _promotion_holds(
    before: dict[int, State],
    after: dict[int, State],
    owners: dict[int, str | None],
    tables_before: dict[int, tuple[str | None, ...]],
    victims: list[str],
    run: ClaimRun,
    who: str,
) -> bool:
    ok = True
    for p, state in after.items():
        old_table, owner = tables_before[p], owners[p]
        survivors = [r for r, m in enumerate(old_table) if m is not None and m not in victims]
        smallest = min(survivors)
        old_owner = old_table[0]
        assert old_owner is not None
        if who == "model":
            run.promoted_from.append(smallest)
        for m, fragments in state.items():
            for ns, (versions, _, _) in fragments.items():
                if m == owner:
                    good = accepted_promotion(before[p][old_owner][ns][0], versions, smallest)
                else:
                    good = versions == before[p][m][ns][0]
                if not good:
                    ok = False
                    run.differences.append(f"{who} p{p} {m} {ns}: {versions} breaks the promotion rule")
    return ok
