"""Random walks on real Hazelcast members and on tidemark's model, with the same inputs, compared at every
observation.

A walk starts 3 or 4 members with one partition, 1 or 2 backups, cluster state NO_MIGRATION, every backup
held by the harness, and takes seeded random steps:
- `put`: a put on the owner (a namespace and a key 0..3); each of its backups delivered now, dropped, or
  delayed (left held: a later step delivers it out of order);
- `late`: one delayed backup delivered;
- `round`: every delayed backup delivered or dropped (shuffled), then an anti-entropy round (on the members
  once no sync is being prepared on the owner: Hazelcast's task does nothing meanwhile - see
  docs/real-hazelcast.md, `skipped-round`);
- `kill`: a member killed at once (promotion), at least two left;
- `join`: a killed member back, empty, then the master's repartitioning (`migrate`); the model's Migrate
  steps are the vacancies the real table filled.
After every step both settle (syncs run to the end) and are compared as in hazelcast_claims: the partition
table, per member and namespace versions, dirty flag and entries, free permits. A difference in a step
where Hazelcast answered a sync request with a retry (its partition was migrating - see
docs/real-hazelcast.md) is explained, and so is every difference until both are equal again; anything
else is a finding.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tidemark.conformance.systems.hazelcast import HazelcastHarness, MessageView
from tidemark.conformance.systems.hazelcast_claims import (
    MEMBERS,
    NAMESPACES,
    ClaimRun,
    compare_states,
    find_backup,
    model_of,
    model_round,
    quiet,
    settle,
)
from tidemark.impl.hazelcast import HazelcastCluster, StepNotEnabled

STEPS = ("put", "put", "put", "put", "late", "late", "round", "round", "kill", "join")


@dataclass
class Walk:
    seed: int
    steps: list[str] = field(default_factory=list)
    explained: int = 0  # differences after a sync retry, until both were equal again
    unexplained: list[str] = field(default_factory=list)  # findings: step index, what differs
    retries: int = 0
    deferred: int = 0  # rounds that waited for a sync being prepared on the owner (its partition migrating)

    def record(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "steps": self.steps,
            "explained": self.explained,
            "unexplained": self.unexplained,
            "retries": self.retries,
            "deferred": self.deferred,
        }


class _Pair:
    """The members and the model of their one partition, stepped together."""

    def __init__(self, h: HazelcastHarness, rng: random.Random, members: int, backups: int) -> None:
        self.h, self.rng = h, rng
        h.call("reset")
        obs = h.start(
            MEMBERS[:members],
            partitions=1,
            backups=backups,
            maps=("map1", "map2"),
            no_migration=True,
            seed=rng.randrange(1 << 30),
            log=True,
            backup_timeout_ms=300,
        )
        self.pool = list(MEMBERS[:5])
        self.model: HazelcastCluster = model_of(obs.table[0], self.pool, backups, 10)
        for m in self.pool[members:]:
            self.model = self.model.crash(m) if m in self.model.alive else self.model
        h.rule("hold", ["backup"])
        self.delayed: list[MessageView] = []
        self.deferred = 0
        _, self.mark = h.log()

    def _deliver(self, msgs: list[MessageView], dropped: set[int]) -> None:
        for m in msgs:
            msg = find_backup(self.model, m)
            if msg is None:
                raise StepNotEnabled(f"the model has no backup {m.ns}[{m.key}]={m.value} to {m.to}")
            self.model = self.model.drop(msg) if m.id in dropped else self.model.backup(m.to, msg)
        self.h.discard([m.id for m in msgs if m.id in dropped and m.id is not None])
        self.h.release([m.id for m in msgs if m.id not in dropped and m.id is not None])

    def put(self) -> None:
        ns, key = self.rng.choice(NAMESPACES), self.rng.randrange(4)
        known = {m.id for m in self.delayed}
        value = int(self.h.put(ns, key)["value"])
        self.model = self.model.put(ns, key, value)
        new = [m for m in self.h.held() if m.id not in known]
        now, dropped = [], set()
        for m in new:
            fate = self.rng.random()
            if fate < 0.25:
                self.delayed.append(m)
                continue
            now.append(m)
            if fate < 0.5 and m.id is not None:
                dropped.add(m.id)
        self._deliver(now, dropped)

    def late(self) -> None:
        if self.delayed:
            self._deliver([self.delayed.pop(self.rng.randrange(len(self.delayed)))], set())

    def flush(self) -> None:
        msgs, self.delayed = self.delayed, []
        self.rng.shuffle(msgs)
        self._deliver(msgs, {m.id for m in msgs if m.id is not None and self.rng.random() < 0.5})

    def round(self) -> None:
        self.flush()
        self.deferred += self.h.anti_entropy()
        self.model = model_round(self.model)

    def kill(self) -> None:
        alive = sorted(self.model.alive)
        if len(alive) <= 2:
            return
        self.flush()
        victim = self.rng.choice(alive)
        self.h.kill([victim])
        self.model = self.model.crash(victim)

    def join(self) -> None:
        down = sorted(set(self.pool) - self.model.alive)
        if not down:
            return
        self.flush()
        member = self.rng.choice(down)
        self.h.join(member)
        table = self.h.migrate().table[0]
        self.model = self.model.join(member)
        for i, m in enumerate(table):
            if i and m is not None and self.model.table[i] != m:
                self.model = self.model.migrate(m, i)

    def settle(self) -> int:
        """Both settle; the sync retries Hazelcast answered meanwhile."""
        quiet(self.h)
        self.model = settle(self.model, backups=False)
        events, self.mark = self.h.log(self.mark)
        return sum(e.kind == "sync_retry" for e in events)


def walk(h: HazelcastHarness, seed: int, length: int = 10) -> Walk:
    rng = random.Random(seed)
    pair = _Pair(h, rng, rng.choice((3, 4)), rng.choice((1, 2)))
    out = Walk(seed)
    retried = False
    for i in range(length):
        step = rng.choice(STEPS)
        out.steps.append(step)
        try:
            getattr(pair, step)()
        except StepNotEnabled as e:
            out.unexplained.append(f"step {i} {step}: {e}")
            break
        retries = pair.settle()
        out.retries += retries
        retried = retried or retries > 0
        run = ClaimRun("walk", {})
        obs = pair.h.observe()
        if tuple(obs.table[0]) != pair.model.table:
            run.differences.append(f"table: Hazelcast {obs.table[0]}, model {pair.model.table}")
        compare_states(run, f"step {i} {step}", obs, {0: pair.model})
        if not run.differences:
            retried = False
        elif retried:
            out.explained += len(run.differences)
        else:
            out.unexplained += run.differences
            break  # the first unexplained difference ends the walk: later ones follow from it
    out.deferred = pair.deferred
    return out
