"""z3 proof that the partition update counter's invariants are inductive (``tidemark prove``).

The counter is encoded with unbounded integers: ``lwm``, ``hwm``, the item count ``n`` (0..K) and K slots
``(start_i, delta_i)``, of which the first n are the out-of-order items. Each operation of
impl/counter.py (Ignite's PartitionUpdateCounterTrackingImpl) is a transition relation, split into the
cases of its algorithm; every (operation, case, claim) is one obligation ``Inv ∧ Step ⇒ Claim'``, proved
when z3 finds its negation unsatisfiable. A "non_vacuous" obligation per case checks the other way round
(proved = z3 finds a state satisfying Inv that takes the case), so no proof holds because its case is
impossible.

The same invariant is then claimed for a BACKUP between exchanges, which applies ranges reserved by the
primary and never raises its HWM on update: z3 refutes it and the counterexample is returned (HWM >= LWM
is a primary invariant, restored on backups only by the exchange).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import z3
from pydantic import BaseModel, ConfigDict

from tidemark.conformance.prove.relations import (
    Mutation,
    Named,
    Role,
    Term,
    _conj,
    _duplicate,
    _effect_catch_up,
    _effect_catch_up_absorb,
    _effect_finalize,
    _effect_insert,
    _effect_merge_both,
    _effect_merge_left,
    _effect_merge_right,
    _effect_reserve,
    _fresh,
    _gap_first,
    _in_gap,
    _in_range,
    _invariant,
    _merge_left,
    _merge_right,
    _position,
    _structure,
    _Sym,
    _unchanged,
    _Vars,
)

__all__ = [
    "CASES",
    "CounterProofReport",
    "CounterValues",
    "Counterexample",
    "Obligation",
    "StepResult",
    "prove_counter",
    "step_counter",
]

Status = Literal["proved", "refuted", "unknown"]


ASSUMPTIONS = [
    "counter values are unbounded mathematical integers (Ignite's longs never overflow in practice)",
    "at most K out-of-order items: inserting a new item into a queue that already holds K items is out of "
    "scope (the insert case assumes n < K; merges and catch-ups never grow the queue)",
    "update inputs are valid: a range start+1..start+delta (delta > 0) that is either entirely fresh "
    "(disjoint from 1..lwm and from every item) or entirely applied (a duplicate); partly applied ranges "
    "are out of scope (impl/counter.py raises ValueError for them)",
    "on the primary an applied range was reserved: start+delta <= hwm; a backup has no such bound",
    "reserve is a primary operation; the claim for a backup concerns update and finalize",
    "the proof is per K; the encoding is uniform in K, so larger K are checked by passing k",
]


class CounterValues(BaseModel):
    """Concrete counter values (as in tidemark.impl.counter.PartitionUpdateCounter)."""

    model_config = ConfigDict(frozen=True)

    lwm: int
    hwm: int
    items: list[tuple[int, int]]


class Counterexample(BaseModel):
    """A concrete step violating a claim: state before, arguments, state after, failed conjuncts."""

    model_config = ConfigDict(frozen=True)

    before: CounterValues
    operation: str
    args: dict[str, int]
    after: CounterValues
    violated: list[str]


class Obligation(BaseModel):
    model_config = ConfigDict(frozen=True)

    operation: str
    case: str
    role: Role
    claim: str
    status: Status
    seconds: float
    counterexample: Counterexample | None = None


class CounterProofReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    k: int
    mutation: Mutation | None
    assumptions: list[str]
    obligations: list[Obligation]
    all_primary_proved: bool
    backup_refuted: bool


class StepResult(BaseModel):
    """The encoding's step from a concrete state (to check it against impl/counter.py)."""

    model_config = ConfigDict(frozen=True)

    case: str
    returned: int | bool | None
    after: CounterValues


# --- claims ------------------------------------------------------------------------------------------------


