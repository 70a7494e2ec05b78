"""impl/affinity.py against vectors the JDK computes (tests/java/AffinityVectors.java, compiled here).

Java's own hashCode implementations, `%`, `>>>` and long overflow are the ground truth; the Java program
re-implements Ignite's documented partitioning and rendezvous ordering on top of them.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections import defaultdict
from pathlib import Path

import pytest

from tidemark.impl.affinity import (
    ALL_BACKUPS,
    JavaLong,
    Node,
    RendezvousConfig,
    as_assignment,
    assign_reference,
    assign_vectorized,
    distinct_attributes,
    hash_bool,
    hash_int,
    hash_long,
    hash_string,
    hash_uuid,
    key_partition,
    partition_for_hash,
    rendezvous_weight,
)

SOURCE = Path(__file__).parent / "java" / "AffinityVectors.java"


def _java_string(units: str) -> str:
    """Decode the '.'-joined hex UTF-16 units the Java program prints (pairs become one code point)."""
    data = b"".join(int(u, 16).to_bytes(2, "little") for u in units.split(".") if u)
    return data.decode("utf-16-le", "surrogatepass")


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[list[str]]]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.fail(
            "the Java affinity vectors need a JDK: javac and java on PATH "
            "(e.g. apt-get install openjdk-17-jdk-headless)"
        )
    classes = tmp_path_factory.mktemp("affinity-java")
    subprocess.run([javac, "-d", str(classes), str(SOURCE)], check=True, capture_output=True, timeout=120)
    run = subprocess.run(
        [java, "-cp", str(classes), "AffinityVectors"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    by_kind: dict[str, list[list[str]]] = defaultdict(list)
    for line in run.stdout.splitlines():
        kind, *fields = line.split("\t")
        by_kind[kind].append(fields)
    return by_kind


def test_hash_codes_match_the_jdk(vectors: dict[str, list[list[str]]]) -> None:
    checks = {
        "int": lambda v: hash_int(int(v)),
        "long": lambda v: hash_long(int(v)),
        "string": lambda v: hash_string(_java_string(v)),
        "uuid": lambda v: hash_uuid(uuid.UUID(v)),
        "bool": lambda v: hash_bool(v == "true"),
    }
    for kind, compute in checks.items():
        rows = vectors[kind]
        assert rows, kind
        mismatches = [(value, expected) for value, expected in rows if compute(value) != int(expected)]
        assert mismatches == [], kind
    # The vectors do exercise non-BMP characters and lone surrogates.
    decoded = [_java_string(units) for units, _ in vectors["string"]]
    assert "\U0001f600" in decoded and "\ud800" in decoded


def test_key_to_partition_matches_the_jdk(vectors: dict[str, list[list[str]]]) -> None:
    rows = vectors["partition"]
    assert any(int(h) == -(1 << 31) for h, _, _ in rows)
    assert {int(parts) for _, parts, _ in rows} >= {1, 1024, 1000, 65000}
    assert [r for r in rows if partition_for_hash(int(r[0]), int(r[1])) != int(r[2])] == []

    decode = {"string": _java_string, "long": lambda v: JavaLong(int(v)), "uuid": uuid.UUID}
    keys = vectors["key"]
    assert {kind for kind, *_ in keys} == set(decode)
    mismatches = [r for r in keys if key_partition(decode[r[0]](r[1]), int(r[2])) != int(r[3])]
    assert mismatches == []


def test_rendezvous_weights_match_the_jdk(vectors: dict[str, list[list[str]]]) -> None:
    rows = vectors["weight"]
    assert len(rows) > 300
    assert [r for r in rows if rendezvous_weight(int(r[0]), int(r[1])) != int(r[2])] == []


def _topologies(vectors: dict[str, list[list[str]]]) -> dict[str, list[Node]]:
    nodes: dict[str, list[Node]] = defaultdict(list)
    for name, index, kind, cid, node_id, host, rack in vectors["node"]:
        consistent_id = uuid.UUID(cid) if kind == "uuid" else _java_string(cid)
        assert int(index) == len(nodes[name])
        nodes[name].append(Node(consistent_id, uuid.UUID(node_id), host, (("rack", rack),)))
    return nodes


def test_partition_assignments_match_the_jdk(vectors: dict[str, list[list[str]]]) -> None:
    topologies = _topologies(vectors)
    expected: dict[tuple[str, str, int, int], dict[int, tuple[int, ...]]] = defaultdict(dict)
    for name, mode, backups, parts, partition, owners in vectors["assign"]:
        key = (name, mode, int(backups), int(parts))
        expected[key][int(partition)] = tuple(int(i) for i in owners.split(","))
    assert {name for name, *_ in expected} == {"str4", "ties", "uuid7", "uuid32", "single"}
    assert any(backups == ALL_BACKUPS for _, _, backups, _ in expected)
    for (name, mode, backups, parts), owners in expected.items():
        config = RendezvousConfig(
            parts,
            backups,
            backup_filter=distinct_attributes("rack") if mode == "rack" else None,
            exclude_neighbors=mode == "neighbors",
        )
        java = tuple(owners[p] for p in range(parts))
        nodes = topologies[name]
        assert as_assignment(assign_vectorized(nodes, config)) == java, (name, mode, backups)
        if parts <= 128:  # the slow oracle on the small topologies only
            assert assign_reference(nodes, config) == java, (name, mode, backups)
