"""Where real Apache Ignite 2.x and tidemark's implementation are known to differ, and why.

Each entry of KNOWN is a behaviour of Ignite that tidemark's model leaves out or places at another moment,
with its verdict (docs/real-ignite.md has the table): a difference between the two after a step is
explained when one of them accounts for it (`explain`), and is a finding otherwise. The predicates look at
both observations (conformance/scenarios/compare.py) and at what the harness knows of the run (which
transactions Ignite committed in one phase).
"""

from __future__ import annotations

import re
from typing import Any

from tidemark.conformance.scenarios.adapters.base import System

KNOWN: dict[str, str] = {
    "backup-hwm": "A backup's HWM: Ignite moves a copy's reserved counter on the primary (reserve) and at "
    "exchanges and restarts; tidemark starts every owner at HWM = LWM, as after a restart, and raises it at "
    "every full message. Nothing reads a backup's HWM before it is primary, which takes an exchange. "
    "Verdict: tidemark simplifies (no effect on what is stored).",
    "one-phase-commit": "Ignite commits a transaction that maps to one primary and at most one backup in one "
    "phase: the backup commits on the prepare request, the primary on the backup's answer, and no finish "
    "request is sent; the articles and tidemark always run both phases. The values agree again once "
    "tidemark's commit is delivered. When the primary leaves before its answer reaches the client, the "
    "client keeps the transaction PREPARED for a check of its backup at the application's commit, where "
    "tidemark's recovery rolls back a transaction the client never decided (neither acknowledged it; "
    "the client rolls it back instead when it loses every server first). Verdict: the articles simplify.",
    "pme-free-switch": "When a baseline server leaves, Ignite (2.8+) switches to the new topology without "
    "single or full messages (the PME-free switch): each survivor finalizes its counters (closes its gaps) "
    "as soon as its own partition release completes and takes the new version and owner lists at once, "
    "while tidemark finalizes in each server's SendSingle and switches at the FullMessage. Counters, "
    "versions and owner lists agree once tidemark's exchange is done. Verdict: the articles simplify "
    "(the exchange they describe is the one of joins and baseline changes).",
    "rollback-at-once": "Ignite's primary shows a transaction ROLLED_BACK as soon as the client's rollback "
    "reaches it, its finish requests to the backups still in flight, and closes the transaction's counter "
    "range (its LWM moves on) once the backups answered, by itself; tidemark's primary is rolling back "
    "until its RolledBack step, which closes the range. State and counter agree once tidemark's RolledBack "
    "is taken. Verdict: tidemark's step granularity (the range holds no entries: nothing stored differs).",
    "baseline-in-progress": "Ignite refuses a baseline change (a cluster state change) while an earlier "
    'one is in progress, its exchange still open ("another state change operation is currently in '
    'progress"); tidemark merges the new baseline event into the pending exchange. A walk that takes the '
    "second change stops there. Verdict: tidemark's model allows more (the refused change stores nothing).",
    "client-fails-fast": "Ignite's client fails a transaction whose primary left while it was preparing (the "
    "application then closes it: rolled back), and the backups' tx recovery learns that from the client; "
    "tidemark's client waits for the recovery step. Same outcome, earlier. Ignite's client acts when it "
    "processes the node-left event, asynchronously: right after the failure it may still show the "
    "transaction preparing where tidemark's recovery already rolled it back (found by the walk campaign). "
    "Verdict: tidemark simplifies.",
    "affinity-switch": "Ignite ends the rebalancing of every server added to an assignment with a late "
    "affinity switch (a minor topology version and its exchange), even when no primary changes; tidemark "
    "switches only when the owner order changes. Topology versions, pending events and, during the switch, "
    "owner lists differ. Verdict: tidemark simplifies (no counter or data changes at that exchange).",
    "rebalancing": "A rebalancing in flight: Ignite clears a copy before a full rebalance and sizes supply "
    "batches in bytes (the whole partition in one batch unless batch_size is 1), while tidemark keeps the "
    "copy's entries during a full rebalance and sends batch_size entries per batch. The copy's data, counter "
    "and state differ until both finished. Verdict: tidemark simplifies; see "
    "docs/findings/full-rebalance-keeps-entries.md for the state it leaves.",
    "wal-reservation": "Ignite reserves a supplier's WAL history while an exchange may ask for it and while "
    "a historical rebalancing reads it; a full rebalancing reads pages, so the supplier may truncate its WAL "
    "meanwhile. tidemark refuses TruncateWal while the server supplies any rebalancing. Verdict: tidemark "
    "is stricter than Ignite (no effect on what is stored).",
    "prepared-at-once": "A primary with no backup left to answer is PREPARED in Ignite as soon as it "
    "prepared locally; tidemark's primary waits for its Prepared step (which has no answer to collect). "
    "Verdict: tidemark's step granularity.",
    "empty-copy": "A copy that never held an update has no partition file in Ignite: a server restarting "
    "without one shows no copy (no counter) until its exchange creates it, where tidemark keeps an empty "
    "copy with counter 0 on the server's disk. Verdict: tidemark simplifies (no update is involved).",
    "outage-topology": "After a total outage Ignite's discovery starts a new topology history: the first "
    "server back is version 1 again, and the cluster stays inactive, with no affinity assignment, until the "
    "whole baseline is back and it activates (by itself). tidemark keeps one version sequence across the "
    "outage and the owner lists of its last exchange. While inactive, Ignite shows each restored copy "
    "OWNING (it keeps no LOST mark across the restart; the activation exchange decides afresh), where "
    "tidemark's restarted copy keeps the state its disk holds until that exchange. Topology versions from "
    "the outage on, and owner lists and copy states while the cluster is inactive, differ. Verdict: the "
    "model's convention (versions are labels; nothing runs on an inactive cluster; the activation exchange "
    "decides the same copies on both).",
    "evict-at-once": "Ignite clears a copy that is no longer assigned and supplies nothing as soon as its "
    "exchange lets it go (a MOVING copy that leaves the assignment; the copy of a server that restarts "
    "outside the baseline, already while it joins): with small partitions the copy is gone before the next "
    "observation. tidemark keeps such a copy RENTING until its Evict step, which a scenario may take later "
    "or never; a RENTING copy assigned again restarts MOVING from counter 0 either way (findings/"
    "moving-renting-moving.md), so the rebalancing and the data after it agree. Verdict: tidemark allows "
    "more interleavings (an eviction that takes longer: a large partition).",
    "history-size": "Ignite's coordinator judges every history supplier of a partition by one size: that of "
    "the first owner at the maximum counter in its messages (remote nodes before its own; "
    "GridDhtPartitionsExchangeFuture's CounterWithNodes.size), and rebalances from history only when the "
    "missing updates are fewer than that size; tidemark judges each supplier by its own size. They differ "
    "only when owners at the same counter hold different data (copies that already diverged): Ignite may "
    "then rebalance in full where tidemark takes the history of a larger owner. Verdict: tidemark "
    "simplifies (the same supplier's data arrives either way).",
    "supplier-choice": "Ignite's coordinator elects the supplier of a historical rebalancing among the "
    "owners with the highest counter whose WAL reaches back far enough (any of them); tidemark takes the "
    "oldest. Verdict: tidemark simplifies (every candidate holds the same updates).",
    "restart-joins": "tidemark's Restart rebuilds a server from its disk without joining it (protocol pme "
    "joins it at the Join step, protocol 2pc never); Ignite joins a server as it starts (the harness holds "
    "its join exchange open). Ignite's topology counts the join from the Restart on, and with protocol 2pc "
    "the copy is still OWNING where tidemark shows the state the join would give it; with protocol pme "
    "an exchange that runs before tidemark's Join completes Ignite's join, so the server is already "
    "running (and may be rebalanced). Verdict: the model's convention (walks join at once).",
}

