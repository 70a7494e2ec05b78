"""Ignite-compatible affinity: Java hash codes, key -> partition, and rendezvous partition -> nodes.

Mirrors Apache Ignite's RendezvousAffinityFunction bit for bit; tests/test_affinity_java.py checks that
against the JDK. Numbers are Python ints kept in Java's int32/int64 ranges by explicit wrapping.

Two paths compute the same placement: a plain-Python reference (`assign_reference`, the oracle and the
benchmark baseline) and a numpy one (`assign_vectorized`) for 65,000 partitions x 1,000 nodes.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

MASK32: Final = 0xFFFF_FFFF
MASK64: Final = 0xFFFF_FFFF_FFFF_FFFF
INT_MIN: Final = -(1 << 31)
INT_MAX: Final = (1 << 31) - 1
LONG_MIN: Final = -(1 << 63)
LONG_MAX: Final = (1 << 63) - 1

DEFAULT_PARTITIONS: Final = 1024
MAX_PARTITIONS: Final = 65000
# Ignite marks a replicated cache with backups = Integer.MAX_VALUE: every node holds every partition.
ALL_BACKUPS: Final = INT_MAX


def to_int32(value: int) -> int:
    """Wrap like a Java int (two's complement, 32 bits)."""
    value &= MASK32
    return value - (1 << 32) if value > INT_MAX else value


def to_int64(value: int) -> int:
    """Wrap like a Java long (two's complement, 64 bits)."""
    value &= MASK64
    return value - (1 << 64) if value > LONG_MAX else value


def _check_range(value: int, low: int, high: int, kind: str) -> None:
    if not low <= value <= high:
        raise ValueError(f"{value} is outside the Java {kind} range [{low}, {high}]")


# --- Java hashCode ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class JavaLong:
    """A Java long key. A bare Python int is a Java int; a long hashes differently (e.g. -1 -> 0)."""

    value: int

    def __post_init__(self) -> None:
        _check_range(self.value, LONG_MIN, LONG_MAX, "long")


JavaKey: TypeAlias = bool | int | str | uuid.UUID | JavaLong
_JAVA_KEY_TYPES: Final = (bool, int, str, uuid.UUID, JavaLong)


def hash_int(value: int) -> int:
    """Integer.hashCode: the value itself."""
    _check_range(value, INT_MIN, INT_MAX, "int")
    return value


def hash_long(value: int) -> int:
    """Long.hashCode: (int)(v ^ (v >>> 32))."""
    _check_range(value, LONG_MIN, LONG_MAX, "long")
    bits = value & MASK64
    return to_int32(bits ^ (bits >> 32))


def hash_string(text: str) -> int:
    """String.hashCode: h = 31*h + c over UTF-16 code units, so a non-BMP character counts twice.

    Lone surrogates are valid in both Java and Python strings; "surrogatepass" keeps them as one unit.
    """
    data = text.encode("utf-16-le", "surrogatepass")
    h = 0
    for unit in struct.unpack(f"<{len(data) // 2}H", data):
        h = (31 * h + unit) & MASK32
    return to_int32(h)


def hash_uuid(value: uuid.UUID) -> int:
    """UUID.hashCode: x = msb ^ lsb, then (int)(x >> 32) ^ (int)x."""
    bits = (value.int >> 64) ^ (value.int & MASK64)
    return to_int32((bits >> 32) ^ bits)


def hash_bool(value: bool) -> int:
    """Boolean.hashCode."""
    return 1231 if value else 1237


def java_hash(key: JavaKey) -> int:
    """hashCode of the Java object a Python key stands for (int -> Integer, JavaLong -> Long, ...)."""
    # bool first: it is a subclass of int in Python but a different class in Java.
    if isinstance(key, bool):
        return hash_bool(key)
    if isinstance(key, int):
        return hash_int(key)
    if isinstance(key, str):
        return hash_string(key)
    if isinstance(key, uuid.UUID):
        return hash_uuid(key)
    if isinstance(key, JavaLong):
        return hash_long(key.value)
    raise TypeError(f"no Java hashCode for {type(key).__name__}")


# --- key -> partition ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AffinityKey:
    """A key placed by another value (Ignite's AffinityKey): keys sharing `affinity` share a partition."""

    key: JavaKey
    affinity: JavaKey


def affinity_key(key: object, field: str | None = None) -> JavaKey:
    """The value that decides a key's partition.

    An AffinityKey is placed by its affinity part; an object with a designated affinity-key field (Ignite's
    @AffinityKeyMapped / CacheKeyConfiguration) by that field; a plain key by itself.
    """
    if isinstance(key, AffinityKey):
        return key.affinity
    value = getattr(key, field) if field is not None else key
    if not isinstance(value, _JAVA_KEY_TYPES):
        raise TypeError(f"cannot place a {type(value).__name__} key: give an affinity-key field")
    return value


def validate_partitions(partitions: int) -> int:
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ValueError(f"partitions must be in [1, {MAX_PARTITIONS}], got {partitions}")
    return partitions


def safe_abs(value: int) -> int:
    """Ignite's U.safeAbs: Math.abs overflows on Integer.MIN_VALUE (stays negative), so that maps to 0."""
    result = to_int32(abs(value))
    return 0 if result < 0 else result


def java_rem(dividend: int, divisor: int) -> int:
    """Java's %: truncating division, so the remainder has the dividend's sign (Python's % floors)."""
    remainder = abs(dividend) % abs(divisor)
    return -remainder if dividend < 0 else remainder


def partition_for_hash(h: int, partitions: int) -> int:
    """Ignite's partition of a key hash: a bit mix and mask for powers of two, abs(h % parts) otherwise."""
    validate_partitions(partitions)
    _check_range(h, INT_MIN, INT_MAX, "int")
    if partitions & (partitions - 1) == 0:
        # (h ^ (h >>> 16)) & mask: the mask keeps at most 15 bits, so the sign never reaches the result.
        bits = h & MASK32
        return (bits ^ (bits >> 16)) & (partitions - 1)
    return safe_abs(java_rem(h, partitions))


def key_partition(key: object, partitions: int = DEFAULT_PARTITIONS, field: str | None = None) -> int:
    """The partition Ignite puts `key` in (see `affinity_key` for colocated keys)."""
    return partition_for_hash(java_hash(affinity_key(key, field)), partitions)


# --- partition -> nodes: rendezvous ----------------------------------------------------------------


def mix64(key: int) -> int:
    """Ignite's 64-bit mix of (node hash, partition), on unsigned 64-bit ints.

    Every step is invertible (multiplication by an odd constant or an xor-shift), so the mix is a bijection:
    two nodes tie for a partition only if their consistent ids have equal hash codes.
    """
    key = (~key + (key << 21)) & MASK64
    key ^= key >> 24
    key = (key + (key << 3) + (key << 8)) & MASK64
    key ^= key >> 14
    key = (key + (key << 2) + (key << 4)) & MASK64
    key ^= key >> 28
    return (key + (key << 31)) & MASK64


def rendezvous_weight(node_hash: int, partition: int) -> int:
    """A node's signed 64-bit weight for a partition; the lightest node is the primary."""
    return to_int64(mix64((node_hash & MASK32) | ((partition & MASK32) << 32)))


@dataclass(frozen=True)
class Node:
    """A server node. `consistent_id` drives placement, `node_id` breaks ties (as in Ignite).

    Nodes with the same `host` are neighbours (Ignite compares MAC addresses); no host means a machine of
    its own. `attributes` are (name, value) pairs such as ("rack", "r1"), read by backup filters.
    """

    consistent_id: str | uuid.UUID
    node_id: uuid.UUID
    host: str | None = None
    attributes: tuple[tuple[str, str], ...] = ()

    def attribute(self, name: str) -> str | None:
        return dict(self.attributes).get(name)

    @property
    def machine(self) -> str:
        return self.host if self.host is not None else f"node:{self.node_id}"


_NODE_ID_NAMESPACE: Final = uuid.UUID("6f1d7c1e-2b8a-4e55-9a57-3c0b1d2e4f60")


def make_node(consistent_id: str | uuid.UUID, *, host: str | None = None, **attributes: str) -> Node:
    """A node whose node_id is derived from its consistent id, so a test topology is reproducible."""
    node_id = uuid.uuid5(_NODE_ID_NAMESPACE, f"{type(consistent_id).__name__}:{consistent_id}")
    return Node(consistent_id, node_id, host, tuple(sorted(attributes.items())))


def node_hash(node: Node) -> int:
    return java_hash(node.consistent_id)


def java_uuid_order(value: uuid.UUID) -> tuple[int, int]:
    """Sort key equal to Java's UUID.compareTo: signed most-significant bits, then signed least."""
    return to_int64(value.int >> 64), to_int64(value.int)


# (candidate, nodes already chosen for the partition, primary first) -> may the candidate be a backup?
# This is Ignite's affinityBackupFilter; `primary_backup_filter` adapts the older backupFilter.
BackupFilter: TypeAlias = Callable[[Node, Sequence[Node]], bool]


def primary_backup_filter(accept: Callable[[Node, Node], bool]) -> BackupFilter:
    """Adapt Ignite's backupFilter(primary, candidate) to the affinityBackupFilter shape."""
    return lambda candidate, chosen: accept(chosen[0], candidate)


def distinct_attributes(*names: str) -> BackupFilter:
    """Reject a candidate equal to an already chosen node on all `names` (e.g. the same rack)."""

    def accept(candidate: Node, chosen: Sequence[Node]) -> bool:
        return all(any(candidate.attribute(n) != other.attribute(n) for n in names) for other in chosen)

    return accept


@dataclass(frozen=True)
class RendezvousConfig:
    """RendezvousAffinityFunction's parameters; `backups=ALL_BACKUPS` is a replicated cache."""

    partitions: int = DEFAULT_PARTITIONS
    backups: int = 0
    backup_filter: BackupFilter | None = None
    exclude_neighbors: bool = False

    def __post_init__(self) -> None:
        validate_partitions(self.partitions)
        if self.backups < 0:
            raise ValueError(f"backups must be >= 0, got {self.backups}")
        if self.backup_filter is not None and self.exclude_neighbors:
            # Ignite consults only the neighbour rule when both are set; refuse the ambiguous setup.
            raise ValueError("use either a backup filter or exclude_neighbors, not both")

    @property
    def replicated(self) -> bool:
        return self.backups == ALL_BACKUPS

    def copies(self, nodes: int) -> int:
        """Owners per partition: primary plus backups, at most one per node."""
        return nodes if self.replicated else min(self.backups + 1, nodes)


# Per partition, indices into the node list: primary first, then backups in order.
Assignment: TypeAlias = tuple[tuple[int, ...], ...]


def rank_nodes(partition: int, nodes: Sequence[Node], hashes: Sequence[int] | None = None) -> list[int]:
    """Node indices lightest first for a partition; ties (equal id hash codes) go to the lower node id."""
    node_hashes = hashes if hashes is not None else [node_hash(n) for n in nodes]
    return sorted(
        range(len(nodes)),
        key=lambda i: (rendezvous_weight(node_hashes[i], partition), java_uuid_order(nodes[i].node_id)),
    )


def select_owners(ranked: Sequence[int], nodes: Sequence[Node], config: RendezvousConfig) -> tuple[int, ...]:
    """Ignite's choice of primary and backups from a ranking (node indices, lightest first)."""
    if not ranked:
        return ()
    primary = ranked[0]
    if config.replicated:
        # Backups of a replicated cache are all other nodes in topology order, not in rank order.
        return (primary, *(i for i in range(len(nodes)) if i != primary))
    count = config.copies(len(nodes))
    owners = [primary]
    if config.exclude_neighbors:
        machines = {nodes[primary].machine}
        for candidate in ranked[1:]:
            if len(owners) == count:
                break
            if nodes[candidate].machine not in machines:
                owners.append(candidate)
                machines.add(nodes[candidate].machine)
        # Too few machines: Ignite's second pass fills up in rank order, neighbours or not.
        for candidate in ranked[1:]:
            if len(owners) == count:
                break
            if candidate not in owners:
                owners.append(candidate)
        return tuple(owners)
    accept = config.backup_filter
    for candidate in ranked[1:]:
        if len(owners) == count:
            break
        if accept is None or accept(nodes[candidate], [nodes[i] for i in owners]):
            owners.append(candidate)
    return tuple(owners)


def assign_partition(partition: int, nodes: Sequence[Node], config: RendezvousConfig) -> tuple[int, ...]:
    return select_owners(rank_nodes(partition, nodes), nodes, config)


def assign_reference(nodes: Sequence[Node], config: RendezvousConfig) -> Assignment:
    """Plain-Python placement of every partition: the oracle for `assign_vectorized`."""
    hashes = [node_hash(n) for n in nodes]
    return tuple(select_owners(rank_nodes(p, nodes, hashes), nodes, config) for p in range(config.partitions))


# --- the same, vectorized --------------------------------------------------------------------------


def mix64_array(keys: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """`mix64` on a uint64 array; numpy wraps uint64 arithmetic, so no masking is needed.

    The shift-and-add steps are written as the products they equal (key*265, key*21, key*(2**31+1)):
    fewer temporaries, and an independent formulation that the scalar oracle cross-checks.
    """
    key = ~keys + (keys << np.uint64(21))
    key ^= key >> np.uint64(24)
    key *= np.uint64(265)
    key ^= key >> np.uint64(14)
    key *= np.uint64(21)
    key ^= key >> np.uint64(28)
    key *= np.uint64((1 << 31) + 1)
    return key


def weight_matrix(partitions: NDArray[np.int64], hashes: NDArray[np.int64]) -> NDArray[np.int64]:
    """Signed weights, shape (len(partitions), len(hashes)): `rendezvous_weight` for every pair."""
    low = hashes.astype(np.uint64) & np.uint64(MASK32)
    high = partitions.astype(np.uint64) << np.uint64(32)
    return mix64_array(high[:, None] | low[None, :]).view(np.int64)


def _lightest(weights: NDArray[np.int64], top: int, ties: bool) -> NDArray[np.intp]:
    """Column indices of the `top` lightest weights per row, lightest first; equal weights by column."""
    if top == 1:
        # argmin returns the first (lowest) column on ties.
        lightest: NDArray[np.intp] = np.argmin(weights, axis=1, keepdims=True)
        return lightest
    if ties or top == weights.shape[1]:
        return np.argsort(weights, axis=1, kind="stable")[:, :top]
    # Without ties the top-k set is unique, so a partial selection is exact and much cheaper.
    chosen = np.argpartition(weights, top - 1, axis=1)[:, :top]
    order = np.argsort(np.take_along_axis(weights, chosen, axis=1), axis=1)
    return np.take_along_axis(chosen, order, axis=1)


_BLOCK_WEIGHTS: Final = 1 << 14


def _ranked_blocks(
    nodes: Sequence[Node], partitions: int, width: int
) -> Iterator[tuple[int, NDArray[np.intp]]]:
    """(first partition, its block's rankings) in blocks of ~16k weights, which keep temporaries in cache."""
    n = len(nodes)
    # Columns in node-id order turn "ties by node id" into "ties by column", which numpy sorts handle.
    order = np.array(sorted(range(n), key=lambda i: java_uuid_order(nodes[i].node_id)), dtype=np.intp)
    hashes = np.array([node_hash(nodes[i]) for i in order], dtype=np.int64)
    ties = len(set(hashes.tolist())) < n  # the mix is a bijection: only equal id hashes can tie
    rows = max(1, _BLOCK_WEIGHTS // max(n, 1))
    for start in range(0, partitions, rows):
        block = np.arange(start, min(partitions, start + rows), dtype=np.int64)
        yield start, order[_lightest(weight_matrix(block, hashes), width, ties)]


def rank_matrix(nodes: Sequence[Node], partitions: int, top: int | None = None) -> NDArray[np.intp]:
    """Shape (partitions, top): each partition's `top` (default all) lightest node indices, lightest first."""
    width = len(nodes) if top is None else min(top, len(nodes))
    result = np.empty((partitions, width), dtype=np.intp)
    for start, ranked in _ranked_blocks(nodes, partitions, width):
        result[start : start + len(ranked)] = ranked
    return result


def assign_vectorized(nodes: Sequence[Node], config: RendezvousConfig) -> NDArray[np.int32]:
    """`assign_reference` with numpy: shape (partitions, copies), rows padded with -1 when a backup filter
    leaves a partition fewer owners."""
    n, parts = len(nodes), config.partitions
    count = config.copies(n)
    if n == 0:
        return np.empty((parts, 0), dtype=np.int32)
    if config.replicated:
        primary = rank_matrix(nodes, parts, top=1)
        others = np.arange(n - 1)[None, :]
        return np.hstack([primary, others + (others >= primary)]).astype(np.int32)
    if config.backup_filter is None and not config.exclude_neighbors:
        return rank_matrix(nodes, parts, top=count).astype(np.int32)
    # Filters are arbitrary predicates: rank in numpy, then walk each ranking in Python.
    result = np.full((parts, count), -1, dtype=np.int32)
    for start, block in _ranked_blocks(nodes, parts, n):
        for p, ranked in enumerate(block.tolist(), start):
            owners = select_owners(ranked, nodes, config)
            result[p, : len(owners)] = owners
    return result


def as_assignment(owners: NDArray[np.int32]) -> Assignment:
    """A padded owner array as an Assignment (dropping the -1 padding)."""
    return tuple(tuple(i for i in row if i >= 0) for row in owners.tolist())
