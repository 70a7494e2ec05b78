"""Mapping for spec/UpdateCounter.tla <-> impl/counter.py.

The implementation side of a state is `CounterCopies`: one impl `PartitionUpdateCounter` per copy,
plus the model's environment (pending ranges, the ghost set of done counters, tx outcomes, restarted
copies, the primary) carried as plain values. Only the counters are implementation; the environment's
rules are restated here from the spec's actions so that `enabled` can be compared with the spec's edges.
What the counter's operations return is part of each step: `enabled` asks the implementation (on a copy
of the counter) what update(start, delta) and finalize() return, and `apply` checks that the step it
replays returns what the spec's step recorded.

Conformance only ever passes the implementation inputs the model produces: valid ranges and states.
Argument checks (delta <= 0, partly applied ranges, malformed persisted bytes, invalid constructor
arguments) are covered by tests/test_counter.py instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import cast

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.mappings import ReplayError, State, shared_function, shared_record, shared_set
from tidemark.conformance.tlc.values import Record, Value
from tidemark.conformance.zoo.mutants import COUNTER_MUTANTS, implementation
from tidemark.impl.counter import CounterInconsistencyError, PartitionUpdateCounter, TooManyGapsError

Range = tuple[int, int]

APPLIED, IGNORED, TOO_MANY_GAPS = "applied", "ignored", "too many gaps"


@dataclass(frozen=True)
class CounterCopies:
    """The copies' counters and the environment of spec/UpdateCounter.tla, as Python values."""

    counters: Mapping[str, PartitionUpdateCounter]
    pending: Mapping[str, frozenset[Range]]
    done: Mapping[str, frozenset[int]]
    committed: frozenset[Range]
    rolled_back: frozenset[Range]
    rejoined: frozenset[str]
    primary: str
    action: Value


def counter_value(counter: PartitionUpdateCounter) -> Record:
    """A counter as the specs' record [lwm, hwm, items, first]."""
    return shared_record(lwm=counter.lwm, hwm=counter.hwm, items=tuple(counter.items), first=counter.first)


def _counters(ranges: Range) -> frozenset[int]:
    start, delta = ranges
    return frozenset(range(start + 1, start + delta + 1))


def _step(name: str, copy: str, start: int, delta: int) -> Record:
    return shared_record(name=name, copy=copy, start=start, delta=delta)


def _update_step(name: str, copy: str, start: int, delta: int, result: str) -> Record:
    return shared_record(name=name, copy=copy, start=start, delta=delta, result=result)


