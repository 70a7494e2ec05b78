"""Alternative partition placements, for comparison with Ignite's rendezvous
(conformance/lab/distribution.py).

Each placement is a pure function (partitions, node names, backups) -> Assignment: per partition, indices
into `nodes`, primary first. Owners of a partition are distinct; a partition has min(backups + 1, nodes)
of them. Hashing uses Ignite's own 64-bit mix everywhere so that the schemes differ only in how they place.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TypeAlias

from tidemark.impl.affinity import (
    MASK32,
    MASK64,
    Assignment,
    RendezvousConfig,
    as_assignment,
    assign_vectorized,
    hash_string,
    make_node,
    mix64,
    rank_matrix,
)

Placement: TypeAlias = Callable[[int, Sequence[str], int], Assignment]


def _copies(partitions: int, nodes: Sequence[str], backups: int) -> int:
    if partitions < 1 or not nodes or backups < 0:
        raise ValueError("need partitions >= 1, at least one node and backups >= 0")
    if len(set(nodes)) != len(nodes):
        raise ValueError("node names must be distinct")
    return min(backups + 1, len(nodes))


def _hash64(low: int, high: int) -> int:
    """An unsigned 64-bit hash of two 32-bit values."""
    return mix64((low & MASK32) | ((high & MASK32) << 32))


def modulo(partitions: int, nodes: Sequence[str], backups: int) -> Assignment:
    """Partition p on node p mod N, backups on the next nodes: the seed's naive scheme.

    Partitions are already hash buckets, so this is perfectly even; but any change of N remaps almost all.
    """
    n, copies = len(nodes), _copies(partitions, nodes, backups)
    return tuple(tuple((p + r) % n for r in range(copies)) for p in range(partitions))


def ring(partitions: int, nodes: Sequence[str], backups: int, vnodes: int = 100) -> Assignment:
    """Consistent hashing: `vnodes` tokens per node on a 64-bit circle; a partition belongs to the first
    token clockwise from its own position, backups to the next distinct nodes clockwise."""
    copies = _copies(partitions, nodes, backups)
    if vnodes < 1:
        raise ValueError(f"vnodes must be >= 1, got {vnodes}")
    tokens = sorted((_hash64(hash_string(name), j), i) for i, name in enumerate(nodes) for j in range(vnodes))
    positions = [token for token, _ in tokens]
    result = []
    for p in range(partitions):
        # The partition's position uses a salt outside the token range of any node (j < vnodes).
        start = bisect.bisect_right(positions, _hash64(p, MASK32))
        owners: list[int] = []
        for k in range(len(tokens)):
            node = tokens[(start + k) % len(tokens)][1]
            if node not in owners:
                owners.append(node)
                if len(owners) == copies:
                    break
        result.append(tuple(owners))
    return tuple(result)


def jump_hash(key: int, buckets: int) -> int:
    """Lamping and Veach's jump consistent hash of a 64-bit key into [0, buckets)."""
    bucket, candidate = -1, 0
    while candidate < buckets:
        bucket = candidate
        key = (key * 2862933555777941757 + 1) & MASK64
        candidate = int((bucket + 1) * ((1 << 31) / ((key >> 33) + 1)))
    return bucket


def jump(partitions: int, nodes: Sequence[str], backups: int) -> Assignment:
    """Jump hash over the node list; each further copy rehashes the partition until it lands on a new node.

    Minimal disruption holds only for appending or removing the last node: the buckets are list positions.
    """
    n, copies = len(nodes), _copies(partitions, nodes, backups)
    result = []
    for p in range(partitions):
        owners: list[int] = []
        attempt = 0
        while len(owners) < copies:
            node = jump_hash(_hash64(p, attempt), n)
            attempt += 1
            if node not in owners:
                owners.append(node)
        result.append(tuple(owners))
    return tuple(result)


def rendezvous(partitions: int, nodes: Sequence[str], backups: int) -> Assignment:
    """Ignite's RendezvousAffinityFunction with the names as String consistent ids."""
    _copies(partitions, nodes, backups)
    topology = [make_node(name) for name in nodes]
    return as_assignment(assign_vectorized(topology, RendezvousConfig(partitions, backups)))


