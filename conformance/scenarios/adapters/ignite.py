"""A scenario played on a real Apache Ignite cluster (systems/ignite, through conformance/systems/ignite.py).

Steps tidemark names at message level become holds and releases: every message of the scenario's
transactions is held as it is sent (lock, prepare and finish requests, the backups' prepare answers, the
primary's answer to the client, tx recovery requests), and so are the single and full messages of every
exchange and the supply messages of the tidemark cache; a step releases the message it delivers and waits
until Ignite has acted on it (the next message of the protocol is sent, or the transaction's phase is
reached). Steps Ignite takes by itself become "wait until done" points: a SendSingle releases the server's
single message if it sent one (a server that left the topology is handled without single messages when the
baseline does not change: Ignite's PME-free switch), a FullMessage releases the coordinator's and waits for
the exchange, a Supply waits for the supplier's batch and a Rebalance delivers it, an Evict waits for the
copy to go. A Restart starts the server from its persistence; it joins at once (Ignite cannot restart a
server without joining), so Join only waits for it to be seen.

Servers are mapped to Ignite's nodes so that the scenario's owner lists hold: the rendezvous affinity of
Ignite decides the owners from the nodes' consistent ids, so the scenario's server i is the node ranked i
for the partitions (impl.affinity computes Ignite's ranking, checked identical to Ignite's own), and the
nodes start in the scenario's order, so the oldest - the coordinator - is the same. Topology versions are
counted from the scenario's start: Ignite's version at the start (after the client joined and the cache
started) reads as the scenario's initial 1.0.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios.adapters.base import Snapshot, StepRefused, System
from tidemark.conformance.scenarios.adapters.cluster import values
from tidemark.conformance.scenarios.format import (
    ScenarioFile,
    ScenarioStep,
    TxStartStep,
    step_params,
    step_text,
)
from tidemark.conformance.scenarios.protocols import owner_lists
from tidemark.conformance.scenarios.result import (
    CounterView,
    EntryView,
    ExchangeView,
    IdleVerifyView,
    MessageEvent,
    NodeSnapshot,
    NodeView,
    RebalanceView,
    TopologyView,
    VerifiedCounter,
)
from tidemark.conformance.scenarios.vocabulary import NodeState, PartitionState
from tidemark.conformance.systems.ignite import DEFAULT_VERSION, IgniteHarness, PartitionView
from tidemark.conformance.systems.ignite import NodeView as IgniteNode
from tidemark.conformance.systems.ignite_steps import NotPossible, StepDriver
from tidemark.impl.affinity import make_node, rank_nodes

# Ignite's TransactionState -> tidemark's transaction states, on a server and on the client.
SERVER_TX = {
    "ACTIVE": "locked",
    "PREPARING": "preparing",
    "PREPARED": "prepared",
    "COMMITTING": "committed",
    "COMMITTED": "committed",
    "MARKED_ROLLBACK": "rollingBack",
    "ROLLING_BACK": "rollingBack",
    "ROLLED_BACK": "rolledBack",
}
CLIENT_TX = {
    "ACTIVE": "locking",
    "PREPARING": "preparing",
    "PREPARED": "preparing",
    "COMMITTING": "committed",
    "COMMITTED": "committed",
    "MARKED_ROLLBACK": "rolledBack",
    "ROLLING_BACK": "rolledBack",
    "ROLLED_BACK": "rolledBack",
}


# Ignite's log lines of an exchange's report (impl.pme.exchange_report): a failed update(max LWM) on a server,
# and the coordinator's partition state validation (GridDhtPartitionsStateValidator).
NOTHING = "(?!)"
REPORTED = "Failed to update partition counter|Partitions .* (are|is) inconsistent for"
_FAILED_UPDATE = re.compile(r"Failed to update partition counter.*partId=(\d+)\]")
_INCONSISTENT = re.compile(
    r"Partitions (update counters|cache sizes|cache size and update counters) are inconsistent for (.*)"
)


class IgniteScenarioError(TidemarkError):
    """The scenario cannot be played on real Ignite as written (exit 2): its owner lists match no
    assignment of Ignite's, or it asks for something the harness cannot do."""


