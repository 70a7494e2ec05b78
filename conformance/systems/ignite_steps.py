"""tidemark's steps on a real Ignite cluster: which message each step releases and when it is done.

`StepDriver` plays steps by their spec names (impl/cluster.py STEPS, impl/pme.py PME_STEPS) on a started
harness, in Ignite's node names. `hold_all` first holds every message of the given transactions, every
exchange's single and full messages and the tidemark cache's supply messages; a step then releases what
it delivers and waits until Ignite has acted on it - the next message of the protocol has been sent (a
primary's prepare requests to its backups, a backup's answer), the client's transaction reached its phase,
the exchange finished. Ignite acts by itself where tidemark has a step of its own, so some steps are
"wait until done" points (see each method). A step that cannot be taken raises `NotPossible` with the
reason; `allows` answers whether a step is possible now without taking it.

The names of Ignite's classes are those of 2.x (2.17, 2.18).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tidemark.conformance.systems.ignite import HeldMessage, IgniteError, IgniteHarness, Observation
from tidemark.impl.affinity import key_partition

LOCK, NEAR_PREPARE, DHT_PREPARE = "GridNearLockRequest", "GridNearTxPrepareRequest", "GridDhtTxPrepareRequest"
DHT_PREPARED, NEAR_PREPARED = "GridDhtTxPrepareResponse", "GridNearTxPrepareResponse"
NEAR_FINISH, DHT_FINISH = "GridNearTxFinishRequest", "GridDhtTxFinishRequest"
DHT_FINISHED, RECOVERY = "GridDhtTxFinishResponse", "GridCacheTxRecoveryRequest"
SINGLE, FULL = "GridDhtPartitionsSingleMessage", "GridDhtPartitionsFullMessage"
SUPPLY = "GridDhtPartitionSupplyMessage"
# Held for every transaction: everything but the finish answers (a backup's commit answer ends nothing
# tidemark steps through; the client learns the outcome from the primary).
TX_HELD = (LOCK, NEAR_PREPARE, DHT_PREPARE, DHT_PREPARED, NEAR_PREPARED, NEAR_FINISH, DHT_FINISH, RECOVERY)
FINISHED_TX = frozenset({"COMMITTED", "ROLLED_BACK"})
POLL = 0.05  # seconds between two looks at the cluster while waiting for Ignite
FINISH_GRACE = 2.0  # seconds a finished backup's answer is waited for (it has none when no reply is due)
AFFINITY_GRACE = 3.0  # seconds a rebalancing's end waits for Ignite's late affinity switch to begin


class NotPossible(Exception):
    """The step cannot be taken on Ignite now (its message is not there, or Ignite never got there)."""


@dataclass(frozen=True)
class Event:
    """A message a step delivered (released) or that was sent during it, in Ignite's node names."""

    kind: str  # "delivered" or "sent"
    sender: str
    receiver: str
    label: str


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class StepDriver:
    """Steps on the harness's running cluster; `tx_keys` are each transaction's writes (key -> value)."""

    def __init__(
        self, h: IgniteHarness, tx_keys: Mapping[str, Mapping[int, str]], partitions: int, timeout_s: float
    ) -> None:
        self.h = h
        self.tx_keys = tx_keys
        self.partitions = partitions
        self.timeout = timeout_s
        self._obs: Observation | None = None
        # Transactions Ignite commits in one phase (one primary, at most one backup): the backup commits on
        # the prepare request, the primary on its answer, and no finish request is ever sent.
        self.one_phase: set[str] = set()
        self.decided: set[str] = set()  # one-phase transactions whose prepare reached the primary

    def hold_all(self, servers: list[str]) -> None:
        for tx in self.tx_keys:
            for kind in TX_HELD:
                self.h.block(kind, tx=tx)
        for node in servers:
            # Exchanges among the servers: the client's own single and full messages pass.
            self.h.block(SINGLE, sender=node)
            self.h.block(FULL, to=node)
            self.h.block(SUPPLY, to=node)

    # --- looking at the cluster --------------------------------------------------------------------------

    def observe(self, *, entries: bool = True) -> Observation:
        """The cluster now (kept until the next step when `entries`)."""
        if not entries:
            return self.h.observe(entries=False)
        if self._obs is None:
            self._obs = self.h.observe()
        return self._obs

    def mark(self) -> int:
        return int(self.h.call("sent", type="-")["mark"])

    def held(
        self, kind: str, *, sender: str | None = None, to: str | None = None, tx: str | None = None
    ) -> list[HeldMessage]:
        return [
            m
            for m in self.h.held()
            if m.type == kind and sender in (None, m.sender) and to in (None, m.to) and tx in (None, m.tx)
        ]

    def _await_held(self, kind: str, seconds: float | None = None, **match: str | None) -> bool:
        args = {"type": kind, "from": match.get("sender"), "to": match.get("to"), "tx": match.get("tx")}
        wait = int(1000 * (self.timeout if seconds is None else seconds))
        return bool(self.h.call("await_held", wait_ms=wait, **args)["found"])

    def _await_sent(self, since: int, kind: str, **match: str | None) -> bool:
        args = {"type": kind, "from": match.get("sender"), "to": match.get("to"), "tx": match.get("tx")}
        return bool(self.h.call("await_sent", since=since, wait_ms=int(1000 * self.timeout), **args)["found"])

    def _release(self, kind: str, **match: str | None) -> list[HeldMessage]:
        return self.h.release(type=kind, **{k: v for k, v in match.items() if v is not None})

    def _until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not done():
            if time.monotonic() > deadline:
                raise NotPossible(f"{what} did not happen within {self.timeout:.0f} s")
            time.sleep(POLL)

    def _tx_wait(self, tx: str) -> dict[str, Any]:
        result: dict[str, Any] = self.h.call("tx_wait", tx=tx, wait_ms=int(1000 * self.timeout))
        return result

    def _running(self, node: str) -> bool:
        return node in self.observe(entries=False).nodes

    def _backups(self, tx: str) -> list[str]:
        """The transaction's running backups on the ready assignment (the primary's DHT map)."""
        obs = self.observe(entries=False)
        part = key_partition(min(self.tx_keys[tx]), self.partitions)
        view = next(iter(obs.nodes.values()), None)
        owners = view.assignment.get(part, ()) if view else ()
        return [n for n in owners[1:] if n in obs.nodes]

    def settled(self, node: str) -> bool:
        """The server runs and has no exchange in progress."""
        view = self.observe(entries=False).nodes.get(node)
        return view is not None and view.exchange_done and not view.pending and view.top_ver == view.disco_ver

    # --- taking a step -----------------------------------------------------------------------------------

    def take(self, name: str, **params: Any) -> list[Event]:
        """Take the step; the messages it delivered and those sent meanwhile. Raises NotPossible."""
        method = getattr(self, f"_{snake(name)}", None)
        if method is None:
            raise NotPossible(f"the harness has no step {name}")
        since = self.mark()
        self._obs = None
        try:
            released: list[HeldMessage] = method(**params) or []
        finally:
            self._obs = None
        sent = self.h.call("sent", since=since)["messages"]
        events = [Event("delivered", m.sender, m.to, _label(m.type, m.tx)) for m in released]
        events += [Event("sent", m["from"], m["to"], _label(m["type"], m.get("tx"))) for m in sent]
        return events

    # Transactions: the client's steps.

    def _tx_start(self, tx: str) -> None:
        """The client begins: once it saw the topology the servers see (a failed server reaches the client
        late when it was the client's discovery router), so its keys map onto the primaries tidemark's do."""
        self.h.call("await_client", timeout_ms=int(1000 * self.timeout))
        self.h.call("tx_begin", tx=tx, writes={str(k): v for k, v in self.tx_keys[tx].items()}, wait_ms=100)
        if not self._await_held(LOCK, tx=tx):
            raise NotPossible(f"the client sent no lock request for {tx}: {self._tx_wait(tx)}")

    def _tx_prepare(self, tx: str) -> None:
        self.h.call("tx_prepare", tx=tx, wait_ms=100)
        if not self._await_held(NEAR_PREPARE, tx=tx):
            raise NotPossible(f"the client sent no prepare request for {tx}")
        if any(m.detail.get("onePhase") for m in self.held(NEAR_PREPARE, tx=tx)):
            self.one_phase.add(tx)

    def _tx_commit(self, tx: str) -> None:
        """The client commits: a finish request to the primary (committed already in one phase)."""
        self.h.call("tx_commit", tx=tx, wait_ms=100)
        if tx in self.one_phase:
            self._tx_wait(tx)
        elif not self._await_held(NEAR_FINISH, tx=tx):
            raise NotPossible(f"the client sent no finish request for {tx}")

    def _tx_rollback(self, tx: str) -> None:
        """The client rolls back: a finish request to the primary, or (its primary gone) nothing to send."""
        if tx in self.decided:
            raise NotPossible(
                f"one-phase-commit: Ignite committed {tx} at its prepare (one primary, at most one backup); "
                "no rollback follows a one-phase prepare in Ignite (its API prepares and commits in one call)"
            )
        self.h.call("tx_rollback", tx=tx, wait_ms=100)
        self._until(
            lambda: (
                bool(self.held(NEAR_FINISH, tx=tx)) or bool(self.h.call("tx_wait", tx=tx, wait_ms=0)["done"])
            ),
            f"the rollback of {tx}",
        )

    # Transactions: the primary's and the backups' steps, each the delivery of one held message.

    def _deliver(self, kind: str, tx: str, to: str) -> list[HeldMessage]:
        released = self._release(kind, tx=tx, to=to)
        if not released:
            raise NotPossible(f"no {kind} of {tx} to {to} is in flight")
        return released

    def _lock(self, tx: str, node: str) -> list[HeldMessage]:
        released = self._deliver(LOCK, tx, node)
        if self._tx_wait(tx)["phase"] != "locked":
            raise NotPossible(f"{node} did not grant the locks of {tx}")
        return released

    def _prepare(self, tx: str, node: str) -> list[HeldMessage]:
        since, backups = self.mark(), self._backups(tx)
        released = self._deliver(NEAR_PREPARE, tx, node)
        if tx in self.one_phase:
            self.decided.add(tx)
        for b in backups:
            self._await_sent(since, DHT_PREPARE, sender=node, to=b, tx=tx)
        if not backups:
            self._await_sent(since, NEAR_PREPARED, sender=node, tx=tx)
        return released

    def _backup_prepare(self, tx: str, node: str) -> list[HeldMessage]:
        since = self.mark()
        released = self._deliver(DHT_PREPARE, tx, node)
        if not self._await_sent(since, DHT_PREPARED, sender=node, tx=tx):
            raise NotPossible(f"{node} did not answer the prepare request of {tx}")
        return released

    def _prepared(self, tx: str, node: str) -> list[HeldMessage]:
        """Every backup's answer reaches the primary, which answers the client: its answer is delivered."""
        released = self._release(DHT_PREPARED, tx=tx, to=node)
        if not self._await_held(NEAR_PREPARED, sender=node, tx=tx):
            raise NotPossible(f"{node} did not finish preparing {tx}")
        released += self._release(NEAR_PREPARED, tx=tx)
        self._tx_wait(tx)
        return released

    def _commit(self, tx: str, node: str) -> list[HeldMessage]:
        if tx in self.one_phase:
            return []  # committed at prepare: nothing left to deliver
        return self._finish(tx, node)

    def _rollback(self, tx: str, node: str) -> list[HeldMessage]:
        return self._finish(tx, node)

    def _finish(self, tx: str, node: str) -> list[HeldMessage]:
        """The client's finish request reaches the primary, which sends its own to the backups."""
        since, backups = self.mark(), self._backups(tx)
        released = self._deliver(NEAR_FINISH, tx, node)
        for b in backups:
            self._await_sent(since, DHT_FINISH, sender=node, to=b, tx=tx)
        if not backups:
            self._tx_wait(tx)
        return released

    def _backup_commit(self, tx: str, node: str) -> list[HeldMessage]:
        return [] if tx in self.one_phase else self._backup_finish(tx, node)

    def _backup_rollback(self, tx: str, node: str) -> list[HeldMessage]:
        return self._backup_finish(tx, node)

    def _backup_finish(self, tx: str, node: str) -> list[HeldMessage]:
        """The backup finishes: its answer arrives, or (its primary gone, nobody to answer) its transaction
        is committed or rolled back. Ignite shows the transaction finished a moment before it applied its
        counters (`rollbackRemoteTx`: the transaction manager's history first), and answers after both: the
        answer is waited for while the primary runs, at most FINISH_GRACE once the state is final."""
        since = self.mark()
        released = self._deliver(DHT_FINISH, tx, node)
        primary, final_at = released[0].sender, None

        def finished() -> bool:
            nonlocal final_at
            if self.h.call("sent", since=since, type=DHT_FINISHED, tx=tx)["messages"]:
                return True
            view = self.observe(entries=False).nodes.get(node)
            if view is not None and view.txs.get(tx) not in FINISHED_TX:
                return False
            final_at = final_at or time.monotonic()
            return not self._running(primary) or time.monotonic() > final_at + FINISH_GRACE

        self._until(finished, f"{node} finishing {tx}")
        return released

    def _rolled_back(self, tx: str, node: str) -> None:
        """The primary ends its rollback once its backups answered: Ignite does it by itself."""
        self._tx_wait(tx)

    def _recover(self, tx: str) -> list[HeldMessage]:
        """Tx recovery: the surviving servers' recovery requests are delivered until none holds tx open."""
        released: list[HeldMessage] = []

        def finished() -> bool:
            released.extend(self._release(RECOVERY, tx=tx))
            obs = self.observe(entries=False)
            return all(v.txs.get(tx, "COMMITTED") in FINISHED_TX for v in obs.nodes.values())

        self._until(finished, f"the recovery of {tx}")
        return released

    # Failures and topology changes.

    def _node_fail(self, node: str) -> None:
        if not self._running(node) and node in self.observe(entries=False).starting:
            # The name of the known difference first: a walk that stops here stopped after it.
            raise NotPossible(
                f"restart-joins: {node} is still starting (Ignite joins a server as it starts, and its join "
                "exchange is held); the harness fails running servers only"
            )
        self.h.call("fail", node=node)

    def _restart(self, node: str) -> None:
        """The server starts from its persistence and joins: done once it recovered its copies from its WAL
        and entered its join exchange (whose single message is held)."""
        self.h.call("restart", node=node, wait_ms=500)

        def joining() -> bool:
            obs = self.observe(entries=False)
            view = obs.starting.get(node)
            return node in obs.nodes or (view is not None and bool(view.pending))

        self._until(joining, f"{node}'s start")

    def _seen(self, node: str) -> bool:
        obs = self.observe(entries=False)
        return node in obs.nodes or obs.starting.get(node) is not None

    def _join(self, node: str) -> None:
        """Ignite joined the server when it started: nothing is left to do but to see it."""
        self._until(lambda: self._seen(node), f"{node} joining")

    def _baseline_change(self) -> None:
        """The operator sets the baseline to the running servers: its exchange starts (and may be held).
        Ignite refuses the change while a state change (an earlier baseline change) is still in progress."""
        try:
            done = self.h.call("baseline", wait_ms=500)["done"]
        except IgniteError as error:
            if "another state change operation is currently in progress" not in str(error):
                raise
            raise NotPossible(
                "baseline-in-progress: Ignite refuses a baseline change while the previous one's exchange is "
                "open"
            ) from error
        if not done:
            self._until(
                lambda: any(v.pending for v in self.observe(entries=False).nodes.values()),
                "the baseline change's exchange",
            )

    def _activate(self) -> None:
        """Ignite activates a cluster by itself once every baseline server is back after a total outage
        (the activation's exchange, which the harness holds like any other): done when it started."""
        if not self._activating(self.observe(entries=False)):
            raise NotPossible(
                "the cluster is active, or a baseline server is not back (Ignite activates by itself)"
            )
        self._until(
            lambda: any("activate" in v.pending for v in self.observe(entries=False).nodes.values()),
            "the activation's exchange",
        )

    @staticmethod
    def _activating(obs: Observation) -> bool:
        """Every baseline server is back (none down) and the cluster is inactive or its activation pending."""
        views = list(obs.nodes.values())
        return bool(views) and not obs.down and any(not v.active or "activate" in v.pending for v in views)

    def _checkpoint(self, node: str) -> None:
        self.h.call("checkpoint", nodes=[node])

    def _truncate_wal(self, node: str) -> None:
        self.h.call("truncate_wal", node=node)

    # The exchange.

    def _send_single(self, node: str) -> list[HeldMessage]:
        """The server's single message reaches the coordinator, if it sends one: the coordinator's own is
        local, and Ignite's PME-free switch (a baseline server left) exchanges no messages. Where tidemark
        merged two exchanges and Ignite finished the first (its full message to this server held), the
        server sends its single for the second only once that full message arrived: it is delivered."""
        released: list[HeldMessage] = []
        grace = time.monotonic() + 1.0

        def sent() -> bool:
            released.extend(self._release(SINGLE, sender=node))
            if any(m.type == SINGLE for m in released):
                return True
            view = self.observe(entries=False)
            me = view.nodes.get(node) or view.starting.get(node)
            if (me is not None and me.coordinator == node) or self.settled(node):
                return True
            if time.monotonic() > grace:
                released.extend(self._release(FULL, to=node))
            return False

        self._until(sent, f"{node}'s single message")
        return released

    def _full_message(self, node: str) -> list[HeldMessage]:
        """The coordinator's full message reaches every server; done when every server finished. A single
        message sent again meanwhile (Ignite asks a joining server for it once more) is delivered too."""
        released: list[HeldMessage] = []

        def finished() -> bool:
            released.extend(self._release(SINGLE, to=node) + self._release(FULL, sender=node))
            obs = self.observe(entries=False)
            return all(self.settled(n) for n in obs.nodes) and not obs.starting

        self._until(finished, f"the exchange {node} coordinates")
        return released

    def _exchange(self) -> list[HeldMessage]:
        """Protocol 2pc's atomic exchange: every held single and full message until every server finished."""
        released: list[HeldMessage] = []

        def finished() -> bool:
            released.extend(self._release(SINGLE) + self._release(FULL))
            return all(self.settled(n) for n in self.observe(entries=False).nodes)

        self._until(finished, "the exchange")
        return released

    # Rebalancing.

    def _rebalanced(self, node: str, part: int) -> bool:
        view = self.observe(entries=False).nodes.get(node)
        copy = view.partitions.get(part) if view else None
        return copy is None or (copy.state == "OWNING" and view is not None and view.rebalance_done)

    def _supply(self, node: str, part: int, peer: str) -> None:
        """A supplier answers the demand with a batch (Ignite sends it by itself; it is held). Ignite elects
        the supplier itself: the batch may come from another owner than `node` (the demand says which)."""
        self._until(
            lambda: bool(self.held(SUPPLY, to=peer)) or self._rebalanced(peer, part),
            f"a supply to {peer}",
        )

    def _rebalance(self, node: str, part: int) -> list[HeldMessage]:
        """The demander applies the batches held for it; done at the next batch or when its copy owns. A
        copy that owns ends its rebalancing with a late affinity switch, which the coordinator starts once
        it learns of the copy's new state: a short grace lets it begin, as it would before any next step."""
        released = self._release(SUPPLY, to=node)
        self._until(
            lambda: bool(self.held(SUPPLY, to=node)) or self._rebalanced(node, part),
            f"{node} applying its supply",
        )
        if not self.held(SUPPLY, to=node):
            grace = time.monotonic() + AFFINITY_GRACE
            while time.monotonic() < grace and not any(
                "affinity" in v.pending for v in self.observe(entries=False).nodes.values()
            ):
                time.sleep(POLL)
        return released

    def _evict(self, node: str, part: int) -> None:
        """Ignite clears a RENTING copy by itself once it is no longer needed."""

        def gone() -> bool:
            view = self.observe(entries=False).nodes.get(node)
            copy = view.partitions.get(part) if view else None
            return copy is None or copy.state == "EVICTED"

        self._until(gone, f"the eviction of {node}'s copy of partition {part}")

    # --- is a step possible now? -------------------------------------------------------------------------

    def allows(self, name: str, **params: Any) -> bool:
        obs = self.observe(entries=False)
        tx, node = params.get("tx"), params.get("node")
        receiver = {
            "Lock": LOCK,
            "Prepare": NEAR_PREPARE,
            "BackupPrepare": DHT_PREPARE,
            "Commit": NEAR_FINISH,
            "Rollback": NEAR_FINISH,
            "BackupCommit": DHT_FINISH,
            "BackupRollback": DHT_FINISH,
        }
        if name in receiver:
            return bool(self.held(receiver[name], tx=tx, to=node))
        if name == "TxStart":
            part = key_partition(min(self.tx_keys[str(tx)]), self.partitions)
            return all(self.settled(n) and v.active and part not in v.lost for n, v in obs.nodes.items())
        if name == "Recover":
            return any(v.txs.get(str(tx), "COMMITTED") not in FINISHED_TX for v in obs.nodes.values())
        if name == "SendSingle":
            return self._await_held(SINGLE, 1.0, sender=node)
        if name == "TruncateWal":
            return self._truncatable(str(node), obs)
        if name in ("NodeFail", "Checkpoint"):
            return node in obs.nodes
        if name == "Restart":
            return node in obs.down
        if name == "Activate":
            return self._activating(obs)
        return True

    def _truncatable(self, node: str, obs: Observation) -> bool:
        """Something to give up (history below an OWNING copy's LWM) that no exchange or rebalancing has
        reserved (Ignite's own WAL reservation)."""
        view = obs.nodes.get(node)
        if view is None:
            return False
        copies = view.partitions.items()
        behind = any(c.state == "OWNING" and view.history.get(p, 0) < c.lwm for p, c in copies)
        return behind and not self.h.call("truncate_wal", node=node, dry=True)["reserved"]


def _label(kind: str, tx: str | None) -> str:
    return kind + (f" {tx}" if tx else "")
