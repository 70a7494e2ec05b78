"""Protocol ncache on impl/ncache.py: a scenario's steps as `NCacheCluster` steps, its views.

The servers are the nodes in their join order: the first starts the cluster alone, the others are "down"
until they join (and again once they left, or while stopped for maintenance). The members a split-brain cut
off are "alive", serving their clients: the store the loser side serves from is the active store of its
oldest member, until the merge discards it.
The scenario's partitions are the buckets. Write n writes the value n (the client's n-th write,
acknowledged or not). The timeline shows each member's buckets, its
active and replica stores and its replication queue; the topology's owner list of a bucket is its
permanent owner, then its temporary owner while it moves; the coordinator is the oldest member.
"""

from __future__ import annotations

from collections.abc import Mapping

from tidemark.conformance.scenarios.adapters.base import Snapshot, StepRefused, System, possible
from tidemark.conformance.scenarios.format import ScenarioFile, ScenarioStep
from tidemark.conformance.scenarios.result import (
    CounterView,
    MessageEvent,
    NodeSnapshot,
    NodeView,
    TopologyView,
)
from tidemark.conformance.scenarios.vocabulary import NodeState, PartitionState
from tidemark.impl.ncache import NCacheCluster, NCacheConfig, Step, StepNotEnabled

WRITES = ("Write", "ReplicationFailure", "LoserWrite")  # each spends a write number


def _store(store: Mapping[int, int]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(store.items())) + "}"


