"""Mapping for spec/HazelcastAntiEntropy.tla <-> impl/hazelcast.py.

The implementation side of a spec state is `HzReplay`: a real `HazelcastCluster` plus what the spec keeps
beside the protocol - the model's budgets (puts, losses, crashes), the ghost `forked` and the `action`
that led here. Constants become the cluster's `HazelcastConfig`: members m1..mN, Slots, BackupCount,
Maps, Internal and MaxParallel. Variables map one to one: alive, table (index -> member or "none"), data,
versions (per namespace [v, dirty]), syncs, permits, serving (a bag: task -> count), msgs (a message's
`from` is the impl's `sender`) and destroyed.

Spec-level rules kept here: MaxPuts bounds Put (put n writes value n), MaxLosses bounds Drop and
BackupFailure, MaxCrashes bounds Crash; and the ghost `forked` - the namespaces in which a replica holds
updates a promoted owner never applied - is updated as the spec updates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import ReplayError, State, shared_function, shared_record, shared_set
from tidemark.conformance.mappings.tx_counters import _field, _int, _pairs, _set, _str
from tidemark.conformance.tlc.values import Record, Value, make_function
from tidemark.conformance.zoo.hazelcast_mutants import HAZELCAST_MUTANTS
from tidemark.conformance.zoo.mutants import implementation
from tidemark.impl.hazelcast import (
    AntiEntropy,
    Backup,
    FragmentVersions,
    HazelcastCluster,
    HazelcastConfig,
    MemberState,
    Message,
    Step,
    StepNotEnabled,
    SyncRequest,
    SyncResponse,
    SyncRetry,
)

NONE = "none"
SPEC = "HazelcastAntiEntropy"


@dataclass(frozen=True)
class HzReplay:
    """A cluster, the model's budgets and ghost, and the spec action that produced it."""

    cluster: HazelcastCluster
    puts: int
    losses: int
    crashes: int
    forked: Mapping[str, frozenset[str]]
    action: Value


# --- values ------------------------------------------------------------------------------------------


def _bool(value: Value) -> bool:
    if not isinstance(value, bool):
        raise ReplayError(f"expected a boolean, got {value!r}")
    return value


def _ints(value: Value) -> tuple[int, ...]:
    if not isinstance(value, tuple):
        raise ReplayError(f"expected a sequence, got {value!r}")
    return tuple(_int(v) for v in value)


def _strs(value: Value) -> frozenset[str]:
    return frozenset(_str(v) for v in _set(value))


@lru_cache(maxsize=1 << 14)
def message_value(m: Message) -> Record:
    """A message as the spec's record."""
    common: dict[str, Value] = {"type": type(m).__name__, "from": m.sender, "to": m.to, "replica": m.replica}
    if isinstance(m, Backup):
        return Record(**common, ns=m.ns, key=m.key, value=m.value, versions=m.versions, held=m.held)
    if isinstance(m, AntiEntropy):
        return Record(**common, versions=make_function(m.versions), after=frozenset(m.after))
    if isinstance(m, SyncResponse):
        return Record(**common, ns=m.ns, data=make_function(m.data), versions=m.versions)
    return Record(**common, namespaces=frozenset(m.namespaces))


@lru_cache(maxsize=1 << 14)
def message_of(value: Value) -> Message:
    """The message a spec record stands for."""
    kind = _str(_field(value, "type"))
    sender, to, replica = (
        _str(_field(value, "from")),
        _str(_field(value, "to")),
        _int(_field(value, "replica")),
    )
    if kind == "Backup":
        return Backup(
            sender,
            to,
            replica,
            _str(_field(value, "ns")),
            _int(_field(value, "key")),
            _int(_field(value, "value")),
            _ints(_field(value, "versions")),
            _bool(_field(value, "held")),
        )
    if kind == "AntiEntropy":
        versions = tuple(sorted((_str(ns), _int(v)) for ns, v in _pairs(_field(value, "versions"))))
        after = frozenset(_int(v) for v in _set(_field(value, "after")))
        return AntiEntropy(sender, to, replica, versions, after)
    if kind == "SyncResponse":
        data = tuple(sorted((_int(k), _int(v)) for k, v in _pairs(_field(value, "data"))))
        return SyncResponse(
            sender, to, replica, _str(_field(value, "ns")), data, _ints(_field(value, "versions"))
        )
    if kind in ("SyncRequest", "SyncRetry"):
        cls = SyncRequest if kind == "SyncRequest" else SyncRetry
        return cls(sender, to, replica, _strs(_field(value, "namespaces")))
    raise ReplayError(f"unknown message type {kind!r}")


