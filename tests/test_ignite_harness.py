"""The real-Ignite harness (systems/ignite) through its client: build, cluster, observation, message control,
errors, cleanup; and two reproductions of docs/findings/ on a fresh cluster."""

from __future__ import annotations

import os

import pytest

from tidemark.conformance.systems.ignite import (
    MODULE,
    HarnessInputError,
    IgniteError,
    IgniteHarness,
    build_harness,
)
from tidemark.conformance.systems.ignite_findings import FINDINGS

pytestmark = pytest.mark.ignite


def test_build_is_incremental() -> None:
    target = build_harness()
    jar = target / "harness.jar"
    before = jar.stat().st_mtime_ns
    assert build_harness() == target
    assert jar.stat().st_mtime_ns == before, "an up-to-date jar must not be rebuilt"
    assert (target / "lib" / "ignite-core-2.18.0.jar").exists()


def test_cluster_counters_entries_and_idle_verify() -> None:
    with IgniteHarness() as h:
        assert h.info["ignite"] == "2.18.0"
        h.start(2, partitions=2, backups=1)
        h.call("put", writes={"0": "a0", "1": "a1", "2": "a2"})
        obs = h.observe()
        assert set(obs.nodes) == {"s1", "s2"}
        # Ignite's key -> partition for 2 partitions (a power of two): key 0 and 2 in partition 0.
        for node in ("s1", "s2"):
            p0, p1 = obs.nodes[node].partitions[0], obs.nodes[node].partitions[1]
            assert (p0.state, p0.lwm, p0.entries) == ("OWNING", 2, {0: "a0", 2: "a2"})
            assert (p1.state, p1.lwm, p1.entries) == ("OWNING", 1, {1: "a1"})
            assert obs.nodes[node].coordinator == "s1"
        verdict = h.idle_verify()
        assert not verdict.has_conflicts and "no conflicts" in verdict.text
        proc, work = h.process, h.work_dir
    assert proc is not None and proc.poll() is not None, "the JVM must be gone after close"
    assert work is not None and not work.exists(), "the work directory must be removed"


def test_hold_and_release_a_backup_commit() -> None:
    with IgniteHarness() as h:
        h.start(3, partitions=1, backups=2)
        h.call("put", writes={"0": "a0"})
        primary, _, backup = next(iter(h.observe().nodes.values())).assignment[0]
        h.hold_step("BackupCommit", tx="t1", node=backup)
        h.step("TxStart", tx="t1", keys={1: "v1"})
        pending = h.step("TxCommit", tx="t1", wait_ms=1500)
        assert pending["done"] is False
        held = h.held()
        assert [(m.type, m.to, m.tx) for m in held] == [("GridDhtTxFinishRequest", backup, "t1")]
        obs = h.observe()
        assert obs.copy_of(primary).entries.get(1) == "v1"  # type: ignore[union-attr]
        assert 1 not in obs.copy_of(backup).entries  # type: ignore[union-attr]
        assert [m.id for m in h.step("BackupCommit", tx="t1", node=backup)] == [held[0].id]
        assert h.call("tx_wait", tx="t1", wait_ms=10_000)["phase"] == "committed"
        assert h.observe().copy_of(backup).entries.get(1) == "v1"  # type: ignore[union-attr]


def test_bad_commands_and_a_dead_harness() -> None:
    with IgniteHarness() as h:
        with pytest.raises(HarnessInputError, match="start the cluster first"):
            h.step("Restart", node="s1")
        h.start(1, partitions=1, backups=0)
        with pytest.raises(HarnessInputError, match="no running server s9"):
            h.step("NodeFail", node="s9")
        with pytest.raises(HarnessInputError, match="unknown command"):
            h.call("no_such_command")
        assert h.process is not None
        os.kill(h.process.pid, 9)
        with pytest.raises(IgniteError) as died:
            h.observe()
        assert died.value.exit_code == 3


def test_missing_maven_is_an_environment_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pom = MODULE / "pom.xml"
    stat = pom.stat()
    jar = build_harness() / "harness.jar"
    os.utime(pom, ns=(stat.st_atime_ns, jar.stat().st_mtime_ns + 10**9))  # a rebuild is due
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        with pytest.raises(IgniteError, match="Maven") as err:
            build_harness()
        assert err.value.exit_code == 3
    finally:
        os.utime(pom, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.parametrize("name", ["rollback-range-reused", "wal-threshold-equal"])
def test_reproductions_hold(name: str) -> None:
    """The facts docs/findings/ rests on, on a fresh cluster: Ignite reuses a rolled-back range and leaves a
    copy OWNING without acknowledged writes; a partition as large as the threshold is rebalanced in full."""
    with IgniteHarness() as h:
        record = FINDINGS[name](h)
    expected = {
        "rollback-range-reused": {
            "survivor LWM 2 after the node-left exchanges": True,
            "t2 took counters 3..4 again": True,
            "B1 has t2's keys at the end": False,
            "idle_verify clean": False,
        },
        "wal-threshold-equal": {"historical": False, "full": True, "s2 has key 1 = b1": True},
    }[name]
    assert record["checks"] == expected
