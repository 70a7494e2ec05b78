"""Mutants of impl/ that conformance on the standard models does not kill, each with why.

Every survivor of an impl/ module falls in one of three categories:
- "equivalent": no input at all tells the mutant from the module; it is left out of every score.
- "outside": the mutant changes only behaviour conformance does not check by design: what happens on
  invalid input (the models never produce it), the in-memory counter (no spec models it), helpers and
  defaults the protocol does not use, and the exact byte layout (to_bytes and from_bytes change together,
  so the round trip of every Restart edge still restores the same counter). A unit test exposes each
  one; it counts against the raw score, not against the protocol score.
- "unreached": a behaviour of the protocol on valid input that the standard models do not reach; it
  counts against both scores.
Keys are `tidemark.conformance.mutation.points.Mutant.key`; docs/mutation.md presents the same list.
"""

from __future__ import annotations

import re
from typing import Literal

Category = Literal["equivalent", "outside", "unreached"]
Reason = tuple[Category, str]

_INVALID: Reason = (
    "outside",
    "Changes only what happens on invalid input (a non-positive delta, a negative LWM or HWM, a gap limit "
    "below 1, items unsorted, overlapping, adjacent or not above LWM, a partly applied range, values beyond int64), which the models never produce.",
)
_BYTES: Reason = (
    "outside",
    "Changes only how bytes that to_bytes never writes are read (malformed data, a zero item count), and the models only restore what to_bytes wrote.",
)
_LAYOUT: Reason = (
    "outside",
    "The byte layout: to_bytes and from_bytes change together, so the round trip of every Restart edge still restores the same counter; Ignite's exact layout is pinned by unit tests.",
)
_DEFAULT: Reason = (
    "outside",
    "A default the mappings never use: they pass every argument, the gap limit being the model's own.",
)
_HELPER: Reason = (
    "outside",
    "A helper for tests and callers (equality, snapshot, sequential, max_missed_updates) that no mapping reads.",
)

