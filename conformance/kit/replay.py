"""Replaying a state graph through driver processes, in parallel, with the checks of in-process replay.

Two ways, chosen by the driver's capabilities:
- `load` (edge by edge, like in-process replay): for each state s and edge s --a--> s', `load` s, `step`
  a and compare the answer with s'; then `load` s and compare `enabled` with the actions on s's edges.
- paths (a driver without `load`): walks from the driver's initial state that together cover every
  edge of the graph; each step's answer must be the edge's target, or the walk ends there.
Both give one `StateResult` per state (replay.check_state), so results, summaries and reports are the
in-process replay's. A driver's fault (it exits, hangs, answers malformed output) is a `driver`
mismatch at the state, or the step, that caused it; the driver is restarted and replay goes on.
"""

from __future__ import annotations

import json
import queue
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import to_json

from tidemark.conformance.errors import ToolError
from tidemark.conformance.kit.driver import Driver, DriverFault
from tidemark.conformance.kit.protocol import (
    EnabledAnswer,
    ErrorAnswer,
    NotEnabled,
    StateAnswer,
    request_text,
)
from tidemark.conformance.mappings import ReplayError
from tidemark.conformance.replay import Mismatch, NotReplayed, StateResult, check_state
from tidemark.conformance.tlc.values import (
    Value,
    canonical_state_json,
    from_itf,
    state_digest,
    state_from_parsed_itf,
)

Edge = tuple[int, int, str]  # (dst, dst digest, dst action as ITF JSON text)
Row = tuple[int, str, list[Edge]]  # (state, its ITF JSON text, its outgoing edges)
EdgeId = tuple[int, int]  # (src, index in src's outgoing edges)
Request = tuple[str, str]

STATES_PER_BATCH = 64  # load mode: the states one batch message carries (split at MAX_BATCH requests)
WALKS_PER_BATCH = 32  # paths mode: the walks one exchange carries
MAX_PATH = 2_000  # paths mode: steps of one walk, so that walks spread over the pool's drivers


class DriverRun(BaseModel):
    """How the graph went through the drivers (ConformResult.driver)."""

    command: list[str]
    implementation: str
    capabilities: list[str]
    mode: Literal["load", "paths"]
    processes: int
    restarts: int = 0
    paths: int = 0
    steps: int = 0


class Refused(ReplayError):
    """The driver answered `not_enabled` or `error` to a step the spec takes."""


class Pool:
    """Up to `size` drivers, each used by one thread at a time, restarted after a fault."""

    def __init__(self, make: Callable[[], Driver], size: int) -> None:
        self.make, self.size = make, size
        self.idle: queue.Queue[Driver] = queue.Queue()
        self.drivers: list[Driver] = []

    def first(self) -> tuple[Driver, StateAnswer]:
        """Start one driver now (in the caller's thread): a driver that cannot start fails the run.
        The driver and its answer to init."""
        driver = self.make()
        self.drivers.append(driver)
        try:
            init = driver.start()
        except DriverFault as fault:
            raise ToolError(f"the driver failed at init: {fault}", source=" ".join(driver.command)) from None
        self.idle.put(driver)
        return driver, init

    @contextmanager
    def driver(self) -> Iterator[Driver]:
        try:
            driver = self.idle.get_nowait()
        except queue.Empty:
            driver = self.make()
            self.drivers.append(driver)
        try:
            if driver.process is None:
                driver.start()
            yield driver
        finally:
            self.idle.put(driver)

    def restarts(self) -> int:
        return sum(d.starts for d in self.drivers) - len(self.drivers)

    def close(self) -> None:
        """Stop every driver; none starts again (a worker still asking gets a DriverFault)."""
        for driver in self.drivers:
            driver.retire()


# A state answer's JSON -> its canonical text: a replay meets each state once per edge into it.
_CANONICAL: dict[bytes, str] = {}
_CANONICAL_LIMIT = 200_000


