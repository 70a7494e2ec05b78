"""Deliberately broken Hazelcast clusters (impl/hazelcast.py), one known bug class each: the bug zoo's
implementation side for spec/HazelcastAntiEntropy.tla (conformance/zoo.py), selected by the entry's name.
"""

from __future__ import annotations

from impl.hazelcast import HazelcastCluster

# The bug zoo's implementation mutants, by the zoo entry's name.
HAZELCAST_MUTANTS: dict[str, type[HazelcastCluster]] = {}
