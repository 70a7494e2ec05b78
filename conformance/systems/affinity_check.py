"""tidemark's affinity (impl/affinity.py) against Ignite's RendezvousAffinityFunction, case by case.

A case set is one configuration (partitions, backups, backup filter or exclNeighbors, a node set) with a
batch of keys; Ignite's answer (AffinityOracle) and tidemark's are compared partition by partition and key
by key. Used by bench/bench_ignite_affinity.py (a million cases) and tests/test_ignite_affinity.py (a
seeded sample).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from tidemark.impl.affinity import (
    ALL_BACKUPS,
    JavaKey,
    JavaLong,
    Node,
    RendezvousConfig,
    as_assignment,
    assign_reference,
    assign_vectorized,
    distinct_attributes,
    key_partition,
    make_node,
)

PARTITION_COUNTS = (1, 2, 3, 7, 16, 64, 100, 128, 512, 1000, 1024, 4096, 65000)
KEY_TYPES = ("int", "long", "string", "uuid")


@dataclass
class CaseSet:
    """One configuration and its keys, as tidemark sees it and as the oracle request carries it."""

    config: RendezvousConfig
    nodes: list[Node]
    keys: list[JavaKey]
    request: dict[str, Any]
    differences: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return self.config.partitions + len(self.keys)


def _string(rng: random.Random) -> str:
    alphabet = "abcXYZ019 _-é€中" + "\U0001f600" + "\ud800"  # BMP, a surrogate pair, a lone surrogate
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))


def _key(rng: random.Random, kind: str) -> tuple[JavaKey, dict[str, Any]]:
    if kind == "int":
        v = rng.choice([0, -1, 1, 65535, 65536, -(2**31), 2**31 - 1, rng.randrange(-(2**31), 2**31)])
        return v, {"t": "int", "v": v}
    if kind == "long":
        v = rng.choice([0, -1, 2**32, -(2**63), 2**63 - 1, rng.randrange(-(2**63), 2**63)])
        return JavaLong(v), {"t": "long", "v": v}
    if kind == "string":
        s = _string(rng)
        return s, {"t": "string", "v": s}
    u = uuid.UUID(int=rng.getrandbits(128))
    return u, {"t": "uuid", "v": str(u)}


def random_case_set(rng: random.Random, keys: int) -> CaseSet:
    """A random configuration: partition count, 1-40 nodes (string or UUID consistent ids, hosts, racks),
    backups 0-3 or replicated, and at most one of a rack backup filter and exclNeighbors."""
    partitions = rng.choice(PARTITION_COUNTS[:-1]) if rng.random() > 0.02 else 65000
    n = rng.randrange(1, 41) if partitions < 65000 else rng.randrange(1, 6)
    backups = rng.choice([0, 1, 1, 2, 2, 3]) if rng.random() > 0.05 else ALL_BACKUPS
    mode = rng.choice(["plain", "plain", "filter", "neighbors"])
    hosts = rng.randrange(1, n + 1)
    nodes: list[Node] = []
    for i in range(n):
        cid: str | uuid.UUID = f"node-{rng.randrange(10**6)}-{i}" if rng.random() < 0.7 else uuid.uuid4()
        host = f"h{rng.randrange(hosts)}" if rng.random() < 0.8 else None
        nodes.append(make_node(cid, host=host, rack=f"r{rng.randrange(3)}"))
    config = RendezvousConfig(
        partitions=partitions,
        backups=backups,
        backup_filter=distinct_attributes("rack") if mode == "filter" else None,
        exclude_neighbors=mode == "neighbors",
    )
    drawn = [_key(rng, rng.choice(KEY_TYPES)) for _ in range(keys)]
    request = {
        "partitions": partitions,
        "backups": backups,
        "exclNeighbors": mode == "neighbors",
        "filter": ["rack"] if mode == "filter" else [],
        "nodes": [
            {
                "id": str(nd.consistent_id),
                "uuidId": isinstance(nd.consistent_id, uuid.UUID),
                "uuid": str(nd.node_id),
                "host": nd.host,
                "attrs": dict(nd.attributes),
            }
            for nd in nodes
        ],
        "keys": [k[1] for k in drawn],
    }
    return CaseSet(config, nodes, [k[0] for k in drawn], request)


def compare(case: CaseSet, answer: dict[str, Any], *, reference: bool = False) -> list[str]:
    """The differences between Ignite's answer and tidemark's for one case set (empty: none)."""
    ours = (
        assign_reference(case.nodes, case.config)
        if reference
        else as_assignment(assign_vectorized(case.nodes, case.config))
    )
    theirs = tuple(tuple(p) for p in answer["assignment"])
    diffs = [
        f"partition {p}: ignite {t} tidemark {o}"
        for p, (t, o) in enumerate(zip(theirs, ours, strict=True))
        if t != o
    ]
    for key, part in zip(case.keys, answer["parts"], strict=True):
        mine = key_partition(key, case.config.partitions)
        if mine != part:
            diffs.append(f"key {key!r}: ignite {part} tidemark {mine}")
    case.differences = diffs
    return diffs
