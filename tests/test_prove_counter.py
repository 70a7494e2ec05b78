"""The z3 proof of the counter's invariants: it holds on the primary, fails for a backup, can fail at all,
and its transition relation is the algorithm of impl/counter.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.conformance.prove.counter import (
    CASES,
    Counterexample,
    CounterProofReport,
    CounterValues,
    prove_counter,
    step_counter,
)
from tidemark.impl.counter import CounterInconsistencyError, PartitionUpdateCounter

K = 4


@pytest.fixture(scope="module")
def report() -> CounterProofReport:
    return prove_counter(K)


def build(values: CounterValues) -> PartitionUpdateCounter:
    return PartitionUpdateCounter(lwm=values.lwm, hwm=values.hwm, items=values.items)


def values_of(counter: PartitionUpdateCounter) -> CounterValues:
    return CounterValues(lwm=counter.lwm, hwm=counter.hwm, items=counter.items)


def replay(example: Counterexample) -> PartitionUpdateCounter:
    """Apply the counterexample's update to a real counter built from its state before."""
    counter = build(example.before)
    assert example.operation.startswith("update(")
    assert counter.update(example.args["start"], example.args["delta"]) is True
    return counter


def test_every_primary_obligation_is_proved(report: CounterProofReport) -> None:
    primary = [o for o in report.obligations if o.role == "primary"]
    not_proved = [(o.operation, o.case, o.claim, o.status) for o in primary if o.status != "proved"]
    assert not not_proved
    assert report.all_primary_proved
    assert report.k == K and report.mutation is None
    # Nothing silently missing: both claims for every case, plus the case coverage.
    checked = {(o.operation, o.case, o.claim) for o in primary}
    claims = ("non_vacuous", "invariant", "exact_summary")
    expected = {(c.operation, c.name, claim) for c in CASES for claim in claims}
    expected.add(("update", "all", "cases_cover_valid_inputs"))
    assert checked == expected
    assert all(o.counterexample is None for o in primary)


def test_backup_hwm_ge_lwm_is_refuted_and_the_counterexample_is_real(report: CounterProofReport) -> None:
    assert report.backup_refuted
    catch_up = next(
        o
        for o in report.obligations
        if (o.role, o.case, o.claim) == ("backup", "catch_up", "invariant") and o.status == "refuted"
    )
    example = catch_up.counterexample
    assert example is not None
    assert "hwm_ge_lwm" in example.violated
    assert example.before == CounterValues(lwm=0, hwm=0, items=[])
    assert example.operation == "update(0, 1)"
    # The same step on the implementation: the backup's LWM passes its HWM.
    counter = replay(example)
    assert values_of(counter) == example.after
    assert counter.hwm < counter.lwm
    # ... and a backup promoted without an exchange would hand out an applied counter: Ignite's assertion.
    with pytest.raises(CounterInconsistencyError, match="LWM after HWM"):
        counter.reserve(1)


def test_every_backup_counterexample_violates_the_invariant_on_the_implementation(
    report: CounterProofReport,
) -> None:
    refuted = [o for o in report.obligations if o.role == "backup" and o.status == "refuted"]
    assert {o.case for o in refuted} >= {"catch_up", "insert_none"}
    for obligation in refuted:
        assert obligation.claim == "invariant"  # the structure of the queue survives on a backup
        example = obligation.counterexample
        assert example is not None
        assert set(example.violated) <= {"hwm_ge_lwm", "hwm_ge_highest_applied"}
        before = build(example.before)
        assert before.hwm >= before.highest_applied >= before.lwm  # the invariant held before
        counter = replay(example)
        assert values_of(counter) == example.after
        assert counter.hwm < counter.highest_applied
        if "hwm_ge_lwm" in example.violated:
            assert counter.hwm < counter.lwm


def test_backup_keeps_the_queue_structure(report: CounterProofReport) -> None:
    structure = [o for o in report.obligations if o.role == "backup" and o.claim == "structure"]
    assert structure and all(o.status == "proved" for o in structure)


def test_dropping_the_left_merge_is_refuted() -> None:
    broken = prove_counter(K, mutation="no_merge_left")
    assert not broken.all_primary_proved
    refuted = {(o.case, o.claim) for o in broken.obligations if o.role == "primary" and o.status == "refuted"}
    assert refuted == {("insert_merge_left", "invariant"), ("insert_merge_both", "invariant")}
    example = next(
        o.counterexample
        for o in broken.obligations
        if (o.role, o.case, o.claim) == ("primary", "insert_merge_left", "invariant")
    )
    assert example is not None
    assert example.violated == ["items_sorted_disjoint_non_adjacent"]
    # The broken encoding's state after is not a valid counter; the implementation merges instead.
    with pytest.raises(ValueError, match="never adjacent"):
        build(example.after)
    merged = replay(example)
    assert len(merged.items) == len(example.before.items)