_COPY = re.compile(r"^(?P<node>\w+)\.p(?P<part>\d+)\.(?P<field>\w+)$")
_NODE = re.compile(r"^(?P<node>\w+)\.(?P<field>data|txs|state)(\..*)?$")


def explain(
    step: int | None, path: str, impl: dict[str, Any], real: dict[str, Any], system: System
) -> str | None:
    """The KNOWN entry that accounts for this difference, or None."""
    copy, on_node = _COPY.match(path), _NODE.match(path)
    match = copy or on_node
    node = match.group("node") if match else None
    part = int(copy.group("part")) if copy else None
    field = match.group("field") if match else None
    topology = path.startswith("topology.")
    restarted = [n for n in system.servers if impl[n].get("state") == "restarted"]
    joining = set(getattr(system, "starting_servers", lambda: [])())
    if (topology or (field == "state" and part is not None)) and _after_outage(path, real, system):
        return "outage-topology"
    if field == "state" and part is None:  # a server's state: Ignite's server runs as soon as it restarted
        return "restart-joins" if node in restarted and real.get(node, {}).get("state") == "alive" else None
    if (topology and restarted) or node in restarted:
        return "restart-joins"
    if field == "state" and node in joining:
        return "restart-joins"  # a joining copy shows its own disk's state until its exchange ends
    if part is not None and _empty_copy(node, part, impl, real):
        return "empty-copy"
    if (
        field == "hwm"
        and part is not None
        and not _primary(node, part, impl)
        and not _primary(node, part, real)
    ):
        return "backup-hwm"
    if (
        node is not None
        and field in ("data", "txs", "lwm", "items", "hwm")
        and _one_phase(node, impl, real, system)
    ):
        return "one-phase-commit"
    if _left_pending(impl) and (topology or field in ("lwm", "hwm", "items")):
        return "pme-free-switch"
    tx = path.rsplit(".", 1)[1]
    states = tuple(seen.get(node or "", {}).get("txs", {}).get(tx) for seen in (impl, real))
    if field == "txs" and states == ("preparing", "prepared"):
        return "prepared-at-once"
    if node is not None and field in ("txs", "lwm", "items") and _rolled_back_at_once(node, part, impl, real):
        return "rollback-at-once"
    if path.startswith(f"{system.client}."):
        tx = path.split(".", 1)[1]
        theirs, ours = impl[system.client].get(tx), real[system.client].get(tx)
        if ours == "rolledBack" and theirs in ("locking", "preparing"):
            return "client-fails-fast"
        if theirs == "rolledBack" and ours == "preparing" and tx in _one_phase_txs(system):
            return "one-phase-commit"
        # the reverse, while a server is down: Ignite's client has not processed the node-left event yet
        down = any(real.get(n, {}).get("state") == "down" for n in system.servers)
        if down and theirs == "rolledBack" and ours in ("locking", "preparing"):
            return "client-fails-fast"
    if (
        node is not None
        and field in ("data", "lwm", "hwm", "items", "state")
        and _evicted_at_once(node, part, impl, real)
    ):
        return "evict-at-once"
    if (
        node is not None
        and field in ("data", "lwm", "hwm", "items", "state")
        and _moving(node, part, impl, real)
    ):
        return "rebalancing"
    if topology and _affinity_switch(path, impl, real):
        return "affinity-switch"
    return None


