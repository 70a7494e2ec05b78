"""Protocol hazelcast on impl/hazelcast.py: a scenario's steps as `HazelcastCluster` steps, its views.

A scenario names a message by what it is about, not by its full value: the backup of put n to a member
(`node`, `ns`, `put`), the anti-entropy operation to a member, the sync request of `peer` to the owner
`node`, the response for `ns` to `node`. Put n writes the value n (the client's n-th put); the timeline
shows each member's replica index, free permits and, per namespace, its versions (`-1` requires sync),
dirty flag and entries, as the copy of partition 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Literal

from tidemark.conformance.scenarios.adapters.base import Snapshot, StepRefused, System, possible
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
from tidemark.impl.hazelcast import (
    AntiEntropy,
    Backup,
    Data,
    HazelcastCluster,
    HazelcastConfig,
    Message,
    Step,
    StepNotEnabled,
    SyncRequest,
    SyncResponse,
    SyncRetry,
)

Kind = Literal["delivered", "sent", "lost"]


def _vector(versions: Iterable[int]) -> str:
    return "(" + ",".join(map(str, versions)) + ")"


def _entries(entries: Iterable[tuple[int, int]]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(entries)) + "}"


def message_label(
    kind: str,
    replica: int,
    ns: str | None = None,
    key: int | None = None,
    value: int | None = None,
    versions: Iterable[int] | None = None,
    carried: Iterable[tuple[str, int]] = (),
    namespaces: Iterable[str] = (),
    data: Iterable[tuple[int, int]] | None = None,
) -> str:
    """A message as the diagram shows it, on tidemark's implementation and on a real system alike."""
    vector = "" if versions is None else f" v{_vector(versions)}"
    if kind == "backup":
        return f"Backup r{replica} {ns}[{key}]={value}{vector}"
    if kind == "anti_entropy":
        shown = ", ".join(f"{n} {v}" for n, v in carried) or "no fragments"
        return f"AntiEntropy r{replica} {shown}"
    if kind == "sync_response":
        return f"SyncResponse r{replica} {ns}{'' if data is None else ' ' + _entries(data)}{vector}"
    title = "SyncRequest" if kind == "sync_request" else "SyncRetry"
    return f"{title} r{replica} {{{', '.join(sorted(namespaces))}}}"


def label(m: Message) -> str:
    """A message of impl/hazelcast.py as the diagram shows it."""
    if isinstance(m, Backup):
        return message_label("backup", m.replica, m.ns, m.key, m.value, m.versions)
    if isinstance(m, AntiEntropy):
        return message_label("anti_entropy", m.replica, carried=m.versions)
    if isinstance(m, SyncResponse):
        return message_label("sync_response", m.replica, m.ns, versions=m.versions, data=m.data)
    kind = "sync_request" if isinstance(m, SyncRequest) else "sync_retry"
    return message_label(kind, m.replica, namespaces=m.namespaces)


def copy_text(
    index: int, permits: int, fragments: Iterable[tuple[str, list[int] | tuple[int, ...] | None, bool, Data]]
) -> str:
    """A member's copy as the timeline shows it: its replica index and free permits, then per namespace its
    versions (dirty or not) and entries, one line each."""
    role = "owner" if index == 0 else f"replica {index}" if index > 0 else "no replica"
    lines = [f"{role}, permits {permits}"]
    for ns, versions, dirty, entries in fragments:
        shown = "no versions" if versions is None else f"v{_vector(versions)}" + (" dirty" if dirty else "")
        lines.append(f"{ns} {shown} {_entries(entries.items())}")
    return "\n".join(lines)


def _unheld(m: Message) -> Message:
    """A message as sent: whether a backup waits for an anti-entropy operation is not a new message."""
    return replace(m, held=False) if isinstance(m, Backup) else m