def _summary_update(v: _Vars) -> Named:
    rng = _in_range(v.start, v.delta, v.x)
    return [("covered_after_eq_before_union_range", v.post.covered(v.x) == z3.Or(v.pre.covered(v.x), rng))]


def _summary_reserve(v: _Vars) -> Named:
    return [
        ("covered_unchanged", v.post.covered(v.x) == v.pre.covered(v.x)),
        (
            "reserved_range_not_applied",
            z3.Implies(_in_range(v.pre.hwm, v.delta, v.x), z3.Not(v.pre.covered(v.x))),
        ),
    ]


def _summary_finalize(v: _Vars) -> Named:
    pre, post, x = v.pre, v.post, v.x
    claims: Named = [
        ("covered_after_eq_before_union_gaps", post.covered(x) == z3.Or(pre.covered(x), _in_gap(v, x))),
        ("gaps_were_not_applied", z3.Not(z3.And(pre.covered(x), _in_gap(v, x)))),
        (
            "gaps_non_empty",
            z3.And(*[z3.Implies(i < pre.n, _gap_first(v, i) <= pre.starts[i]) for i in range(v.k)]),
        ),
        ("lwm_not_lowered", post.lwm >= pre.lwm),
    ]
    if v.role == "primary":
        claims.append(("hwm_not_raised", post.hwm <= pre.hwm))
    return claims


@dataclass(frozen=True)
class _Case:
    operation: str
    name: str
    guard: Callable[[_Vars], Term]
    effect: Callable[[_Vars], Term]
    summary: Callable[[_Vars], Named]
    returns: Callable[[_Vars], Term] | None = None


def _update_case(
    name: str, guard: Callable[[_Vars], Term], effect: Callable[[_Vars], Term], ret: bool
) -> _Case:
    return _Case("update", name, guard, effect, _summary_update, lambda _v: z3.BoolVal(ret))


def _g_catch_up(v: _Vars) -> Term:
    pre = v.pre
    absorb = z3.And(pre.n > 0, pre.starts[0] == v.start + v.delta)
    return z3.And(_fresh(v), v.start == pre.lwm, z3.Not(absorb))


def _g_catch_up_absorb(v: _Vars) -> Term:
    pre = v.pre
    return z3.And(_fresh(v), v.start == pre.lwm, pre.n > 0, pre.starts[0] == v.start + v.delta)


def _g_insert(v: _Vars, left: bool, right: bool) -> Term:
    parts = [_fresh(v), v.start > v.pre.lwm, _position(v)]
    parts.append(_merge_left(v) if left else z3.Not(_merge_left(v)))
    parts.append(_merge_right(v) if right else z3.Not(_merge_right(v)))
    if not right and (not left or v.mutation == "no_merge_left"):
        parts.append(v.pre.n < v.k)  # a new item: out of scope when the K slots are full
    return z3.And(*parts)


def _g_stale(v: _Vars) -> Term:
    return z3.And(_duplicate(v), v.start < v.pre.lwm)


def _g_covered(v: _Vars) -> Term:
    return z3.And(_duplicate(v), v.start >= v.pre.lwm)


#: Every (operation, case) of the encoding, in report order.
CASES: tuple[_Case, ...] = (
    _Case(
        "reserve",
        "all",
        lambda v: v.delta > 0,
        _effect_reserve,
        _summary_reserve,
        lambda v: v.pre.hwm,
    ),
    _update_case("catch_up", _g_catch_up, _effect_catch_up, True),
    _update_case("catch_up_absorb", _g_catch_up_absorb, _effect_catch_up_absorb, True),
    _update_case("insert_none", lambda v: _g_insert(v, False, False), _effect_insert, True),
    _update_case("insert_merge_left", lambda v: _g_insert(v, True, False), _effect_merge_left, True),
    _update_case("insert_merge_right", lambda v: _g_insert(v, False, True), _effect_merge_right, True),
    _update_case("insert_merge_both", lambda v: _g_insert(v, True, True), _effect_merge_both, True),
    _update_case("stale", _g_stale, _unchanged, False),
    _update_case("covered", _g_covered, _unchanged, False),
    _Case("finalize", "all", lambda v: z3.BoolVal(True), _effect_finalize, _summary_finalize),
)