def update_result(counter: PartitionUpdateCounter, start: int, delta: int) -> str:
    """What update(start, delta) returns, or that it threw at the gap limit (the spec's UpdateResult)."""
    try:
        return APPLIED if counter.update(start, delta) else IGNORED
    except TooManyGapsError:
        return TOO_MANY_GAPS


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
            self.max_counter = _int(constants["MaxCounter"])
            self.deltas = sorted(cast(frozenset[int], constants["Deltas"]))
            self.limit = _int(constants["MaxMissedUpdates"])
            self.primary = str(constants["Primary"])
        except (KeyError, ReplayError) as error:
            raise TidemarkError(
                f"model constants do not fit UpdateCounter: {error}",
                source="UpdateCounter model",
                expected="Copies, Primary, MaxCounter, Deltas, MaxMissedUpdates",
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
                max_missed_updates=self.limit,
            )
        return CounterCopies(
            counters=counters,
            pending={c: cast(frozenset[Range], v) for c, v in per_copy("pending").items()},
            done={c: cast(frozenset[int], v) for c, v in per_copy("done").items()},
            committed=cast(frozenset[Range], state["committed"]),
            rolled_back=cast(frozenset[Range], state["rolledBack"]),
            rejoined=cast(frozenset[str], state["rejoined"]),
            primary=cast(str, state["primary"]),
            action=state["action"],
        )

    def initial(self) -> CounterCopies:
        """The spec's Init: every copy's counter new, nothing reserved (a driver's `init`)."""
        nothing: frozenset[Range] = frozenset()
        return CounterCopies(
            counters={c: self.counter_class(max_missed_updates=self.limit) for c in self.copies},
            pending={c: nothing for c in self.copies},
            done={c: frozenset() for c in self.copies},
            committed=nothing,
            rolled_back=nothing,
            rejoined=frozenset(),
            primary=self.primary,
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
            "primary": impl.primary,
            "action": impl.action,
        }

    # --- the environment's rules (spec actions) -------------------------------------------------------

    def _survivors(self, impl: CounterCopies) -> list[str]:
        return [c for c in self.copies if c not in impl.rejoined]

    def _exchange(self, impl: CounterCopies) -> tuple[dict[str, PartitionUpdateCounter], int, Value]:
        """Survivors finalize; the coordinator takes the maximum LWM of all copies (spec ExchangeLwm).
        Returns the counters after finalize, that maximum and the gaps finalize returned per survivor."""
        final = {c: counter.copy() for c, counter in impl.counters.items()}
        gaps = shared_function((copy, tuple(final[copy].finalize())) for copy in self._survivors(impl))
        return final, max(counter.lwm for counter in final.values()), gaps

    def _new_primaries(self, impl: CounterCopies) -> list[str]:
        """Who may be primary after the node-left exchange: the primary if it survived, else a survivor."""
        return [impl.primary] if impl.primary not in impl.rejoined else self._survivors(impl)

    def enabled(self, impl: CounterCopies) -> set[Value]:
        actions: set[Value] = set()
        primary = impl.counters[impl.primary]
        if not impl.rejoined:
            actions |= {
                _step("Reserve", impl.primary, primary.hwm, d)
                for d in self.deltas
                if primary.hwm + d <= self.max_counter
            }
        for copy in self.copies:
            counter = impl.counters[copy]
            for start, delta in impl.pending[copy]:
                r = (start, delta)
                result = update_result(counter.copy(), start, delta)
                if r not in impl.rolled_back:
                    actions.add(_update_step("Commit", copy, start, delta, result))
                backups_finished = all(r not in impl.pending[b] for b in self.copies if b != impl.primary)
                if r not in impl.committed and (copy != impl.primary or backups_finished):
                    actions.add(_update_step("Rollback", copy, start, delta, result))
                if r not in impl.committed and copy != impl.primary and impl.primary in impl.rejoined:
                    actions.add(_step("Drop", copy, start, delta))
            if copy in impl.rejoined:
                actions |= {
                    _update_step("Replay", copy, i - 1, 1, update_result(counter.copy(), i - 1, 1))
                    for i in impl.done[copy]
                }
            if set(self._survivors(impl)) - {copy}:
                actions.add(shared_record(name="Restart", copy=copy))
        if not any(impl.pending.values()):
            if impl.rejoined:
                _, lwm, gaps = self._exchange(impl)
                actions |= {
                    shared_record(name="Exchange", lwm=lwm, primary=np, gaps=gaps)
                    for np in self._new_primaries(impl)
                }
            else:
                lwm = max(counter.lwm for counter in impl.counters.values())
                actions |= {shared_record(name="JoinExchange", lwm=lwm, primary=np) for np in self.copies}
        return actions

    @staticmethod
    def _remember(outcomes: frozenset[Range], pending: Mapping[str, frozenset[Range]]) -> frozenset[Range]:
        """The outcomes of ranges still pending on some copy (spec Remember)."""
        return frozenset(r for r in outcomes if any(r in p for p in pending.values()))

    def apply(self, impl: CounterCopies, action: Value) -> CounterCopies:
        name = _field(action, "name")
        counters = {c: counter.copy() for c, counter in impl.counters.items()}
        after = replace(impl, counters=counters, action=action)
        if name == "Exchange":
            return self._apply_exchange(after)
        if name == "JoinExchange":
            return self._apply_join_exchange(after)
        copy = cast(str, _field(action, "copy"))
        if copy not in counters:
            raise ReplayError(f"unknown copy {copy!r}")
        if name == "Restart":
            counter = counters[copy]
            counters[copy] = self.counter_class.from_bytes(
                counter.lwm, counter.to_bytes(), max_missed_updates=self.limit
            )
            pending = {**impl.pending, copy: frozenset[Range]()}
            return replace(
                after,
                pending=pending,
                rejoined=impl.rejoined | {copy},
                committed=self._remember(impl.committed, pending),
                rolled_back=self._remember(impl.rolled_back, pending),
            )
        r = (_int(_field(action, "start")), _int(_field(action, "delta")))
        if name == "Reserve":
            start = counters[copy].reserve(r[1])
            if start != r[0]:
                raise ReplayError(f"reserve({r[1]}) returned {start}, the spec reserved from {r[0]}")
            return replace(after, pending={c: p | {r} for c, p in impl.pending.items()})
        if name == "Drop":
            pending = {**impl.pending, copy: impl.pending[copy] - {r}}
            return replace(
                after,
                pending=pending,
                committed=self._remember(impl.committed, pending),
                rolled_back=self._remember(impl.rolled_back | {r}, pending),
            )
        if name not in ("Commit", "Rollback", "Replay"):
            raise ReplayError(f"unknown action {name!r}")
        result = update_result(counters[copy], *r)
        if result != _field(action, "result"):
            raise ReplayError(
                f"update{r} on copy {copy}: {result}, the spec's step: {_field(action, 'result')}"
            )
        if name == "Replay" or result == TOO_MANY_GAPS:
            return after
        pending = {**impl.pending, copy: impl.pending[copy] - {r}}
        committed, rolled_back = impl.committed, impl.rolled_back
        if name == "Commit":
            committed = committed | {r}
        else:
            rolled_back = rolled_back | {r}
        return replace(
            after,
            pending=pending,
            done={**impl.done, copy: impl.done[copy] | _counters(r)},
            committed=self._remember(committed, pending),
            rolled_back=self._remember(rolled_back, pending),
        )

    def _update_lwm(self, counters: Mapping[str, PartitionUpdateCounter], value: int) -> None:
        for copy, counter in counters.items():
            try:
                counter.update_lwm(value)
            except CounterInconsistencyError as error:
                raise ReplayError(f"exchange on copy {copy}: {error}") from error

    def _apply_exchange(self, impl: CounterCopies) -> CounterCopies:
        final, max_lwm, gaps = self._exchange(impl)
        primary = _field(impl.action, "primary")
        if (_field(impl.action, "lwm"), _field(impl.action, "gaps")) != (max_lwm, gaps):
            raise ReplayError(
                f"the copies' max LWM is {max_lwm} and finalize returned {gaps}, "
                f"the spec's exchange: {impl.action}"
            )
        if primary not in self._new_primaries(impl):
            raise ReplayError(f"{primary!r} cannot be primary after this exchange")
        self._update_lwm(final, max_lwm)
        rebalanced = frozenset(range(1, max_lwm + 1))
        return replace(
            impl,
            counters=final,
            done={c: d | rebalanced for c, d in impl.done.items()},
            rejoined=frozenset(),
            primary=cast(str, primary),
        )

    def _apply_join_exchange(self, impl: CounterCopies) -> CounterCopies:
        max_lwm = max(counter.lwm for counter in impl.counters.values())
        primary = _field(impl.action, "primary")
        if _field(impl.action, "lwm") != max_lwm or primary not in self.copies:
            raise ReplayError(f"the copies' max LWM is {max_lwm}, the spec's join exchange: {impl.action}")
        self._update_lwm(impl.counters, max_lwm)
        return replace(impl, primary=cast(str, primary))


def build(constants: Mapping[str, Value], mutant: str | None = None) -> CounterMapping:
    return CounterMapping(
        constants, implementation("UpdateCounter", COUNTER_MUTANTS, PartitionUpdateCounter, mutant)
    )
