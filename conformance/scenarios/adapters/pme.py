"""Protocol pme on impl/pme.py: the 2pc adapter plus the exchange's and rebalancing's messages, copy
states, WAL history, the coordinator, idle_verify, and how each copy was last rebalanced.

How a copy was rebalanced is read off the messages, as a real system's logs show it: the Demand the full
message sends for a MOVING copy says the mode, the counter range and the supplier; the rebalancing is
complete when the demander applies the last Supply. A topology event cancels a rebalancing (its messages
are lost); the next full message starts another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from tidemark.conformance.scenarios.adapters.cluster import ClusterSystem, Kind, version_text
from tidemark.conformance.scenarios.format import ScenarioFile
from tidemark.conformance.scenarios.result import (
    ExchangeView,
    IdleVerifyView,
    MessageEvent,
    NodeView,
    RebalanceView,
    VerifiedCounter,
)
from tidemark.conformance.scenarios.vocabulary import PartitionState
from tidemark.conformance.zoo.mutants import PME_MUTANTS
from tidemark.impl.cluster import Cluster, Config, Fix, Step
from tidemark.impl.pme import (
    Demand,
    ExchangeReport,
    Mode,
    PartInfo,
    PartState,
    PmeCluster,
    PmeConfig,
    RebalanceMessage,
    Supply,
    exchange_report,
    idle_verify,
)


def _single_label(infos: Mapping[int, PartInfo]) -> str:
    """A single message: per copy its LWM, state and, when its WAL lacks some, where the WAL starts."""
    copies = "".join(
        f" p{p} lwm {i.lwm} {i.state.value}" + (f" WAL from {i.hist + 1}" if i.hist else "")
        for p, i in sorted(infos.items())
    )
    return "SingleMessage" + (copies or " (no copies)")


def _full_label(before: PmeCluster, after: PmeCluster) -> str:
    """The full message: its version and per partition the maximum LWM every copy takes, or LOST."""
    parts = "".join(
        f" p{p} LOST" if p in after.lost else f" p{p} lwm {before._full_counter(p)}"
        for p in range(after.config.partitions)
    )
    return f"FullMessage ver {version_text(after.ready_ver)}{parts}"


def _rebalance_label(message: RebalanceMessage) -> str:
    """A Demand (what the demander asks for) or a Supply (the entries it carries, and if it is the last)."""
    if isinstance(message, Demand):
        if message.mode is Mode.HISTORICAL:
            first, last = message.first, message.upto
            wanted = f"counter {last}" if first == last else f"counters {first}..{last}"
        else:
            wanted = f"keys from {message.first} up to lwm {message.upto}"
        return f"Demand p{message.part} {message.mode.value} {wanted}"
    entries = sorted(message.entries, key=lambda e: (e.cntr, e.key))
    carried = ", ".join(f"key {e.key} cntr {e.cntr}" for e in entries) or "no entries"
    return f"Supply p{message.part} {message.mode.value} {carried}" + (" (last)" if message.last else "")


def _exchange_view(report: ExchangeReport) -> ExchangeView:
    return ExchangeView(
        clean=report.clean,
        update_failures={p: list(nodes) for p, nodes in sorted(report.update_failures.items())},
        counters_inconsistent=sorted(report.counters_inconsistent),
        sizes_inconsistent=sorted(report.sizes_inconsistent),
    )


class PmeSystem(ClusterSystem):
    """A scenario of protocol pme run on tidemark.impl.pme.PmeCluster."""

    cluster: PmeCluster

    def __init__(self, scenario: ScenarioFile) -> None:
        super().__init__(scenario)
        # (demander, partition) -> the rebalancing its first Demand started, and the last one completed.
        self._rebalancing: dict[tuple[str, int], RebalanceView] = {}
        self._rebalanced: dict[tuple[str, int], RebalanceView] = {}
        self._exchange: ExchangeView | None = None

    def _cluster_class(self) -> type[Cluster]:
        mutant = self.scenario.mutant
        return PmeCluster if mutant is None else PME_MUTANTS[mutant]

    def _config(self) -> Config:
        base, cluster = super()._config(), self.scenario.cluster
        return PmeConfig(
            base.servers,
            base.owners,
            base.transactions,
            fixes=frozenset(Fix(f) for f in self.scenario.fixes),
            wal_rebalance_threshold=cluster.wal_rebalance_threshold or 0,
            batch_size=cluster.batch_size or 1,
        )

    def _observe(self, before: Cluster, after: Cluster, step: Step) -> None:
        """A rebalancing starts with a Demand sent by any step but Rebalance (which sends the next Demand
        of one in progress) and completes when the last batch is applied."""
        assert isinstance(before, PmeCluster) and isinstance(after, PmeCluster)
        if step.name == "FullMessage":
            self._exchange = _exchange_view(exchange_report(before))
        if step.name != "Rebalance":
            for m in after.rebal - before.rebal:
                if isinstance(m, Demand):
                    # Ignite's (from, to]: the demander's counter, above which the WAL supplies.
                    start = m.first - 1 if m.mode is Mode.HISTORICAL else 0
                    view = RebalanceView.model_validate(
                        {"mode": m.mode.value, "from": start, "to": m.upto, "supplier": m.to}
                    )
                    self._rebalancing[m.sender, m.part] = view
        else:
            where = (cast(str, step.node), cast(int, step.part))
            if any(
                isinstance(m, Supply) and m.last and (m.to, m.part) == where
                for m in before.rebal - after.rebal
            ):
                self._rebalanced[where] = self._rebalancing.pop(where)

    def _protocol_messages(
        self, before: Cluster, after: Cluster, step: Step
    ) -> tuple[list[MessageEvent], list[MessageEvent]]:
        """The exchange's and rebalancing's messages: (delivered or lost, sent).

        A single message reaches the coordinator in the step that sends it (the model keeps it there); the
        full message reaches every other live server in the coordinator's step; a Demand is delivered to the
        supplier by Supply and a Supply to the demander by Rebalance; a topology event loses those in flight.
        """
        assert isinstance(before, PmeCluster) and isinstance(after, PmeCluster)

        def event(kind: Kind, sender: str, to: str, label: str) -> MessageEvent:
            return MessageEvent.model_construct(kind=kind, sender=sender, receiver=to, label=label)

        arrived = [
            event("delivered", n, before.coordinator, _single_label(after.singles[n]))
            for n in sorted(after.singles)
            if n not in before.singles
        ]
        if step.name == "FullMessage":
            full = _full_label(before, after)
            arrived += [
                event("delivered", before.coordinator, n, full) for n in sorted(after.alive) if n != step.node
            ]
        answering = step.name in ("Supply", "Rebalance")
        for m in before.rebal - after.rebal:
            kind: Kind = "delivered" if answering and m.to == step.node else "lost"
            arrived.append(event(kind, m.sender, m.to, _rebalance_label(m)))
        sent = [event("sent", m.sender, m.to, _rebalance_label(m)) for m in after.rebal - before.rebal]
        return arrived, sent

    # --- snapshots ---------------------------------------------------------------------------------------

    def _in_flight(self) -> int:
        return len(self.cluster.network) + len(self.cluster.rebal)

    def _node_fields(self, node: str) -> dict[str, Any]:
        cluster = self.cluster
        copies = {}
        for part, copy in sorted(cluster.states[node].items()):
            text = copy.state.value + (f" (init {copy.init})" if copy.state is PartState.MOVING else "")
            copies[part] = text + (", LOST" if part in cluster.lost else "")
        history = {p: h for p, h in sorted(cluster.history[node].items()) if h}
        return {**super()._node_fields(node), "copies": copies, "history": history}

    def _topology_fields(self) -> dict[str, Any]:
        cluster = self.cluster
        return {
            **super()._topology_fields(),
            "pending": sorted(e.value for e in cluster.pending),
            "coordinator": cluster.coordinator if cluster.alive else None,
        }

    # --- observations ------------------------------------------------------------------------------------

    def partition_state(self, node: str, part: int) -> PartitionState:
        """The copy's real state: OFFLINE while the server is down, LOST for a copy of a LOST partition,
        else the copy's own (OWNING, MOVING, RENTING), or EVICTED when the server holds no copy. A restarted
        server keeps the states its disk holds until the exchange after it joins decides."""
        if self.node_state(node) == "down":
            return "OFFLINE"
        if part in self.cluster.lost and part in self.cluster.states[node]:
            return "LOST"
        return cast(PartitionState, self.cluster.state_of(node, part))

    def init(self, node: str, part: int) -> int | None:
        copy = self.cluster.states[node].get(part)
        return copy.init if copy else None

    def history(self, node: str, part: int) -> int:
        return self.cluster.history[node].get(part, 0)

    def rebalanced(self, node: str, part: int) -> RebalanceView | None:
        return self._rebalanced.get((node, part))

    def exchange(self) -> ExchangeView | None:
        return self._exchange

    def idle_verify(self) -> IdleVerifyView:
        report = idle_verify(self.cluster)
        return IdleVerifyView(
            clean=report.clean,
            counter_conflicts={
                p: {
                    n: VerifiedCounter(lwm=lwm, items=list(items))
                    for n, (lwm, items) in sorted(nodes.items())
                }
                for p, nodes in sorted(report.counter_conflicts.items())
            },
            hash_conflicts={
                p: dict(sorted(nodes.items())) for p, nodes in sorted(report.hash_conflicts.items())
            },
            skipped={p: dict(sorted(nodes.items())) for p, nodes in sorted(report.skipped.items())},
            lost=sorted(report.lost),
        )

    # --- the end -----------------------------------------------------------------------------------------

    def _held(self, node: str) -> list[int]:
        """The copies the server keeps, on its disk (its counters are gone while it is down)."""
        return sorted(self.cluster.states[node])

    def node_view(self, node: str) -> NodeView:
        view = super().node_view(node)
        view.rebalanced = {p: r for (n, p), r in sorted(self._rebalanced.items()) if n == node}
        return view
