"""Unit tests of impl/cluster.py: Ignite's 2PC counter flow, failures, recovery and restart, step by step."""

from __future__ import annotations

from collections import deque
from itertools import product

import pytest

from tidemark.impl.cluster import (
    STEPS,
    Cluster,
    Config,
    NearState,
    Step,
    StepNotEnabled,
    TxState,
    parse_step,
)
from tidemark.impl.messages import DhtFinishRequest, LockRequest, LockResponse, Version
from tidemark.impl.wal import CheckpointRecord, DataRecord, Entry, RollbackRecord

SERVERS = ("s1", "s2", "s3")


def config(**transactions: set[int]) -> Config:
    return Config(SERVERS, {0: SERVERS}, {tx: frozenset(keys) for tx, keys in transactions.items()})


def counter(cluster: Cluster, node: str, part: int = 0) -> tuple[int, int, list[tuple[int, int]]]:
    c = cluster.nodes[node].counters[part]
    return c.lwm, c.hwm, c.items


def prepared_everywhere(*txs: str) -> list[str]:
    """Steps that lock and prepare each transaction on s1 and both backups, up to PREPARED."""
    steps = []
    for tx in txs:
        steps += [
            f"TxStart(tx={tx})",
            f"Lock(tx={tx}, node=s1)",
            f"TxPrepare(tx={tx})",
            f"Prepare(tx={tx}, node=s1)",
        ]
        steps += [f"BackupPrepare(tx={tx}, node={b})" for b in ("s2", "s3")]
        steps += [f"Prepared(tx={tx}, node=s1)"]
    return steps


# --- the seed's figure 1: backup reordering --------------------------------------------------------------


@pytest.fixture
def figure1() -> Cluster:
    """Two pessimistic txs on one partition (tx1 writes k1..k3, tx2 k4, k5), both PREPARED and committed on
    the primary; the backups have not committed yet."""
    cluster = Cluster.initial(config(t1={1, 2, 3}, t2={4, 5}))
    steps = prepared_everywhere("t1", "t2")
    steps += ["TxCommit(tx=t1)", "TxCommit(tx=t2)", "Commit(tx=t1, node=s1)", "Commit(tx=t2, node=s1)"]
    return cluster.run(steps)


def test_prepare_reserves_consecutive_ranges_on_the_primary(figure1: Cluster) -> None:
    # tx1 reserved (0, 3): counters 1..3 in key order; tx2 (3, 2): counters 4, 5.
    assert figure1.nodes["s1"].txs["t1"].writes == {(1, 1), (2, 2), (3, 3)}
    assert figure1.nodes["s1"].txs["t2"].writes == {(4, 4), (5, 5)}
    assert counter(figure1, "s1") == (5, 5, [])
    # The backups got the same counters in the prepare requests; a backup's HWM is only raised by exchanges.
    assert figure1.nodes["s2"].txs["t1"].writes == figure1.nodes["s1"].txs["t1"].writes
    assert counter(figure1, "s2") == (0, 0, [])


def test_backup_applying_the_later_tx_first_has_a_gap_until_lwm_catches_up(figure1: Cluster) -> None:
    reordered = figure1.run(["BackupCommit(tx=t2, node=s2)"])
    # Updates 4, 5 applied out of order: LWM stays 0, the item (3, 2) records them.
    assert counter(reordered, "s2") == (0, 0, [(3, 2)])
    assert reordered.nodes["s2"].data == {4: Entry("t2", 4), 5: Entry("t2", 5)}
    caught_up = reordered.run(["BackupCommit(tx=t1, node=s2)"])
    assert counter(caught_up, "s2") == (5, 0, [])
    assert caught_up.nodes["s2"].data == caught_up.nodes["s1"].data
    # WAL first, then the counter: every applied counter has its data record, in commit order.
    logged = [r.cntr for r in caught_up.nodes["s2"].disk.records() if isinstance(r, DataRecord)]
    assert logged == [4, 5, 1, 2, 3]


def test_commit_sends_the_finish_request_to_every_backup(figure1: Cluster) -> None:
    finish = {m for m in figure1.network if isinstance(m, DhtFinishRequest)}
    assert finish == {DhtFinishRequest(t, "s1", b, True) for t in ("t1", "t2") for b in ("s2", "s3")}
    done = figure1.run([f"BackupCommit(tx={t}, node={b})" for t in ("t2", "t1") for b in ("s3", "s2")])
    assert done.quiet
    assert all(done.nodes[n].txs[t].state is TxState.COMMITTED for n in SERVERS for t in ("t1", "t2"))