_COUNTER: dict[str, Reason] = {
    **dict.fromkeys(
        [
            "_check_items: for index, (start, delta) in enumerate(items): -> pass",
            "_check_items: if delta <= 0: -> pass",
            "_check_items: if delta <= 0: -> if delta < 0:",
            "_check_items: if delta <= 0: -> if delta <= -1:",
            "_check_items: raise ValueError(f'item {index} {(start, delta)}: delta must be > 0') -> pass",
            "_check_items: if index == 0 and start <= lwm: -> pass",
            "_check_items: if index == 0 and start <= lwm: -> if index != 0 and start <= lwm:",
            "_check_items: if index == 0 and start <= lwm: -> if index == 1 and start <= lwm:",
            "_check_items: if index == 0 and start <= lwm: -> if index == -1 and start <= lwm:",
            "_check_items: if index == 0 and start <= lwm: -> if index == 0 and start < lwm:",
            "_check_items: raise ValueError(f'item 0 {(start, delta)}: must start above lwm={lwm} (start > lwm)') -> pass",
            "_check_items: if index > 0 and start <= prev_end: -> pass",
            "_check_items: if index > 0 and start <= prev_end: -> if index <= 0 and start <= prev_end:",
            "_check_items: if index > 0 and start <= prev_end: -> if index > 1 and start <= prev_end:",
            "_check_items: if index > 0 and start <= prev_end: -> if index > 0 and start < prev_end:",
            "_check_items: raise ValueError(f\"item {index} {(start, delta)}: must start after the previous item's ... -> pass",
            "_check_items: prev_end = start + delta -> pass",
            "_check_items: prev_end = start + delta -> prev_end = start - delta",
            "PartitionUpdateCounter.__init__: if lwm < 0: -> pass",
            "PartitionUpdateCounter.__init__: if lwm < 0: -> if lwm < -1:",
            "PartitionUpdateCounter.__init__: raise ValueError(f'lwm must be >= 0, got {lwm}') -> pass",
            "PartitionUpdateCounter.__init__: if max_missed_updates <= 0: -> pass",
            "PartitionUpdateCounter.__init__: if max_missed_updates <= 0: -> if max_missed_updates < 0:",
            "PartitionUpdateCounter.__init__: if max_missed_updates <= 0: -> if max_missed_updates <= -1:",
            "PartitionUpdateCounter.__init__: raise ValueError(f'max_missed_updates must be > 0, got {max_missed_updates}') -> pass",
            "PartitionUpdateCounter.__init__: _check_items(lwm, item_list) -> pass",
            "PartitionUpdateCounter.__init__: if self._hwm < 0: -> pass",
            "PartitionUpdateCounter.__init__: if self._hwm < 0: -> if self._hwm < -1:",
            "PartitionUpdateCounter.__init__: raise ValueError(f'hwm must be >= 0, got {self._hwm}') -> pass",
            "PartitionUpdateCounter.reserve: if delta <= 0: -> pass",
            "PartitionUpdateCounter.reserve: if delta <= 0: -> if delta < 0:",
            "PartitionUpdateCounter.reserve: if delta <= 0: -> if delta <= -1:",
            "PartitionUpdateCounter.reserve: raise ValueError(f'reserve: delta must be > 0, got {delta}') -> pass",
            "PartitionUpdateCounter.update: if delta <= 0: -> pass",
            "PartitionUpdateCounter.update: if delta <= 0: -> if delta < 0:",
            "PartitionUpdateCounter.update: if delta <= 0: -> if delta <= -1:",
            "PartitionUpdateCounter.update: raise ValueError(f'update: delta must be > 0, got {delta}') -> pass",
            "PartitionUpdateCounter.update: if prev[0] > start or prev_end < last: -> pass",
            "PartitionUpdateCounter.update: if prev[0] > start or prev_end < last: -> if prev[0] > start and prev_end < last:",
            "PartitionUpdateCounter.update: raise ValueError(self._overlap_message(start, delta, prev)) -> pass",
            'PartitionUpdateCounter.to_bytes: raise ValueError(f"counter does not fit Ignite\'s int32/int64 gap format: {exc}") from exc -> pass',
            "PartitionUpdateCounter._overlap_message: return f'update({start}, {delta}): range {start + 1}..{start + delta} partly overlaps t... -> pass",
        ],
        _INVALID,
    ),
    **dict.fromkeys(
        [
            "PartitionUpdateCounter.from_bytes: if not data: -> pass",
            "PartitionUpdateCounter.from_bytes: raise ValueError('gap data: expected the version byte at byte offset 0, got no data') -> pass",
            "PartitionUpdateCounter.from_bytes: if data[0] != GAPS_FORMAT_VERSION: -> pass",
            "PartitionUpdateCounter.from_bytes: raise ValueError(f'gap data: expected version {GAPS_FORMAT_VERSION} at byte offset 0, g... -> pass",
            "PartitionUpdateCounter.from_bytes: if len(data) < _HEADER.size: -> pass",
            "PartitionUpdateCounter.from_bytes: if len(data) < _HEADER.size: -> if len(data) <= _HEADER.size:",
            "PartitionUpdateCounter.from_bytes: raise ValueError(f'gap data: expected an int32 item count (4 bytes) at byte offset 1, o... -> pass",
            "PartitionUpdateCounter.from_bytes: if count < 0: -> pass",
            "PartitionUpdateCounter.from_bytes: if count < 0: -> if count <= 0:",
            "PartitionUpdateCounter.from_bytes: if count < 0: -> if count < 1:",
            "PartitionUpdateCounter.from_bytes: if count < 0: -> if count < -1:",
            "PartitionUpdateCounter.from_bytes: raise ValueError(f'gap data: expected a non-negative int32 item count at byte offset 1,... -> pass",
            "PartitionUpdateCounter.from_bytes: if offset + _ITEM.size > len(data): -> pass",
            "PartitionUpdateCounter.from_bytes: if offset + _ITEM.size > len(data): -> if offset - _ITEM.size > len(data):",
            "PartitionUpdateCounter.from_bytes: raise ValueError(f'gap data: expected item {index} of {count} (int64 start, int64 delta... -> pass",
            "PartitionUpdateCounter.from_bytes: if offset != len(data): -> pass",
            "PartitionUpdateCounter.from_bytes: raise ValueError(f'gap data: expected end of data at byte offset {offset} after {count}... -> pass",
            "PartitionUpdateCounter.from_bytes: raise ValueError(f'gap data: invalid items for lwm={lwm}: {exc}') from exc -> pass",
        ],
        _BYTES,
    ),
    **dict.fromkeys(
        [
            "<module>: GAPS_FORMAT_VERSION = 1 -> GAPS_FORMAT_VERSION = 2",
            "<module>: GAPS_FORMAT_VERSION = 1 -> GAPS_FORMAT_VERSION = 0",
            "PartitionUpdateCounter.to_bytes: if not self._items: -> pass",
            "PartitionUpdateCounter.to_bytes: return None -> pass",
        ],
        _LAYOUT,
    ),
    **dict.fromkeys(
        [
            "<module>: MAX_MISSED_UPDATES = 10000 -> MAX_MISSED_UPDATES = 10001",
            "<module>: MAX_MISSED_UPDATES = 10000 -> MAX_MISSED_UPDATES = 9999",
            "PartitionUpdateCounter.__init__: def __init__(self, lwm: int=0, hwm: int | None=None, items:... -> def __init__(self, lwm: int=1, hwm: int | None=None, items:...",
            "PartitionUpdateCounter.__init__: def __init__(self, lwm: int=0, hwm: int | None=None, items:... -> def __init__(self, lwm: int=-1, hwm: int | None=None, items:...",
        ],
        _DEFAULT,
    ),
    "_check_items: prev_end = lwm -> pass": (
        "equivalent",
        "prev_end is read only for items after the first, and the first iteration assigns it before that.",
    ),
    "_check_items: if index > 0 and start <= prev_end: -> if index >= 0 and start <= prev_end:": (
        "equivalent",
        "At index 0 prev_end is lwm, and an item starting at or below lwm already failed the check before.",
    ),
    "_check_items: if index > 0 and start <= prev_end: -> if index > -1 and start <= prev_end:": (
        "equivalent",
        "The same condition as index >= 0 (indexes are never negative): equivalent for the same reason.",
    ),
    "PartitionUpdateCounter.update: prev_end = prev[0] + prev[1] if prev is not None else -1 -> prev_end = prev[0] + prev[1] if prev is not None else -2": (
        "equivalent",
        "prev_end is read only when prev is not None, so the value for None is never used.",
    ),
    "PartitionUpdateCounter.update: prev_end = prev[0] + prev[1] if prev is not None else -1 -> prev_end = prev[0] + prev[1] if prev is not None else -0": (
        "equivalent",
        "prev_end is read only when prev is not None, so the value for None is never used.",
    ),
    "VolatileUpdateCounter.to_bytes: return None -> pass": (
        "equivalent",
        "The statement is the function's last: without it the function returns None all the same.",
    ),
    "PartitionUpdateCounter.reserve: if reserved < self._lwm: -> pass": (
        "unreached",
        "A primary reserving with HWM below LWM: the invariant HwmCoversLwm shows the models never get there (Ignite asserts 'LWM after HWM').",
    ),
    "PartitionUpdateCounter.reserve: raise CounterInconsistencyError(f'LWM after HWM: lwm={self._lwm}, hwm={reserved}') -> pass": (
        "unreached",
        "A primary reserving with HWM below LWM: the invariant HwmCoversLwm shows the models never get there.",
    ),
    "PartitionUpdateCounter.update: items[below - 1] = (prev[0], prev[1] + delta) -> items[below - 2] = (prev[0], prev[1] + delta)": (
        "unreached",
        "A range merging into the first of two items without touching the second needs five counters "
        "(two counters between the items); the standard models stop at four, spec/UpdateCounter-large.cfg reaches it.",
    ),
    "PartitionUpdateCounter.update_lwm: if value < self._lwm: -> pass": (
        "unreached",
        "An exchange value below a copy's LWM: the models' exchanges send the maximum LWM. Ignite meets it when transactions go on during an exchange that keeps the primary.",
    ),
    "PartitionUpdateCounter.update_lwm: return -> pass": (
        "unreached",
        "An exchange value below a copy's LWM: the models' exchanges send the maximum LWM.",
    ),
    "PartitionUpdateCounter.update_lwm: if value < self.highest_applied: -> pass": (
        "unreached",
        "An exchange value below a copy's highest applied counter: the invariant ExchangeCoversEveryCopy shows the standard models never send one (three copies do, tests/models/UpdateCounter-3copies.cfg).",
    ),
    "PartitionUpdateCounter.update_lwm: raise CounterInconsistencyError(f'Failed to update the counter: value={value} is below ... -> pass": (
        "unreached",
        "An exchange value below a copy's highest applied counter: ExchangeCoversEveryCopy shows the standard models never send one.",
    ),
    "PartitionUpdateCounter.finalize: self._hwm = self._lwm -> pass": (
        "unreached",
        "finalize on a copy whose HWM is above its highest applied counter: in the models a survivor has "
        "applied every range it reserved by the time the exchange (which waits for every transaction) runs, and the absolute update then raises HWM to the same value either way.",
    ),
}

