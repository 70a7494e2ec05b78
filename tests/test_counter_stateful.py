"""Stateful test: a primary's PartitionUpdateCounter against a model of applied and reserved counters.

The model is deliberately naive: the set of counters applied (committed or rolled back) or closed by
finalize, the HWM handed out by reservations, and the ranges still in flight. Any counter class with the
PartitionUpdateCounter API can be plugged in (`make_machine`); a counter without out-of-order tracking must
be caught.
"""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tidemark.conformance.zoo.mutants import NoOutOfOrderTrackingCounter
from tidemark.impl.counter import PartitionUpdateCounter


def covered_counters(counter: PartitionUpdateCounter) -> set[int]:
    """Counters the counter claims are applied: 1..lwm plus every queued item."""
    covered = set(range(1, counter.lwm + 1))
    for start, delta in counter.items:
        covered.update(range(start + 1, start + delta + 1))
    return covered


def holes(covered: set[int], upto: int) -> list[tuple[int, int]]:
    """Maximal runs of counters in 1..upto missing from `covered`, as inclusive (first, last)."""
    runs: list[tuple[int, int]] = []
    for c in range(1, upto + 1):
        if c in covered:
            continue
        if runs and runs[-1][1] == c - 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


def make_machine(counter_cls: type[PartitionUpdateCounter]) -> type[RuleBasedStateMachine]:
    """A state machine driving `counter_cls` in the primary role."""

    class CounterMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.counter = counter_cls()
            self.applied: set[int] = set()  # applied (commit/rollback) or closed by finalize
            self.hwm = 0  # what the reservations handed out so far
            self.in_flight: list[tuple[int, int]] = []  # reserved, neither applied nor lost yet
            self.finished: list[tuple[int, int]] = []  # applied ranges and finalize gaps, as (start, delta)

        def take_in_flight(self, data: st.DataObject) -> tuple[int, int]:
            index = data.draw(st.integers(0, len(self.in_flight) - 1), label="in-flight range")
            return self.in_flight.pop(index)

        def apply(self, start: int, delta: int) -> None:
            assert self.counter.update(start, delta) is True, f"fresh range ({start}, {delta}) not applied"
            self.applied.update(range(start + 1, start + delta + 1))
            self.finished.append((start, delta))

        @rule(delta=st.integers(1, 3))
        def reserve(self, delta: int) -> None:
            reserved = self.counter.reserve(delta)
            assert reserved == self.hwm, f"reserve returned {reserved}, model HWM {self.hwm}"
            self.hwm += delta
            self.in_flight.append((reserved, delta))

        @precondition(lambda self: self.in_flight)
        @rule(data=st.data())
        def commit(self, data: st.DataObject) -> None:
            self.apply(*self.take_in_flight(data))

        @precondition(lambda self: self.in_flight)
        @rule(data=st.data())
        def roll_back(self, data: st.DataObject) -> None:
            # In persistent mode a rollback also applies update(start, delta) (and logs a rollback record).
            self.apply(*self.take_in_flight(data))

        @precondition(lambda self: self.in_flight)
        @rule(data=st.data())
        def lose(self, data: st.DataObject) -> None:
            # The tx never reaches this copy: its range stays a hole until finalize.
            self.take_in_flight(data)

        @precondition(lambda self: self.finished)
        @rule(data=st.data())
        def duplicate(self, data: st.DataObject) -> None:
            # Re-delivery of a finished range, or WAL replay of part of it (a data record: update(c - 1, 1)).
            start, delta = data.draw(st.sampled_from(self.finished), label="finished range")
            lo = data.draw(st.integers(start, start + delta - 1), label="from")
            hi = data.draw(st.integers(lo + 1, start + delta), label="to")
            before = self.counter.snapshot()
            assert self.counter.update(lo, hi - lo) is False, f"duplicate ({lo}, {hi - lo}) applied again"
            assert self.counter.snapshot() == before, "a duplicate changed the counter"

        @precondition(lambda self: not self.in_flight)
        @rule()
        def finalize(self) -> None:
            highest = max(self.applied, default=0)
            expected = holes(self.applied, highest)
            gaps = self.counter.finalize()
            assert gaps == expected, f"finalize reported {gaps}, holes are {expected}"
            assert self.counter.items == [], "items left after finalize"
            lwm, hwm = self.counter.lwm, self.counter.hwm
            assert lwm == hwm == highest, f"after finalize lwm={lwm} hwm={hwm}, highest applied {highest}"
            for first, last in gaps:
                self.applied.update(range(first, last + 1))
                self.finished.append((first - 1, last - first + 1))
            self.hwm = highest  # the reserved tail above the highest applied counter is dropped

        @rule()
        def restart(self) -> None:
            # Persist (lwm in partition meta, gaps as bytes), lose memory, restore. In-flight ranges are lost.
            old = self.counter
            restored = type(old).from_bytes(old.lwm, old.to_bytes())
            assert type(restored) is type(old)
            assert (restored.lwm, restored.items) == (old.lwm, old.items)
            assert restored.hwm == old.highest_applied, f"restored hwm={restored.hwm}, {old.highest_applied=}"
            assert restored.first, "a restored counter must treat the next exchange as the first"
            self.counter = restored
            self.in_flight.clear()
            self.hwm = max(self.applied, default=0)

        @invariant()
        def items_well_formed(self) -> None:
            items = self.counter.items
            assert items == sorted(items), f"items not sorted: {items}"
            prev_end = self.counter.lwm
            for start, delta in items:
                assert delta > 0, f"empty item in {items}"
                assert start > prev_end, f"items overlap, touch or reach lwm: lwm={self.counter.lwm} {items}"
                prev_end = start + delta

        @invariant()
        def lwm_at_most_highest_applied(self) -> None:
            assert self.counter.lwm <= self.counter.highest_applied

        @invariant()
        def everything_up_to_lwm_was_applied(self) -> None:
            missing = [c for c in range(1, self.counter.lwm + 1) if c not in self.applied]
            assert not missing, f"counters {missing} <= lwm={self.counter.lwm} were never applied"

        @invariant()
        def covered_counters_match_model(self) -> None:
            covered = covered_counters(self.counter)
            assert covered == self.applied, (
                f"counter covers {sorted(covered - self.applied)} not applied, "
                f"misses {sorted(self.applied - covered)} applied"
            )

        @invariant()
        def hwm_bounds_on_primary(self) -> None:
            c = self.counter
            assert c.hwm == self.hwm, f"hwm={c.hwm}, reservations handed out {self.hwm}"
            assert c.hwm >= c.lwm, f"HWM {c.hwm} < LWM {c.lwm} on the primary"
            assert c.hwm >= c.highest_applied

    CounterMachine.__name__ = f"CounterMachine[{counter_cls.__name__}]"
    return CounterMachine


TestPartitionUpdateCounter = make_machine(PartitionUpdateCounter).TestCase


def test_state_machine_catches_counter_without_out_of_order_tracking() -> None:
    with pytest.raises(AssertionError, match=r"never applied|counter covers"):
        run_state_machine_as_test(make_machine(NoOutOfOrderTrackingCounter))