# --- one harness JVM for many scenarios -----------------------------------------------------------------

_SHARED: list[tuple[IgniteHarness, float]] = []
STEP_TIMEOUT = 30.0  # seconds a step may wait for Ignite to act on it


@contextmanager
def shared_harness(
    version: str = DEFAULT_VERSION, step_timeout: float = STEP_TIMEOUT
) -> Iterator[IgniteHarness]:
    """One harness JVM for every scenario run inside the block (each still gets a fresh cluster with fresh
    persistence directories: `reset` between them), each step waiting at most `step_timeout` seconds for
    Ignite. Without it each scenario starts and stops a JVM."""
    with IgniteHarness(version) as harness:
        _SHARED.append((harness, step_timeout))
        try:
            yield harness
        finally:
            _SHARED.remove((harness, step_timeout))


# --- servers -> Ignite's nodes ---------------------------------------------------------------------------


def node_mapping(scenario: ScenarioFile) -> dict[str, str]:
    """Scenario server -> Ignite node name (s1..sN), such that each partition's owner list, primary first, is
    the scenario's (protocol pme: the whole rendezvous ranking, as tidemark.impl.pme orders the baseline)."""
    cluster = scenario.cluster
    real = [f"s{i}" for i in range(1, len(cluster.servers) + 1)]
    nodes = [make_node(name) for name in real]
    rankings = [[real[i] for i in rank_nodes(p, nodes)] for p in range(cluster.partitions)]
    owners = owner_lists(scenario)
    whole = scenario.protocol == "pme"
    for perm in itertools.permutations(real):
        mapping = dict(zip(cluster.servers, perm, strict=True))
        if all(
            [mapping[s] for s in (cluster.servers if whole else owners[p])]
            == ranking[: len(cluster.servers) if whole else len(owners[p])]
            for p, ranking in enumerate(rankings)
        ):
            return mapping
    raise IgniteScenarioError(
        "no naming of Ignite's nodes gives the scenario's owner lists: Ignite's rendezvous affinity ranks "
        f"the nodes {', '.join(' > '.join(r) for r in rankings)} for partitions 0..{cluster.partitions - 1}",
        source=scenario.name,
        location="cluster",
        expected="owner lists one ranking of the servers gives (one partition always works)",
    )


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


