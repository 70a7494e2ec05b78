"""impl/hazelcast.py on its own: the fragment-version rules, and the cluster's steps on small runs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tidemark.impl.hazelcast import (
    REQUIRES_SYNC,
    AntiEntropy,
    Backup,
    FragmentVersions,
    HazelcastCluster,
    HazelcastConfig,
    Step,
    StepNotEnabled,
    SyncRequest,
    SyncResponse,
    SyncRetry,
)

CONFIG = HazelcastConfig(members=("m1", "m2", "m3"), slots=2, backup_count=2, max_parallel=1)


def messages(cluster: HazelcastCluster, kind: type) -> list:
    return sorted((m for m in cluster.network if type(m) is kind), key=repr)


# --- fragment versions -------------------------------------------------------------------------------


def test_increment_takes_the_requested_count_and_skips_marked_slots() -> None:
    f = FragmentVersions((0, REQUIRES_SYNC, 4))
    assert f.increment(2).versions == (1, REQUIRES_SYNC, 4)
    assert f.increment(3).versions == (1, REQUIRES_SYNC, 5)


def test_a_backup_is_stale_when_the_slot_is_ahead_or_marked() -> None:
    assert FragmentVersions((3, 0)).is_stale((2, 9), 1)
    assert not FragmentVersions((3, 0)).is_stale((3, 0), 1)  # equal: re-run
    assert FragmentVersions((REQUIRES_SYNC, 0)).is_stale((7, 7), 1)


def test_update_copies_from_the_replica_upward_and_a_jump_is_dirty() -> None:
    f = FragmentVersions((0, 5, 1))
    assert f.update((9, 6, 2), 2) == FragmentVersions((0, 6, 2), False)
    assert f.update((9, 8, 2), 2) == FragmentVersions((0, 8, 2), True)
    assert f.update((9, 5, 7), 2) is f  # not newer: nothing changes
    assert FragmentVersions((0, 1, 0), True).update((0, 2, 0), 2).dirty  # dirty stays until a sync


def test_installed_clears_lower_slots_and_dirty_and_shift_fills_from_the_promoted_index() -> None:
    assert FragmentVersions.installed((4, 3, 2), 2) == FragmentVersions((0, 3, 2), False)
    assert FragmentVersions((1, 7, 3)).shifted(3).versions == (3, 3, 3)
    assert FragmentVersions((1, 7, 3)).shifted(1).versions == (1, 7, 3)
    assert FragmentVersions((0, 0)).mark_sync_required(2).versions == (0, REQUIRES_SYNC)


def test_config_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError, match="backup_count"):
        HazelcastConfig(members=("m1",), slots=2, backup_count=3)
    with pytest.raises(ValueError, match="distinct"):
        HazelcastConfig(members=("m1", "m1"))


# --- the cluster -------------------------------------------------------------------------------------


def test_a_put_sends_every_backup_replica_the_whole_vector() -> None:
    c = HazelcastCluster.initial(CONFIG).put("map1", 0, 1)
    assert c.members["m1"].data == {"map1": {0: 1}}
    assert c.fragment("m1", "map1").versions == (1, 1)
    assert [(b.to, b.replica, b.versions) for b in messages(c, Backup)] == [
        ("m2", 1, (1, 1)),
        ("m3", 2, (1, 1)),
    ]


def test_reordered_backups_jump_mark_dirty_request_a_sync_and_ignore_the_stale_one() -> None:
    c = HazelcastCluster.initial(CONFIG).put("map1", 0, 1).put("map1", 0, 2)
    first, second = sorted((b for b in messages(c, Backup) if b.to == "m2"), key=lambda b: b.value)
    c = c.backup("m2", second)
    assert c.fragment("m2", "map1") == FragmentVersions((2, 2), True)
    [request] = messages(c, SyncRequest)
    assert (request.sender, request.to, request.replica, request.namespaces) == ("m2", "m1", 1, {"map1"})
    assert c.members["m2"].permits == 0 and c.members["m2"].syncs == {("map1", 1)}
    c = c.backup("m2", first)  # stale: ignored
    assert c.members["m2"].data == {"map1": {0: 2}}


def test_sync_round_trip_installs_the_owners_data_and_returns_every_permit() -> None:
    c = HazelcastCluster.initial(CONFIG).put("map1", 0, 1)
    [to_m2, _] = messages(c, Backup)
    c = c.drop(to_m2).anti_entropy("m1")
    ae = next(m for m in messages(c, AntiEntropy) if m.to == "m2")
    assert ae.versions == (("map1", 1),)
    [granted] = c.request_grants(ae)
    c = c.backup_anti_entropy("m2", ae, granted)
    [request] = messages(c, SyncRequest)
    c = c.sync_request("m1", request, frozenset({"map1"}))
    assert c.members["m1"].permits == 0 and c.members["m1"].serving == {("m2", 1, "map1"): 1}
    c = c.sync_send("m1", "m2", 1, "map1")
    [response] = messages(c, SyncResponse)
    c = c.sync_response("m2", response)
    assert c.members["m2"].data == {"map1": {0: 1}}
    assert c.fragment("m2", "map1") == FragmentVersions((1, 1))
    assert all(c.members[m].permits == 1 for m in CONFIG.members)


def test_an_owner_without_a_free_permit_answers_retry() -> None:
    request = SyncRequest("m2", "m1", 1, frozenset({"map1"}))
    busy = replace(HazelcastCluster.initial(CONFIG)._with("m1", permits=0), network=frozenset({request}))
    assert busy.answer_grants(request) == [frozenset()]
    after = busy.sync_request("m1", request, frozenset())
    assert messages(after, SyncRetry) == [SyncRetry("m1", "m2", 1, frozenset({"map1"}))]


def test_the_owners_crash_promotes_the_smallest_surviving_index_and_shifts_its_vectors() -> None:
    c = HazelcastCluster.initial(CONFIG).put("map1", 0, 1)
    to_m3 = next(b for b in messages(c, Backup) if b.to == "m3")
    c = c.backup("m3", to_m3).crash("m2")  # index 1 vacated
    assert c.table == ("m1", None, "m3")
    c = c.crash("m1")  # m3 promoted from index 2: slot 1 takes slot 2's value
    assert c.table == ("m3", None, None) and c.alive == {"m3"}
    assert c.fragment("m3", "map1").versions == (1, 1)
    with pytest.raises(StepNotEnabled):
        c.crash("m3")  # the owner never crashes without a surviving replica


def test_a_joiner_is_migrated_with_the_owners_data_and_versions_from_its_index() -> None:
    c = HazelcastCluster.initial(CONFIG).crash("m3").put("map1", 0, 1).join("m3").migrate("m3", 2)
    assert c.table == ("m1", "m2", "m3")
    assert c.members["m3"].data == {"map1": {0: 1}}
    assert c.fragment("m3", "map1") == FragmentVersions((0, 1))


def test_anti_entropy_drops_a_destroyed_maps_fragment_everywhere() -> None:
    c = HazelcastCluster.initial(CONFIG).put("map1", 0, 1)
    for b in messages(c, Backup):
        c = c.backup(b.to, b)
    c = c.destroy("map1").anti_entropy("m1")
    assert "map1" not in c.members["m1"].versions
    for ae in messages(c, AntiEntropy):
        c = c.backup_anti_entropy(ae.to, ae, frozenset())
    assert all("map1" not in c.members[m].versions for m in CONFIG.members)
    assert all("map1" not in c.members[m].data for m in CONFIG.members)


def test_anti_entropy_runs_after_earlier_backups_and_holds_later_ones() -> None:
    c = HazelcastCluster.initial(CONFIG).put("map1", 0, 1).anti_entropy("m1").put("map1", 0, 2)
    ae = next(m for m in messages(c, AntiEntropy) if m.to == "m2")
    early, late = sorted((b for b in messages(c, Backup) if b.to == "m2"), key=lambda b: b.value)
    assert not c.deliverable(ae) and not c.deliverable(late) and c.deliverable(early)
    c = c.backup("m2", early)
    assert c.deliverable(ae)
    c = c.backup_anti_entropy("m2", ae, frozenset())
    assert any(b.value == 2 and not b.held for b in messages(c, Backup))


def test_enabled_steps_all_apply_and_unknown_steps_are_refused() -> None:
    c = HazelcastCluster.initial(CONFIG).put("map1", 0, 1).anti_entropy("m1")
    steps = list(c.enabled(frozenset({0}), 2))
    assert {s.name for s in steps} >= {"Put", "Backup", "Drop", "BackupFailure", "Crash", "Destroy"}
    for step in steps:
        assert isinstance(c.apply(step), HazelcastCluster)
    with pytest.raises(StepNotEnabled, match="unknown step"):
        c.apply(Step("Nope"))
    with pytest.raises(StepNotEnabled, match="not enabled"):
        c.sync_timeout("m2", "map1", 1)
