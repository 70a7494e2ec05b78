"""The audit's vectorized hashes (conformance/audit/kernel.py) equal impl's scalar definitions of Java's
hashCode, Arrays.hashCode and GridCacheVersion.hashCode, whatever the values."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from tidemark.conformance.audit.kernel import (
    bytes_hashes,
    key_hashes,
    long_hashes,
    string_hashes,
    version_hashes,
)
from tidemark.impl.affinity import hash_int, hash_long, hash_string, hash_uuid
from tidemark.impl.idle_verify import bytes_hash, version_hash

LONGS = st.integers(-(1 << 63), (1 << 63) - 1)


def _signed(values: np.ndarray) -> list[int]:
    return [int(v) for v in values.view(np.int32)]


@given(st.lists(st.binary(max_size=40), max_size=30), st.integers(0, 5))
def test_bytes_hashes(values: list[bytes], skip: int) -> None:
    array = pa.array([b"x" * 3] * skip + values, pa.binary()).slice(skip)  # an offset into the buffers
    assert _signed(bytes_hashes(array)) == [bytes_hash(v) for v in values]
    assert _signed(bytes_hashes(array.cast(pa.large_binary()))) == [bytes_hash(v) for v in values]


@given(st.lists(st.text(max_size=20), max_size=30))
def test_string_hashes_count_utf16_code_units(texts: list[str]) -> None:
    # st.text draws non-BMP characters and surrogate-free text; ASCII rows take the vectorized path.
    array = pa.array(texts, pa.string())
    assert _signed(string_hashes(array)) == [hash_string(t) for t in texts]


def test_string_hashes_of_known_keys() -> None:
    assert _signed(string_hashes(pa.array(["", "a", "key-1", "\U0001f600", "é"]))) == [
        0,
        97,
        hash_string("key-1"),
        hash_string("\U0001f600"),
        233,
    ]


@given(st.lists(LONGS, max_size=30))
def test_long_hashes(values: list[int]) -> None:
    assert _signed(long_hashes(np.array(values, dtype=np.int64))) == [hash_long(v) for v in values]


@given(st.lists(st.integers(-(1 << 31), (1 << 31) - 1), max_size=30), st.lists(st.uuids(), max_size=10))
def test_int_and_uuid_keys(ints: list[int], uuids: list[uuid.UUID]) -> None:
    every = np.ones(len(ints), dtype=bool)
    assert _signed(key_hashes(pa.array(ints, pa.int64()), "int", every)) == [hash_int(v) for v in ints]
    texts = pa.array([str(u) for u in uuids])
    assert _signed(key_hashes(texts, "uuid", np.ones(len(uuids), bool))) == [hash_uuid(u) for u in uuids]


@given(
    st.lists(
        st.tuples(st.integers(0, (1 << 63) - 1), st.integers(0, (1 << 31) - 1), st.integers(0, 0x07FF_FFFF)),
        max_size=30,
    )
)
def test_version_hashes(versions: list[tuple[int, int, int]]) -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "version": pa.array([v[0] for v in versions], pa.int64()),
            "version_topology": pa.array([v[1] for v in versions], pa.int32()),
            "version_node": pa.array([v[2] for v in versions], pa.int32()),
        }
    )
    entry = np.ones(len(versions), dtype=bool)
    assert _signed(version_hashes(batch, entry)) == [version_hash(*v) for v in versions]