def test_steps_leave_the_source_cluster_unchanged(figure1: Cluster) -> None:
    before = figure1.copy()
    after = figure1.apply(Step("BackupCommit", tx="t2", node="s2"))
    assert figure1 == before
    assert after != before
    assert counter(figure1, "s2") == (0, 0, [])


# --- locks, remap, messages ------------------------------------------------------------------------------


def test_a_conflicting_lock_waits_until_the_holder_finishes() -> None:
    cluster = Cluster.initial(config(t1={1, 2}, t2={2, 3})).run(["TxStart(tx=t1)", "TxStart(tx=t2)"])
    held = cluster.run(["Lock(tx=t1, node=s1)"])
    assert Step("Lock", tx="t2", node="s1") not in held.enabled()
    with pytest.raises(StepNotEnabled, match="Lock"):
        held.apply(Step("Lock", tx="t2", node="s1"))
    steps = ["TxPrepare(tx=t1)", "Prepare(tx=t1, node=s1)", "BackupPrepare(tx=t1, node=s2)"]
    steps += [
        "BackupPrepare(tx=t1, node=s3)",
        "Prepared(tx=t1, node=s1)",
        "TxCommit(tx=t1)",
        "Commit(tx=t1, node=s1)",
    ]
    released = held.run(steps)
    assert Step("Lock", tx="t2", node="s1") in released.enabled()


def test_a_lock_request_on_an_older_version_is_remapped() -> None:
    cluster = Cluster.initial(config(t1={1})).run(["TxStart(tx=t1)", "NodeFail(node=s3)"])
    assert cluster.top_ver == Version(2, 0) and cluster.ready_ver == Version(1, 0)
    # The primary waits for the exchange; the exchange does not wait for a tx that holds no lock.
    assert [s.name for s in cluster.enabled() if s.tx == "t1"] == []
    exchanged = cluster.run(["Exchange"])
    assert exchanged.owners == {0: ("s1", "s2")}
    remapped = exchanged.run(["LockRemap(tx=t1, node=s1)"])
    assert LockResponse("t1", "s1", Version(2, 0)) in remapped.network
    retried = remapped.run(["TxRemap(tx=t1)"])
    assert retried.near["t1"].ver == Version(2, 0)
    assert retried.network == {LockRequest("t1", "s1", Version(2, 0))}
    locked = retried.run(["Lock(tx=t1, node=s1)", "TxPrepare(tx=t1)", "Prepare(tx=t1, node=s1)"])
    # The DHT map of the new version has no s3.
    assert {m.to for m in locked.network} == {"s2"}


def test_messages_to_a_failed_server_are_lost_and_it_leaves_the_dht_map() -> None:
    cluster = Cluster.initial(config(t1={1})).run(prepared_everywhere("t1")[:4])  # prepare requests out
    failed = cluster.run(["NodeFail(node=s3)"])
    assert {m.to for m in failed.network} == {"s2"}
    # Prepared waits only for live backups.
    prepared = failed.run(["BackupPrepare(tx=t1, node=s2)", "Prepared(tx=t1, node=s1)"])
    assert prepared.nodes["s1"].txs["t1"].state is TxState.PREPARED


# --- rollback --------------------------------------------------------------------------------------------


def test_the_primary_rolls_back_only_after_its_backups() -> None:
    cluster = Cluster.initial(config(t1={1, 2})).run([*prepared_everywhere("t1"), "TxRollback(tx=t1)"])
    rolling = cluster.run(["Rollback(tx=t1, node=s1)"])
    assert rolling.nodes["s1"].txs["t1"].state is TxState.ROLLING_BACK
    assert counter(rolling, "s1") == (0, 2, [])  # not yet applied on the primary
    half = rolling.run(["BackupRollback(tx=t1, node=s2)"])
    assert Step("RolledBack", tx="t1", node="s1") not in half.enabled()
    done = half.run(["BackupRollback(tx=t1, node=s3)", "RolledBack(tx=t1, node=s1)"])
    for node in SERVERS:
        # update(0, 2) closes the range, and a rollback record makes that durable.
        assert counter(done, node)[0] == 2
        assert done.nodes[node].disk.records() == [RollbackRecord(0, 0, 2)]
        assert done.nodes[node].data == {}
    assert done.quiet