class HazelcastSystem(System):
    """A scenario of protocol hazelcast run on tidemark.impl.hazelcast.HazelcastCluster."""

    def __init__(self, scenario: ScenarioFile) -> None:
        super().__init__(scenario)
        cluster = scenario.cluster
        config = HazelcastConfig(
            members=tuple(self.servers),
            slots=slots(scenario),
            backup_count=cluster.backups,
            maps=frozenset(cluster.maps or ["map1"]),
            max_parallel=10 if cluster.max_parallel is None else cluster.max_parallel,
        )
        self.cluster = HazelcastCluster.initial(config)
        self.puts = 0
        self.table_version = 1  # the partition table's version: +1 for every change of it

    # --- steps -------------------------------------------------------------------------------------------

    def _find(self, kind: type[Message], **fields: object) -> Message:
        """The in-flight message of this kind with these fields (the first by its text, if several)."""
        found = sorted(
            (
                m
                for m in self.cluster.network
                if type(m) is kind and all(getattr(m, f) == v for f, v in fields.items())
            ),
            key=repr,
        )
        if not found:
            shown = ", ".join(f"{f}={v}" for f, v in fields.items())
            raise StepRefused(f"no {kind.__name__} in flight with {shown}")
        return found[0]

    def _step(self, entry: ScenarioStep) -> Step:
        """The implementation's step for a scenario step (its message found in flight)."""
        e = entry
        node, ns = getattr(e, "node", None), getattr(e, "ns", None)
        given = getattr(e, "granted", None)
        granted = frozenset(given) if given is not None else None
        if e.step == "Put":
            return Step("Put", ns=ns, key=getattr(e, "key", None), value=self.puts + 1)
        if e.step in ("Backup", "BackupFailure", "Drop"):
            msg = self._find(Backup, to=node, ns=ns, value=getattr(e, "put", None))
            return Step(e.step, member=None if e.step == "Drop" else node, msg=msg)
        if e.step == "BackupAntiEntropy":
            ae = self._find(AntiEntropy, to=node)
            assert isinstance(ae, AntiEntropy)
            options = self.cluster.request_grants(ae)
            return Step(e.step, member=node, msg=ae, granted=granted if granted is not None else options[0])
        if e.step == "SyncRequest":
            q = self._find(SyncRequest, to=node, sender=getattr(e, "peer", None))
            assert isinstance(q, SyncRequest)
            options = self.cluster.answer_grants(q)
            return Step(e.step, member=node, msg=q, granted=granted if granted is not None else options[0])
        if e.step == "SyncSend":
            peer = getattr(e, "peer", None)
            tasks = sorted(t for t in self.cluster.members[str(node)].serving if t[0] == peer and t[2] == ns)
            if not tasks:
                raise StepRefused(f"{node} prepares no replication of {ns} for {peer}")
            return Step(e.step, member=node, to=peer, replica=tasks[0][1], ns=ns)
        if e.step == "SyncResponse":
            return Step(e.step, member=node, msg=self._find(SyncResponse, to=node, ns=ns))
        if e.step == "SyncRetry":
            return Step(e.step, member=node, msg=self._find(SyncRetry, to=node))
        return Step(e.step, member=node, ns=ns, replica=getattr(e, "replica", None))

    def _after(self, entry: ScenarioStep) -> tuple[Step, HazelcastCluster]:
        step = self._step(entry)
        try:
            return step, self.cluster.apply(step)
        except StepNotEnabled as error:
            raise StepRefused(str(error)) from error

    def take(self, step: ScenarioStep) -> list[MessageEvent]:
        taken, after = self._after(step)
        events = self._messages(self.cluster, after, taken)
        self.puts += taken.name == "Put"
        self.table_version += after.table != self.cluster.table
        self.cluster = after
        return events

    def allows(self, step: ScenarioStep) -> bool:
        return possible(lambda: self._after(step))

    def enabled(self) -> list[str]:
        return [_step_text(s) for s in self.cluster.enabled(frozenset({0}), self.puts + 1)]

    def _messages(self, before: HazelcastCluster, after: HazelcastCluster, step: Step) -> list[MessageEvent]:
        """A message the step consumed was delivered to the member taking it, else lost (a drop, a crash);
        a put is the client's request to the owner."""

        def event(kind: Kind, sender: str, to: str, text: str) -> MessageEvent:
            return MessageEvent.model_construct(kind=kind, sender=sender, receiver=to, label=text)

        old = {_unheld(m) for m in before.network}
        new = {_unheld(m) for m in after.network}
        consumed = [
            event(
                "delivered" if m.to == step.member and step.name != "Crash" else "lost",
                m.sender,
                m.to,
                label(m),
            )
            for m in old - new
        ]
        if step.name == "Put" and before.owner is not None:
            consumed.append(
                event("delivered", self.client, before.owner, f"put {step.ns}[{step.key}]={step.value}")
            )
        sent = [event("sent", m.sender, m.to, label(m)) for m in new - old]
        return sorted(consumed, key=lambda e: (e.kind, e.sender, e.receiver, e.label)) + sorted(
            sent, key=lambda e: (e.sender, e.receiver, e.label)
        )

    # --- snapshots ---------------------------------------------------------------------------------------

    def _text(self, node: str) -> str:
        """The member's replica index, free permits and fragments, one line each."""
        c = self.cluster
        state = c.members[node]
        fragments = []
        for ns in sorted(set(state.versions) | set(state.data)):
            f = state.versions.get(ns)
            fragments.append((ns, f.versions if f else None, bool(f and f.dirty), c.data_of(node, ns)))
        return copy_text(c.index_of(node), state.permits, fragments)

    def snapshot(self) -> Snapshot:
        nodes = {
            n: NodeSnapshot.model_construct(
                state=self.node_state(n),
                counters={},
                copies={} if n not in self.cluster.alive else {0: self._text(n)},
                history={},
            )
            for n in self.servers
        }
        return Snapshot(nodes, self.topology(), len(self.cluster.network))

    def topology(self) -> TopologyView:
        version = f"{self.table_version}.0"
        replicas = [m for m in self.cluster.table if m is not None]
        return TopologyView.model_construct(
            version=version, ready=version, owners={0: replicas}, pending=[], coordinator=None
        )

    # --- observations ------------------------------------------------------------------------------------

    def node_state(self, node: str) -> NodeState:
        return "alive" if node in self.cluster.alive else "down"

    def counter(self, node: str, part: int) -> CounterView | None:
        return None

    def data(self, node: str) -> dict[int, str]:
        return {}

    def partition_state(self, node: str, part: int) -> PartitionState:
        if node not in self.cluster.alive:
            return "OFFLINE"
        return "OWNING" if self.cluster.index_of(node) >= 0 else "EVICTED"

    def server_tx(self, node: str, tx: str) -> str | None:
        return None

    def client_tx(self, tx: str) -> str:
        return "idle"

    def replica(self, node: str) -> int:
        return self.cluster.index_of(node)

    def versions(self, node: str, ns: str) -> list[int]:
        f = self.cluster.members[node].versions.get(ns)
        return list(f.versions) if f else []

    def dirty(self, node: str, ns: str) -> bool:
        f = self.cluster.members[node].versions.get(ns)
        return f is not None and f.dirty

    def entries(self, node: str, ns: str) -> dict[int, int]:
        return dict(sorted(self.cluster.data_of(node, ns).items()))

    def permits(self, node: str) -> int:
        return self.cluster.members[node].permits

    # --- the end -----------------------------------------------------------------------------------------

    def node_view(self, node: str) -> NodeView:
        return member_view(self, node, self.cluster.index_of(node) >= 0 or node not in self.cluster.alive)

    def client_txs(self) -> dict[str, str]:
        return {}


def member_view(system: System, node: str, held: bool) -> NodeView:
    """A member's view for the timeline: its state and, when it holds a replica of partition 0 (`held`; or
    is down), that partition's state; Hazelcast has no transactions here."""
    return NodeView(
        **system.snapshot().nodes[node].model_dump(),
        data={},
        partitions={0: system.partition_state(node, 0)} if held else {},
        txs={},
    )


def _step_text(step: Step) -> str:
    params = {"member": step.member, "to": step.to, "ns": step.ns, "key": step.key, "replica": step.replica}
    if step.msg is not None:
        params["msg"] = label(step.msg)
    if step.granted is not None:
        params["granted"] = ",".join(sorted(step.granted)) or "-"
    return f"{step.name}({', '.join(f'{k}={v}' for k, v in params.items() if v is not None)})"
