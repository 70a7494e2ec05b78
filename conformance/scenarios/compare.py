"""tidemark's implementation and a real system side by side: the same scenario on both, every observation
compared after every step, each difference explained or not.

`observe(system)` is what both show after a step, through the System interface alone, per protocol: for
Ignite's (2pc, pme) per server its state, per partition the copy's state and counter (LWM, HWM, out-of-order
items), its data and its transactions' states, the client's transactions; for hazelcast per member its
state, replica index and free sync permits and per namespace its versions, dirty flag and entries; for both
the topology (versions, owner lists, pending events, coordinator). `differences(impl, real)` lists every
value that differs, by path (`s2.p0.lwm`, `s3.data`, `c1.t1`, `m2.map1.versions`, `topology.owners[0]`).
`explain` gives a difference the known behaviour of the real system it comes from (per system, e.g.
conformance/systems/hazelcast_differences.py), or None: an unexplained difference is a finding.

A scenario run on a real system passes when it ran to its end, each of its expectations holds on the real
system or is listed in the scenario's `systems` notes with the reason it differs there, and every difference
from the implementation is explained.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tidemark.conformance.scenarios.adapters.base import System
from tidemark.conformance.scenarios.format import ScenarioFile, TxStartStep
from tidemark.conformance.scenarios.result import Check, ScenarioResult
from tidemark.conformance.scenarios.runner import run_scenario

Observed = dict[str, Any]


def observe(system: System) -> Observed:
    """Everything comparable the system shows now (see the module docstring)."""
    out = OBSERVERS.get(system.scenario.protocol, observe_counters)(system)
    topology = system.topology().model_dump(mode="json")
    topology["owners"] = {str(p): o for p, o in topology["owners"].items()}
    out["topology"] = topology
    return out


def observe_counters(system: System) -> Observed:
    """Ignite's protocols: servers' copies and counters, data, transactions; the client's transactions."""
    scenario = system.scenario
    txs = sorted({s.tx for s in scenario.steps if isinstance(s, TxStartStep)})
    out: Observed = {}
    for node in system.servers:
        state = system.node_state(node)
        view: dict[str, Any] = {"state": state}
        for part in range(scenario.cluster.partitions):
            copy: dict[str, Any] = {"state": system.partition_state(node, part)}
            counter = system.counter(node, part) if state != "down" else None
            if counter is not None:
                copy.update(lwm=counter.lwm, hwm=counter.hwm, items=[list(i) for i in counter.items])
            view[f"p{part}"] = copy
        if state != "down":
            view["data"] = {str(k): v for k, v in system.data(node).items()}
            view["txs"] = {tx: s for tx in txs if (s := system.server_tx(node, tx)) is not None}
        out[node] = view
    out[system.client] = {tx: system.client_tx(tx) for tx in txs}
    return out


def observe_replicas(system: System) -> Observed:
    """Hazelcast: per member its replica index, free permits and, per namespace, versions, dirty, entries."""
    namespaces = [*(system.scenario.cluster.maps or ["map1"]), "internal"]
    out: Observed = {}
    for node in system.servers:
        view: dict[str, Any] = {"state": system.node_state(node)}
        if view["state"] != "down":
            view.update(replica=system.replica(node), permits=system.permits(node))
            for ns in namespaces:
                view[ns] = {
                    "versions": system.versions(node, ns),
                    "dirty": system.dirty(node, ns),
                    "entries": {str(k): v for k, v in system.entries(node, ns).items()},
                }
        out[node] = view
    return out


# Per protocol; the others (ncache) show what Ignite's do: copies, counters, data.
OBSERVERS: dict[str, Callable[[System], Observed]] = {
    "2pc": observe_counters,
    "pme": observe_counters,
    "hazelcast": observe_replicas,
}


@dataclass(frozen=True)
class Difference:
    """One value the implementation and the real system disagree on after a step."""

    step: int | None  # None: the initial state
    path: str  # e.g. "s2.p0.lwm"
    impl: Any
    real: Any
    why: str | None = None  # the known behaviour it comes from; None: unexplained

    @property
    def where(self) -> str:
        return f"{'initial' if self.step is None else f'steps[{self.step}]'}.{self.path}"


def differences(impl: Observed, real: Observed, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(path, impl value, real value) for every leaf that differs; data and entries maps and lists compare
    whole."""
    out = []
    for key in sorted(set(impl) | set(real)):
        a, b = impl.get(key), real.get(key)
        path = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict) and key not in ("data", "entries", "owners"):
            out += differences(a, b, path + ".")
        elif isinstance(a, dict) and isinstance(b, dict) and key == "owners":
            out += [
                (f"{path}[{p}]", a.get(p), b.get(p)) for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p)
            ]
        elif a != b:
            out.append((path, a, b))
    return out


# explain(step index, path, impl's observation, the real one, the real system) -> why, or None.
Explainer = Callable[[int | None, str, Observed, Observed, System], str | None]


@dataclass
class SideBySide:
    """The two runs of one scenario and what differed between them, step by step."""

    impl: ScenarioResult
    real: ScenarioResult
    # (step index, the implementation's observation, the real system's) after each step the real one took.
    observed: list[tuple[int | None, Observed, Observed]] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    explained_checks: list[tuple[Check, str]] = field(default_factory=list)
    unused_notes: list[str] = field(default_factory=list)

    @property
    def first_difference(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.why is None]

    @property
    def failing_checks(self) -> list[Check]:
        """Expectations that fail on the real system and no note explains."""
        explained = {c.path for c, _ in self.explained_checks}
        return [c for c in self.real.checks if not c.holds and c.path not in explained]

    @property
    def passed(self) -> bool:
        return self.real.failure is None and not self.failing_checks and not self.unexplained


def noted(path: str, pattern: str) -> bool:
    """Whether a note's pattern names the expectation at `path`: '*' matches any text, '?' one character,
    everything else itself (brackets too: steps[15] is the step)."""
    wildcards = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(wildcards, path) is not None


def side_by_side(scenario: ScenarioFile, system: str, explain: Explainer) -> SideBySide:
    """Run the scenario on the implementation and on `system`, observing both after every step; explain
    each difference, and each expectation failing on `system` by the scenario's notes for it."""
    impl_seen: dict[int | None, Observed] = {}
    impl = run_scenario(scenario, "impl", watch=lambda i, run: impl_seen.__setitem__(i, observe(run)))
    result = SideBySide(impl, impl)

    def watch(index: int | None, run: System) -> None:
        seen, theirs = observe(run), impl_seen.get(index, {})
        result.observed.append((index, theirs, seen))
        for path, a, b in differences(theirs, seen) if theirs else ():
            result.differences.append(Difference(index, path, a, b, explain(index, path, theirs, seen, run)))

    result.real = run_scenario(scenario, system, watch=watch)
    notes = scenario.systems.get(system)  # type: ignore[call-overload]
    notes_of = notes.differences if notes else {}
    for check in result.real.checks:
        reason = next((why for pattern, why in notes_of.items() if noted(check.path, pattern)), None)
        if not check.holds and reason is not None:
            result.explained_checks.append((check, reason))
    used = {p for p in notes_of if any(noted(c.path, p) for c, _ in result.explained_checks)}
    result.unused_notes = sorted(set(notes_of) - used)
    return result