class IgniteSystem(System):
    """One scenario on a fresh real Ignite cluster; see the module docstring."""

    def __init__(self, scenario: ScenarioFile, *, step_timeout: float | None = None) -> None:
        super().__init__(scenario)
        self.values = values(scenario)
        self.to_real = node_mapping(scenario)
        self.to_scenario = {v: k for k, v in self.to_real.items()} | {"c1": self.client}
        self.step_timeout = step_timeout or (_SHARED[-1][1] if _SHARED else STEP_TIMEOUT)
        keys: dict[str, dict[int, str]] = {}
        for step in scenario.steps:
            if isinstance(step, TxStartStep):
                keys.setdefault(step.tx, dict(step.keys))
        self.tx_keys = keys
        self._own: IgniteHarness | None = None
        self._driver: StepDriver | None = None
        self._base = (1, 0)
        self._demands = 0  # demand messages already read
        self._rebalancing: dict[tuple[str, int], RebalanceView] = {}
        self._rebalanced: dict[tuple[str, int], RebalanceView] = {}
        self._joined: set[str] = set()  # restarted servers whose Join step was taken
        self._agreed: TopologyView | None = None  # the topology while no server was joining
        self._history: dict[tuple[str, int], int] = {}  # the WAL history each copy started with
        self._exchange: ExchangeView | None = None  # what Ignite logged at the last FullMessage's exchange
        self._exchange_mark: int | None = None  # Ignite's log line where the exchange in progress began
        self.outage = False  # every server was down: Ignite's topology versions count afresh from then on

    def __enter__(self) -> IgniteSystem:
        if _SHARED:
            harness = _SHARED[-1][0]
        else:
            harness = self._own = IgniteHarness()
            harness.open()
        try:
            self._driver = self._start(harness)
        except BaseException:
            self._close(harness)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._close(self.driver.h)

    def _close(self, harness: IgniteHarness) -> None:
        """Stop the cluster (and its JVM, unless shared); its directories go with it."""
        if self._own is not None:
            self._own.close()
        elif harness.process is not None:
            harness.reset()

    @property
    def driver(self) -> StepDriver:
        assert self._driver is not None, "use IgniteSystem as a context manager"
        return self._driver

    def _start(self, h: IgniteHarness) -> StepDriver:
        cluster = self.scenario.cluster
        h.reset()
        h.start(
            len(cluster.servers),
            partitions=cluster.partitions,
            backups=cluster.backups,
            wal_rebalance_threshold=cluster.wal_rebalance_threshold or 0,
            order=[self.to_real[s] for s in cluster.servers],
            # One entry per supply message for batch_size 1, tidemark's default (a byte's batch holds one
            # entry); Ignite's default (512 KiB: every entry at once) for a larger batch_size.
            rebalance_batch_bytes=1 if (cluster.batch_size or 1) == 1 else 0,
        )
        if cluster.initial_data:
            h.call("put", writes={str(k): v for k, v in sorted(cluster.initial_data.items())})
            # A cluster loaded earlier has checkpointed its data: the WAL history starts there, so a copy
            # restarting with it can be rebalanced from the WAL (Ignite needs a checkpoint to start from).
            h.call("checkpoint")
        driver = StepDriver(h, self.tx_keys, cluster.partitions, self.step_timeout)
        driver.hold_all(list(self.to_real.values()))
        first = driver.observe().nodes
        self._base = _version(next(iter(first.values())).disco_ver)
        self._history = {
            (self.to_scenario[n], p): h for n, view in first.items() for p, h in view.history.items()
        }
        self._demands = len(h.demands())
        return driver

    # --- steps -------------------------------------------------------------------------------------------

    def _params(self, step: ScenarioStep) -> dict[str, Any]:
        params = step_params(step)
        for name in ("node", "peer"):
            if name in params:
                params[name] = self.to_real[str(params[name])]
        return params

    def take(self, step: ScenarioStep) -> list[MessageEvent]:
        # An exchange's report is what Ignite logs from its first single message on (the coordinator
        # validates the partition states once it has every single, before its full message goes out).
        if step.step in ("SendSingle", "FullMessage") and self._exchange_mark is None:
            self._exchange_mark = self.driver.h.logs(NOTHING)[1]
        try:
            events = self.driver.take(step.step, **self._params(step))
        except NotPossible as error:
            # The driver speaks of Ignite's nodes: the reason names the scenario's servers.
            why = re.sub(r"\bs\d+\b", lambda m: self.to_scenario.get(m.group(0), m.group(0)), str(error))
            raise StepRefused(f"{step_text(step)} on Ignite: {why}", reason=f"Ignite: {why}") from error
        self._read_demands()
        if step.step == "FullMessage" and self._exchange_mark is not None:
            self._exchange, self._exchange_mark = self._exchange_report(self._exchange_mark), None
        obs = self.driver.observe(entries=False)
        if not self.outage and not obs.nodes and not obs.starting:
            # A total outage: the first server back starts a new topology history at version 1, read as is.
            self.outage, self._base = True, (1, 0)
        if step.step == "Join":
            self._joined.add(str(step_params(step)["node"]))
        elif step.step == "Restart":
            self._joined.discard(str(step_params(step)["node"]))
        name = self.to_scenario.get
        return [
            MessageEvent.model_construct(
                kind=e.kind,
                sender=name(e.sender, e.sender),
                receiver=name(e.receiver, e.receiver),
                label=e.label,
            )
            for e in events
        ]

    def allows(self, step: ScenarioStep) -> bool:
        return self.driver.allows(step.step, **self._params(step))

    def enabled(self) -> list[str]:
        """The held messages a step could deliver (Ignite takes its other steps by itself)."""
        name = self.to_scenario.get
        return [
            f"{m.type}{' ' + m.tx if m.tx else ''} {name(m.sender, m.sender)}->{name(m.to, m.to)}"
            for m in self.driver.h.held()
        ]

    def _read_demands(self) -> None:
        """A rebalancing starts with the first demand for a copy since its last one completed: its mode,
        counter range and supplier; it is complete once the copy owns."""
        demands = self.driver.h.demands()
        for d in demands[self._demands :]:
            demander, supplier = self.to_scenario[d.demander], self.to_scenario[d.supplier]
            asked = [("historical", h["part"], h["from"], h["to"]) for h in d.historical]
            asked += [("full", part, 0, 0) for part in d.full]
            for mode, part, start, end in asked:
                view = {"mode": mode, "from": start, "to": end, "supplier": supplier}
                self._rebalancing.setdefault((demander, part), RebalanceView.model_validate(view))
        self._demands = len(demands)
        for key, started in list(self._rebalancing.items()):
            copy = self._copy(*key)
            if copy is not None and copy.state == "OWNING":
                del self._rebalancing[key]
                # A full demand names no counters: the copy was supplied up to the LWM it owns with.
                full = started.mode == "full"
                self._rebalanced[key] = started.model_copy(update={"to": copy.lwm}) if full else started

    def _exchange_report(self, since: int) -> ExchangeView:
        """What Ignite logged while the exchange completed: each server whose update(max LWM) failed ("Failed
        to update partition counter ... partId=P", on that server) and the partitions the coordinator's
        partition state validation found inconsistent ("Partitions update counters are inconsistent for
        Part P: ..." and the same for cache sizes; Ignite stops at the first that fails)."""
        lines, _ = self.driver.h.logs(REPORTED, since=since, limit=1000)
        failures: dict[int, set[str]] = {}
        counters: set[int] = set()
        sizes: set[int] = set()
        for line in lines:
            node = line.split(" ", 1)[0]
            if (failed := _FAILED_UPDATE.search(line)) is not None and node in self.to_scenario:
                failures.setdefault(int(failed.group(1)), set()).add(self.to_scenario[node])
            elif (invalid := _INCONSISTENT.search(line)) is not None:
                parts = {int(p) for p in re.findall(r"Part (\d+):", invalid.group(2))}
                (sizes if invalid.group(1) == "cache sizes" else counters).update(parts)
                if "and update counters" in invalid.group(1):
                    counters.update(parts)
        return ExchangeView(
            clean=not (failures or counters or sizes),
            update_failures={p: sorted(n) for p, n in sorted(failures.items())},
            counters_inconsistent=sorted(counters),
            sizes_inconsistent=sorted(sizes),
        )

    def exchange(self) -> ExchangeView | None:
        return self._exchange

    # --- observations ------------------------------------------------------------------------------------

    def _node(self, node: str) -> IgniteNode | None:
        """The server's view: running, or starting (restarted, joining) and observable."""
        obs = self.driver.observe()
        real = self.to_real[node]
        return obs.nodes.get(real) or obs.starting.get(real)

    def _copy(self, node: str, part: int) -> PartitionView | None:
        view = self._node(node)
        return view.partitions.get(part) if view else None

    def node_state(self, node: str) -> NodeState:
        obs, real = self.driver.observe(), self.to_real[node]
        if real in obs.nodes:
            return "alive"
        if real in obs.starting:
            # Ignite joins a server when it starts; tidemark's Join step says when the model's joins.
            return "alive" if node in self._joined else "restarted"
        return "down"

    def counter(self, node: str, part: int) -> CounterView | None:
        copy = self._copy(node, part)
        if copy is None:
            return None
        return CounterView(lwm=copy.lwm, hwm=copy.hwm, items=[(s, d) for s, d in copy.gaps])

    def data(self, node: str) -> dict[int, str]:
        view = self._node(node)
        entries = {k: v for c in (view.partitions.values() if view else ()) for k, v in c.entries.items()}
        return {k: v for k, v in sorted(entries.items()) if v is not None}

    def partition_state(self, node: str, part: int) -> PartitionState:
        view = self._node(node)
        if view is None:
            return "OFFLINE"
        copy = view.partitions.get(part)
        if copy is None:
            return "EVICTED"
        return "LOST" if part in view.lost else _state(copy.state)

    def server_tx(self, node: str, tx: str) -> str | None:
        view = self._node(node)
        state = view.txs.get(tx) if view else None
        return None if state is None else SERVER_TX.get(state, state.lower())

    def client_tx(self, tx: str) -> str:
        real = self.driver.observe().txs.get(tx)
        if real is None:
            return "idle"
        if real.phase == "failed" or real.state is None:
            return "rolledBack"
        return CLIENT_TX.get(real.state, real.state.lower())

    def starting_servers(self) -> list[str]:
        """The servers Ignite is starting (joining: their join exchange not done)."""
        return [self.to_scenario[n] for n in self.driver.observe().starting]

    def topology(self) -> TopologyView:
        """The topology as the least advanced running server sees it: an exchange is done when every
        server finished it (the coordinator finishes first, as it sends the full message; a joining server
        last). While a server joins, the ready version and its owner lists are the last all agreed on."""
        obs = self.driver.observe()
        live = [obs.nodes[self.to_real[s]] for s in self.servers if self.to_real[s] in obs.nodes]
        if not live:
            return TopologyView(version="0.0", ready="0.0", owners={}, pending=[], coordinator=None)
        view, name = min(live, key=lambda v: _version(v.top_ver)), self.to_scenario.get
        latest = max((v.disco_ver for v in [*live, *filter(None, obs.starting.values())]), key=_version)
        agreed = TopologyView(
            version=self._scenario_version(latest),
            ready=self._scenario_version(view.top_ver),
            owners={p: [name(n, n) for n in owners] for p, owners in sorted(view.assignment.items())},
            pending=sorted({e for v in live for e in v.pending}),
            # protocol 2pc has no exchanges, so no coordinator to compare
            coordinator=name(view.coordinator, view.coordinator)
            if view.coordinator and self.scenario.protocol == "pme"
            else None,
        )
        if obs.starting and self._agreed is not None:
            pending = sorted({*agreed.pending, "joined"})
            return self._agreed.model_copy(update={"version": agreed.version, "pending": pending})
        self._agreed = agreed
        return agreed

    def _scenario_version(self, text: str) -> str:
        """Ignite's topology version counted from the scenario's start (which reads as 1.0)."""
        major, minor = _version(text)
        base_major, base_minor = self._base
        return f"{major - base_major + 1}.{minor - base_minor if major == base_major else minor}"

    def init(self, node: str, part: int) -> int | None:
        """A MOVING copy's initial counter (where its rebalancing starts: Ignite's counter.initial(), 0 once
        cleared for a full rebalance); 0 for a copy in another state, as tidemark counts it."""
        copy = self._copy(node, part)
        if copy is None:
            return None
        return copy.initial if copy.state == "MOVING" else 0

    def history(self, node: str, part: int) -> int:
        """Where the copy's WAL history starts, 0 while it reaches back to the scenario's start (the
        checkpoint of the initial data: tidemark's untruncated archive)."""
        view = self._node(node)
        start = view.history.get(part, 0) if view else 0
        return 0 if start <= self._history.get((node, part), 0) else start

    def rebalanced(self, node: str, part: int) -> RebalanceView | None:
        return self._rebalanced.get((node, part))

    def idle_verify(self) -> IdleVerifyView | None:
        """Ignite's idle_verify (it waits for a checkpoint on every running server). It checks an idle
        cluster: Ignite's task waits for the exchange in progress, so an open exchange (the late affinity
        switch a rebalancing ends with) is first finished as Ignite finishes it, its held single and full
        messages delivered; None while a server is still starting or the exchange does not finish."""
        if self.scenario.protocol != "pme":
            return None
        obs = self.driver.observe()
        if obs.starting:
            return None
        if not all(self.driver.settled(n) for n in obs.nodes):
            try:
                self.driver.take("Exchange")
            except NotPossible:
                return None
            obs = self.driver.observe()
        if not obs.nodes:
            return IdleVerifyView(clean=True, counter_conflicts={}, hash_conflicts={}, skipped={}, lost=[])
        report = self.driver.h.idle_verify()
        name = self.to_scenario.get

        def counters(part: int) -> dict[str, VerifiedCounter]:
            out = {}
            for r in report.counter_conflicts.get(part, ()):
                copy = obs.nodes[r.node].partitions.get(part) if r.node in obs.nodes else None
                out[name(r.node, r.node)] = VerifiedCounter(
                    lwm=copy.lwm if copy else 0, items=[(s, d) for s, d in copy.gaps] if copy else []
                )
            return out

        skipped: dict[int, dict[str, str]] = {}
        for part, records in report.moving.items():
            skipped.setdefault(part, {}).update({name(r.node, r.node): "MOVING" for r in records})
        for part, records in report.lost.items():
            skipped.setdefault(part, {}).update({name(r.node, r.node): "LOST" for r in records})
        return IdleVerifyView(
            clean=not report.counter_conflicts and not report.hash_conflicts,
            counter_conflicts={p: counters(p) for p in sorted(report.counter_conflicts)},
            hash_conflicts={
                p: {name(r.node, r.node): str(r.hash) for r in records}
                for p, records in sorted(report.hash_conflicts.items())
            },
            skipped=dict(sorted(skipped.items())),
            lost=sorted({p for v in obs.nodes.values() for p in v.lost}),
        )

    # --- snapshots and the end ---------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        nodes = {n: self._snapshot(n) for n in self.servers}
        return Snapshot(nodes, self.topology(), len(self.driver.h.held()))

    def _snapshot(self, node: str) -> NodeSnapshot:
        view = self._node(node)
        copies = {}
        counters = {}
        for part, copy in sorted(view.partitions.items()) if view else ():
            state = "LOST" if part in view.lost else _state(copy.state)  # type: ignore[union-attr]
            copies[part] = state + (f" (init {copy.initial})" if state == "MOVING" else "")
            counters[part] = CounterView(lwm=copy.lwm, hwm=copy.hwm, items=[(s, d) for s, d in copy.gaps])
        history = {p: h for p in sorted(view.history) if (h := self.history(node, p))} if view else {}
        return NodeSnapshot(state=self.node_state(node), counters=counters, copies=copies, history=history)

    def node_view(self, node: str) -> NodeView:
        writers = {(k, v): tx for (tx, k), v in self.values.items()}
        view = self._node(node)
        return NodeView(
            **self._snapshot(node).model_dump(),
            data={k: EntryView(value=v, tx=writers.get((k, v))) for k, v in self.data(node).items()},
            partitions={p: self.partition_state(node, p) for p in sorted(view.partitions)} if view else {},
            txs={tx: SERVER_TX.get(s, s.lower()) for tx, s in sorted(view.txs.items())} if view else {},
            rebalanced={p: r for (n, p), r in sorted(self._rebalanced.items()) if n == node},
        )

    def client_txs(self) -> dict[str, str]:
        return {tx: self.client_tx(tx) for tx in sorted(self.tx_keys)}


def _state(state: str) -> PartitionState:
    known: tuple[PartitionState, ...] = ("OWNING", "MOVING", "RENTING", "EVICTED", "LOST")
    return next((s for s in known if s == state), "EVICTED")