def bounded_capacity(partitions: int, nodes: int, copies: int, eps: float) -> int:
    """ceil((1 + eps) * P * copies / N), computed exactly: eps is taken as the decimal it was written as."""
    return math.ceil((1 + Fraction(repr(eps))) * partitions * copies / nodes)


def bounded_rendezvous(partitions: int, nodes: Sequence[str], backups: int, eps: float = 0.05) -> Assignment:
    """Rendezvous with bounded loads: partitions in order each take their best-ranked nodes that still have
    capacity (copies of any kind count against one capacity per node).

    With one copy the cap always holds (capacity * N >= partitions); with backups it can be exceeded by the
    last partitions, see below.
    """
    n, copies = len(nodes), _copies(partitions, nodes, backups)
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    capacity = bounded_capacity(partitions, n, copies, eps)
    load = [0] * n
    result = []
    for ranked in rank_matrix([make_node(name) for name in nodes], partitions).tolist():
        owners = [node for node in ranked if load[node] < capacity][:copies]
        if len(owners) < copies:
            # Late partitions can find room on fewer than `copies` nodes (backups with eps near 0): the
            # least-loaded other nodes take the rest (rank order on ties), exceeding the cap least.
            rest = sorted((node for node in ranked if node not in owners), key=lambda node: load[node])
            owners += rest[: copies - len(owners)]
        for node in owners:
            load[node] += 1
        result.append(tuple(owners))
    return tuple(result)


def ncache_owners(partitions: int, nodes: int) -> list[int]:
    """NCache's distribution map after nodes 0..nodes-1 joined in that order: bucket -> owner.

    The first node owns every bucket; the coordinator gives each joiner partitions // (members) buckets,
    taken one at a time from the currently fullest member (its highest-numbered bucket).
    """
    if partitions < 1 or nodes < 1:
        raise ValueError("need partitions >= 1 and nodes >= 1")
    owners = [0] * partitions
    held = [list(range(partitions))]
    for joiner in range(1, nodes):
        taken = []
        for _ in range(partitions // (joiner + 1)):
            donor = max(range(joiner), key=lambda i: len(held[i]))  # first fullest: lowest index on ties
            bucket = held[donor].pop()
            owners[bucket] = joiner
            taken.append(bucket)
        held.append(sorted(taken))
    return owners


def ncache_leave(owners: Sequence[int], nodes: int, leaver: int) -> list[int]:
    """The map after `leaver` leaves, owners renumbered without it.

    Each orphaned bucket goes to the least-loaded survivor (lowest index on ties), so the survivors below
    partitions // (nodes - 1) fill up first.
    """
    if nodes < 2 or not 0 <= leaver < nodes:
        raise ValueError(f"cannot remove node {leaver} of {nodes}")
    load = [0] * nodes
    for owner in owners:
        load[owner] += 1
    survivors = [i for i in range(nodes) if i != leaver]
    result = list(owners)
    for bucket, owner in enumerate(owners):
        if owner == leaver:
            heir = min(survivors, key=lambda i: load[i])
            load[heir] += 1
            result[bucket] = heir
    return [owner - (owner > leaver) for owner in result]


def _with_replicas(owners: Sequence[int], nodes: int, copies: int) -> Assignment:
    """Each node's replicas live on the nodes that joined after it (wrapping to the first)."""
    return tuple(tuple((owner + r) % nodes for r in range(copies)) for owner in owners)


def ncache(partitions: int, nodes: Sequence[str], backups: int) -> Assignment:
    """NCache partition-replica: the join-order distribution map plus the replica chain (`nodes` in join
    order; NCache itself keeps one replica, more backups continue along the chain)."""
    copies = _copies(partitions, nodes, backups)
    return _with_replicas(ncache_owners(partitions, len(nodes)), len(nodes), copies)


def ncache_after_leave(partitions: int, nodes: Sequence[str], backups: int, leaver: int) -> Assignment:
    """NCache's placement over `nodes` without `leaver`, reached from the map before the leave (NCache's map
    depends on history, so it is not `ncache` of the survivors)."""
    copies = _copies(partitions, nodes, backups)
    owners = ncache_leave(ncache_owners(partitions, len(nodes)), len(nodes), leaver)
    return _with_replicas(owners, len(nodes) - 1, min(copies, len(nodes) - 1))