def test_dropping_the_absorb_on_catch_up_is_refuted() -> None:
    broken = prove_counter(K, mutation="no_absorb")
    refuted = {(o.case, o.claim) for o in broken.obligations if o.role == "primary" and o.status == "refuted"}
    assert refuted == {("catch_up_absorb", "invariant")}
    assert not broken.all_primary_proved


def test_report_is_deterministic_apart_from_timings(report: CounterProofReport) -> None:
    def strip(r: CounterProofReport) -> list[dict[str, object]]:
        return [o.model_dump(exclude={"seconds"}) for o in r.obligations]

    again = prove_counter(K)
    assert strip(again) == strip(report)
    assert again.model_dump(exclude={"obligations"}) == report.model_dump(exclude={"obligations"})


def test_k_is_a_parameter() -> None:
    assert prove_counter(2).all_primary_proved
    with pytest.raises(ValueError):
        prove_counter(0)


# --- the encoding is the implementation's algorithm ----------------------------------------------------


@st.composite
def counters(draw: st.DrawFn) -> PartitionUpdateCounter:
    """A valid primary counter with at most K items, and HWM somewhere at or above the highest applied."""
    lwm = draw(st.integers(0, 5))
    items = []
    end = lwm
    for _ in range(draw(st.integers(0, K))):
        start = end + draw(st.integers(1, 4))
        delta = draw(st.integers(1, 3))
        items.append((start, delta))
        end = start + delta
    return PartitionUpdateCounter(lwm=lwm, hwm=end + draw(st.integers(0, 6)), items=items)


def fresh_ranges(counter: PartitionUpdateCounter) -> list[tuple[int, int]]:
    """Every (start, delta) whose counters are all unapplied and at most HWM."""
    covered = set(range(1, counter.lwm + 1))
    for s, d in counter.items:
        covered.update(range(s + 1, s + d + 1))
    return [
        (s, d)
        for s in range(counter.lwm, counter.hwm)
        for d in range(1, counter.hwm - s + 1)
        if not covered & set(range(s + 1, s + d + 1))
    ]


@given(counter=counters(), data=st.data())
def test_encoding_steps_like_the_implementation(counter: PartitionUpdateCounter, data: st.DataObject) -> None:
    before = values_of(counter)
    operations = ["reserve", "update", "update", "update", "duplicate", "finalize"]
    operation = data.draw(st.sampled_from(operations), label="operation")
    if operation == "reserve":
        delta = data.draw(st.integers(1, 3), label="delta")
        result = step_counter(K, before, "reserve", delta=delta)
        returned: object = counter.reserve(delta)
    elif operation == "finalize":
        result = step_counter(K, before, "finalize")
        counter.finalize()
        returned = None
    else:
        if operation == "update":
            choices = fresh_ranges(counter)
        else:  # a duplicate: a sub-range of 1..lwm or of one item
            spans = [(0, counter.lwm)] if counter.lwm else []
            spans += [(s, s + d) for s, d in counter.items]
            choices = [(lo, hi - lo) for a, b in spans for lo in range(a, b) for hi in range(lo + 1, b + 1)]
        if not choices:
            return
        short = [(s, d) for s, d in choices if d == 1]  # single counters reach every merge shape
        start, delta = data.draw(st.sampled_from(short or choices) | st.sampled_from(choices), label="range")
        result = step_counter(K, before, "update", start=start, delta=delta)
        if result is None:  # only a new item in a full queue is outside the encoding
            assert len(counter.items) == K and operation == "update"
            return
        returned = counter.update(start, delta)
    assert result is not None
    assert result.after == values_of(counter), f"case {result.case}"
    assert result.returned == returned, f"case {result.case}"


def test_encoding_has_no_case_for_partly_applied_ranges() -> None:
    before = CounterValues(lwm=5, hwm=20, items=[(6, 2), (10, 2)])
    for start, delta in [(5, 3), (7, 3), (8, 6), (3, 4)]:
        assert step_counter(K, before, "update", start=start, delta=delta) is None
