"""The reproductions behind docs/findings/: each runs one exact sequence on a real Ignite cluster.

`python -m conformance.systems.ignite_findings NAME... [--ignite-version V] [--out DIR]` runs the named
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

from conformance.errors import TidemarkError
from conformance.systems.ignite import DEFAULT_VERSION, IgniteHarness, Observation

Record = dict[str, Any]


class Run:
    """One reproduction: the harness plus the record of every step and what followed it."""

    def __init__(self, harness: IgniteHarness, name: str) -> None:
        self.h = harness
        self.record: Record = {"finding": name, "ignite": harness.info.get("ignite"), "steps": [], "checks": {}}
        self._mark = 0
        self._t0 = time.monotonic()

    def step(self, label: str, action: Callable[[], Any] | None = None, *, observe: bool = True) -> Observation | None:
        result = action() if action is not None else None
        entry: Record = {"step": label, "t": round(time.monotonic() - self._t0, 1)}
        if result not in (None, {}):
            entry["result"] = result if isinstance(result, (dict, list, bool)) else str(result)
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
    r.check("s1 joined last", final.nodes["s1"].order > max(v.order for n, v in final.nodes.items() if n != "s1"))
    r.log("exchange", r"finishExchangeOnCoordinator|Coordinator received single message", 10)
    return r.record


FINDINGS: dict[str, Callable[[IgniteHarness], Record]] = {
    "key-zero-full-rebalance": key_zero,
    "wal-threshold-equal": lambda h: threshold(h, 4),
    "wal-threshold-below": lambda h: threshold(h, 3),
    "coordinator-after-restart": coordinator,
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
