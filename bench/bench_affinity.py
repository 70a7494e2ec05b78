"""Rendezvous placement speed: the plain-Python reference vs the numpy path (figures only, no asserts).

Run: .venv/bin/python bench/bench_affinity.py
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable

from tidemark.impl.affinity import Node, RendezvousConfig, assign_reference, assign_vectorized, make_node


def _nodes(count: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    return [make_node(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]


def _best_of(repeats: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    small_nodes, small = _nodes(64, 1), RendezvousConfig(partitions=1024, backups=2)
    loop = _best_of(3, lambda: assign_reference(small_nodes, small))
    numpy = _best_of(5, lambda: assign_vectorized(small_nodes, small))
    print(f"1024 partitions x 64 nodes x 2 backups: python loop {loop * 1e3:8.1f} ms")
    print(f"{'':39} vectorized  {numpy * 1e3:8.1f} ms   speed-up {loop / numpy:6.0f}x")

    big_nodes, big = _nodes(1000, 2), RendezvousConfig(partitions=65000, backups=2)
    seconds = _best_of(2, lambda: assign_vectorized(big_nodes, big))
    weights = big.partitions * len(big_nodes)
    print(f"65000 partitions x 1000 nodes x 2 backups: vectorized {seconds:6.2f} s", end=" ")
    print(f"({weights / seconds / 1e6:.0f}M weights/s)")
    # Extrapolated, not run (minutes); a lower bound, since the loop's sort also grows with log(nodes).
    estimate = loop / (1024 * 64) * weights
    print(f"{'':42} python loop >= ~{estimate:.0f} s (extrapolated)")


if __name__ == "__main__":
    main()
