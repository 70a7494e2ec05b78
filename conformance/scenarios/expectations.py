"""What a scenario expects after a step or at its end (fields left out are not checked): counters,
rebalancing, node views, idle_verify, the exchange and the topology. Part of the scenario format
(conformance/scenarios/format.py)."""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import Field

from tidemark.conformance.scenarios.vocabulary import (
    MAX_JAVA_LONG,
    CounterValue,
    EventName,
    Key,
    Name,
    Namespace,
    NodeState,
    Partition,
    PartitionState,
    RebalanceMode,
    SkippedState,
    TxStateName,
    VersionText,
    VersionValue,
    _Strict,
)


class CounterExpectation(_Strict):
    """What a partition's counter must be."""

    lwm: CounterValue | None = None
    hwm: CounterValue | None = None
    items: list[tuple[CounterValue, Annotated[int, Field(ge=1, le=MAX_JAVA_LONG)]]] | None = Field(
        default=None, description="the out-of-order ranges [start, delta], sorted; [] for none"
    )


class RebalanceExpectation(_Strict):
    """pme: how the copy's last completed rebalancing went, as its first Demand asked for it."""

    mode: RebalanceMode | None = Field(
        default=None, description="historical (WAL records after the copy's counter) or full (every entry)"
    )
    from_: CounterValue | None = Field(
        default=None,
        alias="from",
        description="historical: the copy's initial counter, records above it were supplied; full: 0",
    )
    to: CounterValue | None = Field(
        default=None, description="the maximum LWM of the exchange: supplied up to it"
    )
    supplier: Name | None = Field(default=None, description="the server that supplied it")


class NodeExpectation(_Strict):
    """What must hold on one node (a server, or the client for `txs`)."""

    state: NodeState | None = None
    counters: dict[Partition, CounterExpectation] | None = None
    data: dict[Key, str] | None = Field(default=None, description="the node's whole data: key -> value")
    partitions: dict[Partition, PartitionState] | None = Field(
        default=None, description="partition -> the copy's state (2pc: OWNING, MOVING, OFFLINE)"
    )
    init: dict[Partition, CounterValue] | None = Field(
        default=None,
        description="pme: partition -> the copy's initial counter (where a MOVING copy rebalances from)",
    )
    history: dict[Partition, CounterValue] | None = Field(
        default=None,
        description="pme: partition -> the counter the server's WAL archive was truncated at (TruncateWal): "
        "a historical rebalance it supplies sends only records above it; 0 for none truncated",
    )
    rebalanced: dict[Partition, RebalanceExpectation | None] | None = Field(
        default=None,
        description="pme: partition -> how the server's copy was last rebalanced (completed: its last batch "
        "applied); null for none",
    )
    txs: dict[Name, TxStateName] | None = Field(
        default=None, description="transaction -> its state on this server (or on the client)"
    )
    replica: int | None = Field(
        default=None, ge=-1, le=6, description="hazelcast: the member's replica index (0 the owner, -1 none)"
    )
    versions: dict[Namespace, list[VersionValue]] | None = Field(
        default=None,
        description="hazelcast: namespace -> the member's fragment versions, slot 1 first; [] for none",
    )
    dirty: dict[Namespace, bool] | None = Field(
        default=None, description="hazelcast: namespace -> whether the member's fragment is dirty"
    )
    entries: dict[Namespace, dict[Key, int]] | None = Field(
        default=None,
        description="hazelcast: namespace -> the member's data of it: key -> value (the number of the put "
        "that wrote it); {} for none",
    )
    permits: int | None = Field(default=None, ge=0, description="hazelcast: the member's free sync permits")
    replica_of: Name | None = Field(
        default=None, description="ncache: the member whose partition this node keeps as its replica"
    )


Expectations: TypeAlias = dict[Name, NodeExpectation]


class IdleVerifyExpectation(_Strict):
    """What tidemark.impl.pme.idle_verify must report (protocol pme)."""

    clean: bool | None = Field(default=None, description="no counter and no hash conflict")
    counter_conflicts: list[Partition] | None = Field(
        default=None, description="the partitions whose OWNING copies disagree on LWM or gaps; [] for none"
    )
    hash_conflicts: list[Partition] | None = Field(
        default=None, description="the partitions whose OWNING copies disagree on data; [] for none"
    )
    skipped: dict[Partition, dict[Name, SkippedState]] | None = Field(
        default=None, description="partition -> node -> why its copy was not compared; {} for none"
    )
    lost: list[Partition] | None = Field(default=None, description="the LOST partitions; [] for none")


class ExchangeExpectation(_Strict):
    """pme, on a FullMessage step: what the exchange reported (impl.pme.exchange_report; Ignite logs it)."""

    clean: bool | None = Field(default=None, description="no failed counter update and validation passed")
    update_failures: dict[Partition, list[Name]] | None = Field(
        default=None,
        description="partition -> the servers whose update(max LWM) failed: they applied an update above "
        "every OWNING copy's LWM (Ignite: 'Failed to update partition counter'); {} for none",
    )
    counters_inconsistent: list[Partition] | None = Field(
        default=None,
        description="the partitions whose OWNING copies reported different LWMs (Ignite: 'Partitions "
        "update counters are inconsistent'); [] for none",
    )
    sizes_inconsistent: list[Partition] | None = Field(
        default=None,
        description="the partitions whose OWNING copies reported different sizes (Ignite: 'Partitions "
        "cache sizes are inconsistent'); [] for none",
    )


class TopologyExpectation(_Strict):
    """What the cluster's topology must be."""

    version: VersionText | None = Field(
        default=None, description='the latest topology version, "major.minor" (e.g. "3.1")'
    )
    ready: VersionText | None = Field(
        default=None,
        description="the version whose exchange completed (transactions map on it); below `version` while "
        "an exchange is pending",
    )
    owners: dict[Partition, list[Name]] | None = Field(
        default=None, description="partition -> its owner list on the ready version, primary first"
    )
    pending: list[EventName] | None = Field(
        default=None,
        description='pme: the kinds of topology events the pending exchange handles, e.g. ["affinity"] '
        "for the late affinity switch; [] for none",
    )
    coordinator: Name | None = Field(
        default=None, description="pme: the server that coordinates exchanges (sends the full message)"
    )
