"""The expectation checker: each expected value against what the system observes now, one Check per field.

Only the values an expectation names are observed (a counter's LWM reads that counter, not the server's
whole state), so checking costs what the scenario asks for, whatever the history behind it.
"""

from __future__ import annotations

from typing import cast

from pydantic import JsonValue

from tidemark.conformance.scenarios.adapters.base import System
from tidemark.conformance.scenarios.expectations import (
    ExchangeExpectation,
    Expectations,
    IdleVerifyExpectation,
    NodeExpectation,
    TopologyExpectation,
)
from tidemark.conformance.scenarios.result import Check


def check(path: str, expected: JsonValue, actual: JsonValue) -> Check:
    return Check(path=path, expected=expected, actual=actual, holds=expected == actual)


def expectation_checks(
    where: str,
    expect: Expectations,
    topology: TopologyExpectation | None,
    idle_verify: IdleVerifyExpectation | None,
    system: System,
) -> list[Check]:
    """The expectations after a step (`where` = "steps[3]") or at the end (`where` = "")."""
    prefix = f"{where}." if where else ""
    checks: list[Check] = []
    for node, expectation in expect.items():
        at = f"{prefix}expect.{node}"
        if node == system.client:
            checks += [
                check(f"{at}.txs.{tx}", s, system.client_tx(tx)) for tx, s in (expectation.txs or {}).items()
            ]
        else:
            checks += _node_checks(at, node, expectation, system)
    if topology is not None:
        checks += _topology_checks(f"{prefix}topology", topology, system)
    if idle_verify is not None:
        checks += _idle_verify_checks(f"{prefix}idle_verify", idle_verify, system)
    return checks


def _node_checks(at: str, node: str, e: NodeExpectation, system: System) -> list[Check]:
    checks = []
    if e.state is not None:
        checks.append(check(f"{at}.state", e.state, system.node_state(node)))
    for part, counter in (e.counters or {}).items():
        # A server may hold no counter of the partition (down, evicted, never assigned).
        held = system.counter(node, part)
        actual = held.model_dump(mode="json") if held else {}
        for field, expected in counter.model_dump(mode="json", exclude_none=True).items():
            checks.append(check(f"{at}.counters[{part}].{field}", expected, actual.get(field)))
    if e.data is not None:
        actual_data = {str(k): v for k, v in system.data(node).items()}
        checks.append(
            check(f"{at}.data", {str(k): v for k, v in e.data.items()}, cast(JsonValue, actual_data))
        )
    for part, copy_state in (e.partitions or {}).items():
        checks.append(check(f"{at}.partitions[{part}]", copy_state, system.partition_state(node, part)))
    for part, init in (e.init or {}).items():
        checks.append(check(f"{at}.init[{part}]", init, system.init(node, part)))
    for part, history in (e.history or {}).items():
        checks.append(check(f"{at}.history[{part}]", history, system.history(node, part)))
    for part, rebalance in (e.rebalanced or {}).items():
        view = system.rebalanced(node, part)
        if rebalance is None:
            checks.append(
                check(f"{at}.rebalanced[{part}]", None, view.model_dump(by_alias=True) if view else None)
            )
            continue
        done = view.model_dump(by_alias=True) if view else {}
        for field, expected in rebalance.model_dump(by_alias=True, exclude_none=True).items():
            checks.append(check(f"{at}.rebalanced[{part}].{field}", expected, done.get(field)))
    for tx, state in (e.txs or {}).items():
        checks.append(check(f"{at}.txs.{tx}", state, system.server_tx(node, tx)))
    return checks + _fragment_checks(at, node, e, system)


def _fragment_checks(at: str, node: str, e: NodeExpectation, system: System) -> list[Check]:
    """Hazelcast: the member's replica index, fragments (versions, dirty, entries) and free permits;
    NCache: its stores (entries "active" and "replica") and whose replica it keeps."""
    checks = []
    if e.replica is not None:
        checks.append(check(f"{at}.replica", e.replica, system.replica(node)))
    for ns, versions in (e.versions or {}).items():
        checks.append(
            check(
                f"{at}.versions.{ns}", cast(JsonValue, versions), cast(JsonValue, system.versions(node, ns))
            )
        )
    for ns, dirty in (e.dirty or {}).items():
        checks.append(check(f"{at}.dirty.{ns}", dirty, system.dirty(node, ns)))
    for ns, entries in (e.entries or {}).items():
        expected = {str(k): v for k, v in entries.items()}
        actual = {str(k): v for k, v in system.entries(node, ns).items()}
        checks.append(check(f"{at}.entries.{ns}", cast(JsonValue, expected), cast(JsonValue, actual)))
    if e.permits is not None:
        checks.append(check(f"{at}.permits", e.permits, system.permits(node)))
    if e.replica_of is not None:
        checks.append(check(f"{at}.replica_of", e.replica_of, system.replica_of(node)))
    return checks


def exchange_checks(where: str, expect: ExchangeExpectation, system: System) -> list[Check]:
    """The fields of an exchange expectation against the report of the exchange the step completed."""
    report = system.exchange()
    actual: dict[str, JsonValue] = report.model_dump(mode="json") if report else {}
    return [
        check(
            f"{where}.{field}",
            sorted(expected) if isinstance(expected, list) else expected,
            actual.get(field),
        )
        for field, expected in expect.model_dump(mode="json", exclude_none=True).items()
    ]


def _topology_checks(where: str, expect: TopologyExpectation, system: System) -> list[Check]:
    """The fields of a topology expectation against the topology now (pending compared sorted)."""
    view = system.topology()
    checks = []
    for field, expected in expect.model_dump(mode="json", exclude_none=True).items():
        if field == "owners":
            for part, owners in expected.items():
                held: list[str] | None = view.owners.get(int(part))
                checks.append(check(f"{where}.owners[{part}]", owners, cast(JsonValue, held)))
        else:
            wanted = sorted(expected) if field == "pending" else expected
            checks.append(check(f"{where}.{field}", wanted, getattr(view, field)))
    return checks


def _idle_verify_checks(where: str, expect: IdleVerifyExpectation, system: System) -> list[Check]:
    """The fields of an idle_verify expectation against its report now; conflicts are compared as the
    sorted list of partitions that have them."""
    report = system.idle_verify()
    if report is None:  # a real system runs it only on an idle cluster
        fields = expect.model_dump(mode="json", exclude_none=True)
        return [check(f"{where}.{field}", value, None) for field, value in fields.items()]
    actual: dict[str, JsonValue] = report.model_dump(mode="json")
    actual["counter_conflicts"] = cast(JsonValue, sorted(report.counter_conflicts))
    actual["hash_conflicts"] = cast(JsonValue, sorted(report.hash_conflicts))
    checks = []
    for field, expected in expect.model_dump(mode="json", exclude_none=True).items():
        wanted = sorted(expected) if isinstance(expected, list) else expected
        checks.append(check(f"{where}.{field}", wanted, actual[field]))
    return checks