def action_value(step: Step) -> Record:
    """A step as the spec's `action` record."""
    fields: dict[str, Value] = {"name": step.name}
    if step.member is not None:
        fields["member"] = step.member
    if step.msg is not None:
        fields["msg"] = message_value(step.msg)
    if step.granted is not None:
        fields["granted"] = step.granted
    for name in ("to", "ns", "key", "value", "replica"):
        if (v := getattr(step, name)) is not None:
            fields[name] = v
    return shared_record(**fields)


def step_of(action: Value) -> Step:
    """The step a spec action names."""
    record = cast(Record, action)
    name = _str(_field(record, "name"))
    msg = message_of(record["msg"]) if "msg" in record else None
    granted = _strs(record["granted"]) if "granted" in record else None
    ints = {k: _int(record[k]) for k in ("key", "value", "replica") if k in record}
    strs = {k: _str(record[k]) for k in ("member", "to", "ns") if k in record}
    return Step(name, msg=msg, granted=granted, **strs, **ints)  # type: ignore[arg-type]


def ahead_of(cluster: HazelcastCluster, member: str, promoted: str) -> frozenset[str]:
    """The namespaces in which `member` holds an update `promoted` never applied (values are put
    numbers: a newer one is larger)."""
    ahead = set()
    for ns, entries in cluster.members[member].data.items():
        theirs = cluster.data_of(promoted, ns)
        if any(k not in theirs or theirs[k] < v for k, v in entries.items()):
            ahead.add(ns)
    return frozenset(ahead)


