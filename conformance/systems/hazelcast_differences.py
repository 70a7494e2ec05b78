"""What real Hazelcast is known to do differently from tidemark's model of it, step by step: each
difference between the two side by side (conformance/scenarios/compare.py) is explained by one of these, or
it is a finding. docs/real-hazelcast.md gives each its verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tidemark.conformance.scenarios.adapters.base import System
from tidemark.conformance.scenarios.compare import Observed


@dataclass(frozen=True)
class Known:
    """A known behaviour: its name, why it differs, and when a difference comes from it."""

    name: str
    why: str
    applies: Callable[[int | None, str, Observed, Observed, System], bool]


def _steps_at(system: System, index: int | None, node: str) -> list[str]:
    """The names of the steps taken at `node` up to and including step `index`."""
    last = -1 if index is None else index
    return [s.step for s in system.scenario.steps[: last + 1] if getattr(s, "node", None) == node]


def _offloaded(index: int | None, path: str, impl: Observed, real: Observed, system: System) -> bool:
    """The owner's permits: the model holds one per replication it prepares until its SyncSend; Hazelcast
    takes and gives it back inside the offloaded task, before the next step."""
    node, _, leaf = path.partition(".")
    if leaf != "permits" or real.get(node, {}).get("replica") != 0:
        return False
    taken = _steps_at(system, index, node)
    pending = taken.count("SyncRequest") > taken.count("SyncSend")
    return pending and impl[node]["permits"] < real[node]["permits"]


def _lazy_fragment(index: int | None, path: str, impl: Observed, real: Observed, system: System) -> bool:
    """A fragment only Hazelcast has, all slots 0 and clean: it was created by reading it."""
    node, ns, leaf = [*path.split("."), "", ""][:3]
    fragment = real.get(node, {}).get(ns, {})
    return leaf == "versions" and impl[node][ns]["versions"] == [] and not any(fragment["versions"])


KNOWN: list[Known] = [
    Known(
        "lazy-fragment",
        "Hazelcast creates a fragment with every slot 0 wherever its versions are read (a migration reads "
        "every namespace's on the owner and installs them on the destination): the same as none",
        _lazy_fragment,
    ),
    Known(
        "offloaded-sync",
        "Hazelcast's owner runs the offloaded replication (PartitionReplicaSyncRequestOffloadable) as it "
        "takes the request: its permit is back before the next step; the model's SyncSend returns it later",
        _offloaded,
    ),
]


def explain(index: int | None, path: str, impl: Observed, real: Observed, system: System) -> str | None:
    """The known behaviour a difference comes from, or None (a finding)."""
    return next((k.why for k in KNOWN if k.applies(index, path, impl, real, system)), None)
