"""What a scenario run produces: the timeline (one row per step), the checks, and the final state of every
node. Adapters fill these views in; the checker and the views read them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from tidemark.conformance.scenarios.vocabulary import NodeState, PartitionState


class CounterView(BaseModel):
    lwm: int
    hwm: int
    items: list[tuple[int, int]]


class EntryView(BaseModel):
    value: str
    tx: str | None = Field(
        default=None, description="the transaction that wrote it (the model's value; a real system: by value)"
    )
    cntr: int | None = Field(
        default=None, description="the update counter of the write (None where the system does not show it)"
    )


class RebalanceView(BaseModel):
    """How a copy was rebalanced, as the first Demand of its rebalancing asked for it (pme)."""

    model_config = ConfigDict(populate_by_name=True)

    mode: Literal["historical", "full"]
    from_: int = Field(
        alias="from",
        description="historical: the copy's initial counter (records above it supplied); full: 0",
    )
    to: int = Field(description="the exchange's maximum LWM, supplied up to")
    supplier: str


class NodeSnapshot(BaseModel):
    """A server in one timeline row: up or not, its counters per partition and (pme) its copies."""

    state: NodeState
    counters: dict[int, CounterView]
    copies: dict[int, str] = Field(
        default_factory=dict,
        description="pme: partition -> the state of the server's copy, kept on its disk (so also while it "
        "is down), e.g. 'MOVING (init 2)' or 'OWNING, LOST'",
    )
    history: dict[int, int] = Field(
        default_factory=dict,
        description="pme: partition -> the counter its WAL archive was truncated at (only records above it "
        "supply a historical rebalance); partitions never truncated are left out",
    )


class NodeView(NodeSnapshot):
    """A server at the end: counters, data, partition states, its transactions and (pme) how its copies
    were last rebalanced."""

    data: dict[int, EntryView]
    partitions: dict[int, PartitionState]
    txs: dict[str, str]
    rebalanced: dict[int, RebalanceView] = Field(
        default_factory=dict, description="pme: partition -> the copy's last completed rebalancing"
    )


class MessageEvent(BaseModel):
    """A message delivered (consumed by the step's node), sent, or lost (its receiver failed, or recovery,
    a rollback or a topology event cancelled it). With protocol pme also the exchange's single and full
    messages and rebalancing's Demand and Supply messages."""

    kind: Literal["delivered", "sent", "lost"]
    sender: str
    receiver: str
    label: str


class TopologyView(BaseModel):
    """The cluster's topology: versions, owner lists and (pme) the events the pending exchange handles and
    the coordinator."""

    version: str = Field(description='the latest topology version, "major.minor"')
    ready: str = Field(description="the version whose exchange completed: transactions map on it")
    owners: dict[int, list[str]] = Field(description="partition -> its owner list, primary first")
    pending: list[str] = Field(description="pme: the kinds of events the pending exchange handles")
    coordinator: str | None = Field(
        default=None, description="pme: the server coordinating exchanges (None: no live server, or 2pc)"
    )


class TimelineRow(BaseModel):
    index: int | None = Field(description="the step's index in steps; None for the initial state")
    step: str
    note: str | None = None
    messages: list[MessageEvent] = Field(default_factory=list)
    in_flight: int = Field(description="messages in flight after the step (pme: Demand and Supply too)")
    topology: TopologyView
    nodes: dict[str, NodeSnapshot]


class Check(BaseModel):
    path: str = Field(description="the expectation's place in the file, e.g. steps[3].expect.s2.data")
    expected: JsonValue
    actual: JsonValue
    holds: bool


class VerifiedCounter(BaseModel):
    """A counter as idle_verify compares it: LWM and the out-of-order ranges."""

    lwm: int
    items: list[tuple[int, int]]


class IdleVerifyView(BaseModel):
    """impl.pme.idle_verify's report (Ignite's idle_verify): OWNING copies of live servers compared."""

    clean: bool = Field(description="no counter conflict and no hash conflict")
    counter_conflicts: dict[int, dict[str, VerifiedCounter]] = Field(
        description="partition -> node -> counter, for partitions whose OWNING copies disagree"
    )
    hash_conflicts: dict[int, dict[str, str]] = Field(
        description="partition -> node -> data hash, for partitions whose OWNING copies disagree"
    )
    skipped: dict[int, dict[str, str]] = Field(
        description="partition -> node -> MOVING, RENTING or LOST: copies not compared"
    )
    lost: list[int] = Field(description="the LOST partitions")


class ExchangeView(BaseModel):
    """tidemark.impl.pme.exchange_report of an exchange's full message: what Ignite logs when it completes."""

    clean: bool
    update_failures: dict[int, list[str]] = Field(description="partition -> servers whose update(max) failed")
    counters_inconsistent: list[int] = Field(description="partitions whose OWNING copies' LWMs differ")
    sizes_inconsistent: list[int] = Field(description="partitions whose OWNING copies' sizes differ")


class ScenarioResult(BaseModel):
    name: str
    description: str
    protocol: str
    system: str = Field(
        description="what ran the scenario: impl (tidemark's implementation) or a real system (ignite)"
    )
    counter: str
    client: str
    servers: list[str]
    passed: bool = Field(description="every step ran and every expectation holds")
    failure: str | None = Field(description="the step that could not run, if any")
    timeline: list[TimelineRow]
    checks: list[Check]
    nodes: dict[str, NodeView] = Field(description="every server after the last step that ran")
    topology: TopologyView = Field(description="the topology after the last step that ran")
    txs: dict[str, str] = Field(description="every transaction's state on the client")
    idle_verify: IdleVerifyView | None = Field(
        description="pme: idle_verify after the last step that ran (None for 2pc)"
    )