class HazelcastMapping:
    spec = SPEC

    def __init__(self, constants: Mapping[str, Value], cluster_class: type[HazelcastCluster]) -> None:
        try:
            count = _int(constants["MemberCount"])
            self.config = HazelcastConfig(
                members=tuple(f"m{i}" for i in range(1, count + 1)),
                slots=_int(constants["Slots"]),
                backup_count=_int(constants["BackupCount"]),
                maps=_strs(constants["Maps"]),
                internal=_str(constants["Internal"]),
                max_parallel=_int(constants["MaxParallel"]),
            )
            self.keys = frozenset(_int(k) for k in _set(constants["Keys"]))
            self.max_puts = _int(constants["MaxPuts"])
            self.max_losses = _int(constants["MaxLosses"])
            self.max_crashes = _int(constants["MaxCrashes"])
        except (KeyError, ReplayError, ValueError) as error:
            raise TidemarkError(
                f"model constants do not fit {SPEC}: {error}",
                source=f"{SPEC} model",
                expected="MemberCount, Slots, BackupCount, Maps, Internal, Keys, MaxPuts, MaxParallel, "
                "MaxLosses, MaxCrashes",
            ) from error
        self.cluster_class = cluster_class

    # --- spec state <-> implementation -----------------------------------------------------------------

    def concretize(self, state: State) -> HzReplay:
        table = tuple(None if (m := _str(v)) == NONE else m for _, v in sorted(_pairs(state["table"])))
        members = {}
        for m in self.config.members:
            data = {
                _str(ns): {_int(k): _int(v) for k, v in _pairs(d)}
                for ns, d in _pairs(_field(state["data"], m))
            }
            versions = {
                _str(ns): FragmentVersions(_ints(_field(f, "v")), _bool(_field(f, "dirty")))
                for ns, f in _pairs(_field(state["versions"], m))
            }
            syncs = frozenset(
                (_str(s[0]), _int(s[1]))
                for s in cast(frozenset[tuple[str, int]], _set(_field(state["syncs"], m)))
            )
            serving = {
                (_str(t[0]), _int(t[1]), _str(t[2])): _int(n)
                for t, n in cast(list[tuple[tuple[str, int, str], int]], _pairs(_field(state["serving"], m)))
            }
            members[m] = MemberState(data, versions, syncs, _int(_field(state["permits"], m)), serving)
        cluster = self.cluster_class(
            self.config,
            alive=_strs(state["alive"]),
            table=table,
            members=members,
            network=frozenset(message_of(x) for x in _set(state["msgs"])),
            destroyed=_strs(state["destroyed"]),
        )
        forked = {m: _strs(_field(state["forked"], m)) for m in self.config.members}
        return HzReplay(
            cluster,
            _int(state["puts"]),
            _int(state["losses"]),
            _int(state["crashes"]),
            forked,
            state["action"],
        )

    def abstract(self, impl: HzReplay) -> State:
        c = impl.cluster
        members = c.members
        return {
            "alive": shared_set(c.alive),
            "table": shared_function((i, m or NONE) for i, m in enumerate(c.table)),
            "data": shared_function(
                (m, shared_function((ns, shared_function(d.items())) for ns, d in s.data.items()))
                for m, s in members.items()
            ),
            "versions": shared_function(
                (
                    m,
                    shared_function(
                        (ns, shared_record(v=f.versions, dirty=f.dirty)) for ns, f in s.versions.items()
                    ),
                )
                for m, s in members.items()
            ),
            "syncs": shared_function((m, shared_set(frozenset(s.syncs))) for m, s in members.items()),
            "permits": shared_function((m, s.permits) for m, s in members.items()),
            "serving": shared_function((m, shared_function(s.serving.items())) for m, s in members.items()),
            "msgs": shared_set(frozenset(map(message_value, c.network))),
            "destroyed": shared_set(c.destroyed),
            "puts": impl.puts,
            "losses": impl.losses,
            "crashes": impl.crashes,
            "forked": shared_function((m, shared_set(f)) for m, f in impl.forked.items()),
            "action": impl.action,
        }

    # --- steps -----------------------------------------------------------------------------------------

    def _allowed(self, step: Step, impl: HzReplay) -> bool:
        """The model's budgets on top of the cluster's guards."""
        if step.name == "Put":
            return impl.puts < self.max_puts
        if step.name in ("Drop", "BackupFailure"):
            return impl.losses < self.max_losses
        if step.name == "Crash":
            return impl.crashes < self.max_crashes
        return True

    def enabled(self, impl: HzReplay) -> set[Value]:
        steps = impl.cluster.enabled(self.keys, impl.puts + 1)
        return {action_value(s) for s in steps if self._allowed(s, impl)}

    def apply(self, impl: HzReplay, action: Value) -> HzReplay:
        step = step_of(action)
        if not self._allowed(step, impl):
            raise ReplayError(f"{step.name}: the model's bound is reached")
        if step.name == "Put" and step.value != impl.puts + 1:
            raise ReplayError(f"put number {impl.puts + 1} writes value {impl.puts + 1}, not {step.value}")
        before = impl.cluster
        try:
            after = before.apply(step)
        except StepNotEnabled as error:
            raise ReplayError(str(error)) from error
        return HzReplay(
            after,
            impl.puts + (step.name == "Put"),
            impl.losses + (step.name in ("Drop", "BackupFailure")),
            impl.crashes + (step.name == "Crash"),
            self._forked(impl.forked, before, step),
            action,
        )

    def _forked(
        self, forked: Mapping[str, frozenset[str]], before: HazelcastCluster, step: Step
    ) -> Mapping[str, frozenset[str]]:
        """The ghost `forked` after `step`, as the spec updates it."""
        member = step.member
        if step.name == "Crash" and member is not None:
            out = {**forked, member: frozenset()}
            index = before.promoted_index(member)
            if member == before.owner and index is not None:
                promoted = before.table[index]
                assert promoted is not None
                for n in {m for m in before.table if m is not None} - {member, promoted}:
                    out[n] = forked[n] | ahead_of(before, n, promoted)
            return out
        installed = step.msg is not None and before.index_of(member or "") == step.msg.replica
        if step.name == "SyncResponse" and member is not None and installed:
            return {**forked, member: forked[member] - {cast(SyncResponse, step.msg).ns}}
        copied = step.replica is not None and step.replica <= self.config.backup_count
        if step.name == "Migrate" and member is not None and copied:
            return {**forked, member: frozenset()}
        if step.name == "Destroy" and step.ns is not None:
            return {m: f - {step.ns} for m, f in forked.items()}
        return forked


def build(constants: Mapping[str, Value], mutant: str | None = None) -> HazelcastMapping:
    return HazelcastMapping(constants, implementation(SPEC, HAZELCAST_MUTANTS, HazelcastCluster, mutant))
