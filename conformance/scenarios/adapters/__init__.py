"""What runs a scenario: per system, per protocol, the `System` (base.py) that takes its steps.

"impl" is tidemark's implementation in this process. A real system (Ignite, Hazelcast) driven through a
harness process registers here under its own name, with a System per protocol it can play; a new
protocol adds its adapter to each system that runs it. The runner only looks systems up here.
"""

from __future__ import annotations

from tidemark.conformance.scenarios.adapters.base import System
from tidemark.conformance.scenarios.adapters.cluster import ClusterSystem
from tidemark.conformance.scenarios.adapters.hazelcast import HazelcastSystem
from tidemark.conformance.scenarios.adapters.hazelcast_real import RealHazelcastSystem
from tidemark.conformance.scenarios.adapters.ignite import IgniteSystem
from tidemark.conformance.scenarios.adapters.ncache import NCacheSystem
from tidemark.conformance.scenarios.adapters.pme import PmeSystem

SYSTEMS: dict[str, dict[str, type[System]]] = {
    "impl": {"2pc": ClusterSystem, "pme": PmeSystem, "hazelcast": HazelcastSystem, "ncache": NCacheSystem},
    # Apache Ignite 2.x through the systems/ignite harness: one adapter plays both protocols' steps.
    "ignite": {"2pc": IgniteSystem, "pme": IgniteSystem},
    # Hazelcast 5.x members through the systems/hazelcast harness.
    "hazelcast": {"hazelcast": RealHazelcastSystem},
}
