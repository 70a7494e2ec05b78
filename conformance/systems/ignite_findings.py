"""The reproductions behind docs/findings/: each runs one exact sequence on a real Ignite cluster.

`python -m tidemark.conformance.systems.ignite_findings NAME... [--ignite-version V] [--out DIR]` runs the
named
reproductions (default: all) and writes, per finding, a JSON record: every step with what each server
showed after it (state, LWM, HWM, gaps, entries of partition 0), the demand messages (historical range or
full), idle_verify's verdict and the Ignite log lines that matter. The `checks` of a record are the facts
its finding's verdict rests on; `tests/test_ignite_findings.py` asserts them on fresh runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.systems.ignite import DEFAULT_VERSION, IgniteHarness, Observation

Record = dict[str, Any]


class Run:
    """One reproduction: the harness plus the record of every step and what followed it."""

    def __init__(self, harness: IgniteHarness, name: str) -> None:
        self.h = harness
        self.record: Record = {
            "finding": name,
            "ignite": harness.info.get("ignite"),
            "steps": [],
            "checks": {},
        }
        self._mark = 0
        self._t0 = time.monotonic()

    def step(
        self, label: str, action: Callable[[], Any] | None = None, *, observe: bool = True
    ) -> Observation | None:
        result = action() if action is not None else None
        entry: Record = {"step": label, "t": round(time.monotonic() - self._t0, 1)}
        if result not in (None, {}):
            entry["result"] = json.loads(json.dumps(result, default=_plain))
        obs = None
        if observe:
            obs = self.h.observe()
            entry["copies"] = summary(obs)
            entry["coordinator"] = {n: v.coordinator for n, v in obs.nodes.items()}
            entry["topVer"] = {n: v.top_ver for n, v in obs.nodes.items()}
        self.record["steps"].append(entry)
        return obs

    def log(self, label: str, pattern: str, limit: int = 20) -> list[str]:
        lines, self._mark = self.h.logs(pattern, since=self._mark, limit=limit)
        self.record.setdefault("logs", {})[label] = [line[:600] for line in lines]
        return lines

    def check(self, name: str, value: bool) -> None:
        self.record["checks"][name] = bool(value)


def _plain(value: Any) -> Any:
    return value.model_dump(by_alias=True) if isinstance(value, BaseModel) else str(value)


def summary(obs: Observation, part: int = 0) -> dict[str, Any]:
    """Partition `part` on every running server, in one line each."""
    out: dict[str, Any] = {}
    for node, view in sorted(obs.nodes.items()):
        c = view.partitions.get(part)
        if c is None:
            out[node] = "no copy"
            continue
        gaps = f" gaps={[list(g) for g in c.gaps]}" if c.gaps else ""
        out[node] = (
            f"{c.state} lwm={c.lwm} hwm={c.hwm} highest={c.highest} init={c.initial}{gaps} "
            f"entries={dict(sorted(c.entries.items()))}"
        )
    for node in obs.down:
        out[node] = "down"
    return out


def entries(obs: Observation | None, node: str, part: int = 0) -> dict[int, str | None]:
    c = obs.copy_of(node, part) if obs else None
    return dict(c.entries) if c else {}


# --- a. full rebalance and key 0 ------------------------------------------------------------------------


def key_zero(h: IgniteHarness) -> Record:
    """Two servers own partition 0 (backups 1, threshold at Ignite's default 500, so every rebalance is full).
    s2 misses updates of keys 0 and 4, restarts and is rebalanced in full; then a new server s3 joins and the
    baseline change gives it a new copy, also rebalanced in full. Both must end with key 0's latest value."""
    r = Run(h, "key-zero-full-rebalance")
    h.start(2, partitions=1, backups=2)
    r.step("put keys 0..3", lambda: h.call("put", writes={str(k): f"a{k}" for k in range(4)}))
    r.step("NodeFail s2", lambda: h.step("NodeFail", node="s2"))
    h.await_exchange()
    r.step("put key 0 = b0, key 4 = b4", lambda: h.call("put", writes={"0": "b0", "4": "b4"}))
    r.step("Restart s2 (joins)", lambda: h.step("Restart", node="s2"))
    after = r.step("rebalanced", lambda: h.await_rebalance())
    r.check("s2 rebalanced in full", any(d.demander == "s2" and 0 in d.full for d in h.demands()))
    r.check("s2 has key 0 = b0", entries(after, "s2").get(0) == "b0")
    r.step("Join s3", lambda: h.step("Join", node="s3"))
    r.step("BaselineChange s1,s2,s3", lambda: h.step("BaselineChange"))
    final = r.step("rebalanced", lambda: h.await_rebalance())
    r.check("s3 rebalanced in full", any(d.demander == "s3" and 0 in d.full for d in h.demands()))
    r.check("s3 has key 0 = b0", entries(final, "s3").get(0) == "b0")
    verdict = h.idle_verify()
    r.record["idle_verify"] = verdict.text
    r.check("idle_verify clean", not verdict.has_conflicts)
    r.record["demands"] = [d.model_dump(by_alias=True) for d in h.demands()]
    r.log("rebalance", r"Starting rebalance routine|Completed rebalance|rebalanc.*(full|hist)", 30)
    return r.record


# --- e. WAL rebalance threshold: strict or not ------------------------------------------------------------


def threshold(h: IgniteHarness, value: int) -> Record:
    """Partition 0 holds 4 entries on s1 and s2 (counters 1..4), checkpointed. s2 fails, key 1 is overwritten
    (counter 5; still 4 entries), s2 restarts. With the threshold at `value`, is s2 rebalanced from the WAL
    (historical, counters 4..5) or in full?"""
    r = Run(h, f"wal-threshold-{value}")
    h.start(2, partitions=1, backups=1, wal_rebalance_threshold=value)
    r.step("put keys 0..3", lambda: h.call("put", writes={str(k): f"a{k}" for k in range(4)}))
    r.step("Checkpoint s1, s2", lambda: h.call("checkpoint"), observe=False)
    r.step("NodeFail s2", lambda: h.step("NodeFail", node="s2"))
    h.await_exchange()
    r.step("put key 1 = b1", lambda: h.call("put", writes={"1": "b1"}))
    r.step("Restart s2", lambda: h.step("Restart", node="s2"))
    final = r.step("rebalanced", lambda: h.await_rebalance())
    demands = [d for d in h.demands() if d.demander == "s2"]
    r.record["demands"] = [d.model_dump(by_alias=True) for d in demands]
    size = final.copy_of("s1").size if final and final.copy_of("s1") else -1  # type: ignore[union-attr]
    r.record["supplier_size"] = size
    r.check("historical", any(d.historical for d in demands))
    r.check("full", any(d.full for d in demands))
    r.check("s2 has key 1 = b1", entries(final, "s2").get(1) == "b1")
    r.log("history", r"reserv|historical|WAL rebalance|Starting rebalance routine", 30)
    return r.record


# --- g. the coordinator after the oldest server restarts ------------------------------------------------


def coordinator(h: IgniteHarness) -> Record:
    """s1, the oldest server, fails and restarts: who coordinates the exchanges afterwards?"""
    r = Run(h, "coordinator-after-restart")
    h.start(3, partitions=1, backups=2)
    r.step("started")
    r.step("NodeFail s1", lambda: h.step("NodeFail", node="s1"))
    h.await_exchange()
    r.step("Restart s1 (joins)", lambda: h.step("Restart", node="s1"))
    final = r.step("rebalanced", lambda: h.await_rebalance())
    assert final is not None
    r.record["order"] = {n: v.order for n, v in final.nodes.items()}
    r.check("coordinator is s2 everywhere", {v.coordinator for v in final.nodes.values()} == {"s2"})
    r.check(
        "s1 joined last", final.nodes["s1"].order > max(v.order for n, v in final.nodes.items() if n != "s1")
    )
    r.log("exchange", r"finishExchangeOnCoordinator|Coordinator received single message", 10)
    return r.record


def roles(obs: Observation | None, part: int = 0) -> list[str]:
    """The owners of `part` in the ready assignment, primary first."""
    assert obs is not None
    return list(next(iter(obs.nodes.values())).assignment[part])


# --- b. a rolled-back counter range reused after two failures -------------------------------------------


def rollback_reuse(h: IgniteHarness) -> Record:
    """3 servers, 2 backups. t1 (keys 2, 3: counters 3..4) is prepared everywhere, then rolled back by the
    client; backup B1 applies the rollback, B2 has not received it when the primary and then B1 fail. Does the
    survivor hand out 3..4 again to t2, and does B1, back with LWM 4 from its rollback record, miss t2?"""
    r = Run(h, "rollback-range-reused")
    h.start(3, partitions=1, backups=2)
    first = r.step("put keys 0, 1", lambda: h.call("put", writes={"0": "a0", "1": "a1"}))
    primary, b1, b2 = roles(first)
    r.record["roles"] = {"primary": primary, "B1": b1, "B2": b2}
    r.step("TxStart t1 keys 2, 3", lambda: h.step("TxStart", tx="t1", keys={2: "t1", 3: "t1"}))
    r.step("TxPrepare t1", lambda: h.step("TxPrepare", tx="t1"))
    h.hold_step("BackupRollback", tx="t1", node=b2)
    r.step("TxRollback t1 (finish to B2 held)", lambda: h.step("TxRollback", tx="t1", wait_ms=2000))
    r.step(f"NodeFail {primary} (primary)", lambda: h.step("NodeFail", node=primary))
    r.step(f"NodeFail {b1} (B1)", lambda: h.step("NodeFail", node=b1))
    survivor = r.step("exchanges done", lambda: h.await_exchange())
    r.log("recovery", r"recover|Recover|finalize|rollback|Rollback", 20)
    r.step("TxStart t2 keys 2, 3", lambda: h.step("TxStart", tx="t2", keys={2: "t2", 3: "t2"}))
    after_t2 = r.step("TxCommit t2", lambda: h.step("TxCommit", tx="t2"))
    r.step(f"Restart {b1} (joins)", lambda: h.step("Restart", node=b1))
    r.step(f"Restart {primary} (joins)", lambda: h.step("Restart", node=primary))
    final = r.step("rebalanced", lambda: h.await_rebalance())
    verdict = h.idle_verify()
    r.record["idle_verify"] = verdict.text
    r.record["demands"] = [d.model_dump(by_alias=True) for d in h.demands()]
    s2 = survivor.copy_of(b2) if survivor else None
    t2 = after_t2.copy_of(b2) if after_t2 else None
    r.check("survivor LWM 2 after the node-left exchanges", s2 is not None and s2.lwm == 2)
    r.check("t2 took counters 3..4 again", t2 is not None and t2.lwm == 4)
    r.check(
        "B1 has t2's keys at the end", entries(final, b1).get(2) == "t2" and entries(final, b1).get(3) == "t2"
    )
    r.check("idle_verify clean", not verdict.has_conflicts)
    r.log("end", r"inconsisten|Partition states validation|conflict|Starting rebalance routine", 20)
    return r.record


# --- c. a join exchange meets a node-left: is the rejoining copy's hole finalized? ----------------------


def join_with_left(h: IgniteHarness) -> Record:
    """3 servers, 2 backups. B2 commits t2 (counter 4) but not t1 (counter 3): a hole. B2 fails, restarts with
    the hole and joins; its single message of the join exchange is held, and another server F fails before
    the exchange completes. Does the exchange finalize B2's hole (leaving it OWNING without t1's update), or
    is B2 demoted and rebalanced?"""
    r = Run(h, "join-merged-with-left")
    h.start(3, partitions=1, backups=2)
    first = r.step("put keys 0, 1", lambda: h.call("put", writes={"0": "a0", "1": "a1"}))
    primary, b1, b2 = roles(first)
    r.record["roles"] = {"primary": primary, "B1": b1, "B2": b2}
    h.hold_step("BackupCommit", tx="t1", node=b2)
    r.step("TxStart t1 key 2", lambda: h.step("TxStart", tx="t1", keys={2: "t1"}))
    r.step("TxCommit t1 (finish to B2 held)", lambda: h.step("TxCommit", tx="t1", wait_ms=2000))
    r.step("TxStart t2 key 3", lambda: h.step("TxStart", tx="t2", keys={3: "t2"}))
    r.step("TxCommit t2", lambda: h.step("TxCommit", tx="t2"))
    r.step(f"NodeFail {b2} (B2, with the hole)", lambda: h.step("NodeFail", node=b2))
    r.step("exchange done", lambda: h.await_exchange())
    crd = next(iter(h.observe().nodes.values())).coordinator
    f = b1 if b1 != crd else primary
    r.record["roles"].update(coordinator=crd, F=f)
    h.block("GridDhtPartitionsSingleMessage", sender=b2)
    r.step(
        f"Restart {b2} (join exchange; its single message held)",
        lambda: h.step("Restart", node=b2, wait_ms=3000),
    )
    r.step(
        "single message held",
        lambda: h.call("await_held", type="GridDhtPartitionsSingleMessage", wait_ms=20000),
    )
    r.step(f"NodeFail {f} (during the join exchange)", lambda: h.step("NodeFail", node=f))
    h.call("unblock")
    r.step(
        "release the single messages", lambda: h.release(type="GridDhtPartitionsSingleMessage"), observe=False
    )
    r.step("B2 started", lambda: h.call("await_start", node=b2, wait_ms=60000))
    final = r.step("rebalanced", lambda: h.await_rebalance())
    verdict = h.idle_verify()
    r.record["idle_verify"] = verdict.text
    r.record["demands"] = [d.model_dump(by_alias=True) for d in h.demands()]
    r.check("B2 has t1's key 2", entries(final, b2).get(2) == "t1")
    r.check("B2 was rebalanced", any(d.demander == b2 for d in h.demands()))
    r.check("idle_verify clean", not verdict.has_conflicts)
    r.log("exchange", r"[Mm]erg|finishExchangeOnCoordinator|Starting rebalance routine|inconsisten", 30)
    return r.record


# --- d. MOVING -> RENTING -> MOVING --------------------------------------------------------------------


def renting_again(h: IgniteHarness) -> Record:
    """3 servers, 1 backup; partition 0's owners are O1 and O2, X has no copy. O2 fails and the baseline
    becomes {X, O1}: X gets a new MOVING copy, its supply held; keys 4, 5 are written. O2 restarts and joins
    the baseline (O2 outranks X: X leaves the assignment), then O2 fails again and leaves the baseline (X is
    assigned again). Ignite refuses to remove an online node from the baseline, hence the second failure.
    With which counter does X's copy come back, and does it get every entry?"""
    r = Run(h, "moving-renting-moving")
    h.start(3, partitions=1, backups=1)
    first = r.step("put keys 0..3", lambda: h.call("put", writes={str(k): f"a{k}" for k in range(4)}))
    o1, o2 = roles(first)
    x = next(n for n in ("s1", "s2", "s3") if n not in (o1, o2))
    r.record["roles"] = {"O1": o1, "O2": o2, "X": x}
    r.step(f"NodeFail {o2}", lambda: h.step("NodeFail", node=o2))
    h.await_exchange()
    h.block("GridDhtPartitionSupplyMessage", to=x)
    r.step(f"BaselineChange {{{x}, {o1}}}", lambda: h.step("BaselineChange", nodes=[x, o1]))
    r.step("exchange done", lambda: h.await_exchange())
    r.step("put keys 4, 5", lambda: h.call("put", writes={"4": "a4", "5": "a5"}))
    r.step(f"Restart {o2}", lambda: h.step("Restart", node=o2))
    r.step(f"BaselineChange {{{x}, {o1}, {o2}}}", lambda: h.step("BaselineChange", nodes=[x, o1, o2]))
    r.step("exchange done", lambda: h.await_exchange())
    r.step(f"NodeFail {o2} again", lambda: h.step("NodeFail", node=o2))
    h.await_exchange()
    r.step(f"BaselineChange {{{x}, {o1}}} again", lambda: h.step("BaselineChange", nodes=[x, o1]))
    r.step("exchange done", lambda: h.await_exchange())
    h.call("unblock")
    r.step("release supplies to X", lambda: h.release(type="GridDhtPartitionSupplyMessage"), observe=False)
    final = r.step("rebalanced", lambda: h.await_rebalance())
    verdict = h.idle_verify()
    r.record["idle_verify"] = verdict.text
    r.record["demands"] = [d.model_dump(by_alias=True) for d in h.demands()]
    r.check("X has all six keys", sorted(entries(final, x)) == list(range(6)))
    r.check("idle_verify clean", not verdict.has_conflicts)
    r.log("states", r"RENTING|renting|[Ee]vict|Starting rebalance routine|clearing", 40)
    return r.record


# --- f. all owners fail mid-commit, then the cluster is reactivated --------------------------------------


def all_owners_fail(h: IgniteHarness) -> Record:
    """3 servers, 2 backups: every server owns partition 0. t1 (key 2, counter 3) commits on the primary P
    while its finish requests to both backups are held (2PC: with one backup Ignite commits in one
    phase). Then every server stops (a total outage, checkpoints off), all restart and the cluster is
    reactivated."""
    r = Run(h, "all-owners-fail")
    h.start(3, partitions=1, backups=2)
    first = r.step("put keys 0, 1", lambda: h.call("put", writes={"0": "a0", "1": "a1"}))
    p, b1, b2 = roles(first)
    r.record["roles"] = {"P": p, "B1": b1, "B2": b2}
    h.hold_step("BackupCommit", tx="t1", node=b1)
    h.hold_step("BackupCommit", tx="t1", node=b2)
    r.step("TxStart t1 key 2", lambda: h.step("TxStart", tx="t1", keys={2: "t1"}))
    mid = r.step(
        "TxCommit t1 (finish to both backups held)", lambda: h.step("TxCommit", tx="t1", wait_ms=2000)
    )
    r.step("outage: every owner stops", lambda: h.call("outage"))
    for n in (p, b1, b2):
        h.step("Restart", node=n, wait_ms=2000)  # a lone server waits for the others of the baseline
    for n in (p, b1, b2):
        h.call("await_start", node=n, wait_ms=60_000)
    r.step("activate", lambda: h.call("activate"))
    final = r.step("rebalanced", lambda: h.await_rebalance(30_000))
    verdict = h.idle_verify()
    r.record["idle_verify"] = verdict.text
    r.record["demands"] = [d.model_dump(by_alias=True) for d in h.demands()]
    primary_mid = mid.copy_of(p) if mid else None
    r.check("P committed t1 before the outage", primary_mid is not None and primary_mid.lwm == 3)
    # The outage stops servers one by one (by name): a backup still up when P stops commits t1 by tx recovery;
    # one that stopped before P restarts without t1 and must be demoted and rebalanced at the activation.
    stopped_first = min(b1, b2)
    r.check(
        "the backup stopped before P was rebalanced at activation",
        any(d.demander == stopped_first for d in h.demands()),
    )
    r.check("t1's key 2 on every copy at the end", all(entries(final, n).get(2) == "t1" for n in (p, b1, b2)))
    r.check("idle_verify clean", not verdict.has_conflicts)
    r.log("end", r"[Ll]ost|inconsisten|validation|Starting rebalance routine|Failed to update|prepared", 30)
    return r.record


# --- h. a node-left merged into a join exchange leaves the survivors' gaps ---------------------------------


def merged_left_gaps(h: IgniteHarness) -> Record:
    """3 servers, 2 backups. B1 fails and the exchange completes. t1 (key 2, counter 3) is prepared on the
    primary P only (its prepare request to B2 held); t2 (key 3, counter 4) commits on P and B2, so B2 has a
    gap at 3. B1 restarts: its join exchange waits for t1. P fails: the node-left merges into the join
    exchange, which finalizes nothing. Does B2 keep its gap, is B1 (restored with LWM 2, without t2) kept
    OWNING, and does the new primary hand out counter 4 again?"""
    r = Run(h, "merged-left-keeps-gaps")
    h.start(3, partitions=1, backups=2)
    first = r.step("put keys 0, 1", lambda: h.call("put", writes={"0": "a0", "1": "a1"}))
    primary, b1, b2 = roles(first)
    crd = next(iter(h.observe().nodes.values())).coordinator
    r.record["roles"] = {"P": primary, "B1": b1, "B2": b2, "coordinator": crd}
    r.step(f"NodeFail {b1} (B1)", lambda: h.step("NodeFail", node=b1))
    r.step("exchange done", lambda: h.await_exchange())
    h.hold_step("BackupPrepare", tx="t1", node=b2)
    r.step("TxStart t1 key 2", lambda: h.step("TxStart", tx="t1", keys={2: "t1"}))
    r.step("TxCommit t1 (prepare to B2 held)", lambda: h.step("TxCommit", tx="t1", wait_ms=2000))
    r.step("TxStart t2 key 3", lambda: h.step("TxStart", tx="t2", keys={3: "t2"}))
    gap = r.step("TxCommit t2", lambda: h.step("TxCommit", tx="t2"))
    r.step(f"Restart {b1} (join exchange waits for t1)", lambda: h.step("Restart", node=b1, wait_ms=3000))
    r.step(f"NodeFail {primary} (P, during the join exchange)", lambda: h.step("NodeFail", node=primary))
    h.call("unblock")
    r.step(f"{b1} started", lambda: h.call("await_start", node=b1, wait_ms=60000))
    merged = r.step("exchange done", lambda: h.await_exchange())
    r.log(
        "exchange",
        r"Merge exchange future|try merge|finishExchangeOnCoordinator|Failed to update|inconsisten|"
        r"validation has",
        30,
    )
    r.step("TxStart t3 key 4", lambda: h.step("TxStart", tx="t3", keys={4: "t3"}))
    r.step("TxCommit t3", lambda: h.step("TxCommit", tx="t3"))
    r.step("TxStart t4 key 5", lambda: h.step("TxStart", tx="t4", keys={5: "t4"}))
    r.step("TxCommit t4", lambda: h.step("TxCommit", tx="t4"))
    final = r.step("rebalanced", lambda: h.await_rebalance())
    verdict = h.idle_verify()
    r.record["idle_verify"] = verdict.text
    r.record["demands"] = [d.model_dump(by_alias=True) for d in h.demands()]
    before = gap.copy_of(b2) if gap else None
    after = merged.copy_of(b2) if merged else None
    r.check("B2 had a gap at counter 3", before is not None and before.lwm == 2 and bool(before.gaps))
    r.check("B2 keeps the gap after the merged exchange", after is not None and bool(after.gaps))
    r.check("B1 was not rebalanced", not any(d.demander == b1 for d in h.demands()))
    r.check("B1 has t2's key 3 at the end", entries(final, b1).get(3) == "t2")
    r.check("idle_verify clean", not verdict.has_conflicts)
    r.log("end", r"inconsisten|Partition states validation|conflict|Failed to update|Starting rebalance", 20)
    return r.record


# --- i. a total outage leaves a primary's gap: the activation keeps a copy without an update ----------------


def activation_gaps(h: IgniteHarness) -> Record:
    """3 servers, 2 backups. B1 fails and the exchange completes. t1 (key 2, counter 3) is prepared on the
    primary P only (its prepare request to B2 held, no commit decided); t2 (key 3, counter 4) commits on P
    and B2: both have a gap at 3. Then every server stops (B2, then P; tx recovery's messages dropped). The
    model loses t2 on B1 when nothing decides t1 between the two stops (the gap survives the outage and
    hides t2 from the activation): does Ignite decide t1 first, and is B1 rebalanced?"""
    r = Run(h, "activation-keeps-gaps")
    h.start(3, partitions=1, backups=2)
    first = r.step("put keys 0, 1", lambda: h.call("put", writes={"0": "a0", "1": "a1"}))
    primary, b1, b2 = roles(first)
    r.record["roles"] = {"P": primary, "B1": b1, "B2": b2}
    r.step(f"NodeFail {b1} (B1)", lambda: h.step("NodeFail", node=b1))
    r.step("exchange done", lambda: h.await_exchange())
    h.hold_step("BackupPrepare", tx="t1", node=b2)
    r.step("TxStart t1 key 2", lambda: h.step("TxStart", tx="t1", keys={2: "t1"}))
    r.step("TxPrepare t1 (prepare to B2 held)", lambda: h.step("TxPrepare", tx="t1", wait_ms=2000))
    r.step("TxStart t2 key 3", lambda: h.step("TxStart", tx="t2", keys={3: "t2"}))
    gap = r.step("TxCommit t2", lambda: h.step("TxCommit", tx="t2"))
    h.block("GridCacheTxRecoveryRequest", drop=True)
    h.block("GridCacheTxRecoveryResponse", drop=True)
    r.step("outage: every server stops", lambda: h.call("outage"))
    h.call("unblock")
    for n in (primary, b1, b2):
        h.step("Restart", node=n, wait_ms=2000)  # a lone server waits for the others of the baseline
    for n in (primary, b1, b2):
        h.call("await_start", node=n, wait_ms=60_000)
    activated = r.step("activate", lambda: h.call("activate"))
    final = r.step("rebalanced", lambda: h.await_rebalance(30_000))
    r.log("activation", r"Failed to update|inconsisten|validation has|Starting rebalance routine|recover", 30)
    verdict = h.idle_verify()
    r.record["idle_verify"] = verdict.text
    r.record["demands"] = [d.model_dump(by_alias=True) for d in h.demands()]
    at_gap = gap.copy_of(primary) if gap else None
    back = activated.copy_of(primary) if activated else None
    r.check("P had a gap at counter 3", at_gap is not None and at_gap.lwm == 2 and bool(at_gap.gaps))
    r.check("P keeps the gap after the activation", back is not None and back.lwm == 2 and bool(back.gaps))
    r.check("B1 was rebalanced", any(d.demander == b1 for d in h.demands()))
    r.check("B1 has t2's key 3 at the end", entries(final, b1).get(3) == "t2")
    r.check("idle_verify clean", not verdict.has_conflicts)
    return r.record


FINDINGS: dict[str, Callable[[IgniteHarness], Record]] = {
    "key-zero-full-rebalance": key_zero,
    "wal-threshold-equal": lambda h: threshold(h, 4),
    "wal-threshold-below": lambda h: threshold(h, 3),
    "coordinator-after-restart": coordinator,
    "rollback-range-reused": rollback_reuse,
    "join-merged-with-left": join_with_left,
    "moving-renting-moving": renting_again,
    "all-owners-fail": all_owners_fail,
    "merged-left-keeps-gaps": merged_left_gaps,
    "activation-keeps-gaps": activation_gaps,
}


def run(name: str, version: str = DEFAULT_VERSION) -> Record:
    """One reproduction on a fresh cluster (its own JVM and directories)."""
    with IgniteHarness(version) as h:
        return FINDINGS[name](h)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ignite_findings", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", choices=[[], *FINDINGS], help="default: all")
    parser.add_argument("--ignite-version", default=DEFAULT_VERSION)
    parser.add_argument("--out", type=Path, help="directory for one NAME.json per finding")
    args = parser.parse_args(argv)
    try:
        for name in args.names or list(FINDINGS):
            record = run(name, args.ignite_version)
            text = json.dumps(record, indent=1)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"{name}.json").write_text(text + "\n")
            print(text if not args.out else f"{name}: {record['checks']}")
    except TidemarkError as e:
        print(f"error: {e.describe()}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