def _state_text(answer: Any) -> str:
    """The canonical text of a step's answer, or Refused."""
    if isinstance(answer, StateAnswer):
        key = to_json(answer.state)
        text = _CANONICAL.get(key)
        if text is None:
            try:
                text = canonical_state_json(state_from_parsed_itf(answer.state))
            except ValueError as error:
                raise Refused(f"the answer's state is not ITF: {error}") from None
            if len(_CANONICAL) >= _CANONICAL_LIMIT:
                _CANONICAL.clear()
            _CANONICAL[key] = text
        return text
    if isinstance(answer, NotEnabled):
        raise Refused("not enabled" + (f": {answer.reason}" if answer.reason else ""))
    if isinstance(answer, ErrorAnswer):
        raise Refused(f"the implementation failed: {answer.message}")
    raise Refused(f"unexpected answer {answer.type}")


def _loaded(answer: Any) -> None:
    if isinstance(answer, ErrorAnswer):
        raise Refused(f"load failed: {answer.message}")


def _enabled_actions(answer: Any) -> set[Value]:
    if isinstance(answer, ErrorAnswer):
        raise Refused(f"the implementation failed: {answer.message}")
    assert isinstance(answer, EnabledAnswer)
    try:
        return {from_itf(action) for action in answer.actions}
    except ValueError as error:
        raise Refused(f"an enabled action is not ITF: {error}") from None


def _step(action_json: str) -> Request:
    return ("step", request_text("step", '"action":' + action_json))


ENABLED: Request = ("enabled", request_text("enabled"))


# --- load: edge by edge -------------------------------------------------------------------------------


def _load_requests(state_json: str, outgoing: list[Edge], enabled: bool) -> list[Request]:
    """`load` s, `enabled` (which leaves the driver in s), then each edge's `step`, with `load` s again
    before every step but the first: one `load` per edge, not one more per state."""
    load = ("load", request_text("load", '"state":' + state_json))
    requests: list[Request] = [load, ENABLED] if enabled else []
    for index, (_, _, action_json) in enumerate(outgoing):
        requests += [load, _step(action_json)] if index or not enabled else [_step(action_json)]
    return requests


def _judge_loaded(row: Row, answers: Iterator[Any], enabled: bool) -> StateResult:
    """The state's result from the answers to its `_load_requests`, each answer consumed even when an
    earlier one failed (the next state's answers follow)."""
    fp, state_json, outgoing = row
    found: set[Value] | Refused | None = None
    first_load: Any = None
    if enabled:
        first_load, answer = next(answers), next(answers)
        try:
            _loaded(first_load)
            found = _enabled_actions(answer)
        except Refused as refused:
            found = refused
    steps = iter(range(len(outgoing)))

    def successor(action: Value) -> str:
        loaded = first_load if next(steps) == 0 and enabled else next(answers)
        stepped = next(answers)
        _loaded(loaded)
        return _state_text(stepped)

    def enabled_actions() -> set[Value]:
        if isinstance(found, Refused):
            raise found
        assert found is not None
        return found

    return check_state(fp, state_json, outgoing, successor, enabled_actions if enabled else None)


def _load_unit(pool: Pool, rows: Sequence[Row], enabled: bool) -> list[StateResult]:
    """Replay some states in one exchange; after a fault, each state alone, to find the one at fault."""
    with pool.driver() as driver:
        try:
            answers = iter(driver.ask([r for row in rows for r in _load_requests(row[1], row[2], enabled)]))
        except DriverFault as fault:
            if len(rows) == 1:
                return [_load_alone(pool, rows[0], enabled, fault)]
            answers = None
    if answers is None:
        return [result for row in rows for result in _load_unit(pool, [row], enabled)]
    return [_judge_loaded(row, answers, enabled) for row in rows]


def _load_alone(pool: Pool, row: Row, enabled: bool, fault: DriverFault) -> StateResult:
    """A state whose exchange failed, one edge at a time: each edge at fault is a `driver` mismatch."""
    fp, state_json, outgoing = row
    load = ("load", request_text("load", '"state":' + state_json))
    edges = iter(outgoing)
    faults: list[Mismatch] = []

    def ask(requests: list[Request], action: Any = None, dst: int | None = None) -> list[Any]:
        with pool.driver() as driver:
            try:
                return driver.ask(requests)
            except DriverFault as failure:
                source = json.loads(state_json)
                faults.append(
                    Mismatch(
                        kind="driver", src=fp, dst=dst, action=action, source_state=source, error=str(failure)
                    )
                )
                raise NotReplayed from None

    def successor(action: Value) -> str:
        dst, _, action_json = next(edges)
        loaded, stepped = ask([load, _step(action_json)], json.loads(action_json), dst)
        _loaded(loaded)
        return _state_text(stepped)

    def enabled_actions() -> set[Value]:
        try:
            loaded, found = ask([load, ENABLED])
        except NotReplayed:
            raise Refused(f"the driver failed: {faults[-1].error}") from None
        _loaded(loaded)
        return _enabled_actions(found)

    result = check_state(fp, state_json, outgoing, successor, enabled_actions if enabled else None)
    if not faults:  # the fault did not come back alone: report the exchange's
        faults.append(Mismatch(kind="driver", src=fp, source_state=json.loads(state_json), error=str(fault)))
    result.edge_mismatches += sum(1 for m in faults if m.dst is not None) or 1
    result.examples += faults
    return result


