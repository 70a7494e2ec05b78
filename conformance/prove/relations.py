"""The update counter as z3 terms for conformance/prove/counter.py: the symbolic counter (LWM, HWM and up to
K out-of-order items), its invariants, and each operation's effect as a transition relation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import z3

Role = Literal["primary", "backup"]
Mutation = Literal["no_merge_left", "no_absorb"]
# z3 terms: the z3 package ships no type information.
Term = Any
Named = list[tuple[str, Term]]


# --- the symbolic counter ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sym:
    """Symbolic counter state: lwm, hwm, n and K slots."""

    lwm: Term
    hwm: Term
    n: Term
    starts: tuple[Term, ...]
    deltas: tuple[Term, ...]

    @staticmethod
    def make(k: int, tag: str) -> _Sym:
        return _Sym(
            z3.Int(f"lwm{tag}"),
            z3.Int(f"hwm{tag}"),
            z3.Int(f"n{tag}"),
            tuple(z3.Int(f"start_{i}{tag}") for i in range(k)),
            tuple(z3.Int(f"delta_{i}{tag}") for i in range(k)),
        )

    @property
    def k(self) -> int:
        return len(self.starts)

    def end(self, i: int) -> Term:
        return self.starts[i] + self.deltas[i]

    def highest_applied(self) -> Term:
        highest = self.lwm
        for i in range(self.k):
            highest = z3.If(self.n == i + 1, self.end(i), highest)
        return highest

    def covered(self, x: Term) -> Term:
        """x is applied: 1 <= x <= lwm, or inside one of the n items."""
        in_items = [z3.And(i < self.n, self.starts[i] < x, x <= self.end(i)) for i in range(self.k)]
        return z3.Or(z3.And(x >= 1, x <= self.lwm), *in_items)

    def same_slot(self, other: _Sym, j: int, i: int) -> Term:
        """Slot j of `other` equals slot i of self."""
        return z3.And(other.starts[j] == self.starts[i], other.deltas[j] == self.deltas[i])


def _select(values: Sequence[Term], index: Term) -> Term:
    """values[index] for a symbolic index (0 outside the range; every use is guarded)."""
    out: Term = z3.IntVal(0)
    for i, value in enumerate(values):
        out = z3.If(index == i, value, out)
    return out


def _structure(c: _Sym) -> Named:
    """The role-independent part of the invariant: Ignite's merged, sorted queue above lwm."""
    k = c.k
    return [
        ("n_in_0_to_K", z3.And(c.n >= 0, c.n <= k)),
        ("lwm_non_negative", c.lwm >= 0),
        ("deltas_positive", z3.And(*[z3.Implies(i < c.n, c.deltas[i] > 0) for i in range(k)])),
        ("first_item_above_lwm", z3.Implies(c.n > 0, c.starts[0] > c.lwm)),
        (
            "items_sorted_disjoint_non_adjacent",
            z3.And(*[z3.Implies(i + 1 < c.n, c.starts[i + 1] > c.end(i)) for i in range(k - 1)]),
        ),
    ]


def _invariant(c: _Sym) -> Named:
    """The claimed invariant: structure plus the HWM bounds the primary keeps."""
    return [
        *_structure(c),
        ("hwm_ge_lwm", c.hwm >= c.lwm),
        ("hwm_ge_highest_applied", c.hwm >= c.highest_applied()),
    ]


def _conj(named: Named) -> Term:
    return z3.And(*[term for _, term in named])


# --- operations as transition relations ------------------------------------------------------------------


@dataclass(frozen=True)
class _Vars:
    pre: _Sym
    post: _Sym
    start: Term
    delta: Term
    p: Term  # insertion position: number of items starting below `start`
    x: Term  # a counter, for the set claims (free, i.e. universally quantified in the negation)
    role: Role
    mutation: Mutation | None

    @property
    def k(self) -> int:
        return self.pre.k

    def args(self, operation: str) -> dict[str, Term]:
        if operation == "update":
            return {"start": self.start, "delta": self.delta}
        if operation == "reserve":
            return {"delta": self.delta}
        return {}


def _keep(v: _Vars, upto: Term, skip: Term | None = None) -> Term:
    """Slots below `upto` (except `skip`) are unchanged."""
    pre, post = v.pre, v.post
    keep = []
    for j in range(v.k):
        cond = j < upto if skip is None else z3.And(j < upto, j != skip)
        keep.append(z3.Implies(cond, pre.same_slot(post, j, j)))
    return z3.And(*keep)


def _shift_left(v: _Vars, first: Term) -> Term:
    """post slot j = pre slot j+1 for first <= j < n-1 (an item was removed at index `first`)."""
    pre, post = v.pre, v.post
    return z3.And(
        *[
            z3.Implies(z3.And(first <= j, j < pre.n - 1), pre.same_slot(post, j, j + 1))
            for j in range(v.k - 1)
        ]
    )


def _fresh(v: _Vars) -> Term:
    """start+1..start+delta is disjoint from 1..lwm and from every item."""
    pre, s, d = v.pre, v.start, v.delta
    disjoint = [z3.Implies(i < pre.n, z3.Or(pre.end(i) <= s, pre.starts[i] >= s + d)) for i in range(v.k)]
    fresh = z3.And(d > 0, s >= pre.lwm, *disjoint)
    if v.role == "primary":
        fresh = z3.And(fresh, s + d <= pre.hwm)  # the primary reserved it
    return fresh


