"""A scenario of protocol hazelcast played on real Hazelcast members (systems/hazelcast, through
conformance/systems/hazelcast.py).

Every replica-versioning message is held as it is sent (backups, anti-entropy operations, sync requests,
responses and retries); a scenario step that delivers one releases it and returns once it ran on its
receiver (a Drop discards it). The cluster runs in state NO_MIGRATION: a crash promotes the next replica as
the model's Crash does, and nothing else moves until a Migrate step lets the master repartition. One
partition, the anti-entropy task only when a step asks for it.

The scenario's members are mapped to the real ones by role: the scenario's member i is the one Hazelcast put
at replica index i of the partition (Hazelcast chooses the table, the scenario names it in its servers'
order). Steps Hazelcast takes at once are one step there: the owner's offloaded replication sends its
response (or retry) as soon as it takes the request, so SyncSend finds it sent and only checks it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from tidemark.conformance.scenarios.adapters.base import Snapshot, StepRefused, System, possible
from tidemark.conformance.scenarios.adapters.hazelcast import copy_text, member_view, message_label
from tidemark.conformance.scenarios.format import ScenarioFile, ScenarioStep
from tidemark.conformance.scenarios.protocols import slots
from tidemark.conformance.scenarios.result import (
    CounterView,
    MessageEvent,
    NodeSnapshot,
    NodeView,
    TopologyView,
)
from tidemark.conformance.scenarios.vocabulary import NodeState, PartitionState
from tidemark.conformance.systems.hazelcast import (
    DEFAULT_VERSION,
    HazelcastHarness,
    MessageView,
    Observation,
)

_SHARED: list[HazelcastHarness] = []


@contextmanager
def shared_harness(version: str = DEFAULT_VERSION) -> Iterator[HazelcastHarness]:
    """One harness JVM for every scenario run inside the block (each gets fresh members: `reset` between
    them). Without it each scenario starts and stops a JVM."""
    with HazelcastHarness(version) as harness:
        _SHARED.append(harness)
        try:
            yield harness
        finally:
            _SHARED.remove(harness)


def label(m: MessageView) -> str:
    versions = m.versions if isinstance(m.versions, tuple) else None
    carried = tuple(sorted(m.versions.items())) if isinstance(m.versions, dict) else ()
    return message_label(m.kind, m.replica or 0, m.ns, m.key, m.value, versions, carried, m.namespaces)


class RealHazelcastSystem(System):
    """A scenario of protocol hazelcast on real members (see the module docstring)."""

    def __init__(self, scenario: ScenarioFile) -> None:
        super().__init__(scenario)
        self._own = not _SHARED
        self.harness = HazelcastHarness() if self._own else _SHARED[-1]
        if self._own:
            self.harness.open()
        else:
            self.harness.call("reset")
        cluster = scenario.cluster
        real = [f"h{i}" for i in range(1, len(self.servers) + 1)]
        try:
            seen = self.harness.start(
                real,
                backups=cluster.backups,
                maps=cluster.maps or ["map1"],
                max_parallel=10 if cluster.max_parallel is None else cluster.max_parallel,
                no_migration=True,
            )
            self.harness.rule("hold")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        table = [m for m in seen.table[0] if m is not None]
        self.alias = dict(zip(self.servers, table, strict=True))  # scenario member -> real member
        self.named = {r: s for s, r in self.alias.items()}
        self.slots = slots(scenario)
        self.puts = 0
        self.table_version = 1
        self._seen: Observation | None = None
        self._table = seen.table[0]

    def __exit__(self, *exc: object) -> None:
        if self._own:
            self.harness.close()

    # --- observation -------------------------------------------------------------------------------------

    @property
    def seen(self) -> Observation:
        if self._seen is None:
            self._seen = self.harness.observe([0])
            if self._seen.table[0] != self._table:
                self.table_version += 1
                self._table = self._seen.table[0]
        return self._seen

    def _held(self) -> list[MessageView]:
        return list(self.seen.held)

    # --- steps -------------------------------------------------------------------------------------------

    def _find(
        self, kind: str, to: str | None = None, sender: str | None = None, **fields: object
    ) -> MessageView:
        real_to = self.alias.get(to) if to else None
        real_from = self.alias.get(sender) if sender else None
        for m in self._held():
            if (
                m.kind == kind
                and (real_to is None or m.to == real_to)
                and (real_from is None or m.sender == real_from)
                and all(getattr(m, f) == v or (f == "ns" and v in m.namespaces) for f, v in fields.items())
            ):
                return m
        named = {"to": to, "from": sender, **fields}
        shown = ", ".join(f"{k}={v}" for k, v in named.items() if v is not None)
        raise StepRefused(f"no {kind} held with {shown}", reason=f"Hazelcast sent no {kind} with {shown}")

    def _message(self, e: ScenarioStep) -> MessageView | None:
        """The held message a message step delivers (or drops); None for other steps."""
        node, ns = getattr(e, "node", None), getattr(e, "ns", None)
        if e.step in ("Backup", "BackupFailure", "Drop"):
            return self._find("backup", to=node, ns=ns, value=getattr(e, "put", None))
        if e.step == "BackupAntiEntropy":
            return self._find("anti_entropy", to=node)
        if e.step == "SyncRequest":
            return self._find("sync_request", to=node, sender=getattr(e, "peer", None))
        if e.step == "SyncResponse":
            return self._find("sync_response", to=node, ns=ns)
        if e.step == "SyncRetry":
            return self._find("sync_retry", to=node)
        return None

    def _check(self, e: ScenarioStep) -> MessageView | None:
        """Raises StepRefused when the step is not possible on the members now."""
        node = getattr(e, "node", None)
        alive = set(self.seen.alive)
        if e.step == "SyncSend":
            peer, ns = getattr(e, "peer", None), getattr(e, "ns", None)
            try:
                self._find("sync_response", to=peer, sender=node, ns=ns)
            except StepRefused:
                self._find("sync_retry", to=peer, sender=node, ns=ns)
            return None
        if e.step == "AntiEntropy" and self.alias.get(str(node)) != self.seen.table[0][0]:
            raise StepRefused(f"{node} is not the owner", reason="not the owner on Hazelcast")
        if e.step == "Crash" and self.alias.get(str(node)) not in alive:
            raise StepRefused(f"{node} is down")
        if e.step == "Join" and self.alias.get(str(node)) in alive:
            raise StepRefused(f"{node} is running")
        return self._message(e)

    def allows(self, step: ScenarioStep) -> bool:
        return possible(lambda: self._check(step))

    def take(self, step: ScenarioStep) -> list[MessageEvent]:
        msg = self._check(step)
        before = {m.id: m for m in self._held()}
        h, e = self.harness, step
        node, ns = getattr(e, "node", None), getattr(e, "ns", None)
        owner = self.named.get(str(self.seen.table[0][0]))
        if msg is not None and msg.id is not None:
            if e.step == "Drop":
                h.discard([msg.id])
            else:
                h.release([msg.id], fail=e.step == "BackupFailure")
        elif e.step == "Put":
            self.puts += 1
            h.put(str(ns), int(getattr(e, "key", 0)), self.puts)
        elif e.step == "AntiEntropy":
            h.anti_entropy([0])
        elif e.step == "Crash":
            h.kill([self.alias[str(node)]])
        elif e.step == "Join":
            h.join(self.alias[str(node)])
        elif e.step == "Migrate":
            h.migrate()
        elif e.step == "Destroy":
            h.destroy(str(ns))
        elif e.step == "SyncTimeout":
            h.sync_timeout(self.alias[str(node)], str(ns), int(getattr(e, "replica", 1)))
        self._seen = None
        return self._events(e.step, before, msg, owner, step)

    def _events(
        self,
        name: str,
        before: dict[int | None, MessageView],
        taken: MessageView | None,
        owner: str | None,
        step: ScenarioStep,
    ) -> list[MessageEvent]:
        after = {m.id: m for m in self._held()}

        def event(kind: Literal["delivered", "sent", "lost"], m: MessageView) -> MessageEvent:
            sender, to = self.named.get(m.sender, m.sender), self.named.get(m.to, m.to)
            return MessageEvent.model_construct(kind=kind, sender=sender, receiver=to, label=label(m))

        gone = [before[i] for i in sorted(set(before) - set(after), key=lambda i: i or 0)]
        events = [event("delivered" if m is taken and name != "Drop" else "lost", m) for m in gone]
        if name == "Put" and owner is not None:
            text = f"put {getattr(step, 'ns', '')}[{getattr(step, 'key', 0)}]={self.puts}"
            events.append(
                MessageEvent.model_construct(kind="delivered", sender=self.client, receiver=owner, label=text)
            )
        new = sorted(set(after) - set(before), key=lambda i: i or 0)
        return events + [event("sent", after[i]) for i in new]

    def enabled(self) -> list[str]:
        named = self.named
        return [f"{named.get(m.sender)}->{named.get(m.to)} {label(m)}" for m in self._held()]

    # --- snapshots -----------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        nodes = {}
        for n in self.servers:
            alive = self.node_state(n) == "alive"
            copy = self.seen.copy_of(self.alias[n]) if alive else None
            text = ""
            if copy is not None:
                fragments = [
                    (ns, self.versions(n, ns) or None, self.dirty(n, ns), self.entries(n, ns))
                    for ns in sorted(set(copy.namespaces) | {k for k, v in copy.entries.items() if v})
                ]
                text = copy_text(copy.replica, self.permits(n), fragments)
            nodes[n] = NodeSnapshot.model_construct(
                state=self.node_state(n), counters={}, copies={0: text} if alive else {}, history={}
            )
        return Snapshot(nodes, self.topology(), len(self.seen.held))

    def topology(self) -> TopologyView:
        version = f"{self.table_version}.0"
        owners = [self.named.get(m, m) for m in self.seen.table[0] if m is not None]
        return TopologyView.model_construct(
            version=version, ready=version, owners={0: owners}, pending=[], coordinator=None
        )

    # --- observations ------------------------------------------------------------------------------------

    def node_state(self, node: str) -> NodeState:
        return "alive" if self.alias.get(node) in self.seen.alive else "down"

    def counter(self, node: str, part: int) -> CounterView | None:
        return None

    def data(self, node: str) -> dict[int, str]:
        return {}

    def partition_state(self, node: str, part: int) -> PartitionState:
        if self.node_state(node) == "down":
            return "OFFLINE"
        return "OWNING" if self.replica(node) >= 0 else "EVICTED"

    def server_tx(self, node: str, tx: str) -> str | None:
        return None

    def client_tx(self, tx: str) -> str:
        return "idle"

    def replica(self, node: str) -> int:
        copy = self.seen.copy_of(self.alias[node])
        return copy.replica if copy else -1

    def versions(self, node: str, ns: str) -> list[int]:
        """The fragment's versions, the scenario's slots of Hazelcast's six; [] without a fragment."""
        copy = self.seen.copy_of(self.alias[node])
        fragment = copy.namespaces.get(ns) if copy else None
        return list(fragment.versions[: self.slots]) if fragment else []

    def dirty(self, node: str, ns: str) -> bool:
        copy = self.seen.copy_of(self.alias[node])
        fragment = copy.namespaces.get(ns) if copy else None
        return fragment is not None and fragment.dirty

    def entries(self, node: str, ns: str) -> dict[int, int]:
        copy = self.seen.copy_of(self.alias[node])
        return dict(sorted(copy.entries.get(ns, {}).items())) if copy else {}

    def permits(self, node: str) -> int:
        view = self.seen.members.get(self.alias[node])
        return view.permits if view else 0

    def node_view(self, node: str) -> NodeView:
        return member_view(self, node, self.node_state(node) == "down" or self.replica(node) >= 0)

    def client_txs(self) -> dict[str, str]:
        return {}