# --- paths from the initial state -----------------------------------------------------------------------


@dataclass
class Walk:
    """One walk from the initial state; `checks`: the positions after which to ask `enabled` (0 is the
    initial state, i the state after step i)."""

    steps: list[EdgeId]
    checks: set[int] = field(default_factory=set)


@dataclass
class Seen:
    """What the walks found: per edge its successor text (or the refusal) and the walk up to it."""

    outcome: dict[EdgeId, str | Refused] = field(default_factory=dict)
    faults: dict[EdgeId, DriverFault] = field(default_factory=dict)
    walked: dict[EdgeId, list[EdgeId]] = field(default_factory=dict)
    enabled: dict[int, set[Value] | Refused] = field(default_factory=dict)

    def merge(self, other: Seen) -> None:
        """Add another walk's findings; what an earlier walk found about an edge stays."""
        self.outcome = {**other.outcome, **self.outcome}
        self.faults = {**other.faults, **self.faults}
        self.walked = {**other.walked, **self.walked}
        self.enabled = {**other.enabled, **self.enabled}


def plan_walks(
    order: Sequence[int], outgoing: dict[int, list[Edge]], start: int, max_steps: int = MAX_PATH
) -> list[Walk]:
    """Walks from `start` covering every edge reachable from it: follow an edge not yet covered while
    there is one (at most `max_steps`), else start again along the shortest path to the next state (in
    `order`) that has one. Each state's enabledness is checked at its first visit."""
    parent: dict[int, EdgeId] = {}
    seen, frontier = {start}, deque([start])
    while frontier:
        src = frontier.popleft()
        for index, (dst, _, _) in enumerate(outgoing.get(src, [])):
            if dst not in seen:
                seen.add(dst)
                parent[dst] = (src, index)
                frontier.append(dst)
    covered: set[EdgeId] = set()
    left = {fp: len(outgoing.get(fp, [])) for fp in seen}
    checked: set[int] = set()
    walks: list[Walk] = []
    pending = iter([fp for fp in order if fp in seen])
    target = next(pending, None)
    while target is not None:
        if left[target] == 0 and target in checked:
            target = next(pending, None)
            continue
        prefix: list[EdgeId] = []
        at = target
        while at != start:
            prefix.append(parent[at])
            at = parent[at][0]
        walk, at = Walk(steps=prefix[::-1]), start
        for position in range(len(walk.steps) + 1):
            if at not in checked:
                checked.add(at)
                walk.checks.add(position)
            if position < len(walk.steps):
                edge = walk.steps[position]
                if edge not in covered:
                    covered.add(edge)
                    left[edge[0]] -= 1
                at = outgoing[edge[0]][edge[1]][0]
        while len(walk.steps) < len(prefix) + max_steps:
            edges = outgoing.get(at, [])
            free = next((i for i in range(len(edges)) if (at, i) not in covered), None)
            if free is None:
                break
            covered.add((at, free))
            left[at] -= 1
            walk.steps.append((at, free))
            at = edges[free][0]
            if at not in checked:
                checked.add(at)
                walk.checks.add(len(walk.steps))
        walks.append(walk)
    return walks


def _walk_requests(
    walk: Walk, outgoing: dict[int, list[Edge]], init: Request, enabled: bool
) -> list[Request]:
    requests = [init]
    for position in range(len(walk.steps) + 1):
        if position:
            src, index = walk.steps[position - 1]
            requests.append(_step(outgoing[src][index][2]))
        if enabled and position in walk.checks:
            requests.append(ENABLED)
    return requests


