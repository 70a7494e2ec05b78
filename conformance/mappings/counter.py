"""Mapping for spec/UpdateCounter.tla <-> impl/counter.py.

The implementation side of a state is `CounterCopies`: one impl `PartitionUpdateCounter` per copy,
plus the model's environment (pending ranges, the ghost set of done counters, tx outcomes, restarted
copies) carried as plain values. Only the counters are implementation; the environment's rules are
restated here from the spec's actions so that `enabled` can be compared with the spec's edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import cast

from conformance.errors import TidemarkError
from conformance.mappings import ReplayError, State, shared_function, shared_record, shared_set
from conformance.mutants import COUNTER_MUTANTS, implementation
from conformance.tlc.values import Record, Value
from impl.counter import CounterInconsistencyError, PartitionUpdateCounter

Range = tuple[int, int]


@dataclass(frozen=True)
class CounterCopies:
    """The copies' counters and the environment of spec/UpdateCounter.tla, as Python values."""

    counters: Mapping[str, PartitionUpdateCounter]
    pending: Mapping[str, frozenset[Range]]
    done: Mapping[str, frozenset[int]]
    committed: frozenset[Range]
    rolled_back: frozenset[Range]
    rejoined: frozenset[str]
    action: Value


def counter_value(counter: PartitionUpdateCounter) -> Record:
    """A counter as the specs' record [lwm, hwm, items, first]."""
    return shared_record(lwm=counter.lwm, hwm=counter.hwm, items=tuple(counter.items), first=counter.first)


def _counters(ranges: Range) -> frozenset[int]:
    start, delta = ranges
    return frozenset(range(start + 1, start + delta + 1))


def _step(name: str, copy: str, start: int, delta: int) -> Record:
    return shared_record(name=name, copy=copy, start=start, delta=delta)


def _field(record: Value, name: str) -> Value:
    if not isinstance(record, Record) or name not in record:
        raise ReplayError(f"expected a record with field {name!r}, got {record!r}")
    return record[name]


def _int(value: Value) -> int:
    if type(value) is not int:
        raise ReplayError(f"expected an integer, got {value!r}")
    return value