def _after_outage(path: str, real: dict[str, Any], system: System) -> bool:
    """Every server was down earlier in the run, and this is a version, or Ignite's cluster is still inactive
    (no owner lists) and this is an owner list or a copy's state."""
    if not getattr(system, "outage", False):
        return False
    return path in ("topology.version", "topology.ready") or not real["topology"]["owners"]


def _primary(node: str | None, part: int, seen: dict[str, Any]) -> bool:
    owners = seen["topology"]["owners"].get(str(part)) or []
    return bool(owners) and owners[0] == node


def _one_phase(node: str, impl: dict[str, Any], real: dict[str, Any], system: System) -> bool:
    """A transaction Ignite commits in one phase is further on this server than in tidemark, which has not
    decided it yet: its state there, or its writes (which stay when the server fails before tidemark's
    model commits it). A transaction tidemark rolled back is no such case, unless Ignite committed it: in
    one phase the client's prepare is its commit, so Ignite's primary commits once its backup answered or
    left, where tidemark's recovery rolls back a transaction the client never decided (neither side
    acknowledged it: either outcome is allowed)."""
    one_phase = _one_phase_txs(system)
    writes: dict[str, dict[int, str]] = getattr(system, "tx_keys", {})
    theirs, ours = impl.get(node, {}), real.get(node, {})
    for tx in one_phase:
        state, real_state = theirs.get("txs", {}).get(tx), ours.get("txs", {}).get(tx)
        written = [(str(k), v) for k, v in writes.get(tx, {}).items()]
        if impl[system.client].get(tx) == "rolledBack":
            unacknowledged = real[system.client].get(tx) != "committed"
            if unacknowledged and (real_state == "committed" or _wrote(ours, written, theirs)):
                return True
            continue
        if state not in ("committed", "rolledBack") and real_state not in (None, state):
            return True
        if _wrote(ours, written, theirs):
            return True
    return False