class NCacheSystem(System):
    """A scenario of protocol ncache run on tidemark.impl.ncache.NCacheCluster."""

    def __init__(self, scenario: ScenarioFile) -> None:
        super().__init__(scenario)
        cluster = scenario.cluster
        sync = True if cluster.sync is None else cluster.sync
        config = NCacheConfig(tuple(self.servers), bucket_count=cluster.partitions, sync=sync)
        self.cluster = NCacheCluster.initial(config)
        self.writes = 0
        self.membership_version = 1  # +1 for every join or leave

    # --- steps -------------------------------------------------------------------------------------------

    def _step(self, entry: ScenarioStep) -> Step:
        e = entry
        key = getattr(e, "key", None)
        value = self.writes + 1 if e.step in WRITES else None
        return Step(
            e.step,
            node=getattr(e, "node", None),
            key=key,
            value=value,
            bucket=getattr(e, "bucket", None),
            graceful=getattr(e, "graceful", None),
            nodes=frozenset(nodes) if (nodes := getattr(e, "nodes", None)) is not None else None,
        )

    def _after(self, entry: ScenarioStep) -> tuple[Step, NCacheCluster]:
        step = self._step(entry)
        try:
            return step, self.cluster.apply(step)
        except StepNotEnabled as error:
            raise StepRefused(str(error)) from error

    def take(self, step: ScenarioStep) -> list[MessageEvent]:
        taken, after = self._after(step)
        events = self._messages(self.cluster, taken)
        self.writes += taken.name in WRITES
        self.membership_version += after.members != self.cluster.members
        self.cluster = after
        return events

    def allows(self, step: ScenarioStep) -> bool:
        return possible(lambda: self._after(step))

    def enabled(self) -> list[str]:
        keys = frozenset({0})
        return [_step_text(s) for s in self.cluster.enabled(keys, self.writes + 1) if s.name != "Done"]

    def _messages(self, before: NCacheCluster, step: Step) -> list[MessageEvent]:
        """What the step sends: the client's write and its synchronous replication, a queued replication,
        a join request, a bucket's pull and its data, the log replayed, an orphan pulled from a replica, a
        stop for maintenance and the partition pulled back from the replica, a write to a split's loser."""

        def event(sender: str, to: str, text: str) -> MessageEvent:
            return MessageEvent.model_construct(kind="delivered", sender=sender, receiver=to, label=text)

        c = before
        if step.name in ("Write", "ReplicationFailure") and step.key is not None:
            bucket = c.config.bucket(step.key)
            served = c.serving(bucket) or c.owner[bucket]
            holder = c.up_holder(served)
            write = f"write {step.key}={step.value} (bucket {bucket})"
            events = [event(self.client, served, write)]
            if c.serving(bucket) is None and holder is not None and c.config.sync:
                failed = " - fails: undone on both" if step.name == "ReplicationFailure" else ""
                events.append(event(served, holder, f"replicate {step.key}={step.value}{failed}"))
            return events
        if step.name == "Replicate" and step.node is not None:
            key, value = c.queue[step.node][0]
            holder = c.replica_holder(step.node)
            return [event(step.node, holder, f"queued {key}={value}")] if holder else []
        if step.name == "Join" and step.node is not None:
            return [event(step.node, c.coordinator, "join")]
        if step.name == "StopForMaintenance" and step.node is not None:
            return [event(step.node, c.coordinator, "stopped for maintenance: state transfer halted")]
        holder = c.replica_holder(step.node) if step.node in c.members else None
        if step.name == "MaintenanceRejoin" and step.node is not None and holder is not None:
            return [event(holder, step.node, "its partition, from the replica")]
        if step.name == "LoserWrite" and step.key is not None and c.cut:
            loser = self._loser(c)
            return [event(self.client, loser, f"write {step.key}={step.value} (split-brain loser)")]
        if step.bucket is None:
            return []
        b = step.bucket
        source, target = c.owner[b], c.temp[b]
        if step.name == "StartTransfer" and target is not None:
            return [event(target, source, f"pull bucket {b}"), event(source, target, f"bucket {b}: data")]
        if step.name == "EndTransfer" and target is not None:
            logged = ",".join(map(str, sorted(c.logged[b]))) or "empty"
            return [event(source, target, f"bucket {b}: log ({logged}) replayed, owner switched")]
        orphan = c.orphan[b]
        if step.name == "PullOrphan" and orphan is not None:
            return [event(orphan, source, f"bucket {b} from the replica")]
        return []

    # --- snapshots ---------------------------------------------------------------------------------------

    def _text(self, node: str) -> str:
        """The member's buckets, stores and queue, one line each."""
        c = self.cluster
        owned = ",".join(map(str, c.owned(node))) or "none"
        moving = [b for b in c.buckets if c.temp[b] == node]
        lines = [f"owns {owned}" + (f"; receiving {','.join(map(str, moving))}" if moving else "")]
        if node == c.maint:
            lines.append("stopped for maintenance")
        lines.append(f"active {_store(c.active[node])}")
        of = self.replica_of(node)
        lines.append(f"replica of {of or 'nobody'} {_store(c.replica[node])}")
        if c.queue[node]:
            lines.append("queue " + ", ".join(f"{k}={v}" for k, v in c.queue[node]))
        return "\n".join(lines)

    def snapshot(self) -> Snapshot:
        nodes = {
            n: NodeSnapshot.model_construct(
                state=self.node_state(n),
                counters={},
                copies={0: self._text(n)} if n in self.cluster.members else {},
                history={},
            )
            for n in self.servers
        }
        return Snapshot(nodes, self.topology(), 0)

    def topology(self) -> TopologyView:
        c = self.cluster
        version = f"{self.membership_version}.0"
        owners = {b: [c.owner[b], *([t] if (t := c.temp[b]) else [])] for b in c.buckets}
        return TopologyView.model_construct(
            version=version, ready=version, owners=owners, pending=[], coordinator=c.coordinator
        )

    # --- observations ------------------------------------------------------------------------------------

    def node_state(self, node: str) -> NodeState:
        c = self.cluster
        return "alive" if (node in c.members and node != c.maint) or node in c.cut else "down"

    def counter(self, node: str, part: int) -> CounterView | None:
        return None

    def data(self, node: str) -> dict[int, str]:
        return {}

    def partition_state(self, node: str, part: int) -> PartitionState:
        if node not in self.cluster.members:
            return "OFFLINE"
        return "OWNING" if self.cluster.owner[part] == node else "EVICTED"

    def server_tx(self, node: str, tx: str) -> str | None:
        return None

    def client_tx(self, tx: str) -> str:
        return "idle"

    def entries(self, node: str, ns: str) -> dict[int, int]:
        c = self.cluster
        if node in c.cut:
            return dict(sorted(c.cut_store.items())) if ns == "active" and node == self._loser(c) else {}
        stores = c.active if ns == "active" else c.replica
        return dict(sorted(stores[node].items()))

    def replica_of(self, node: str) -> str | None:
        members = self.cluster.members
        return self.cluster.replica_of(node, members) if node in members else None

    def _loser(self, c: NCacheCluster) -> str:
        """The loser side's oldest member: the one whose store it serves from here."""
        return next(x for x in self.servers if x in c.cut)

    # --- the end -----------------------------------------------------------------------------------------

    def node_view(self, node: str) -> NodeView:
        return NodeView(**self.snapshot().nodes[node].model_dump(), data={}, partitions={}, txs={})

    def client_txs(self) -> dict[str, str]:
        return {}


def _step_text(step: Step) -> str:
    nodes = ",".join(sorted(step.nodes)) if step.nodes is not None else None
    params = {
        "node": step.node,
        "nodes": nodes,
        "key": step.key,
        "bucket": step.bucket,
        "graceful": step.graceful,
    }
    return f"{step.name}({', '.join(f'{k}={v}' for k, v in params.items() if v is not None)})"
