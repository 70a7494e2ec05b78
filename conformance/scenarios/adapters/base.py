"""The interface between the protocol-neutral runner and what runs a scenario.

A `System` is one run of one scenario on one implementation: tidemark's impl/ in this process (the
adapters beside this module), or a real system behind a driver process. The runner hands it the
scenario's steps one by one and reads what it observes: a snapshot of every server for each timeline row,
and exactly the values the expectations name - no more, so that checking a step costs what it asks for.
A system that holds resources (processes, directories) releases them in `__exit__`: the runner uses it
as a context manager.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import NamedTuple, Self

from tidemark.conformance.scenarios.format import ScenarioFile, ScenarioStep
from tidemark.conformance.scenarios.result import (
    CounterView,
    ExchangeView,
    IdleVerifyView,
    MessageEvent,
    NodeSnapshot,
    NodeView,
    RebalanceView,
    TopologyView,
)
from tidemark.conformance.scenarios.vocabulary import NodeState, PartitionState


class StepRefused(Exception):
    """The step is not possible in this state; nothing changed. A real system says why (`reason`)."""

    def __init__(self, message: str = "", reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


def possible(check: Callable[[], object]) -> bool:
    """Whether a step passes `check` (which raises StepRefused for a step the system cannot take now)."""
    try:
        check()
    except StepRefused:
        return False
    return True


class StepFailed(Exception):
    """The step raised one of the implementation's named errors (format.ErrorName); nothing changed."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


class Snapshot(NamedTuple):
    """What a timeline row shows of the system after a step."""

    nodes: dict[str, NodeSnapshot]
    topology: TopologyView
    in_flight: int


class System(ABC):
    """One run of a scenario; see the module docstring. Observations are of the current state."""

    def __init__(self, scenario: ScenarioFile) -> None:
        self.scenario = scenario
        self.servers = scenario.cluster.servers
        self.client = scenario.cluster.clients[0]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Nothing to release in this process; a system driving processes stops them here."""
        return None

    # --- steps -------------------------------------------------------------------------------------------

    @abstractmethod
    def take(self, step: ScenarioStep) -> list[MessageEvent]:
        """Take the step: the messages it delivered, lost and sent. Raises StepRefused or StepFailed."""

    @abstractmethod
    def allows(self, step: ScenarioStep) -> bool:
        """Whether the step is possible now, without taking it (raises StepFailed like `take`)."""

    @abstractmethod
    def enabled(self) -> list[str]:
        """The steps possible now, as text (for the message when a step is not)."""

    @abstractmethod
    def snapshot(self) -> Snapshot: ...

    # --- observations, for the expectations --------------------------------------------------------------

    @abstractmethod
    def node_state(self, node: str) -> NodeState: ...

    @abstractmethod
    def counter(self, node: str, part: int) -> CounterView | None:
        """The copy's counter; None when the server holds none (down, evicted, never assigned)."""

    @abstractmethod
    def data(self, node: str) -> dict[int, str]:
        """The server's whole data: key -> value."""

    @abstractmethod
    def partition_state(self, node: str, part: int) -> PartitionState: ...

    @abstractmethod
    def server_tx(self, node: str, tx: str) -> str | None: ...

    @abstractmethod
    def client_tx(self, tx: str) -> str: ...

    @abstractmethod
    def topology(self) -> TopologyView: ...

    # Observations of protocol features (protocols.FEATURES): only a protocol that has them is asked.

    def init(self, node: str, part: int) -> int | None:
        raise NotImplementedError(f"{type(self).__name__} has no MOVING copies")

    def history(self, node: str, part: int) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not truncate the WAL archive")

    def rebalanced(self, node: str, part: int) -> RebalanceView | None:
        raise NotImplementedError(f"{type(self).__name__} does not rebalance")

    def exchange(self) -> ExchangeView | None:
        """The report of the last exchange completed by a full message (None before the first)."""
        raise NotImplementedError(f"{type(self).__name__} has an atomic Exchange that reports nothing")

    def idle_verify(self) -> IdleVerifyView | None:
        """idle_verify's report; None for a protocol without it."""
        return None

    # Hazelcast's observations: replica index, fragment versions and data per namespace, sync permits.

    def replica(self, node: str) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no replica indexes")

    def versions(self, node: str, ns: str) -> list[int]:
        """The fragment's versions, slot 1 first; [] when the member has no fragment of `ns`."""
        raise NotImplementedError(f"{type(self).__name__} has no version vectors")

    def dirty(self, node: str, ns: str) -> bool:
        raise NotImplementedError(f"{type(self).__name__} has no version vectors")

    def entries(self, node: str, ns: str) -> dict[int, int]:
        raise NotImplementedError(f"{type(self).__name__} has no namespaces")

    def permits(self, node: str) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no replica sync permits")

    # NCache's: the member whose partition a node keeps as replica (its stores are `entries` "active" and
    # "replica").

    def replica_of(self, node: str) -> str | None:
        raise NotImplementedError(f"{type(self).__name__} has no replica chain")

    # --- the end -----------------------------------------------------------------------------------------

    @abstractmethod
    def node_view(self, node: str) -> NodeView: ...

    @abstractmethod
    def client_txs(self) -> dict[str, str]:
        """Every transaction's state on the client."""