# --- primary failure and tx recovery ---------------------------------------------------------------------


def test_recovery_commits_when_the_near_node_decided_commit() -> None:
    # The primary committed (acknowledged, PRIMARY_SYNC) and failed before the backups got its finish request.
    acked = Cluster.initial(config(t1={1, 2}, t2={3})).run(
        [*prepared_everywhere("t1"), "TxCommit(tx=t1)", "Commit(tx=t1, node=s1)", "NodeFail(node=s1)"]
    )
    # Its finish requests to the backups are still in flight; s2 gets its own, recovery does the rest.
    assert acked.network == {DhtFinishRequest("t1", "s1", b, True) for b in ("s2", "s3")}
    recovered = acked.run(["BackupCommit(tx=t1, node=s2)", "Recover(tx=t1)"])
    assert not recovered.network and recovered.near["t1"].state is NearState.COMMITTED
    for node in ("s2", "s3"):
        assert recovered.nodes[node].txs["t1"].state is TxState.COMMITTED
        assert recovered.nodes[node].data == {1: Entry("t1", 1), 2: Entry("t1", 2)}
        assert counter(recovered, node) == (2, 0, [])
    exchanged = recovered.run(["Exchange"])
    # The new primary's HWM is raised to the maximum LWM: the next tx reserves above every applied counter.
    assert exchanged.owners == {0: ("s2", "s3")}
    assert counter(exchanged, "s2") == (2, 2, [])
    after = exchanged.run(
        ["TxStart(tx=t2)", "Lock(tx=t2, node=s2)", "TxPrepare(tx=t2)", "Prepare(tx=t2, node=s2)"]
    )
    assert after.nodes["s2"].txs["t2"].writes == {(3, 3)}


def test_recovery_rolls_back_and_the_exchange_closes_the_dropped_range() -> None:
    # t1 (counters 1, 2) is prepared on the backups, t2 (counter 3) committed everywhere; the primary fails
    # before the near node decided t1.
    steps = [*prepared_everywhere("t1", "t2"), "TxCommit(tx=t2)", "Commit(tx=t2, node=s1)"]
    steps += ["BackupCommit(tx=t2, node=s2)", "BackupCommit(tx=t2, node=s3)", "NodeFail(node=s1)"]
    failed = Cluster.initial(config(t1={1, 2}, t2={3})).run(steps)
    assert Step("Exchange") not in failed.enabled()  # tx recovery first
    recovered = failed.run(["Recover(tx=t1)"])
    assert recovered.near["t1"].state is NearState.ROLLED_BACK
    for node in ("s2", "s3"):
        # Dropped: no update, no record; update 3 stays out of order above the hole 1..2.
        assert counter(recovered, node) == (0, 0, [(2, 1)])
        assert recovered.nodes[node].disk.records() == [DataRecord(3, "t2", 3)]
    exchanged = recovered.run(["Exchange"])
    for node in ("s2", "s3"):
        # finalize: the hole 1..2 is closed and logged as a rollback record; HWM = LWM.
        assert counter(exchanged, node) == (3, 3, [])
        assert exchanged.nodes[node].disk.records()[-1] == RollbackRecord(0, 0, 2)
    assert exchanged.quiet


def test_recovery_is_not_due_while_the_primary_is_alive() -> None:
    cluster = Cluster.initial(config(t1={1})).run(prepared_everywhere("t1"))
    assert Step("Recover", tx="t1") not in cluster.enabled()
    assert Step("Recover", tx="t1") in cluster.run(["NodeFail(node=s1)"]).enabled()


# --- crash and restart -----------------------------------------------------------------------------------


def _restarted(cluster: Cluster, node: str) -> Cluster:
    return cluster.run([f"NodeFail(node={node})", f"Restart(node={node})"])


def test_restart_rebuilds_counters_and_data_from_the_wal(figure1: Cluster) -> None:
    reordered = figure1.run(["BackupCommit(tx=t2, node=s2)"])
    crashed = reordered.run(["NodeFail(node=s2)"])
    assert crashed.nodes["s2"].data == {} and counter(crashed, "s2") == (0, 0, [])
    back = crashed.run(["Restart(node=s2)"])
    assert back.restarted == {"s2"} and "s2" not in back.alive
    # Data records update(c-1, 1) rebuild the gap; HWM restored as the highest applied counter.
    assert counter(back, "s2") == (0, 5, [(3, 2)])
    assert back.nodes["s2"].data == reordered.nodes["s2"].data
    # The primary's counter and data survive its restart too.
    primary = _restarted(figure1, "s1")
    assert counter(primary, "s1") == (5, 5, []) and primary.nodes["s1"].data == figure1.nodes["s1"].data


