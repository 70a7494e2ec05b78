"""Protocol 2pc on impl/cluster.py: the scenario's steps as `Cluster.apply`, its views of the cluster.

The model's value of a write is the transaction that made it; the scenario's values are a naming layer
over that: (transaction, key) -> value (`values`).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal, TypeAlias

from tidemark.conformance.scenarios.adapters.base import Snapshot, StepFailed, StepRefused, System, possible
from tidemark.conformance.scenarios.format import ScenarioFile, ScenarioStep, TxStartStep, step_params
from tidemark.conformance.scenarios.protocols import owner_lists
from tidemark.conformance.scenarios.result import (
    CounterView,
    EntryView,
    MessageEvent,
    NodeSnapshot,
    NodeView,
    TopologyView,
)
from tidemark.conformance.scenarios.vocabulary import INITIAL_WRITER, NodeState, PartitionState
from tidemark.conformance.zoo.mutants import CLUSTER_COUNTERS
from tidemark.impl.cluster import Cluster, Config, Step, StepNotEnabled
from tidemark.impl.counter import CounterInconsistencyError, PartitionUpdateCounter, TooManyGapsError
from tidemark.impl.messages import (
    NEAR,
    DhtFinishRequest,
    DhtPrepareRequest,
    FinishRequest,
    LockRequest,
    LockResponse,
    Message,
    Version,
    receiver,
)
from tidemark.impl.wal import DataRecord, Entry

# The implementation's named errors a step may raise (format.ErrorName), by class.
NAMED_ERRORS: tuple[type[Exception], ...] = (CounterInconsistencyError, TooManyGapsError)

Kind: TypeAlias = Literal["delivered", "sent", "lost"]


def values(scenario: ScenarioFile) -> dict[tuple[str, int], str]:
    """(writer, key) -> the scenario's value: the model's value of an entry is the transaction."""
    named = {(INITIAL_WRITER, k): v for k, v in scenario.cluster.initial_data.items()}
    for step in scenario.steps:
        if isinstance(step, TxStartStep):
            named.update(((step.tx, k), v) for k, v in step.keys.items())
    return named


def transactions(scenario: ScenarioFile) -> dict[str, frozenset[int]]:
    """Each transaction's keys, as its TxStart declares them."""
    return {s.tx: frozenset(s.keys) for s in scenario.steps if isinstance(s, TxStartStep)}


def version_text(version: Version) -> str:
    return f"{version.major}.{version.minor}"


