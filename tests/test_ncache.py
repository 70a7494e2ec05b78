"""impl/ncache.py: buckets, the distribution map, state transfer, leaves and replication."""

from __future__ import annotations

from collections import Counter

import pytest

from tidemark.impl.ncache import (
    FUNCTIONAL,
    NEED_TRANSFER,
    UNDER_STATE_TRANSFER,
    NCacheCluster,
    NCacheConfig,
    Step,
    StepNotEnabled,
    bucket_of,
    bucket_size,
)


def settled(cluster: NCacheCluster) -> NCacheCluster:
    """Every pending transfer and orphan pull run to its end."""
    for b in cluster.buckets:
        if cluster.status[b] == NEED_TRANSFER and cluster.temp[b] is not None:
            cluster = cluster.start_transfer(b)
        if cluster.status[b] == UNDER_STATE_TRANSFER:
            cluster = cluster.end_transfer(b)
        if cluster.orphan[b] is not None:
            cluster = cluster.pull_orphan(b)
    return cluster


def joined(config: NCacheConfig, count: int) -> NCacheCluster:
    cluster = NCacheCluster.initial(config)
    for node in config.nodes[1:count]:
        cluster = settled(cluster.join(node))
    return cluster


def test_bucket_ranges_cover_the_32_bit_hash() -> None:
    assert bucket_size() == 2147484  # ceil(2^31 / 1000)
    assert bucket_of(0) == 0
    assert bucket_of(2147483) == 0 and bucket_of(2147484) == 1
    assert bucket_of(2**31 - 1) == 999
    assert bucket_of(-(2**31)) == 999
    assert bucket_of(-5) == bucket_of(5)
    with pytest.raises(ValueError):
        bucket_of(2**31)


def test_three_nodes_share_the_buckets_333_333_334() -> None:
    cluster = joined(NCacheConfig(("n1", "n2", "n3")), 3)
    counts = Counter(cluster.owner)
    assert sorted(counts.values()) == [333, 333, 334]
    assert all(s == FUNCTIONAL for s in cluster.status)


def test_replica_chain_follows_join_order_and_wraps_to_the_coordinator() -> None:
    cluster = joined(NCacheConfig(("n1", "n2", "n3"), bucket_count=3), 3)
    assert [cluster.replica_holder(x) for x in ("n1", "n2", "n3")] == ["n2", "n3", "n1"]
    assert NCacheCluster.initial(cluster.config).replica_holder("n1") is None


def test_join_gives_the_lightest_buckets() -> None:
    cluster = NCacheCluster.initial(NCacheConfig(("n1", "n2"), bucket_count=4))
    size = bucket_size(4)
    for value, key in enumerate((0, 1, size), start=1):  # bucket 0 holds two entries, bucket 1 one
        cluster = cluster.write(key, value)
    moving = [b for b in cluster.buckets if cluster.join("n2").temp[b] == "n2"]
    assert moving == [2, 3]


def test_writes_during_a_transfer_are_logged_and_replayed_before_the_switch() -> None:
    cluster = NCacheCluster.initial(NCacheConfig(("n1", "n2"), bucket_count=2)).join("n2")
    moving = next(b for b in cluster.buckets if cluster.temp[b] == "n2")
    key = moving * bucket_size(2)
    cluster = cluster.start_transfer(moving).write(key, 1)
    assert cluster.logged[moving] == {key} and cluster.active["n1"][key] == 1
    assert key not in cluster.active["n2"]
    cluster = cluster.end_transfer(moving)
    assert cluster.owner[moving] == "n2" and cluster.active["n2"][key] == 1
    assert key not in cluster.active["n1"]
    assert cluster.replica["n1"][key] == 1  # n2's replica lives on n1


def test_sync_write_survives_an_abrupt_leave_through_the_replica() -> None:
    cluster = joined(NCacheConfig(("n1", "n2", "n3"), bucket_count=3), 3)
    key = 2**31 - 1
    owner = cluster.owner[2]
    holder = cluster.replica_holder(owner)
    cluster = cluster.write(key, 1).leave(owner, graceful=False)
    assert cluster.orphan[2] == holder and cluster.owner[2] != owner
    assert cluster.store_of(2)[key] == 1
    cluster = cluster.pull_orphan(2)
    assert cluster.active[cluster.owner[2]][key] == 1