# --- solving -----------------------------------------------------------------------------------------------


def _vars(k: int, role: Role, mutation: Mutation | None) -> _Vars:
    return _Vars(
        _Sym.make(k, ""),
        _Sym.make(k, "'"),
        z3.Int("start"),
        z3.Int("delta"),
        z3.Int("p"),
        z3.Int("x"),
        role,
        mutation,
    )


def _int(model: Term, term: Term) -> int:
    return int(model.eval(term, model_completion=True).as_long())


def _values(model: Term, c: _Sym) -> CounterValues:
    n = max(0, min(_int(model, c.n), c.k))
    items = [(_int(model, c.starts[i]), _int(model, c.deltas[i])) for i in range(n)]
    return CounterValues(lwm=_int(model, c.lwm), hwm=_int(model, c.hwm), items=items)


def _cost(v: _Vars, operation: str, uses_x: bool) -> Term:
    """Size of a counterexample: minimized so that the reported one is small and reproducible."""
    pre = v.pre
    cost = pre.lwm + pre.hwm + 2 * pre.n
    for i in range(v.k):
        cost = cost + z3.If(i < pre.n, pre.starts[i] + pre.deltas[i], 0)
    if operation in ("update", "reserve"):
        cost = cost + v.delta
    if operation == "update":
        cost = cost + v.start
    if uses_x:
        cost = cost + z3.If(v.x >= 0, v.x, -v.x)
    return cost


def _check(
    case: _Case, v: _Vars, claim_name: str, claim: Named, timeout_ms: int
) -> tuple[Status, Counterexample | None]:
    hypotheses = [_conj(_invariant(v.pre)), case.guard(v), case.effect(v)]
    negated = z3.Not(_conj(claim))
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*hypotheses, negated)
    result = solver.check()
    if result == z3.unsat:
        return "proved", None
    if result != z3.sat:
        return "unknown", None
    uses_x = claim_name == "exact_summary"
    opt = z3.Optimize()
    opt.set("timeout", timeout_ms)
    opt.add(*hypotheses, negated)
    opt.minimize(_cost(v, case.operation, uses_x))
    model = opt.model() if opt.check() == z3.sat else solver.model()
    args = {name: _int(model, term) for name, term in v.args(case.operation).items()}
    if uses_x:
        args["x"] = _int(model, v.x)
    shown = ", ".join(str(args[name]) for name in v.args(case.operation))
    violated = [name for name, term in claim if not z3.is_true(model.eval(term, model_completion=True))]
    example = Counterexample(
        before=_values(model, v.pre),
        operation=f"{case.operation}({shown})",
        args=args,
        after=_values(model, v.post),
        violated=violated,
    )
    return "refuted", example


def _check_witness(case: _Case, v: _Vars, timeout_ms: int) -> Status:
    """Non-vacuity: some state satisfying Inv takes this case (else its proofs would hold trivially)."""
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(_conj(_invariant(v.pre)), case.guard(v), case.effect(v))
    result = solver.check()
    return "proved" if result == z3.sat else "refuted" if result == z3.unsat else "unknown"


def _claims(case: _Case, v: _Vars) -> list[tuple[str, Named]]:
    if v.role == "backup":
        return [("invariant", _invariant(v.post)), ("structure", _structure(v.post))]
    return [("invariant", _invariant(v.post)), ("exact_summary", case.summary(v))]