_CONFIG: Reason = (
    "outside",
    "Validation of a cluster's configuration (owners, transactions' keys), which the models never produce.",
)
_NOT_ENABLED: Reason = (
    "outside",
    "The check that a step is enabled when it is applied: conformance applies only the steps the spec takes, and compares enabledness through the guards (enabled), not through this check.",
)

_MALFORMED: Reason = (
    "outside",
    "A malformed step (an unknown name or parameters): conformance applies only the spec's actions, which are well formed.",
)

_LOCK_REMAP: Reason = (
    "unreached",
    "LockRemap's guard that no exchange is under way: the targets never hold a lock request of an older version while an exchange is due.",
)
_CHECKED_TYPE: Reason = (
    "equivalent",
    "The message was found by its type just before (_require of the step's guard), so the assertion always holds.",
)

# The survivors of impl/cluster.py's full run (bench/mutate.py --module impl/cluster.py --no-tests).
_CLUSTER: dict[str, Reason] = {
    "Cluster._when_tx_remap: if near.state is not NearState.LOCKING or self.top_ver != self.ready_ver: -> pass": (
        "unreached",
        "TxRemap without the near node locking or with an exchange under way: the standard model never holds a lock response of another version in those states.",
    ),
    "Cluster._when_tx_remap: return None -> pass": (
        "unreached",
        "The same guard as above, removed by deleting its return.",
    ),
    "Cluster.apply: if step.name not in self.STEPS or set(step.params()) != set(self.STEPS[step.name]): -> pass": _MALFORMED,
    "Cluster.apply: if step.name not in self.STEPS or set(step.params()) != set(self.STEPS[step.name]): -> if step.name not in self.STEPS and set(step.params()) != set(self.STEPS[step.name]):": _MALFORMED,
    "Cluster.apply: raise StepNotEnabled(f\"unknown step {step} (steps: {', '.join(self.STEPS)})\") -> pass": _MALFORMED,
    "Cluster._require: if context is None: -> pass": _NOT_ENABLED,
    "Cluster._require: raise StepNotEnabled(f'{Step(step, **params)} is not enabled') -> pass": _NOT_ENABLED,
    "Cluster._when_tx_remap: if near.state is not NearState.LOCKING or self.top_ver != self.ready_ver: -> if near.state is not NearState.LOCKING and self.top_ver != self.ready_ver:": (
        "unreached",
        "The same guard as above, weakened: the targets never hold a lock response of another version while the near node is not locking.",
    ),
    "Cluster._when_lock_remap: if self.top_ver != self.ready_ver: -> pass": _LOCK_REMAP,
    "Cluster._when_lock_remap: return None -> pass": _LOCK_REMAP,
    "Cluster.backup_prepare: assert isinstance(request, DhtPrepareRequest) -> pass": _CHECKED_TYPE,
    "Cluster.backup_rollback: assert isinstance(request, DhtFinishRequest) -> pass": _CHECKED_TYPE,
    "Cluster._backup_finish: ok = request is not None and self._in_state(node, tx, TxState.PREPARED) -> ok = request is not None or self._in_state(node, tx, TxState.PREPARED)": (
        "unreached",
        "A finish request reaching a backup that does not hold the transaction PREPARED (with no request the result is None either way): in the targets every backup a finish request is sent to has prepared, or has failed and lost the message.",
    ),
    "Cluster._find: return None -> pass": (
        "equivalent",
        "The function's last statement: without it the function returns None all the same.",
    ),
    "Cluster._commit_on: n.disk = n.disk.log((DataRecord(k, tx, c) for k, c in sorted(writes, key=lambda w: w[1]))) -> n.disk = n.disk.log((DataRecord(k, tx, c) for k, c in sorted(writes, key=lambda w: w[0])))": (
        "outside",
        "The order of one commit's data records in the WAL by key rather than by counter: within a partition keys take counters in key order, so only records of different partitions swap, and the WAL is a set of records to the spec and to every reader (restart, supply); only the record tuple itself shows the order.",
    ),
    "Cluster._decide: assert response is not None -> pass": (
        "equivalent",
        "Both callers require the prepare response first (tx_commit through _when_tx_commit, tx_rollback in the PREPARING state through _when_tx_rollback), so the assertion always holds.",
    ),
}