class CounterMapping:
    spec = "UpdateCounter"

    def __init__(self, constants: Mapping[str, Value], counter_class: type[PartitionUpdateCounter]) -> None:
        try:
            self.copies = sorted(cast(frozenset[str], constants["Copies"]))
            self.primary = cast(str, constants["Primary"])
            self.max_counter = _int(constants["MaxCounter"])
            self.deltas = sorted(cast(frozenset[int], constants["Deltas"]))
        except (KeyError, ReplayError) as error:
            raise TidemarkError(
                f"model constants do not fit UpdateCounter: {error}",
                source="UpdateCounter model",
                expected="Copies, Primary, MaxCounter, Deltas",
            ) from error
        self.counter_class = counter_class

    # --- spec state <-> implementation --------------------------------------------------------------

    def concretize(self, state: State) -> CounterCopies:
        def per_copy(variable: str) -> Mapping[str, Value]:
            return cast(Mapping[str, Value], state[variable])

        counters = {}
        for copy, counter in per_copy("counter").items():
            record = cast(Record, counter)
            counters[copy] = self.counter_class(
                _int(record["lwm"]),
                _int(record["hwm"]),
                [
                    (_int(item[0]), _int(item[1]))
                    for item in cast(tuple[tuple[int, int], ...], record["items"])
                ],
                bool(record["first"]),
            )
        return CounterCopies(
            counters=counters,
            pending={c: cast(frozenset[Range], v) for c, v in per_copy("pending").items()},
            done={c: cast(frozenset[int], v) for c, v in per_copy("done").items()},
            committed=cast(frozenset[Range], state["committed"]),
            rolled_back=cast(frozenset[Range], state["rolledBack"]),
            rejoined=cast(frozenset[str], state["rejoined"]),
            action=state["action"],
        )

    def initial(self) -> CounterCopies:
        """The spec's Init: every copy's counter new, nothing reserved (a driver's `init`)."""
        nothing: frozenset[Range] = frozenset()
        return CounterCopies(
            counters={c: self.counter_class() for c in self.copies},
            pending={c: nothing for c in self.copies},
            done={c: frozenset() for c in self.copies},
            committed=nothing,
            rolled_back=nothing,
            rejoined=frozenset(),
            action=shared_record(name="Init"),
        )

    def abstract(self, impl: CounterCopies) -> State:
        return {
            "counter": shared_function((copy, counter_value(c)) for copy, c in impl.counters.items()),
            "pending": shared_function((c, shared_set(p)) for c, p in impl.pending.items()),
            "done": shared_function((c, shared_set(d)) for c, d in impl.done.items()),
            "committed": shared_set(impl.committed),
            "rolledBack": shared_set(impl.rolled_back),
            "rejoined": shared_set(impl.rejoined),
            "action": impl.action,
        }

    # --- the environment's rules (spec actions) -------------------------------------------------------

    def _reserved(self, impl: CounterCopies) -> frozenset[Range]:
        return frozenset().union(*impl.pending.values(), impl.committed, impl.rolled_back)

    def _survivors(self, impl: CounterCopies) -> list[str]:
        return [c for c in self.copies if c not in impl.rejoined]

    def _exchange_lwm(self, impl: CounterCopies) -> tuple[dict[str, PartitionUpdateCounter], int]:
        """Survivors finalize; the coordinator takes the maximum LWM of all copies (spec ExchangeLwm)."""
        final = {c: counter.copy() for c, counter in impl.counters.items()}
        for copy in self._survivors(impl):
            final[copy].finalize()
        return final, max(counter.lwm for counter in final.values())

    def enabled(self, impl: CounterCopies) -> set[Value]:
        actions: set[Value] = set()
        primary = impl.counters[self.primary]
        if not impl.rejoined:
            actions |= {
                _step("Reserve", self.primary, primary.hwm, d)
                for d in self.deltas
                if primary.hwm + d <= self.max_counter
            }
        for copy in self.copies:
            for start, delta in impl.pending[copy]:
                r = (start, delta)
                if r not in impl.rolled_back:
                    actions.add(_step("Commit", copy, start, delta))
                backups_finished = all(r not in impl.pending[b] for b in self.copies if b != self.primary)
                if r not in impl.committed and (copy != self.primary or backups_finished):
                    actions.add(_step("Rollback", copy, start, delta))
                if r not in impl.committed and copy != self.primary and self.primary in impl.rejoined:
                    actions.add(_step("Drop", copy, start, delta))
            actions |= {_step("Replay", copy, i - 1, 1) for i in impl.done[copy]}
            if set(self._survivors(impl)) - {copy}:
                actions.add(shared_record(name="Restart", copy=copy))
        if impl.rejoined and not any(impl.pending.values()):
            actions.add(shared_record(name="Exchange", lwm=self._exchange_lwm(impl)[1]))
        return actions

    def apply(self, impl: CounterCopies, action: Value) -> CounterCopies:
        name = _field(action, "name")
        counters = {c: counter.copy() for c, counter in impl.counters.items()}
        after = replace(impl, counters=counters, action=action)
        if name == "Exchange":
            return self._apply_exchange(after)
        copy = cast(str, _field(action, "copy"))
        if copy not in counters:
            raise ReplayError(f"unknown copy {copy!r}")
        if name == "Restart":
            counter = counters[copy]
            counters[copy] = self.counter_class.from_bytes(counter.lwm, counter.to_bytes())
            return replace(
                after, pending={**impl.pending, copy: frozenset()}, rejoined=impl.rejoined | {copy}
            )
        r = (_int(_field(action, "start")), _int(_field(action, "delta")))
        if name == "Reserve":
            start = counters[copy].reserve(r[1])
            if start != r[0]:
                raise ReplayError(f"reserve({r[1]}) returned {start}, the spec reserved from {r[0]}")
            return replace(after, pending={c: p | {r} for c, p in impl.pending.items()})
        if name == "Replay":
            counters[copy].update(*r)
            return after
        pending = {**impl.pending, copy: impl.pending[copy] - {r}}
        if name == "Drop":
            return replace(after, pending=pending, rolled_back=impl.rolled_back | {r})
        if name in ("Commit", "Rollback"):
            counters[copy].update(*r)
            done = {**impl.done, copy: impl.done[copy] | _counters(r)}
            if name == "Commit":
                return replace(after, pending=pending, done=done, committed=impl.committed | {r})
            return replace(after, pending=pending, done=done, rolled_back=impl.rolled_back | {r})
        raise ReplayError(f"unknown action {name!r}")

    def _apply_exchange(self, impl: CounterCopies) -> CounterCopies:
        final, max_lwm = self._exchange_lwm(impl)
        if _field(impl.action, "lwm") != max_lwm:
            raise ReplayError(f"the copies' max LWM is {max_lwm}, the spec's exchange sent {impl.action}")
        for copy, counter in final.items():
            try:
                counter.update_lwm(max_lwm)
            except CounterInconsistencyError as error:
                raise ReplayError(f"exchange on copy {copy}: {error}") from error
        rebalanced = frozenset(range(1, max_lwm + 1))
        return replace(
            impl,
            counters=final,
            done={c: d | rebalanced for c, d in impl.done.items()},
            rejoined=frozenset(),
        )


def build(constants: Mapping[str, Value], mutant: str | None = None) -> CounterMapping:
    return CounterMapping(
        constants, implementation("UpdateCounter", COUNTER_MUTANTS, PartitionUpdateCounter, mutant)
    )