class ClusterSystem(System):
    """A scenario of protocol 2pc run on tidemark.impl.cluster.Cluster (or a counter mutant's cluster)."""

    def __init__(self, scenario: ScenarioFile) -> None:
        super().__init__(scenario)
        self.values = values(scenario)
        self.cluster = self._initial(self._cluster_class().initial(self._config()))
        # Rows share what did not change (most steps change one copy of one server): equal counters one
        # view, an unchanged server or topology the previous row's object.
        self._counter_views: dict[tuple[int, int, tuple[tuple[int, int], ...]], CounterView] = {}
        self._shown: dict[str, NodeSnapshot] = {}
        self._topology: TopologyView | None = None
        self._partition = cache(self.cluster.config.partition)

    def _cluster_class(self) -> type[Cluster]:
        return CLUSTER_COUNTERS.get(self.scenario.counter, Cluster)

    def _config(self) -> Config:
        return Config(tuple(self.servers), owner_lists(self.scenario), transactions(self.scenario))

    def _initial(self, cluster: Cluster) -> Cluster:
        """The cluster at the start: the initial data committed on every owner, counters 1..n per partition
        in key order, data records in the WAL (a restart rebuilds them), LWM = HWM = n and the first exchange
        done, as after the activation exchange of a cluster loaded earlier."""
        config = cluster.config
        by_part: dict[int, list[int]] = {}
        for key in sorted(self.scenario.cluster.initial_data):
            by_part.setdefault(config.partition(key), []).append(key)
        for node in cluster.nodes.values():
            writes = [(k, c) for p in node.counters for c, k in enumerate(by_part.get(p, []), start=1)]
            node.data = {k: Entry(INITIAL_WRITER, c) for k, c in writes}
            node.disk = node.disk.log(DataRecord(k, INITIAL_WRITER, c) for k, c in writes)
            node.counters = {
                p: type(counter)(len(by_part.get(p, [])), len(by_part.get(p, [])), (), False)
                for p, counter in node.counters.items()
            }
        return cluster

    # --- steps -------------------------------------------------------------------------------------------

    def _after(self, entry: ScenarioStep) -> tuple[Step, Cluster]:
        step = Step(entry.step, **{p: getattr(entry, p) for p in step_params(entry)})
        try:
            return step, self.cluster.apply(step)
        except StepNotEnabled as error:
            raise StepRefused(str(error)) from error
        except NAMED_ERRORS as error:
            raise StepFailed(type(error).__name__, str(error)) from error

    def take(self, step: ScenarioStep) -> list[MessageEvent]:
        taken, after = self._after(step)
        events = self._messages(self.cluster, after, taken)
        self._observe(self.cluster, after, taken)
        self.cluster = after
        return events

    def allows(self, step: ScenarioStep) -> bool:
        return possible(lambda: self._after(step))

    def enabled(self) -> list[str]:
        return [str(step) for step in self.cluster.enabled()]

    def _observe(self, before: Cluster, after: Cluster, step: Step) -> None:
        """What a subclass records of a step beyond the cluster's state (nothing here)."""

    # --- messages ----------------------------------------------------------------------------------------

    def _messages(self, before: Cluster, after: Cluster, step: Step) -> list[MessageEvent]:
        """What the step did to the network: a message it consumed was delivered if addressed to the node
        the step runs on (the near node for Tx* steps), else lost; a crash and tx recovery only lose
        messages."""
        if step.name in ("NodeFail", "Recover"):
            actor = None
        else:
            actor = step.node if step.node is not None else NEAR if step.name.startswith("Tx") else None
        shown = {NEAR: self.client}

        def event(kind: Kind, m: Message) -> MessageEvent:
            sender: str = getattr(m, "sender", NEAR)
            to = receiver(m)
            return MessageEvent.model_construct(
                kind=kind, sender=shown.get(sender, sender), receiver=shown.get(to, to), label=self._label(m)
            )

        consumed = [
            event("delivered" if receiver(m) == actor else "lost", m) for m in before.network - after.network
        ]
        sent = [event("sent", m) for m in after.network - before.network]
        more_consumed, more_sent = self._protocol_messages(before, after, step)
        # Sets have no order across processes: sort, so the same scenario gives the same output.
        return sorted(
            [*consumed, *more_consumed], key=lambda e: (e.kind, e.sender, e.receiver, e.label)
        ) + sorted([*sent, *more_sent], key=lambda e: (e.sender, e.receiver, e.label))

    def _protocol_messages(
        self, before: Cluster, after: Cluster, step: Step
    ) -> tuple[list[MessageEvent], list[MessageEvent]]:
        """Messages outside the network of transaction messages: (delivered or lost, sent); none here."""
        return [], []

    def _label(self, message: Message) -> str:
        """The message's class and transaction, with what matters for counters: versions, ranges, outcome."""
        text = f"{type(message).__name__} {message.tx}"
        if isinstance(message, LockRequest | LockResponse):
            return f"{text} ver {version_text(message.ver)}"
        if isinstance(message, DhtPrepareRequest):
            counters: dict[int, list[int]] = {}
            for key, cntr in message.writes:
                counters.setdefault(self._partition(key), []).append(cntr)
            return text + "".join(f" p{p} ({min(cs) - 1}, {len(cs)})" for p, cs in sorted(counters.items()))
        if isinstance(message, FinishRequest | DhtFinishRequest):
            return f"{text} {'commit' if message.commit else 'rollback'}"
        return text

    # --- snapshots ---------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        self._shown = {n: self._node_snapshot(n) for n in self.servers}
        return Snapshot(self._shown, self.topology(), self._in_flight())

    def _in_flight(self) -> int:
        return len(self.cluster.network)

    def _counter_view(self, counter: PartitionUpdateCounter) -> CounterView:
        items = tuple(counter.items)
        key = (counter.lwm, counter.hwm, items)
        view = self._counter_views.get(key)
        if view is None:
            view = self._counter_views[key] = CounterView.model_construct(
                lwm=counter.lwm, hwm=counter.hwm, items=list(items)
            )
        return view

    def _node_snapshot(self, node: str) -> NodeSnapshot:
        fields = self._node_fields(node)
        last = self._shown.get(node)
        # A model's field values are its __dict__.
        return last if last is not None and vars(last) == fields else NodeSnapshot.model_construct(**fields)

    def _node_fields(self, node: str) -> dict[str, Any]:
        """A server's NodeSnapshot fields now."""
        counters = self.cluster.nodes[node].counters
        return {
            "state": self.node_state(node),
            "counters": {p: self._counter_view(c) for p, c in counters.items()},
            "copies": {},
            "history": {},
        }

    def topology(self) -> TopologyView:
        fields = self._topology_fields()
        last = self._topology
        if last is None or vars(last) != fields:
            self._topology = last = TopologyView.model_construct(**fields)
        return last

    def _topology_fields(self) -> dict[str, Any]:
        """The TopologyView fields now."""
        cluster = self.cluster
        return {
            "version": version_text(cluster.top_ver),
            "ready": version_text(cluster.ready_ver),
            "owners": {p: list(owners) for p, owners in sorted(cluster.owners.items())},
            "pending": [],
            "coordinator": None,
        }

    # --- observations ------------------------------------------------------------------------------------

    def node_state(self, node: str) -> NodeState:
        if node in self.cluster.alive:
            return "alive"
        return "restarted" if node in self.cluster.restarted else "down"

    def counter(self, node: str, part: int) -> CounterView | None:
        counter = self.cluster.nodes[node].counters.get(part)
        return None if counter is None else self._counter_view(counter)

    def data(self, node: str) -> dict[int, str]:
        return {k: self.values[e.tx, k] for k, e in sorted(self.cluster.nodes[node].data.items())}

    def partition_state(self, node: str, part: int) -> PartitionState:
        """OWNING on a live owner (the model rebalances nothing, so every live owner owns); OFFLINE on a
        server that is down. A restarted server has not rejoined: its state is the one the exchange on its
        rejoin would give it - MOVING (to be rebalanced) when its LWM is below the live owners' maximum, else
        OWNING (ignite-internals.md, PME: on server join, OWNING copies below the max LWM become MOVING).
        That is where a counter claiming updates the copy lacks loses them for good."""
        state = self.node_state(node)
        if state != "restarted":
            return "OWNING" if state == "alive" else "OFFLINE"
        cluster = self.cluster
        live = [cluster.nodes[o].counters[part].lwm for o in cluster.owners[part] if o in cluster.alive]
        return "MOVING" if live and max(live) > cluster.nodes[node].counters[part].lwm else "OWNING"

    def server_tx(self, node: str, tx: str) -> str | None:
        local = self.cluster.nodes[node].txs.get(tx)
        return None if local is None else local.state.value

    def client_tx(self, tx: str) -> str:
        return self.cluster.near[tx].state.value

    # --- the end -----------------------------------------------------------------------------------------

    def _held(self, node: str) -> list[int]:
        """The partitions the server holds a copy of (its initial ones: copies never move here)."""
        return sorted(self.cluster.nodes[node].counters)

    def node_view(self, node: str) -> NodeView:
        n = self.cluster.nodes[node]
        return NodeView(
            **self._node_snapshot(node).model_dump(),
            data={
                k: EntryView(value=self.values[e.tx, k], tx=e.tx, cntr=e.cntr)
                for k, e in sorted(n.data.items())
            },
            partitions={p: self.partition_state(node, p) for p in self._held(node)},
            txs={tx: local.state.value for tx, local in sorted(n.txs.items())},
        )

    def client_txs(self) -> dict[str, str]:
        return {tx: near.state.value for tx, near in sorted(self.cluster.near.items())}