_SCRIPTED: Reason = (
    "outside",
    'Running steps written as text ("Lock(tx=t1, node=s1)"): a helper for tests and examples; conformance applies Step values.',
)
_REPORT: Reason = (
    "outside",
    "The exchange's report (spec/PME.tla's UpdateFailures, CountersInconsistent, SizesInconsistent) is what the scenarios check at a FullMessage, on impl and on real Ignite; the replay's mapping does not read it.",
)
_INITIAL: Reason = (
    "outside",
    "The initial cluster: the replay starts every edge from a state concretized from the spec; tests/test_tx_counters_conform.py and tests/test_pme_conform.py compare the initial states.",
)
_EQUALITY: Reason = (
    "outside",
    "Equality of clusters: conformance compares abstract states, never two clusters.",
)
_IDLE_VERIFY: Reason = (
    "outside",
    "idle_verify is the consistency check that scenarios and tests run on a cluster, not a step of the protocol; no replay calls it.",
)

_LOST: Reason = (
    "unreached",
    "A locking transaction whose partition became LOST (every owner failed) while its lock request waits at a live server: in tests/models/PME-lost.cfg, the only target that loses a partition, the rule this adds enables no rollback the base rule (the request lost with its failed primary) does not already enable.",
)
_FROM_ZERO: Reason = (
    "unreached",
    "A historical rebalance asked from counter 0 (a new or cleared copy): the rule on missing updates alone allows it only when the supplier holds more entries than its LWM (entries applied above a hole), which the models never pair with such a demand.",
)
_NO_DEFAULT: Reason = (
    "equivalent",
    "The default of an empty maximum is never taken: each is asked only about a partition that is not LOST, which has an OWNING copy among the single messages (full_message skips LOST partitions before it asks _full_counter and _hwm_floor, and _new_state asks _max_lwm about an OWNING copy's own partition).",
)
_FLOOR: Reason = (
    "unreached",
    "The HWM floor in Ignite's mode (the gate that keeps it to Fix.EXCHANGE_RAISES_HWM taken away): in the faithful targets no copy ever holds a counter above another updated copy's HWM when the full message comes. That needs an update left unfinalized above a gap - a total outage with two transactions (spec/PME-outage.cfg, a documented violation) or the rolled-back range handed out again (three copies, two failures) - which no replayable faithful target reaches. The fix's floor itself fires in PMEFixed-outage-mutation.cfg, which kills its mutants.",
)
_SAME_KEY: Reason = (
    "unreached",
    "Two entries of the same key in one batch: a historical batch of two or more updates of one key, which needs a batch size above 1 and more entries than missing updates; every target has BatchSize 1.",
)