def test_restart_replays_rollback_records() -> None:
    steps = [*prepared_everywhere("t1"), "TxRollback(tx=t1)", "Rollback(tx=t1, node=s1)"]
    cluster = Cluster.initial(config(t1={1, 2})).run([*steps, "BackupRollback(tx=t1, node=s2)"])
    assert counter(_restarted(cluster, "s2"), "s2") == (2, 2, [])
    assert counter(_restarted(cluster, "s3"), "s3") == (0, 0, [])  # s3 had not rolled back


def test_restart_from_a_checkpoint_equals_replaying_the_whole_wal(figure1: Cluster) -> None:
    partial = figure1.run(["BackupCommit(tx=t2, node=s2)"])
    checkpointed = partial.run(["Checkpoint(node=s2)", "BackupCommit(tx=t1, node=s2)"])
    disk = checkpointed.nodes["s2"].disk
    assert isinstance(disk.wal[2], CheckpointRecord) and disk.replay_from == 3
    gaps = partial.nodes["s2"].counters[0].to_bytes()
    assert disk.meta is not None and disk.meta[0] == (0, gaps) and gaps is not None
    with_checkpoint = _restarted(checkpointed, "s2").nodes["s2"]
    without = _restarted(partial.run(["BackupCommit(tx=t1, node=s2)"]), "s2").nodes["s2"]
    assert with_checkpoint.counters == without.counters
    assert with_checkpoint.data == without.data
    assert counter(_restarted(checkpointed, "s2"), "s2") == (5, 5, [])


# --- enabledness and the step API ------------------------------------------------------------------------


def test_every_enabled_step_applies_and_no_other_does() -> None:
    """Breadth-first over the first steps of a small cluster: enabled() and the step methods agree."""
    two = ("s1", "s2")
    start = Cluster.initial(Config(two, {0: two}, {"t1": frozenset({1}), "t2": frozenset({2})}))
    seen = 0
    queue = deque([(start, 0)])
    while queue:
        cluster, depth = queue.popleft()
        enabled = set(cluster.enabled())
        for name, params in STEPS.items():
            for values in product(*({"tx": ("t1", "t2"), "node": two}[p] for p in params)):
                step = Step(name, **dict(zip(params, values, strict=True)))
                if step not in enabled:
                    with pytest.raises(StepNotEnabled):
                        cluster.apply(step)
        seen += 1
        if depth < 6:
            queue.extend(
                (cluster.apply(step), depth + 1) for step in sorted(enabled) if step.name != "Checkpoint"
            )
    assert seen > 1000


def test_unknown_steps_and_parameters_are_refused() -> None:
    cluster = Cluster.initial(config(t1={1}))
    with pytest.raises(StepNotEnabled, match="unknown step"):
        cluster.apply(Step("Teleport", tx="t1"))
    with pytest.raises(StepNotEnabled, match="unknown step"):
        cluster.apply(Step("TxStart", node="s1"))
    with pytest.raises(StepNotEnabled, match="bad parameter"):
        parse_step("Lock(tx=t1, where=s1)")
    assert parse_step(" Lock(tx=t1, node=s1) ") == Step("Lock", tx="t1", node="s1")
    assert str(Step("Lock", tx="t1", node="s1")) == "Lock(tx=t1, node=s1)"


def test_a_transaction_must_have_one_primary() -> None:
    owners = {0: ("s1", "s2"), 1: ("s2", "s1")}
    Config(SERVERS, owners, {"t1": frozenset({2, 4})})  # both keys in partition 0
    with pytest.raises(ValueError, match="one primary"):
        Config(SERVERS, owners, {"t1": frozenset({1, 2})})
    with pytest.raises(ValueError, match=r"partitions 0\.\.P-1"):
        Config(SERVERS, {1: SERVERS}, {})
    with pytest.raises(ValueError, match="distinct servers"):
        Config(SERVERS, {0: ("s1", "s9")}, {})