def _walks(
    pool: Pool, walks: Sequence[Walk], outgoing: dict[int, list[Edge]], start: tuple[int, int], enabled: bool
) -> Seen:
    """Some walks in one exchange (each begins with `init`); after a fault, each walk alone, and a walk
    at fault one request at a time, to find the step at fault."""
    seen = Seen()
    with pool.driver() as driver:
        requests = [_walk_requests(walk, outgoing, driver.init, enabled) for walk in walks]
        fault, answers = None, []
        try:
            answers = driver.ask([r for part in requests for r in part])
        except DriverFault as failure:
            if len(walks) == 1:
                driver.start()
                for request in requests[0]:
                    try:
                        answers += driver.ask([request])
                    except DriverFault as error:
                        fault = error
                        break
            fault = fault or failure
    if fault is not None and len(walks) > 1:
        for walk in walks:
            seen.merge(_walks(pool, [walk], outgoing, start, enabled))
        return seen
    at = 0
    for walk, part in zip(walks, requests, strict=True):
        _judge_walk(seen, walk, answers[at : at + len(part)], fault, outgoing, start, enabled)
        at += len(part)
    return seen


def _judge_walk(
    seen: Seen,
    walk: Walk,
    answers: list[Any],
    fault: DriverFault | None,
    outgoing: dict[int, list[Edge]],
    start: tuple[int, int],
    enabled: bool,
) -> None:
    """Record a walk's answers in `seen`, up to the first step that leaves the spec's path."""
    replies = iter(answers)
    at = start[0]
    for position in range(len(walk.steps) + 1):
        if position == 0:
            reply = next(replies, None)
            if reply is None:
                return  # the driver failed at init: the pool's first start reported the same
            if not isinstance(reply, StateAnswer) or state_digest(_state_text(reply)) != start[1]:
                return  # the pool's first start compared the driver's initial state already
        else:
            edge = walk.steps[position - 1]
            dst, dst_digest, _ = outgoing[edge[0]][edge[1]]
            reply = next(replies, None)
            if reply is None:
                if fault is not None:
                    seen.faults.setdefault(edge, fault)
                    seen.walked.setdefault(edge, walk.steps[: position - 1])
                return
            try:
                outcome: str | Refused = _state_text(reply)
            except Refused as refused:
                outcome = refused
            seen.outcome.setdefault(edge, outcome)
            seen.walked.setdefault(edge, walk.steps[: position - 1])
            if not isinstance(outcome, str) or state_digest(outcome) != dst_digest:
                return  # the implementation left the spec's path: the rest of the walk is meaningless
            at = dst
        if enabled and position in walk.checks:
            reply = next(replies, None)
            if reply is None:
                return
            try:
                seen.enabled[at] = _enabled_actions(reply)
            except Refused as refused:
                seen.enabled[at] = refused


def _assemble(
    rows: Sequence[Row], outgoing_of: dict[int, list[Edge]], seen: Seen, enabled: bool
) -> Iterator[StateResult]:
    """One StateResult per state from what the walks found (check_state over the recorded answers)."""
    for fp, state_json, outgoing in rows:
        position = iter(range(len(outgoing)))

        def successor(action: Value, fp: int = fp, position: Iterator[int] = position) -> str:
            edge = (fp, next(position))
            outcome = seen.outcome.get(edge)
            if outcome is None:
                raise NotReplayed
            if isinstance(outcome, Refused):
                raise outcome
            return outcome

        def enabled_actions(fp: int = fp) -> set[Value]:
            found = seen.enabled[fp]
            if isinstance(found, Refused):
                raise found
            return found

        checked = enabled and fp in seen.enabled
        result = check_state(fp, state_json, outgoing, successor, enabled_actions if checked else None)
        for index in range(len(outgoing)):
            if (fault := seen.faults.get((fp, index))) is not None and (fp, index) not in seen.outcome:
                result.edge_mismatches += 1
                result.examples.append(
                    Mismatch(
                        kind="driver",
                        src=fp,
                        dst=outgoing[index][0],
                        action=json.loads(outgoing[index][2]),
                        source_state=json.loads(state_json),
                        error=str(fault),
                    )
                )
        for example in result.examples:
            failing = next(
                (
                    i
                    for i, (dst, _, action) in enumerate(outgoing)
                    if dst == example.dst and json.loads(action) == example.action
                ),
                None,
            )
            walked = seen.walked.get((fp, failing)) if failing is not None else None
            if walked is not None:
                steps = [json.loads(outgoing_of[src][i][2]) for src, i in walked]
                example.path = [*steps, example.action]
        yield result