# The survivors of impl/pme.py's seeded samples and its full run (bench/mutate.py --module impl/pme.py).
_PME: dict[str, Reason] = {
    "PmeConfig.__post_init__: if len(lists) != 1: -> pass": _CONFIG,
    "PmeCluster.__eq__: return NotImplemented -> pass": (
        "outside",
        "Equality with an object of another type: no mapping compares a cluster with anything else.",
    ),
    "PmeCluster._gaps_closed: return runs(set(range(1, counter.highest_applied + 1)) - covered(counter) - logged) -> return runs(set(range(1, counter.highest_applied + 0)) - covered(counter) - logged)": (
        "equivalent",
        "The highest applied counter is always covered (1..LWM or the last out-of-order range), so leaving it out of the range changes no gap.",
    ),
    # The full run (bench/mutate.py --module impl/pme.py --no-tests --jobs 2).
    "PmeCluster._full_counter: return max((info[part].lwm for info in self.singles.values() if part in info), default=0) -> return max((info[part].lwm for info in self.singles.values() if part in info), default=1)": _NO_DEFAULT,
    "PmeCluster._full_counter: return max((info[part].lwm for info in self.singles.values() if part in info), default=0) -> return max((info[part].lwm for info in self.singles.values() if part in info), default=-1)": _NO_DEFAULT,
    "PmeCluster._max_lwm: return max((self.singles[n][part].lwm for n in self._owning_copies(part)), default=0) -> return max((self.singles[n][part].lwm for n in self._owning_copies(part)), default=1)": _NO_DEFAULT,
    "PmeCluster._max_lwm: return max((self.singles[n][part].lwm for n in self._owning_copies(part)), default=0) -> return max((self.singles[n][part].lwm for n in self._owning_copies(part)), default=-1)": _NO_DEFAULT,
    "PmeCluster.supply: pool: list[SuppliedEntry] -> pass": (
        "equivalent",
        "A bare annotation: it executes nothing.",
    ),
    "PmeCluster.supply: ...t, self.history[node][part] + 1) <= r.cntr <= demand.upto)} -> ...t, self.history[node][part] + 0) <= r.cntr <= demand.upto)}": (
        "equivalent",
        "As for `- 1` below: a historical demand starts above the supplier's truncation point, so the lower bound is the demand's first counter either way.",
    ),
    "PmeCluster.full_message: if floor > counter.hwm: -> if floor >= counter.hwm:": (
        "equivalent",
        "A floor equal to the HWM rebuilds the counter from its own LWM, HWM, queue and first flag: the same counter (every PME counter has the default gap limit, which the rebuild keeps).",
    ),
    # Measured again with the models added since (bench/mutate.py --again): the floor's own defaults.
    "PmeCluster._hwm_floor: return 0 -> return -1": (
        "equivalent",
        "A floor of -1 never exceeds an HWM, which is at least 0, just as a floor of 0 does not.",
    ),
    "PmeCluster._hwm_floor: return max((ctr.highest_applied for ctr in counters), default=0) -> return max((ctr.highest_applied for ctr in counters), default=1)": _NO_DEFAULT,
    "PmeCluster._hwm_floor: return max((ctr.highest_applied for ctr in counters), default=0) -> return max((ctr.highest_applied for ctr in counters), default=-1)": _NO_DEFAULT,
    "durable_counters: if isinstance(r, RebalancedRecord) and r.part == part: -> if isinstance(r, RebalancedRecord) or r.part == part:": (
        "unreached",
        "A rebalanced record of another partition: every target has one partition.",
    ),
    "durable_counters: durable.update(range(1, r.lwm + 1)) -> durable.update(range(0, r.lwm + 1))": (
        "equivalent",
        "durable_counters is read only by hist_from, which asks about counters 1 and up: counter 0 is never among them.",
    ),
    "durable_counters: durable.update(range(1, r.lwm + 1)) -> durable.update(range(1, r.lwm + 2))": (
        "unreached",
        "A counter just above a rebalance's LWM that no later record logs (an exchange closing it by the absolute update, which writes no record): after a rebalance the targets' copies log every counter they take (at most one crash after it).",
    ),
    "hist_from: return max([truncated, *(c for c in range(1, lwm + 1) if c not in durable)]) -> return max([truncated, *(c for c in range(0, lwm + 1) if c not in durable)])": (
        "equivalent",
        "Counter 0, never durable, joins the maximum with the truncation point, which is at least 0.",
    ),
    "PmeCluster.copy: assert isinstance(clone, PmeCluster) -> pass": (
        "equivalent",
        "The copy of a PmeCluster is made by its own class (Cluster.copy uses type(self)), so the assertion always holds.",
    ),
    "PmeCluster.activate: c.joiners = frozenset() -> pass": (
        "equivalent",
        "In every reachable state joiners is already empty at Activate: every server failed (each failure removes it from joiners) and an inactive cluster's joins add none.",
    ),
    "PmeCluster._when_tx_rollback: if near.state is NearState.LOCKING and (not self.writable(tx)): -> pass": _LOST,
    "PmeCluster._when_tx_rollback: return near -> pass": _LOST,
    "PmeCluster._historical: return init > 0 and self._wal_covers(suppli... -> return init >= 0 and self._wal_covers(suppli...": _FROM_ZERO,
    "PmeCluster._historical: return init > 0 and self._wal_covers(supplier... -> return init > -1 and self._wal_covers(supplier...": _FROM_ZERO,
    "PmeCluster.rebalance: ...n.data or n.data[e.key].cntr < e.cntr) and (e.key not in new... -> ...n.data or n.data[e.key].cntr <= e.cntr) and (e.key not in new...": (
        "equivalent",
        "An entry equal to the copy's own (same key, same counter: the same update) is written again and its data record logged a second time; the entry is unchanged and every reader takes the WAL's records as a set (the spec's wal variable, restart, supply, idle_verify).",
    ),
    "PmeCluster.rebalance: ...newest or newest[e.key].cntr < e.cntr): -> ...newest or newest[e.key].cntr <= e.cntr):": _SAME_KEY,
    "PmeCluster.rebalance: ... newest or newest[e.key].cntr < e.cntr): -> ... newest or newest[e.key].cntr >= e.cntr):": _SAME_KEY,
    "PmeCluster.evict: c.history[node][part] = 0 -> pass": (
        "unreached",
        "An eviction on a server whose WAL was truncated: tests/models/PME-baseline.cfg evicts but never truncates, PME-history.cfg truncates but changes no baseline.",
    ),
    "covered: done = set(range(1, counter.lwm + 1)) -> done = set(range(0, counter.lwm + 1))": (
        "equivalent",
        "covered() is read only by _gaps_closed, which subtracts it from counters 1 and up: counter 0 is never among them.",
    ),
    "covered: done.update(range(start + 1, start + delta + 1)) -> done.update(range(start + 1, start + delta + 2))": (
        "unreached",
        "The fixes' gap closing on a copy with a hole right above an out-of-order range and below its highest applied counter (two holes, four counters); the fixed targets' copies never hold one.",
    ),
    # The sample of 60 (bench/mutate.py --module impl/pme.py --sample 60 --seed 2).
    "PmeCluster.supply: ...rst, self.history[node][part] + 1) <= r.cntr <= demand.upto)} -> ...rst, self.history[node][part] - 1) <= r.cntr <= demand.upto)}": (
        "equivalent",
        "In every reachable state: a historical demand starts above the supplier's truncation point (the exchange chose history because the WAL covers it) and no truncation happens while the server supplies (_when_truncate_wal), so the lower bound is the demand's first counter either way.",
    ),
}