def _one_phase_txs(system: System) -> set[str]:
    one_phase: set[str] = getattr(getattr(system, "driver", None), "one_phase", set())
    return one_phase


def _wrote(ours: dict[str, Any], written: list[tuple[str, str]], theirs: dict[str, Any]) -> bool:
    """Ignite's server holds a write of the transaction that tidemark's does not."""
    return any(ours.get("data", {}).get(k) == v != theirs.get("data", {}).get(k) for k, v in written)


def _rolled_back_at_once(node: str, part: int | None, impl: dict[str, Any], real: dict[str, Any]) -> bool:
    """A transaction Ignite rolled back on this server is still rolling back in tidemark (and for a
    counter: Ignite's copy is further on, its range closed)."""
    theirs, ours = impl.get(node, {}).get("txs", {}), real.get(node, {}).get("txs", {})
    if not any(state == "rollingBack" and ours.get(tx) == "rolledBack" for tx, state in theirs.items()):
        return False
    if part is None:
        return True
    a, b = (seen[node].get(f"p{part}", {}).get("lwm") for seen in (impl, real))
    return a is not None and b is not None and b > a


def _empty_copy(node: str | None, part: int, impl: dict[str, Any], real: dict[str, Any]) -> bool:
    """One side shows no copy (or no counter) where the other's copy is empty: counter 0, no items."""
    a, b = (seen.get(node or "", {}).get(f"p{part}", {}) for seen in (impl, real))
    empty = [c for c in (a, b) if c.get("lwm") == 0 and not c.get("items")]
    missing = [c for c in (a, b) if "lwm" not in c]
    return bool(empty) and bool(missing) and not impl.get(node or "", {}).get("data")


def _left_pending(impl: dict[str, Any]) -> bool:
    """tidemark's exchange for a server that left is not done yet (2pc: any exchange is due)."""
    topology = impl["topology"]
    return topology["version"] != topology["ready"] and (
        not topology["pending"] or "left" in topology["pending"]
    )


def _evicted_at_once(node: str, part: int | None, impl: dict[str, Any], real: dict[str, Any]) -> bool:
    """tidemark's server keeps a copy (RENTING, or its disk's copy while it joins) of a partition whose owner
    list does not hold it, where Ignite's shows none: cleared already (for data: such a copy of any
    partition)."""
    parts = [part] if part is not None else _parts(node, impl)
    for p in parts:
        theirs, ours = (seen.get(node, {}).get(f"p{p}", {}) for seen in (impl, real))
        owners = impl["topology"]["owners"].get(str(p)) or []
        kept = theirs.get("state") == "RENTING" or (theirs.get("state") == "OWNING" and node not in owners)
        if kept and node not in owners and ours.get("state", "EVICTED") == "EVICTED":
            return True
    return False


def _parts(node: str, seen: dict[str, Any]) -> list[int]:
    return [int(k[1:]) for k in seen.get(node, {}) if re.fullmatch(r"p\d+", k)]


def _moving(node: str, part: int | None, impl: dict[str, Any], real: dict[str, Any]) -> bool:
    parts = [part] if part is not None else _parts(node, impl)
    return any(
        seen.get(node, {}).get(f"p{p}", {}).get("state") == "MOVING" for p in parts for seen in (impl, real)
    )


def _affinity_switch(path: str, impl: dict[str, Any], real: dict[str, Any]) -> bool:
    """Ignite's switch exchange is pending or done where tidemark has none, or a MOVING copy is placed."""
    a, b = impl["topology"], real["topology"]
    if path == "topology.coordinator":  # the switch elects no coordinator
        return False
    if "affinity" in a["pending"] or "affinity" in b["pending"]:
        return True
    if path.startswith("topology.owners"):
        return any(
            v.get("state") == "MOVING"
            for seen in (impl, real)
            for n, view in seen.items()
            if n != "topology" and isinstance(view, dict)
            for v in view.values()
            if isinstance(v, dict)
        )
    majors = (a["version"].split(".")[0], a["ready"].split(".")[0])
    return majors == (b["version"].split(".")[0], b["ready"].split(".")[0])