# --- the pool's work ----------------------------------------------------------------------------------


def replay_with_driver(
    rows: Sequence[Row],
    initial: Sequence[tuple[int, int]],
    make: Callable[[], Driver],
    *,
    processes: int,
    walk: bool = False,
) -> tuple[list[StateResult], DriverRun]:
    """Replay the graph's `rows` (TLC's discovery order) through `processes` drivers made by `make`;
    `initial`: the spec's initial states (fingerprint, digest). With `walk`, or a driver without `load`,
    along walks from the driver's initial state, else edge by edge."""
    pool = Pool(make, processes)
    executor = ThreadPoolExecutor(processes, thread_name_prefix="driver")
    try:
        first, init = pool.first()
        capabilities = first.capabilities
        enabled = "enabled" in capabilities
        assert first.hello is not None
        run = DriverRun(
            command=first.command,
            implementation=first.hello.implementation,
            capabilities=sorted(capabilities),
            mode="load" if "load" in capabilities and not walk else "paths",
            processes=processes,
        )
        if run.mode == "load":
            chunks = [rows[at : at + STATES_PER_BATCH] for at in range(0, len(rows), STATES_PER_BATCH)]
            results = [
                r for part in executor.map(lambda c: _load_unit(pool, c, enabled), chunks) for r in part
            ]
            run.steps = sum(len(row[2]) for row in rows)
            # Loading states hides where the implementation starts; checked where the state is (a Spark
            # task replays only its partition of the graph).
            held = any(row[0] == initial[0][0] for row in rows)
            if held and _start(initial, init) is None:
                _not_initial(results, rows, initial[0][0], init)
        else:
            results = _replay_walks(executor, pool, rows, initial, init, enabled, run)
        run.restarts = pool.restarts()
        return results, run
    finally:
        pool.close()
        executor.shutdown(wait=True, cancel_futures=True)


def _replay_walks(
    executor: ThreadPoolExecutor,
    pool: Pool,
    rows: Sequence[Row],
    initial: Sequence[tuple[int, int]],
    init: StateAnswer,
    enabled: bool,
    run: DriverRun,
) -> list[StateResult]:
    outgoing = {fp: edges for fp, _, edges in rows}
    start = _start(initial, init)
    if start is None:  # the implementation starts elsewhere: no walk can follow the spec
        results = list(_assemble(rows, outgoing, Seen(), enabled))
        _not_initial(results, rows, initial[0][0], init)
        return results
    walks = plan_walks([row[0] for row in rows], outgoing, start[0])
    groups = [walks[at : at + WALKS_PER_BATCH] for at in range(0, len(walks), WALKS_PER_BATCH)]
    seen = Seen()
    for found in executor.map(lambda group: _walks(pool, group, outgoing, start, enabled), groups):
        seen.merge(found)
    run.paths, run.steps = len(walks), sum(len(w.steps) for w in walks)
    return list(_assemble(rows, outgoing, seen, enabled))


def _start(initial: Sequence[tuple[int, int]], init: StateAnswer) -> tuple[int, int] | None:
    """The spec's initial state (fingerprint, digest) the driver's answer to `init` is, if any."""
    digest = state_digest(_state_text(init))
    return next(((fp, d) for fp, d in initial if d == digest), None)


def _not_initial(results: list[StateResult], rows: Sequence[Row], fp: int, init: StateAnswer) -> None:
    """An edge mismatch at the spec's initial state `fp`: the implementation starts in another state."""
    first = next(r for r in results if r.fp == fp)
    first.edge_mismatches += 1
    state = next(row[1] for row in rows if row[0] == fp)
    first.examples.append(
        Mismatch(
            kind="edge",
            src=fp,
            dst=fp,
            source_state=json.loads(state),
            actual_state=json.loads(_state_text(init)),
            error="init: the implementation's initial state is none of the spec's",
            path=[],
        )
    )