def _partition_claim(v: _Vars) -> Named:
    """Every valid update input falls in exactly one case (or is the out-of-scope insert into K items)."""
    guards = [case.guard(v) for case in CASES if case.operation == "update"]
    full = z3.And(_fresh(v), v.start > v.pre.lwm, _position(v), z3.Not(_merge_right(v)), v.pre.n == v.k)
    if v.mutation != "no_merge_left":
        full = z3.And(full, z3.Not(_merge_left(v)))
    chosen = z3.Sum(*[z3.If(g, 1, 0) for g in [*guards, full]])
    return [("exactly_one_case", chosen == 1)]


#: Not a step: "every valid update input is handled by exactly one case" (the claim only reads the input).
_COVERAGE = _Case(
    "update",
    "all",
    lambda v: z3.And(z3.Or(_fresh(v), _duplicate(v)), _position(v)),
    lambda v: z3.BoolVal(True),
    _partition_claim,
)


def prove_counter(
    k: int = 4, *, mutation: Mutation | None = None, timeout_ms: int = 60_000
) -> CounterProofReport:
    """Prove the counter's invariants for up to `k` items; refute the same claim for a backup.

    `mutation` deliberately breaks the encoding ("no_merge_left": a range adjacent to the item before it
    becomes a new item; "no_absorb": catch-up leaves the item at the new lwm queued) to show that the
    proof can fail.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    obligations: list[Obligation] = []

    def run(case: _Case, v: _Vars, claim_name: str, claim: Named | None) -> None:
        began = time.perf_counter()
        if claim is None:
            status, example = _check_witness(case, v, timeout_ms), None
        else:
            status, example = _check(case, v, claim_name, claim, timeout_ms)
        seconds = round(time.perf_counter() - began, 4)
        obligations.append(
            Obligation(
                operation=case.operation,
                case=case.name,
                role=v.role,
                claim=claim_name,
                status=status,
                seconds=seconds,
                counterexample=example,
            )
        )

    for role in ("primary", "backup"):
        v = _vars(k, role, mutation)
        for case in CASES:
            if role == "backup" and case.operation == "reserve":
                continue
            run(case, v, "non_vacuous", None)
            for claim_name, claim in _claims(case, v):
                run(case, v, claim_name, claim)
        if role == "primary":
            run(_COVERAGE, v, "cases_cover_valid_inputs", _partition_claim(v))

    primary = [o for o in obligations if o.role == "primary"]
    return CounterProofReport(
        k=k,
        mutation=mutation,
        assumptions=list(ASSUMPTIONS),
        obligations=obligations,
        all_primary_proved=bool(primary) and all(o.status == "proved" for o in primary),
        backup_refuted=any(
            o.role == "backup" and o.claim == "invariant" and o.status == "refuted" for o in obligations
        ),
    )


def step_counter(
    k: int, before: CounterValues, operation: str, *, start: int = 0, delta: int = 0, role: Role = "primary"
) -> StepResult | None:
    """Apply the encoding's transition relation to a concrete state: the case taken and the state after.

    None when no case applies (an input outside the proof's scope). Used to check, state by state, that
    the encoding is the algorithm of impl/counter.py.
    """
    v = _vars(k, role, None)
    pre = v.pre
    fixed = [pre.lwm == before.lwm, pre.hwm == before.hwm, pre.n == len(before.items)]
    for i, (s, d) in enumerate(before.items):
        fixed += [pre.starts[i] == s, pre.deltas[i] == d]
    fixed += [v.start == start, v.delta == delta]
    for case in CASES:
        if case.operation != operation:
            continue
        solver = z3.Solver()
        solver.add(*fixed, case.guard(v), case.effect(v))
        if solver.check() != z3.sat:
            continue
        model = solver.model()
        after = _values(model, v.post)
        returned: int | bool | None = None
        if case.returns is not None:
            value = model.eval(case.returns(v), model_completion=True)
            returned = z3.is_true(value) if z3.is_bool(value) else int(value.as_long())
        return StepResult(case=case.name, returned=returned, after=after)
    return None