def _duplicate(v: _Vars) -> Term:
    """start+1..start+delta is already applied: inside 1..lwm or inside one item."""
    pre, s, d = v.pre, v.start, v.delta
    inside = [z3.And(i < pre.n, pre.starts[i] <= s, s + d <= pre.end(i)) for i in range(v.k)]
    return z3.And(d > 0, s >= 0, z3.Or(s + d <= pre.lwm, *inside))


def _position(v: _Vars) -> Term:
    pre, p = v.pre, v.p
    below = [z3.Implies(i < pre.n, (pre.starts[i] < v.start) == (i < p)) for i in range(v.k)]
    return z3.And(p >= 0, p <= pre.n, *below)


def _merge_left(v: _Vars) -> Term:
    ends = [v.pre.end(i) for i in range(v.k)]
    return z3.And(v.p > 0, _select(ends, v.p - 1) == v.start)


def _merge_right(v: _Vars) -> Term:
    return z3.And(v.p < v.pre.n, _select(v.pre.starts, v.p) == v.start + v.delta)


def _unchanged(v: _Vars) -> Term:
    pre, post = v.pre, v.post
    return z3.And(post.lwm == pre.lwm, post.hwm == pre.hwm, post.n == pre.n, _keep(v, pre.n))


def _effect_catch_up(v: _Vars) -> Term:
    pre, post = v.pre, v.post
    return z3.And(post.lwm == v.start + v.delta, post.hwm == pre.hwm, post.n == pre.n, _keep(v, pre.n))


def _effect_catch_up_absorb(v: _Vars) -> Term:
    if v.mutation == "no_absorb":
        return _effect_catch_up(v)
    pre, post = v.pre, v.post
    return z3.And(post.lwm == pre.end(0), post.hwm == pre.hwm, post.n == pre.n - 1, _shift_left(v, 0))


def _effect_insert(v: _Vars, delta: Term | None = None) -> Term:
    """A new item (start, delta) at position p; later items move one slot up."""
    pre, post, p = v.pre, v.post, v.p
    new_delta = v.delta if delta is None else delta
    parts = [post.lwm == pre.lwm, post.hwm == pre.hwm, post.n == pre.n + 1, _keep(v, p)]
    for j in range(v.k):
        parts.append(z3.Implies(j == p, z3.And(post.starts[j] == v.start, post.deltas[j] == new_delta)))
        if j > 0:
            parts.append(z3.Implies(z3.And(j > p, j <= pre.n), pre.same_slot(post, j, j - 1)))
    return z3.And(*parts)


def _effect_merge_left(v: _Vars) -> Term:
    if v.mutation == "no_merge_left":
        return _effect_insert(v)
    pre, post, p = v.pre, v.post, v.p
    parts = [post.lwm == pre.lwm, post.hwm == pre.hwm, post.n == pre.n, _keep(v, pre.n, skip=p - 1)]
    for j in range(v.k):
        grown = z3.And(post.starts[j] == pre.starts[j], post.deltas[j] == pre.deltas[j] + v.delta)
        parts.append(z3.Implies(j == p - 1, grown))
    return z3.And(*parts)


def _effect_merge_right(v: _Vars) -> Term:
    pre, post, p = v.pre, v.post, v.p
    parts = [post.lwm == pre.lwm, post.hwm == pre.hwm, post.n == pre.n, _keep(v, pre.n, skip=p)]
    for j in range(v.k):
        grown = z3.And(post.starts[j] == v.start, post.deltas[j] == v.delta + pre.deltas[j])
        parts.append(z3.Implies(j == p, grown))
    return z3.And(*parts)


def _effect_merge_both(v: _Vars) -> Term:
    pre, post, p = v.pre, v.post, v.p
    if v.mutation == "no_merge_left":
        return _effect_merge_right(v)
    parts = [
        post.lwm == pre.lwm,
        post.hwm == pre.hwm,
        post.n == pre.n - 1,
        _keep(v, p - 1),
        _shift_left(v, p),
    ]
    for j in range(v.k - 1):
        grown = pre.deltas[j] + v.delta + pre.deltas[j + 1]
        parts.append(z3.Implies(j == p - 1, z3.And(post.starts[j] == pre.starts[j], post.deltas[j] == grown)))
    return z3.And(*parts)


def _effect_reserve(v: _Vars) -> Term:
    pre, post = v.pre, v.post
    return z3.And(post.lwm == pre.lwm, post.hwm == pre.hwm + v.delta, post.n == pre.n, _keep(v, pre.n))


def _effect_finalize(v: _Vars) -> Term:
    pre, post = v.pre, v.post
    return z3.And(post.lwm == pre.highest_applied(), post.n == 0, post.hwm == post.lwm)


def _gap_first(v: _Vars, i: int) -> Term:
    """First counter of the hole before item i (finalize reports (gap_first, start_i))."""
    return v.pre.lwm + 1 if i == 0 else v.pre.end(i - 1) + 1


def _in_gap(v: _Vars, x: Term) -> Term:
    pre = v.pre
    return z3.Or(*[z3.And(i < pre.n, _gap_first(v, i) <= x, x <= pre.starts[i]) for i in range(v.k)])


def _in_range(start: Term, delta: Term, x: Term) -> Term:
    return z3.And(start < x, x <= start + delta)