def test_async_queue_is_lost_on_an_abrupt_leave_and_flushed_on_a_graceful_one() -> None:
    config = NCacheConfig(("n1", "n2"), bucket_count=2, sync=False)
    cluster = joined(config, 2)
    key = 0
    owner = cluster.owner[0]
    written = cluster.write(key, 1)
    assert written.queue[owner] == ((key, 1),)
    assert key not in written.leave(owner, graceful=False).store_of(0)
    assert written.leave(owner, graceful=True).store_of(0)[key] == 1


def test_leave_reverts_transfers_to_the_leaver() -> None:
    cluster = joined(NCacheConfig(("n1", "n2", "n3"), bucket_count=3), 2).join("n3")
    moving = [b for b in cluster.buckets if cluster.temp[b] == "n3"]
    assert moving
    left = cluster.start_transfer(moving[0]).leave("n3", graceful=True)
    assert all(left.temp[b] is None and left.status[b] == FUNCTIONAL for b in moving)


def test_the_last_member_cannot_leave_and_steps_check_their_guards() -> None:
    cluster = NCacheCluster.initial(NCacheConfig(("n1", "n2"), bucket_count=2))
    with pytest.raises(StepNotEnabled):
        cluster.leave("n1", graceful=True)
    with pytest.raises(StepNotEnabled):
        cluster.apply(Step("EndTransfer", bucket=0))
    with pytest.raises(StepNotEnabled):
        cluster.apply(Step("Join", node="n3"))
    assert {s.name for s in cluster.enabled(frozenset({0}), 1)} == {"Done", "Write", "Join"}


def test_a_tie_split_loses_the_side_without_the_coordinator_and_the_losers_rejoin() -> None:
    cluster = joined(NCacheConfig(("n1", "n2", "n3", "n4"), bucket_count=4), 4)
    assert cluster.loses(frozenset({"n3", "n4"})) and not cluster.loses(frozenset({"n1", "n2"}))
    assert not cluster.loses(frozenset({"n2", "n3", "n4"}))  # the larger side wins
    with pytest.raises(StepNotEnabled):
        cluster.split(frozenset({"n1", "n4"}))
    cut = cluster.split(frozenset({"n3", "n4"}))
    assert cut.members == ("n1", "n2") and cut.cut == {"n3", "n4"}
    with pytest.raises(StepNotEnabled):
        cut.join("n3")  # still cut off
    merged = cut
    for b in merged.buckets:
        if merged.orphan[b] is not None:
            merged = merged.pull_orphan(b)
    merged = merged.merge()
    assert merged.rejoining == {"n3", "n4"} and not merged.cut and not merged.cut_store
    back = settled(settled(merged.join("n4")).join("n3"))
    assert back.members == ("n1", "n2", "n4", "n3") and not back.left and not back.rejoining


def test_maintenance_serves_from_the_replica_and_each_exit_ends_it() -> None:
    cluster = joined(NCacheConfig(("n1", "n2", "n3"), bucket_count=3), 3).write(0, 1)
    owner = cluster.owner[0]
    holder = cluster.replica_holder(owner)
    stopped = cluster.stop_for_maintenance(owner).write(0, 2)
    assert stopped.maint == owner and not stopped.active[owner] and stopped.replica[holder][0] == 2
    with pytest.raises(StepNotEnabled):
        stopped.leave(holder, graceful=True)  # no leave or join during maintenance
    back = stopped.maintenance_rejoin(owner)
    assert back.maint is None and back.active[owner][0] == 2
    gone = stopped.maintenance_timeout(owner)
    assert owner in gone.left and gone.store_of(0)[0] == 2  # served from the replica until pulled
    lost = stopped.maintenance_failure(holder)
    assert {owner, holder} <= lost.left and 0 not in lost.store_of(0)  # the second failure: window 4
