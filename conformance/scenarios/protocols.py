"""What each protocol's scenarios may say: its steps, the counters it runs, the copy states it has, the
expectations it can observe, and the rules a scenario must follow for it.

The format (format.py) holds every protocol's steps and expectations; a protocol here takes a part of
them. A new protocol adds its steps and expectations to the format, its rules here and its adapter in
adapters/. The checks that hold for every protocol are in load.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.mutants import CLUSTER_COUNTERS
from conformance.scenarios.format import TRACKING, NodeExpectation, ScenarioFile, TxStartStep
from impl.affinity import key_partition
from impl.cluster import STEPS
from impl.pme import PME_STEPS

if TYPE_CHECKING:
    from conformance.scenarios.load import ScenarioChecker

# Expectations and options only some protocols have, and what a protocol without one lacks.
FEATURES: dict[str, str] = {
    "wal_rebalance_threshold": "does not rebalance",
    "batch_size": "does not rebalance",
    "init": "has no MOVING copies",
    "history": "does not truncate the WAL archive",
    "rebalanced": "does not rebalance",
    "pending": "has an atomic Exchange: nothing is ever pending",
    "coordinator": "has an atomic Exchange, run by no coordinator",
    "idle_verify": "has no idle_verify",
}


@dataclass(frozen=True)
class IgniteProtocol:
    """One of Ignite's protocols as impl/ models it: one client, owner lists, one primary per
    transaction (a transaction's keys map to partitions that share one owner list)."""

    name: str
    steps: Mapping[str, tuple[str, ...]]
    counters: tuple[str, ...]
    partition_states: tuple[str, ...]
    features: frozenset[str]
    # True: copies come and go (a MOVING copy on a new owner, an evicted one), so an expectation may name
    # any partition; False: a server holds its initial copies only.
    copies_move: bool
    # True: every partition is owned by the first backups+1 servers (impl.pme computes the affinity over
    # the baseline in the listed, rendezvous, order; another initial list would move at the first exchange).
    affinity_fixed: bool

    def check_cluster(self, checker: ScenarioChecker) -> None:
        cluster = checker.scenario.cluster
        affinity = checker.servers[: cluster.backups + 1]
        for part, owners in (cluster.owners or {}).items():
            if self.affinity_fixed and owners != affinity:
                raise checker.fail(
                    f"cluster.owners[{part}]",
                    f"owners {owners}: with protocol {self.name!r} every partition is owned by the first "
                    "backups+1 servers",
                    f"{affinity}, or reorder cluster.servers",
                )
        owners_of = owner_lists(checker.scenario)
        for tx, index in checker.txs.items():
            keys = checker.scenario.steps[index]
            assert isinstance(keys, TxStartStep)
            lists = {owners_of[key_partition(k, cluster.partitions)] for k in keys.keys}
            if len(lists) > 1:
                raise checker.fail(
                    f"steps[{index}].keys",
                    f"the keys of {tx} map to partitions with the owner lists {sorted(lists)}",
                    "keys whose partitions share one owner list: the model has one primary per transaction",
                )

    def check_node(self, checker: ScenarioChecker, at: str, node: str, expectation: NodeExpectation) -> None:
        """The copies a server's expectation names, and their states."""
        for part, state in (expectation.partitions or {}).items():
            if state not in self.partition_states:
                raise checker.fail(
                    f"{at}.partitions[{part}]",
                    f"{state} is no copy state of protocol {self.name!r}",
                    f"one of {self.partition_states}",
                )
        owned = [p for p, owners in owner_lists(checker.scenario).items() if node in owners]
        for field in ("counters", "partitions", "init", "history", "rebalanced"):
            for part in getattr(expectation, field) or {}:
                if not self.copies_move and part not in owned:
                    raise checker.fail(
                        f"{at}.{field}[{part}]",
                        f"{node} holds no copy of partition {part}",
                        f"one of {owned}",
                    )
                if part >= checker.scenario.cluster.partitions:
                    raise checker.fail(f"{at}.{field}[{part}]", f"no partition {part}", checker.partitions())


def owner_lists(scenario: ScenarioFile) -> dict[int, tuple[str, ...]]:
    """Each partition's initial owner list, primary first (default: the first backups+1 servers)."""
    cluster = scenario.cluster
    default = tuple(cluster.servers[: cluster.backups + 1])
    return {p: tuple(cluster.owners[p]) if cluster.owners else default for p in range(cluster.partitions)}


PROTOCOLS: dict[str, IgniteProtocol] = {
    "2pc": IgniteProtocol(
        name="2pc",
        steps=STEPS,
        counters=(TRACKING, *CLUSTER_COUNTERS),
        partition_states=("OWNING", "MOVING", "OFFLINE"),
        features=frozenset(),
        copies_move=False,
        affinity_fixed=False,
    ),
    "pme": IgniteProtocol(
        name="pme",
        steps=PME_STEPS,
        counters=(TRACKING,),
        partition_states=("OWNING", "MOVING", "RENTING", "EVICTED", "LOST", "OFFLINE"),
        features=frozenset(FEATURES),
        copies_move=True,
        affinity_fixed=True,
    ),
}