SURVIVORS: dict[str, dict[str, Reason]] = {
    "impl/counter.py": _COUNTER,
    "impl/cluster.py": _CLUSTER,
    "impl/pme.py": _PME,
}

# Whole scopes the models do not reach by design, by the prefix of their mutants' keys.
SCOPES: dict[str, dict[str, Reason]] = {
    "impl/cluster.py": {
        "<module>: INITIAL_VERSION = ": _INITIAL,
        "Config.__post_init__: ": _CONFIG,
        "Cluster.initial: ": _INITIAL,
        "Node.__eq__: ": _EQUALITY,
        "Cluster.__eq__: ": _EQUALITY,
        "Cluster.run: ": _SCRIPTED,
        "parse_step: ": _SCRIPTED,
        "Cluster._when_checkpoint: ": (
            "outside",
            "Checkpoint is no action of spec/TxCounters.tla (its mapping never takes it), and impl/pme.py overrides this guard with its own.",
        ),
        "Cluster.checkpoint: ": (
            "unreached",
            "Checkpoint is no action of spec/TxCounters.tla; spec/PME.tla's models replay it (impl/pme.py inherits this method), so these are also impl/pme.py's concern.",
        ),
    },
    "impl/counter.py": {
        "VolatileUpdateCounter.": (
            "outside",
            "The in-memory counter (Ignite's PartitionUpdateCounterVolatileImpl): no spec models in-memory mode; tests/test_counter.py covers it.",
        ),
        "PartitionUpdateCounter.__eq__: ": _HELPER,
        "PartitionUpdateCounter.snapshot: ": _HELPER,
        "PartitionUpdateCounter.sequential: ": _HELPER,
        "PartitionUpdateCounter.max_missed_updates: ": _HELPER,
    },
    "impl/pme.py": {
        "PmeConfig.__post_init__: ": _CONFIG,
        "PmeCluster.initial: ": _INITIAL,
        "PmeCluster.__eq__: ": _EQUALITY,
        "PmeCluster._hwm_floor: ": _FLOOR,
        "runs: ": (
            "unreached",
            "Merging into the last of two or more ranges: the fixes' gap closing in the targets closes at most one range (PMEFixed-outage-mutation.cfg merges two adjacent holes into it, which kills the other mutants of runs), so the first and the last range are the same one; tests/test_pme_runs.py pins the merging.",
        ),
        "IdleVerifyResult.": _IDLE_VERIFY,
        "ExchangeReport.": _REPORT,
        "idle_verify: ": _IDLE_VERIFY,
        "exchange_report: ": _REPORT,
    },
}


# Mutants of any module, by the shape of their key: a step's check that it is enabled, deleted.
PATTERNS: list[tuple[re.Pattern[str], Reason]] = [
    (re.compile(r"^[\w.]+: self\._require\(.*\) -> pass$"), _NOT_ENABLED),
]


def explanation(path: str, key: str) -> Reason | None:
    """(category, why) for a listed survivor of the module at `path`, else None."""
    listed = SURVIVORS.get(path, {})
    if key in listed:
        return listed[key]
    for pattern, reason in PATTERNS:
        if pattern.match(key):
            return reason
    scopes = [prefix for prefix in SCOPES.get(path, {}) if key.startswith(prefix)]
    return SCOPES[path][max(scopes, key=len)] if scopes else None
