"""Scenario files: a cluster, the steps it takes and what must hold, run on impl/cluster.py or impl/pme.py.

A scenario is a JSON file (schema: conformance/schemas/scenario.schema.json, generated from
`ScenarioFile`; `python -m conformance.scenario` rewrites it and a test keeps it in sync)::

    {"name": "figure1-backup-reordering",
     "cluster": {"servers": ["s1", "s2", "s3"], "clients": ["c1"], "partitions": 1, "backups": 2},
     "steps": [{"step": "TxStart", "tx": "t1", "keys": {"1": "v1", "2": "v2"}},
               {"step": "Lock", "tx": "t1", "node": "s1"},
               ...
               {"step": "BackupCommit", "tx": "t2", "node": "s2",
                "expect": {"s2": {"counters": {"0": {"lwm": 0, "items": [[3, 2]]}}}}}],
     "expect": {"s2": {"counters": {"0": {"lwm": 5, "items": []}}, "data": {"1": "v1", ...}}}}

- `protocol`: "2pc" (the default: impl/cluster.py's `Cluster`, the 2PC slice with its atomic Exchange)
  or "pme" (impl/pme.py's `PmeCluster`: the whole protocol, where the exchange runs as SendSingle and
  FullMessage steps, servers Join after a Restart, and MOVING copies rebalance by Supply and Rebalance).
- `cluster`: servers, the one client (the model's near node), partitions, backups, optionally the owner
  list of each partition (primary first; default: the first backups+1 servers own every partition) and
  data committed on every owner before the scenario starts; with "pme" also the rebalancing knobs
  `wal_rebalance_threshold` and `batch_size`.
- `steps`: the cluster's steps by their spec names (impl/cluster.py STEPS, impl/pme.py PME_STEPS), each
  delivering one message or taking one local action: TxStart (which also declares the transaction's keys
  and values), Lock, Prepare, BackupPrepare, Commit, BackupCommit, Rollback, NodeFail, Restart, Exchange,
  Checkpoint, ... and for "pme" Join, BaselineChange, SendSingle, FullMessage, Supply, Rebalance, Evict,
  TruncateWal. A step may carry a `note` (shown in the timeline and diagram), an `expect`, a `topology`
  and an `idle_verify` checked right after it, and `"refused": true` when it must NOT be possible at that
  point (checked; the run goes on without it).
- `expect`: per node, checked after the last step: `state` (alive, down, restarted), `counters` per
  partition (lwm, hwm, items), `data` (the whole key -> value map), `partitions` (see
  `partition_state`), `init` (a MOVING copy's initial counter, "pme"), `history` (where the WAL archive
  was truncated, "pme") and `txs` (a transaction's state on that server, or on the client). `topology`:
  the topology version, the version whose exchange completed, the owner lists and ("pme") the pending
  events - e.g. the late affinity switch's "affinity". `idle_verify` ("pme"): what impl.pme.idle_verify
  reports at the end.
- `counter`: "tracking" (Ignite's counter, the default) or a counter mutant of conformance/mutants.py,
  e.g. "no-out-of-order-tracking" ("2pc" only).

The model's value of a write is the transaction that made it; the scenario's values are a naming layer
over that: (transaction, key) -> value. Running a scenario gives a `ScenarioResult`: a timeline (one row
per step: messages delivered, sent and lost - with "pme" also the single and full messages of the
exchange and the Demand and Supply messages of rebalancing -, messages in flight, every node's counters
and copy states), the checks, the final state of every node and, with "pme", idle_verify's report;
`mermaid_diagram` draws the message flow and `timeline_html` the page.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, cast, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationError,
    model_validator,
)
from rich.table import Table

from conformance.errors import TidemarkError
from conformance.mermaid import SCRIPT_TAGS, write_mermaid
from conformance.mutants import CLUSTER_COUNTERS
from impl.cluster import STEPS, Cluster, Config, Step, StepNotEnabled
from impl.counter import CounterInconsistencyError, PartitionUpdateCounter, TooManyGapsError
from impl.messages import (
    NEAR,
    DhtFinishRequest,
    DhtPrepareRequest,
    FinishRequest,
    LockRequest,
    LockResponse,
    Message,
    Version,
    receiver,
)
from impl.pme import (
    PME_STEPS,
    Demand,
    IdleVerifyResult,
    Mode,
    PartInfo,
    PartState,
    PmeCluster,
    PmeConfig,
    RebalanceMessage,
    idle_verify,
)
from impl.wal import DataRecord, Entry

SCHEMA_PATH = Path(__file__).parent / "schemas" / "scenario.schema.json"
DEFAULT_OUT = Path("reports/scenarios")
# The writer of the cluster's initial data (the model's value of an entry is the transaction that wrote it).
INITIAL_WRITER = "initial"

# Node and transaction names end up as Mermaid participant ids and in labels: letters, digits, '_'.
_NAME = r"^[A-Za-z][A-Za-z0-9_]*$"
Name = Annotated[str, StringConstraints(pattern=_NAME)]
Key = Annotated[int, Field(ge=0)]
Partition = Annotated[int, Field(ge=0)]
CounterValue = Annotated[int, Field(ge=0)]

ProtocolName = Literal["2pc", "pme"]
# The steps each protocol takes, with their parameters.
PROTOCOL_STEPS: dict[str, dict[str, tuple[str, ...]]] = {"2pc": STEPS, "pme": PME_STEPS}
ALL_STEPS: dict[str, tuple[str, ...]] = {**STEPS, **PME_STEPS}

NodeState = Literal["alive", "down", "restarted"]
# See `partition_state`. "2pc": OWNING (a live owner), MOVING (a restarted copy behind the live owners:
# rebalanced if it rejoined), OFFLINE (the server is down). "pme": the copy's real state - OWNING, MOVING,
# RENTING, EVICTED (no copy) -, LOST (a copy of a LOST partition) or OFFLINE (the server is down).
PartitionState = Literal["OWNING", "MOVING", "RENTING", "EVICTED", "LOST", "OFFLINE"]
# The kinds of topology events a pending exchange handles (impl.pme.Event).
EventName = Literal["left", "joined", "baseline", "affinity"]
# A topology version as "major.minor", e.g. "3.1".
VersionText = Annotated[str, StringConstraints(pattern=r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")]
PARTITION_STATES_2PC = ("OWNING", "MOVING", "OFFLINE")
SkippedState = Literal["MOVING", "RENTING", "LOST"]
NEAR_STATES = ("idle", "locking", "preparing", "committed", "rolledBack")
SERVER_STATES = ("locked", "preparing", "prepared", "rollingBack", "committed", "rolledBack")
TxStateName = Literal[
    "idle", "locking", "preparing", "committed", "rolledBack", "locked", "prepared", "rollingBack"
]
CounterName = Literal["tracking", "no-out-of-order-tracking"]
TRACKING: CounterName = "tracking"


# ---------------------------------------------------------------------------------------------------------
# The file format.


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CounterExpectation(_Strict):
    """What a partition's counter must be; fields left out are not checked."""

    lwm: CounterValue | None = None
    hwm: CounterValue | None = None
    items: list[tuple[CounterValue, Annotated[int, Field(ge=1)]]] | None = Field(
        default=None, description="the out-of-order ranges [start, delta], sorted; [] for none"
    )

    @model_validator(mode="after")
    def _something(self) -> CounterExpectation:
        if self.lwm is None and self.hwm is None and self.items is None:
            raise ValueError("give at least one of lwm, hwm, items")
        return self


class NodeExpectation(_Strict):
    """What must hold on one node (a server, or the client for `txs`); fields left out are not checked."""

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
    txs: dict[Name, TxStateName] | None = Field(
        default=None, description="transaction -> its state on this server (or on the client)"
    )

    @model_validator(mode="after")
    def _something(self) -> NodeExpectation:
        if all(getattr(self, f) is None for f in type(self).model_fields):
            raise ValueError("give at least one of state, counters, data, partitions, init, history, txs")
        return self


Expectations: TypeAlias = dict[Name, NodeExpectation]


class IdleVerifyExpectation(_Strict):
    """What impl.pme.idle_verify must report (protocol pme); fields left out are not checked."""

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

    @model_validator(mode="after")
    def _something(self) -> IdleVerifyExpectation:
        if all(getattr(self, f) is None for f in type(self).model_fields):
            raise ValueError("give at least one of clean, counter_conflicts, hash_conflicts, skipped, lost")
        return self


class TopologyExpectation(_Strict):
    """What the cluster's topology must be; fields left out are not checked."""

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

    @model_validator(mode="after")
    def _something(self) -> TopologyExpectation:
        if all(getattr(self, f) is None for f in type(self).model_fields):
            raise ValueError("give at least one of version, ready, owners, pending")
        return self


class _StepBase(_Strict):
    note: str | None = Field(default=None, description="shown in the timeline and the diagram")
    refused: bool = Field(
        default=False,
        description="the step must NOT be possible here (checked; the run goes on without taking it)",
    )
    expect: Expectations = Field(default_factory=dict, description="checked right after this step")
    topology: TopologyExpectation | None = Field(default=None, description="checked right after this step")
    idle_verify: IdleVerifyExpectation | None = Field(
        default=None, description="pme: checked right after this step against impl.pme.idle_verify"
    )


class TxStartStep(_StepBase):
    """The near node maps the transaction to its primary and sends the lock request; declares its writes."""

    step: Literal["TxStart"]
    tx: Name
    keys: dict[Key, str] = Field(min_length=1, description="key -> value the transaction writes")


class TxStep(_StepBase):
    """A near-node step of one transaction, or its recovery."""

    step: Literal["TxRemap", "TxPrepare", "TxCommit", "TxRollback", "Recover"]
    tx: Name


class TxNodeStep(_StepBase):
    """A step of one transaction on one server (the primary's or a backup's)."""

    step: Literal[
        "Lock",
        "LockRemap",
        "Prepare",
        "Prepared",
        "Commit",
        "Rollback",
        "RolledBack",
        "BackupPrepare",
        "BackupCommit",
        "BackupRollback",
    ]
    tx: Name
    node: Name


class NodeStep(_StepBase):
    """A server crashes, restarts from its disk, or checkpoints."""

    step: Literal["NodeFail", "Restart", "Checkpoint"]
    node: Name


class ExchangeStep(_StepBase):
    """The partition map exchange for the new topology, in one step (protocol 2pc)."""

    step: Literal["Exchange"]


class PmeNodeStep(_StepBase):
    """Protocol pme: a restarted server joins; a server sends its single message; the coordinator (its
    `node`) sends the full message, which every server applies; a server checkpoints and truncates its
    WAL archive (TruncateWal: each OWNING copy's history becomes its LWM)."""

    step: Literal["Join", "SendSingle", "FullMessage", "TruncateWal"]
    node: Name


class BaselineChangeStep(_StepBase):
    """Protocol pme: the operator sets the baseline to the live servers."""

    step: Literal["BaselineChange"]


class PartitionStep(_StepBase):
    """Protocol pme: a demander applies a supply message (Rebalance), or drops a RENTING copy (Evict)."""

    step: Literal["Rebalance", "Evict"]
    node: Name
    part: Partition


class SupplyStep(_StepBase):
    """Protocol pme: the supplier `node` answers the demand of `peer` for partition `part` with a batch."""

    step: Literal["Supply"]
    node: Name = Field(description="the supplier")
    part: Partition
    peer: Name = Field(description="the demander it answers")


ScenarioStep = Annotated[
    TxStartStep
    | TxStep
    | TxNodeStep
    | NodeStep
    | ExchangeStep
    | PmeNodeStep
    | BaselineChangeStep
    | PartitionStep
    | SupplyStep,
    Field(discriminator="step"),
]
STEP_MODELS: tuple[type[_StepBase], ...] = (
    TxStartStep,
    TxStep,
    TxNodeStep,
    NodeStep,
    ExchangeStep,
    PmeNodeStep,
    BaselineChangeStep,
    PartitionStep,
    SupplyStep,
)


class ClusterSection(_Strict):
    servers: list[Name] = Field(min_length=1, description="server names, e.g. [s1, s2, s3]")
    clients: list[Name] = Field(
        min_length=1, max_length=1, description="the client running the transactions (the model has one)"
    )
    partitions: int = Field(default=1, ge=1)
    backups: int = Field(default=0, ge=0)
    owners: dict[Partition, list[Name]] | None = Field(
        default=None,
        description="partition -> its owners, primary first (default: the first backups+1 servers)",
    )
    initial_data: dict[Key, str] = Field(
        default_factory=dict, description="key -> value, committed on every owner before the first step"
    )
    wal_rebalance_threshold: int | None = Field(
        default=None,
        ge=0,
        description="pme: historical (WAL) rebalancing only for partitions with at least this many entries "
        "(default 0)",
    )
    batch_size: int | None = Field(
        default=None, ge=1, description="pme: entries per supply message (default 1)"
    )


class ScenarioFile(_Strict):
    """A scenario: a cluster, the steps it takes, and what must hold."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, title="tidemark scenario")

    schema_: str | None = Field(default=None, alias="$schema", description="for editors; ignored")
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
    description: str = ""
    protocol: ProtocolName = Field(
        default="2pc",
        description="2pc: impl/cluster.py (2PC with an atomic Exchange); pme: impl/pme.py (the whole "
        "protocol: exchange messages, joins, rebalancing)",
    )
    counter: CounterName = Field(default=TRACKING, description="the counter implementation every copy runs")
    cluster: ClusterSection
    steps: list[ScenarioStep] = Field(min_length=1)
    expect: Expectations = Field(default_factory=dict, description="checked after the last step")
    topology: TopologyExpectation | None = Field(default=None, description="checked after the last step")
    idle_verify: IdleVerifyExpectation | None = Field(
        default=None, description="pme: checked after the last step against impl.pme.idle_verify"
    )


def schema_text() -> str:
    schema = ScenarioFile.model_json_schema(by_alias=True)
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Loading: pydantic, then the references pydantic cannot see (names, owners, partitions).


def _loc_path(loc: Sequence[int | str], error_type: str) -> str:
    """A pydantic location as a field path: ('steps', 3, 'Lock', 'node') -> steps[3].node.

    The discriminated union puts the step's tag after its index; the path leaves it out. A step whose
    tag is missing or unknown is reported on its `step` field.
    """
    parts = list(loc)
    if len(parts) > 2 and parts[0] == "steps" and parts[2] in ALL_STEPS:
        del parts[2]
    if error_type in ("union_tag_invalid", "union_tag_not_found"):
        parts.append("step")
    path = ""
    for part in parts:
        if part == "[key]":
            continue  # the error is about the key itself, which the path already ends with
        # List indices and the integer keys of partitions and keys alike read as [3].
        indexed = isinstance(part, int) or part.isdigit()
        path += f"[{part}]" if indexed else (f".{part}" if path else str(part))
    return path


def _step_fields(tag: str) -> str:
    """The fields a step with this tag takes, e.g. "note, refused, expect, idle_verify, step, tx, node"."""
    model = next(m for m in STEP_MODELS if tag in get_args(m.model_fields["step"].annotation))
    return ", ".join(model.model_fields)


def _expected(loc: Sequence[int | str], error_type: str) -> str:
    if error_type in ("union_tag_invalid", "union_tag_not_found"):
        return f"one of the steps {', '.join(ALL_STEPS)}"
    if len(loc) > 2 and loc[0] == "steps" and isinstance(loc[2], str) and loc[2] in ALL_STEPS:
        return f"a {loc[2]} step with the fields {_step_fields(loc[2])}"
    return "a scenario as in conformance/schemas/scenario.schema.json"


class _Checker:
    """The semantic checks of a parsed scenario; each failure names the file and the field's path."""

    def __init__(self, scenario: ScenarioFile, source: str) -> None:
        self.scenario = scenario
        self.source = source
        self.pme = scenario.protocol == "pme"
        self.servers = scenario.cluster.servers
        self.client = scenario.cluster.clients[0]
        self.txs: dict[str, int] = {}  # transaction -> index of its TxStart step

    def fail(self, location: str, message: str, expected: str) -> TidemarkError:
        return TidemarkError(message, source=self.source, location=location, expected=expected)

    def check(self) -> Config:
        self._protocol()
        self._cluster()
        started: dict[str, int] = {}  # transaction -> index of the TxStart step that is taken
        for index, step in enumerate(self.scenario.steps):
            if not isinstance(step, TxStartStep):
                continue
            if step.tx in started:
                raise self.fail(
                    f"steps[{index}].tx",
                    f"transaction {step.tx!r} already started at steps[{started[step.tx]}]",
                    "one TxStart step per transaction (and refused ones before it)",
                )
            if step.tx == INITIAL_WRITER:
                raise self.fail(f"steps[{index}].tx", f"{INITIAL_WRITER!r} is reserved", "another name")
            # A refused TxStart declares the transaction too; tries of it must write the same.
            first = self.txs.setdefault(step.tx, index)
            declared = cast(TxStartStep, self.scenario.steps[first]).keys
            if step.keys != declared:
                raise self.fail(
                    f"steps[{index}].keys",
                    f"transaction {step.tx!r} writes {declared} at steps[{first}]",
                    "the same keys and values in every TxStart of a transaction",
                )
            if not step.refused:
                started[step.tx] = index
        config = self._config()
        for index, step in enumerate(self.scenario.steps):
            self._references(index, step)
            self._expectations(f"steps[{index}].expect", step.expect, config)
            self._topology(f"steps[{index}].topology", step.topology)
            self._idle_verify(f"steps[{index}].idle_verify", step.idle_verify)
        self._expectations("expect", self.scenario.expect, config)
        self._topology("topology", self.scenario.topology)
        self._idle_verify("idle_verify", self.scenario.idle_verify)
        return config

    def _protocol(self) -> None:
        """Each protocol takes its own steps and options: the 2PC slice's Exchange is one atomic step,
        which the whole protocol replaces by its messages (SendSingle, FullMessage)."""
        protocol = self.scenario.protocol
        steps = PROTOCOL_STEPS[protocol]
        for index, step in enumerate(self.scenario.steps):
            if step.step not in steps:
                other = next(p for p, s in PROTOCOL_STEPS.items() if step.step in s)
                raise self.fail(
                    f"steps[{index}].step",
                    f"{step.step} is a step of protocol {other!r}, and this scenario's protocol is "
                    f"{protocol!r}",
                    f'one of {", ".join(steps)} (or "protocol": {other!r})',
                )
        if self.pme and self.scenario.counter != TRACKING:
            raise self.fail(
                "counter",
                f"counter {self.scenario.counter!r} runs on the 2pc slice only",
                f"{TRACKING!r} with protocol 'pme'",
            )
        if not self.pme:
            for knob in ("wal_rebalance_threshold", "batch_size"):
                if getattr(self.scenario.cluster, knob) is not None:
                    raise self.fail(
                        f"cluster.{knob}", "the 2pc protocol does not rebalance", '"protocol": "pme"'
                    )

    def _cluster(self) -> None:
        cluster = self.scenario.cluster
        for index, server in enumerate(self.servers):
            if server == NEAR or server in self.servers[:index]:
                raise self.fail(
                    f"cluster.servers[{index}]", f"{server!r} is listed twice or reserved", "unique names"
                )
        if self.client in self.servers:
            raise self.fail("cluster.clients[0]", f"{self.client!r} is also a server", "a name of its own")
        if cluster.backups >= len(self.servers):
            raise self.fail(
                "cluster.backups",
                f"{cluster.backups} backups need {cluster.backups + 1} servers",
                "fewer backups",
            )
        if cluster.owners is None:
            return
        if sorted(cluster.owners) != list(range(cluster.partitions)):
            raise self.fail(
                "cluster.owners",
                f"owner lists for partitions {sorted(cluster.owners)}",
                f"one for each partition 0..{cluster.partitions - 1}",
            )
        affinity = self.servers[: cluster.backups + 1]
        for part, owners in cluster.owners.items():
            where = f"cluster.owners[{part}]"
            if len(owners) != cluster.backups + 1 or len(set(owners)) != len(owners):
                raise self.fail(
                    where, f"owners {owners}", f"{cluster.backups + 1} distinct servers (backups + 1)"
                )
            for i, owner in enumerate(owners):
                if owner not in self.servers:
                    raise self.fail(f"{where}[{i}]", f"unknown server {owner!r}", f"one of {self.servers}")
            # PmeCluster computes the affinity over the baseline: the first backups+1 servers in the
            # listed (rendezvous) order, for every partition. Another initial list would move at the
            # first exchange, which no real cluster does.
            if self.pme and owners != affinity:
                raise self.fail(
                    where,
                    f"owners {owners}: with protocol 'pme' every partition is owned by the first "
                    "backups+1 servers",
                    f"{affinity}, or reorder cluster.servers",
                )

    def _config(self) -> Config:
        cluster = self.scenario.cluster
        default = tuple(self.servers[: cluster.backups + 1])
        owners = {
            p: tuple(cluster.owners[p]) if cluster.owners else default for p in range(cluster.partitions)
        }
        placement = Config(tuple(self.servers), owners, {})
        writes: dict[str, frozenset[int]] = {}
        for tx, index in self.txs.items():
            keys = frozenset(cast(TxStartStep, self.scenario.steps[index]).keys)
            lists = {owners[placement.partition(k)] for k in keys}
            if len(lists) > 1:
                raise self.fail(
                    f"steps[{index}].keys",
                    f"the keys of {tx} map to partitions with the owner lists {sorted(lists)}",
                    "keys whose partitions share one owner list: the model has one primary per transaction",
                )
            writes[tx] = keys
        if not self.pme:
            return Config(tuple(self.servers), owners, writes)
        return PmeConfig(
            tuple(self.servers),
            owners,
            writes,
            wal_rebalance_threshold=cluster.wal_rebalance_threshold or 0,
            batch_size=cluster.batch_size or 1,
        )

    def _references(self, index: int, step: _StepBase) -> None:
        tx, node, peer = (getattr(step, f, None) for f in ("tx", "node", "peer"))
        if tx is not None and tx not in self.txs:
            raise self.fail(
                f"steps[{index}].tx",
                f"unknown transaction {tx!r}",
                f"one started by a TxStart step: {', '.join(self.txs) or 'none'}",
            )
        for field, server in (("node", node), ("peer", peer)):
            if server is not None and server not in self.servers:
                raise self.fail(
                    f"steps[{index}].{field}",
                    f"unknown server {server!r}",
                    f"one of {', '.join(self.servers)}",
                )
        part: int | None = getattr(step, "part", None)
        if part is not None and part >= self.scenario.cluster.partitions:
            raise self.fail(f"steps[{index}].part", f"no partition {part}", self._partitions())

    def _partitions(self) -> str:
        return f"a partition 0..{self.scenario.cluster.partitions - 1}"

    def _expectations(self, where: str, expect: Expectations, config: Config) -> None:
        for node, expectation in expect.items():
            at = f"{where}.{node}"
            if node == self.client:
                self._client_expectation(at, expectation)
                continue
            if node not in self.servers:
                raise self.fail(
                    at, f"unknown node {node!r}", f"a server or the client: {[*self.servers, self.client]}"
                )
            if self.pme:
                # Copies come and go (MOVING on a new owner, EVICTED): any partition may be asked about.
                for field in ("counters", "partitions", "init", "history"):
                    for part in getattr(expectation, field) or {}:
                        if part >= self.scenario.cluster.partitions:
                            raise self.fail(
                                f"{at}.{field}[{part}]", f"no partition {part}", self._partitions()
                            )
            else:
                self._copies_2pc(at, node, expectation, config)
            self._tx_states(f"{at}.txs", expectation.txs, SERVER_STATES)

    def _copies_2pc(self, at: str, node: str, expectation: NodeExpectation, config: Config) -> None:
        """The 2PC slice never moves a copy: a server holds its initial partitions, in three states."""
        if expectation.init is not None:
            raise self.fail(f"{at}.init", "only protocol 'pme' has MOVING copies", '"protocol": "pme"')
        if expectation.history is not None:
            raise self.fail(
                f"{at}.history", "only protocol 'pme' truncates the WAL archive", '"protocol": "pme"'
            )
        owned = config.owned(node)
        for field in ("counters", "partitions"):
            for part in getattr(expectation, field) or {}:
                if part not in owned:
                    raise self.fail(
                        f"{at}.{field}[{part}]",
                        f"{node} holds no copy of partition {part}",
                        f"one of {owned}",
                    )
        for part, state in (expectation.partitions or {}).items():
            if state not in PARTITION_STATES_2PC:
                raise self.fail(
                    f"{at}.partitions[{part}]",
                    f"{state} is a copy state of protocol 'pme'",
                    f"one of {PARTITION_STATES_2PC}",
                )

    def _topology(self, where: str, expectation: TopologyExpectation | None) -> None:
        if expectation is None:
            return
        if expectation.pending is not None and not self.pme:
            raise self.fail(
                f"{where}.pending",
                "the 2pc protocol's Exchange is atomic: nothing is ever pending",
                '"protocol": "pme"',
            )
        for part, owners in (expectation.owners or {}).items():
            at = f"{where}.owners[{part}]"
            if part >= self.scenario.cluster.partitions:
                raise self.fail(at, f"no partition {part}", self._partitions())
            for i, owner in enumerate(owners):
                if owner not in self.servers or owner in owners[:i]:
                    raise self.fail(
                        f"{at}[{i}]", f"{owner!r} is no server or is listed twice", f"one of {self.servers}"
                    )

    def _idle_verify(self, where: str, expectation: IdleVerifyExpectation | None) -> None:
        if expectation is None:
            return
        if not self.pme:
            raise self.fail(where, "idle_verify runs on protocol 'pme' only", '"protocol": "pme"')
        for node in sorted({n for nodes in (expectation.skipped or {}).values() for n in nodes}):
            if node not in self.servers:
                raise self.fail(f"{where}.skipped", f"unknown server {node!r}", f"one of {self.servers}")

    def _client_expectation(self, at: str, expectation: NodeExpectation) -> None:
        other = next(
            (
                f
                for f in ("state", "counters", "data", "partitions", "init", "history")
                if getattr(expectation, f) is not None
            ),
            None,
        )
        if other is not None:
            raise self.fail(f"{at}.{other}", "the client holds only transactions", "txs")
        self._tx_states(f"{at}.txs", expectation.txs, NEAR_STATES)

    def _tx_states(self, at: str, states: Mapping[str, str] | None, allowed: tuple[str, ...]) -> None:
        for tx, state in (states or {}).items():
            if tx not in self.txs:
                raise self.fail(f"{at}.{tx}", f"unknown transaction {tx!r}", f"one of {', '.join(self.txs)}")
            if state not in allowed:
                raise self.fail(
                    f"{at}.{tx}", f"{state!r} is no state of a transaction here", f"one of {allowed}"
                )


def load_scenario(path: Path) -> tuple[ScenarioFile, Config]:
    """The scenario in `path` and its cluster's Config, or a TidemarkError naming the file and the field."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TidemarkError(f"cannot read the scenario: {error}", source=source) from error
    try:
        scenario = ScenarioFile.model_validate_json(text)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise TidemarkError(
            first["msg"],
            source=source,
            location=_loc_path(first["loc"], first["type"]) or None,
            expected=_expected(first["loc"], first["type"]),
        ) from error
    return scenario, _Checker(scenario, source).check()


# ---------------------------------------------------------------------------------------------------------
# Running: each step applied to the cluster, a timeline row and the checks after it.


class CounterView(BaseModel):
    lwm: int
    hwm: int
    items: list[tuple[int, int]]


class EntryView(BaseModel):
    value: str
    tx: str = Field(description="the transaction that wrote it (the model's value)")
    cntr: int = Field(description="the update counter of the write")


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
    """A server at the end: counters, data, partition states and its transactions."""

    data: dict[int, EntryView]
    partitions: dict[int, PartitionState]
    txs: dict[str, str]


class MessageEvent(BaseModel):
    """A message delivered (consumed by the step's node), sent, or lost (its receiver failed, or recovery,
    a rollback or a topology event cancelled it). With protocol pme also the exchange's single and full
    messages and rebalancing's Demand and Supply messages."""

    kind: Literal["delivered", "sent", "lost"]
    sender: str
    receiver: str
    label: str


class TopologyView(BaseModel):
    """The cluster's topology: versions, owner lists and (pme) the events the pending exchange handles."""

    version: str = Field(description='the latest topology version, "major.minor"')
    ready: str = Field(description="the version whose exchange completed: transactions map on it")
    owners: dict[int, list[str]] = Field(description="partition -> its owner list, primary first")
    pending: list[str] = Field(description="pme: the kinds of events the pending exchange handles")


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


class ScenarioResult(BaseModel):
    name: str
    description: str
    protocol: str
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


def _counter_view(counter: PartitionUpdateCounter) -> CounterView:
    return CounterView(lwm=counter.lwm, hwm=counter.hwm, items=counter.items)


def node_state(cluster: Cluster, node: str) -> NodeState:
    if node in cluster.alive:
        return "alive"
    return "restarted" if node in cluster.restarted else "down"


def partition_state(cluster: Cluster, node: str, part: int) -> PartitionState:
    """A copy's state.

    pme: the real state - OFFLINE while the server is down, LOST for a copy of a LOST partition, else
    the copy's own (OWNING, MOVING, RENTING), or EVICTED when the server holds no copy. A restarted server
    keeps the states its disk holds until the exchange after it joins decides.

    2pc: OWNING on a live owner (the model rebalances nothing, so every live owner owns); OFFLINE on a
    server that is down. A restarted server has not rejoined: its state is the one the exchange on its
    rejoin would give it - MOVING (to be rebalanced) when its LWM is below the live owners' maximum, else
    OWNING (ignite-internals.md, PME: on server join, OWNING copies below the max LWM become MOVING). That
    is where a counter claiming updates the copy lacks loses them for good."""
    state = node_state(cluster, node)
    if isinstance(cluster, PmeCluster):
        if state == "down":
            return "OFFLINE"
        if part in cluster.lost and part in cluster.states[node]:
            return "LOST"
        return cast(PartitionState, cluster.state_of(node, part))
    if state != "restarted":
        return "OWNING" if state == "alive" else "OFFLINE"
    live = [cluster.nodes[o].counters[part].lwm for o in cluster.owners[part] if o in cluster.alive]
    return "MOVING" if live and max(live) > cluster.nodes[node].counters[part].lwm else "OWNING"


def _copies(cluster: Cluster, node: str) -> dict[int, str]:
    """pme: the server's copies as text, e.g. {0: 'MOVING (init 2)'}; the 2PC slice keeps no copy states."""
    if not isinstance(cluster, PmeCluster):
        return {}
    texts = {}
    for part, copy in sorted(cluster.states[node].items()):
        text = copy.state.value + (f" (init {copy.init})" if copy.state is PartState.MOVING else "")
        texts[part] = text + (", LOST" if part in cluster.lost else "")
    return texts


def _snapshot(cluster: Cluster, node: str) -> NodeSnapshot:
    counters = cluster.nodes[node].counters
    history = cluster.history[node] if isinstance(cluster, PmeCluster) else {}
    return NodeSnapshot(
        state=node_state(cluster, node),
        counters={p: _counter_view(c) for p, c in counters.items()},
        copies=_copies(cluster, node),
        history={p: h for p, h in sorted(history.items()) if h},
    )


def _version_text(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def topology_view(cluster: Cluster) -> TopologyView:
    pending = sorted(e.value for e in cluster.pending) if isinstance(cluster, PmeCluster) else []
    return TopologyView(
        version=_version_text(cluster.top_ver),
        ready=_version_text(cluster.ready_ver),
        owners={p: list(owners) for p, owners in sorted(cluster.owners.items())},
        pending=pending,
    )


Values: TypeAlias = Mapping[tuple[str, int], str]


def node_view(cluster: Cluster, node: str, values: Values) -> NodeView:
    n = cluster.nodes[node]
    # pme: the copies the server keeps (its counters are gone while it is down); 2pc: its initial ones.
    held = sorted(cluster.states[node] if isinstance(cluster, PmeCluster) else n.counters)
    return NodeView(
        **_snapshot(cluster, node).model_dump(),
        data={k: EntryView(value=values[e.tx, k], tx=e.tx, cntr=e.cntr) for k, e in sorted(n.data.items())},
        partitions={p: partition_state(cluster, node, p) for p in held},
        txs={tx: local.state.value for tx, local in sorted(n.txs.items())},
    )


def _message_label(message: Message, config: Config) -> str:
    """The message's class and transaction, with what matters for counters: versions, ranges, outcome."""
    text = f"{type(message).__name__} {message.tx}"
    if isinstance(message, LockRequest | LockResponse):
        return f"{text} ver {message.ver.major}.{message.ver.minor}"
    if isinstance(message, DhtPrepareRequest):
        counters: dict[int, list[int]] = {}
        for key, cntr in message.writes:
            counters.setdefault(config.partition(key), []).append(cntr)
        return text + "".join(f" p{p} ({min(cs) - 1}, {len(cs)})" for p, cs in sorted(counters.items()))
    if isinstance(message, FinishRequest | DhtFinishRequest):
        return f"{text} {'commit' if message.commit else 'rollback'}"
    return text


def _single_label(infos: Mapping[int, PartInfo]) -> str:
    """A single message: per copy its LWM, state and, when its WAL lacks some, where the WAL starts."""
    copies = "".join(
        f" p{p} lwm {i.lwm} {i.state.value}" + (f" WAL from {i.hist + 1}" if i.hist else "")
        for p, i in sorted(infos.items())
    )
    return "SingleMessage" + (copies or " (no copies)")


def _full_label(before: PmeCluster, after: PmeCluster) -> str:
    """The full message: its version and per partition the maximum LWM every copy takes, or LOST."""
    version = after.ready_ver
    parts = "".join(
        f" p{p} LOST" if p in after.lost else f" p{p} lwm {before._max_lwm(p)}"
        for p in range(after.config.partitions)
    )
    return f"FullMessage ver {version.major}.{version.minor}{parts}"


def _rebalance_label(message: RebalanceMessage) -> str:
    """A Demand (what the demander asks for) or a Supply (the entries it carries, and if it is the last)."""
    if isinstance(message, Demand):
        if message.mode is Mode.HISTORICAL:
            first, last = message.first, message.upto
            wanted = f"counter {last}" if first == last else f"counters {first}..{last}"
        else:
            wanted = f"keys from {message.first} up to lwm {message.upto}"
        return f"Demand p{message.part} {message.mode.value} {wanted}"
    entries = sorted(message.entries, key=lambda e: (e.cntr, e.key))
    carried = ", ".join(f"key {e.key} cntr {e.cntr}" for e in entries) or "no entries"
    return f"Supply p{message.part} {message.mode.value} {carried}" + (" (last)" if message.last else "")


def _exchange_messages(
    before: PmeCluster, after: PmeCluster, step: Step
) -> tuple[list[MessageEvent], list[MessageEvent]]:
    """What a pme step did with the exchange's and rebalancing's messages: (delivered or lost, sent).

    A single message reaches the coordinator in the step that sends it (the model keeps it there); the
    full message reaches every other live server in the coordinator's step; a Demand is delivered to the
    supplier by Supply and a Supply to the demander by Rebalance; a topology event loses those in flight.
    """

    def event(kind: Literal["delivered", "sent", "lost"], sender: str, to: str, label: str) -> MessageEvent:
        return MessageEvent(kind=kind, sender=sender, receiver=to, label=label)

    arrived = [
        event("delivered", n, before.coordinator, _single_label(after.singles[n]))
        for n in sorted(after.singles)
        if n not in before.singles
    ]
    if step.name == "FullMessage":
        full = _full_label(before, after)
        arrived += [
            event("delivered", before.coordinator, n, full) for n in sorted(after.alive) if n != step.node
        ]
    answering = step.name in ("Supply", "Rebalance")
    for m in before.rebal - after.rebal:
        kind: Literal["delivered", "lost"] = "delivered" if answering and m.to == step.node else "lost"
        arrived.append(event(kind, m.sender, m.to, _rebalance_label(m)))
    sent = [event("sent", m.sender, m.to, _rebalance_label(m)) for m in after.rebal - before.rebal]
    return arrived, sent


def _messages(before: Cluster, after: Cluster, step: Step, client: str) -> list[MessageEvent]:
    """What the step did to the network: a message it consumed was delivered if addressed to the node the
    step runs on (the near node for Tx* steps), else lost; a crash and tx recovery only lose messages.
    With protocol pme, also the exchange's and rebalancing's messages (`_exchange_messages`)."""
    if step.name in ("NodeFail", "Recover"):
        actor = None
    else:
        actor = step.node if step.node is not None else NEAR if step.name.startswith("Tx") else None
    shown = {NEAR: client}

    def event(kind: Literal["delivered", "sent", "lost"], m: Message) -> MessageEvent:
        sender: str = getattr(m, "sender", NEAR)
        to = receiver(m)
        return MessageEvent(
            kind=kind,
            sender=shown.get(sender, sender),
            receiver=shown.get(to, to),
            label=_message_label(m, before.config),
        )

    consumed = [
        event("delivered" if receiver(m) == actor else "lost", m) for m in before.network - after.network
    ]
    sent = [event("sent", m) for m in after.network - before.network]
    if isinstance(before, PmeCluster) and isinstance(after, PmeCluster):
        arrived, posted = _exchange_messages(before, after, step)
        consumed += arrived
        sent += posted
    # Sets have no order across processes: sort, so the same scenario gives the same output.
    return sorted(consumed, key=lambda e: (e.kind, e.sender, e.receiver, e.label)) + sorted(
        sent, key=lambda e: (e.sender, e.receiver, e.label)
    )


def _in_flight(cluster: Cluster) -> int:
    rebalancing = len(cluster.rebal) if isinstance(cluster, PmeCluster) else 0
    return len(cluster.network) + rebalancing


def _row(
    index: int | None, step: str, note: str | None, messages: list[MessageEvent], cluster: Cluster
) -> TimelineRow:
    return TimelineRow(
        index=index,
        step=step,
        note=note,
        messages=messages,
        in_flight=_in_flight(cluster),
        topology=topology_view(cluster),
        nodes={n: _snapshot(cluster, n) for n in cluster.config.servers},
    )


def _checks(where: str, expect: Expectations, cluster: Cluster, values: Values, client: str) -> list[Check]:
    checks: list[Check] = []

    def add(path: str, expected: JsonValue, actual: JsonValue) -> None:
        checks.append(Check(path=path, expected=expected, actual=actual, holds=expected == actual))

    for node, e in expect.items():
        at = f"{where}.{node}"
        if node == client:
            for tx, state in (e.txs or {}).items():
                add(f"{at}.txs.{tx}", state, cluster.near[tx].state.value)
            continue
        view = node_view(cluster, node, values)
        if e.state is not None:
            add(f"{at}.state", e.state, view.state)
        for part, counter in (e.counters or {}).items():
            # pme: a server may hold no counter of the partition (down, evicted, never assigned).
            held = view.counters.get(part)
            actual = held.model_dump(mode="json") if held else {}
            for field, expected in counter.model_dump(mode="json", exclude_none=True).items():
                add(f"{at}.counters[{part}].{field}", expected, actual.get(field))
        if e.data is not None:
            add(
                f"{at}.data",
                {str(k): v for k, v in e.data.items()},
                {str(k): v.value for k, v in view.data.items()},
            )
        for part, copy_state in (e.partitions or {}).items():
            add(f"{at}.partitions[{part}]", copy_state, partition_state(cluster, node, part))
        for part, init in (e.init or {}).items():
            assert isinstance(cluster, PmeCluster)  # the checker allows `init` for pme only
            copy = cluster.states[node].get(part)
            add(f"{at}.init[{part}]", init, copy.init if copy else None)
        for part, history in (e.history or {}).items():
            assert isinstance(cluster, PmeCluster)  # the checker allows `history` for pme only
            add(f"{at}.history[{part}]", history, cluster.history[node].get(part, 0))
        for tx, state in (e.txs or {}).items():
            add(f"{at}.txs.{tx}", state, view.txs.get(tx))
    return checks


def _topology_checks(where: str, expect: TopologyExpectation | None, cluster: Cluster) -> list[Check]:
    """The fields of a topology expectation against the cluster's now (pending compared sorted)."""
    if expect is None:
        return []
    view = topology_view(cluster)
    checks: list[Check] = []

    def add(path: str, expected: JsonValue, actual: JsonValue) -> None:
        checks.append(Check(path=path, expected=expected, actual=actual, holds=expected == actual))

    for field, expected in expect.model_dump(mode="json", exclude_none=True).items():
        if field == "owners":
            for part, owners in expected.items():
                held: list[str] | None = view.owners.get(int(part))
                add(f"{where}.owners[{part}]", owners, cast(JsonValue, held))
        else:
            wanted = sorted(expected) if field == "pending" else expected
            add(f"{where}.{field}", wanted, getattr(view, field))
    return checks


def _idle_verify_view(report: IdleVerifyResult) -> IdleVerifyView:
    return IdleVerifyView(
        clean=report.clean,
        counter_conflicts={
            p: {n: VerifiedCounter(lwm=lwm, items=list(items)) for n, (lwm, items) in sorted(nodes.items())}
            for p, nodes in sorted(report.counter_conflicts.items())
        },
        hash_conflicts={p: dict(sorted(nodes.items())) for p, nodes in sorted(report.hash_conflicts.items())},
        skipped={p: dict(sorted(nodes.items())) for p, nodes in sorted(report.skipped.items())},
        lost=sorted(report.lost),
    )


def _idle_verify_checks(where: str, expect: IdleVerifyExpectation | None, cluster: Cluster) -> list[Check]:
    """The fields of an idle_verify expectation against impl.pme.idle_verify's report now; conflicts are
    compared as the sorted list of partitions that have them."""
    if expect is None:
        return []
    assert isinstance(cluster, PmeCluster)  # the checker allows idle_verify for pme only
    report = _idle_verify_view(idle_verify(cluster))
    actual: dict[str, JsonValue] = report.model_dump(mode="json")
    actual["counter_conflicts"] = [p for p in sorted(report.counter_conflicts)]
    actual["hash_conflicts"] = [p for p in sorted(report.hash_conflicts)]
    checks = []
    for field, expected in expect.model_dump(mode="json", exclude_none=True).items():
        wanted = sorted(expected) if isinstance(expected, list) else expected
        checks.append(
            Check(
                path=f"{where}.{field}", expected=wanted, actual=actual[field], holds=wanted == actual[field]
            )
        )
    return checks


def _values(scenario: ScenarioFile) -> dict[tuple[str, int], str]:
    """(writer, key) -> the scenario's value: the model's value of an entry is the transaction."""
    values = {(INITIAL_WRITER, k): v for k, v in scenario.cluster.initial_data.items()}
    for step in scenario.steps:
        if isinstance(step, TxStartStep):
            values.update(((step.tx, k), v) for k, v in step.keys.items())
    return values


def _initial_cluster(cluster_class: type[Cluster], config: Config, data: Mapping[int, str]) -> Cluster:
    """The cluster at the start: the initial data committed on every owner, counters 1..n per partition
    in key order, data records in the WAL (a restart rebuilds them), LWM = HWM = n and the first exchange
    done, as after the activation exchange of a cluster loaded earlier. (A PmeCluster's copies start
    OWNING, with nothing in flight: the same holds for it.)"""
    cluster = cluster_class.initial(config)
    by_part: dict[int, list[int]] = {}
    for key in sorted(data):
        by_part.setdefault(config.partition(key), []).append(key)
    for node in cluster.nodes.values():
        writes = [(k, c) for p in node.counters for c, k in enumerate(by_part.get(p, []), start=1)]
        node.data = {k: Entry(INITIAL_WRITER, c) for k, c in writes}
        node.disk = node.disk.log(DataRecord(k, INITIAL_WRITER, c) for k, c in writes)
        node.counters = {
            p: type(counter)(len(by_part.get(p, [])), len(by_part.get(p, [])), (), False)
            for p, counter in node.counters.items()
        }
    return cluster


def _cluster_class(scenario: ScenarioFile) -> type[Cluster]:
    if scenario.protocol == "pme":
        return PmeCluster
    return CLUSTER_COUNTERS.get(scenario.counter, Cluster)


def run_scenario(scenario: ScenarioFile, config: Config) -> ScenarioResult:
    """Run the steps in order, checking each step's expectations after it and the final ones at the end.
    A step that is not enabled (or that a counter refuses) stops the run: the scenario fails - unless
    the step says `refused`, which is then checked, and the run goes on without it."""
    client = scenario.cluster.clients[0]
    values = _values(scenario)
    cluster = _initial_cluster(_cluster_class(scenario), config, scenario.cluster.initial_data)
    timeline = [_row(None, "initial state", None, [], cluster)]
    checks: list[Check] = []
    failure = None
    for index, entry in enumerate(scenario.steps):
        step = Step(
            entry.step,
            **{f: getattr(entry, f) for f in ("tx", "node", "part", "peer") if hasattr(entry, f)},
        )
        after: Cluster | None
        try:
            after = cluster.apply(step)
        except StepNotEnabled:
            if not entry.refused:
                enabled = ", ".join(map(str, cluster.enabled())) or "none"
                failure = f"steps[{index}]: {step} is not enabled here; enabled: {enabled}"
                break
            after = None
        except (CounterInconsistencyError, TooManyGapsError) as error:
            failure = f"steps[{index}]: {step} failed: {error}"
            break
        if entry.refused:
            outcome = "refused" if after is None else "enabled"
            checks.append(
                Check(path=f"steps[{index}].refused", expected="refused", actual=outcome, holds=after is None)
            )
            shown = f"{step} refused" if after is None else f"{step} NOT refused (not taken)"
            timeline.append(_row(index, shown, entry.note, [], cluster))
        else:
            assert after is not None
            timeline.append(
                _row(index, str(step), entry.note, _messages(cluster, after, step, client), after)
            )
            cluster = after
        checks += _checks(f"steps[{index}].expect", entry.expect, cluster, values, client)
        checks += _topology_checks(f"steps[{index}].topology", entry.topology, cluster)
        checks += _idle_verify_checks(f"steps[{index}].idle_verify", entry.idle_verify, cluster)
    else:
        checks += _checks("expect", scenario.expect, cluster, values, client)
        checks += _topology_checks("topology", scenario.topology, cluster)
        checks += _idle_verify_checks("idle_verify", scenario.idle_verify, cluster)
    return ScenarioResult(
        name=scenario.name,
        description=scenario.description,
        protocol=scenario.protocol,
        counter=scenario.counter,
        client=client,
        servers=list(config.servers),
        passed=failure is None and all(c.holds for c in checks),
        failure=failure,
        timeline=timeline,
        checks=checks,
        nodes={n: node_view(cluster, n, values) for n in config.servers},
        topology=topology_view(cluster),
        txs={tx: near.state.value for tx, near in sorted(cluster.near.items())},
        idle_verify=_idle_verify_view(idle_verify(cluster)) if isinstance(cluster, PmeCluster) else None,
    )


# ---------------------------------------------------------------------------------------------------------
# Output: the timeline (terminal and HTML) and the Mermaid sequence diagram.


def counter_text(view: CounterView) -> str:
    """e.g. `lwm=0 hwm=5 (3,2)`: the items are the out-of-order ranges (start, delta)."""
    items = " ".join(f"({start},{delta})" for start, delta in view.items)
    return f"lwm={view.lwm} hwm={view.hwm}" + (f" {items}" if items else "")


def _node_cell(snapshot: NodeSnapshot) -> str:
    """A server's counters per partition, each followed by its copy's state and where its WAL archive was
    truncated (pme)."""
    if snapshot.state == "down":
        # Its memory is gone; the counters it will have come from its WAL at restart. Copy states (pme)
        # are kept on the disk.
        return "\n".join(["(down)", *(f"p{p}: {text}" for p, text in snapshot.copies.items())])
    parts = sorted(set(snapshot.counters) | set(snapshot.copies))
    several = len(parts) > 1
    lines = []
    for p in parts:
        counter = snapshot.counters.get(p)
        texts = [counter_text(counter)] if counter else []
        texts += [snapshot.copies[p]] if p in snapshot.copies else []
        texts += [f"history {snapshot.history[p]}"] if p in snapshot.history else []
        text = " ".join(texts)
        lines.append(f"p{p}: {text}" if several else text)
    if snapshot.state != "alive":
        lines.insert(0, f"({snapshot.state})")
    return "\n".join(lines)


def _arrow(event: MessageEvent) -> str:
    return f"{event.sender}->{event.receiver} {event.label}"


def _owners_text(owners: Sequence[str]) -> str:
    return ", ".join(owners) or "none"


def topology_text(view: TopologyView) -> str:
    """e.g. `ver 3.0` and the owner list; while an exchange is pending
    `ver 3.1 (exchange pending: affinity; ready 3.0)`."""
    text = f"ver {view.version}"
    if view.ready != view.version:
        events = f": {', '.join(view.pending)}" if view.pending else ""
        text += f" (exchange pending{events}; ready {view.ready})"
    lists = {tuple(owners) for owners in view.owners.values()}
    if len(lists) == 1:
        return f"{text}\nowners {_owners_text(next(iter(lists)))}"
    return "\n".join([text, *(f"p{p} owners {_owners_text(o)}" for p, o in view.owners.items())])


def _messages_cell(row: TimelineRow) -> str:
    marks = {"delivered": "in ", "sent": "out", "lost": "lost"}
    return "\n".join(f"{marks[e.kind]} {_arrow(e)}" for e in row.messages)


def _step_cell(row: TimelineRow) -> str:
    return row.step + (f"\n{row.note}" if row.note else "")


def idle_verify_text(report: IdleVerifyView) -> str:
    """e.g. `idle_verify: clean; skipped p0: s3 MOVING`; with conflicts `idle_verify: CONFLICTS; ...`"""
    found = [
        f"counter conflict p{p}: "
        + ", ".join(f"{n} lwm={c.lwm}" + "".join(f" ({s},{d})" for s, d in c.items) for n, c in nodes.items())
        for p, nodes in report.counter_conflicts.items()
    ]
    found += [
        f"hash conflict p{p}: " + ", ".join(f"{n} {h}" for n, h in nodes.items())
        for p, nodes in report.hash_conflicts.items()
    ]
    found += [
        f"skipped p{p}: " + ", ".join(f"{n} {why}" for n, why in nodes.items())
        for p, nodes in report.skipped.items()
    ]
    if report.lost:
        found.append("lost " + ", ".join(f"p{p}" for p in report.lost))
    return "; ".join(["idle_verify: " + ("clean" if report.clean else "CONFLICTS"), *found])


def timeline_table(result: ScenarioResult) -> Table:
    """One row per step: the step, messages in / out / lost, messages in flight, the topology, every
    server's counters (and copy states); with protocol pme idle_verify's final report as the caption."""
    table = Table(
        "#",
        "step",
        "messages",
        "in flight",
        "topology",
        *result.servers,
        title=f"scenario {result.name}",
        caption=idle_verify_text(result.idle_verify) if result.idle_verify else None,
    )
    for row in result.timeline:
        cells = [_node_cell(row.nodes[n]) for n in result.servers]
        index = "" if row.index is None else str(row.index)
        topology = topology_text(row.topology)
        table.add_row(index, _step_cell(row), _messages_cell(row), str(row.in_flight), topology, *cells)
    return table


# The server a step runs on, in its text, e.g. "Rebalance(node=s3, part=0)".
_STEP_NODE = re.compile(r"\bnode=(\w+)")
# One pass: replacing '#' and then ';' would mangle the ';' of the '#35;' just written.
_MERMAID_ENTITIES = str.maketrans({"#": "#35;", ";": "#59;"})


def _mermaid_text(text: str) -> str:
    """Text safe in a Mermaid message or note: ';' and '#' would end a statement or start an entity."""
    return " ".join(text.translate(_MERMAID_ENTITIES).split())


def _state_text(before: NodeSnapshot, after: NodeSnapshot) -> str | None:
    """A note on what a step did to a server: crash, restart, its counters, its copies' states (pme)."""
    if after.state == "down" and before.state != "down":
        return "crashed: memory lost, WAL kept"
    if after == before:
        return None
    prefix = "restarted from its WAL: " if after.state == "restarted" and before.state != "restarted" else ""
    changes = [
        f"p{p} {counter_text(c)}" for p, c in after.counters.items() if c != before.counters.get(p) or prefix
    ]
    for p in sorted(set(before.copies) | set(after.copies)):
        old, new = before.copies.get(p, "EVICTED"), after.copies.get(p, "EVICTED")
        if old != new:
            changes.append(f"p{p} {old} → {new}")
    # An evicted copy's history goes back to 0 with it: only truncations are news.
    truncated = [f"p{p} history {h}" for p, h in after.history.items() if h > before.history.get(p, 0)]
    if truncated:
        changes.append("WAL archive truncated: " + ", ".join(truncated))
    return prefix + "; ".join(changes)


def _topology_note(before: TopologyView, after: TopologyView) -> str | None:
    """pme: a note on a topology change - a new version whose exchange is pending (the late affinity
    switch named as such), or the owner lists a completed exchange switched to."""
    if after.version != before.version:
        if "affinity" in after.pending and "affinity" not in before.pending:
            return (
                "late affinity switch: rebalancing done and the owner order changes: exchange on "
                f"ver {after.version}"
            )
        return f"ver {after.version}: exchange pending ({', '.join(after.pending)})"
    if after.owners == before.owners:
        return None
    switched = []
    for p, owners in after.owners.items():
        old = before.owners.get(p, [])
        if owners != old:
            primary = f" (primary {old[0] if old else 'none'} → {owners[0] if owners else 'none'})"
            switched.append(
                f"p{p} owners {_owners_text(old)} → {_owners_text(owners)}"
                + (primary if old[:1] != owners[:1] else "")
            )
    return "; ".join(switched)


def mermaid_diagram(result: ScenarioResult) -> str:
    """The message flow: each message drawn when it is delivered (so reordering shows) or lost, a note
    for steps that deliver nothing, a note with a server's counters (pme: copy states, WAL truncation)
    whenever they change and, with protocol pme, a note on each new topology version and owner list."""
    servers = result.servers
    everyone = f"{result.client},{servers[-1]}"
    lines = ["sequenceDiagram", f"    participant {result.client} as {result.client} (client)"]
    lines += [f"    participant {s}" for s in servers]
    previous = result.timeline[0]
    for row in result.timeline[1:]:
        shown = [e for e in row.messages if e.kind != "sent"]
        for e in shown:
            arrow, lost = ("->>", "") if e.kind == "delivered" else ("-x", " (lost)")
            lines.append(f"    {e.sender}{arrow}{e.receiver}: {row.index}. {_mermaid_text(e.label)}{lost}")
        if not shown:
            named = _STEP_NODE.search(row.step)
            node = named.group(1) if named and named.group(1) in servers else None
            where = node or (result.client if row.step.startswith("Tx") else f"{servers[0]},{servers[-1]}")
            lines.append(f"    Note over {where}: {row.index}. {_mermaid_text(row.step)}")
        if row.note:
            lines.append(f"    Note over {everyone}: {_mermaid_text(row.note)}")
        change = _topology_note(previous.topology, row.topology) if result.protocol == "pme" else None
        if change:
            lines.append(f"    Note over {everyone}: {_mermaid_text(change)}")
        for node in servers:
            text = _state_text(previous.nodes[node], row.nodes[node])
            if text:
                lines.append(f"    Note over {node}: {_mermaid_text(text)}")
        previous = row
    return "\n".join(lines) + "\n"


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;white-space:pre-line}
td{font-family:ui-monospace,monospace;font-size:90%}
pre.mermaid{background:#f6f8fa;border:1px solid #ddd;padding:.6em}
.holds{color:#17692b;font-weight:bold}.fails{color:#b3121f;font-weight:bold}
"""


def _cells(tag: str, values: Iterable[str]) -> str:
    return "<tr>" + "".join(f"<{tag}>{html.escape(v)}</{tag}>" for v in values) + "</tr>"


def timeline_html(result: ScenarioResult, diagram: str) -> str:
    """The timeline, the checks and the diagram's source on one page that loads nothing from the network.

    As with reports/index.html, Mermaid written beside the page draws the diagram (conformance/mermaid.py);
    without JavaScript its source stays readable."""
    verdict = ("holds", "holds") if result.passed else ("fails", "FAILS")
    rows = [_cells("th", ["#", "step", "messages", "in flight", "topology", *result.servers])]
    for row in result.timeline:
        nodes = [_node_cell(row.nodes[n]) for n in result.servers]
        index = "" if row.index is None else str(row.index)
        topology = topology_text(row.topology)
        rows.append(
            _cells("td", [index, _step_cell(row), _messages_cell(row), str(row.in_flight), topology, *nodes])
        )
    checks = [_cells("th", ["expectation", "expected", "actual", ""])]
    checks += [
        _cells("td", [c.path, json.dumps(c.expected), json.dumps(c.actual), "holds" if c.holds else "FAILS"])
        for c in result.checks
    ]
    failure = f"<p class='fails'>{html.escape(result.failure)}</p>" if result.failure else ""
    if result.idle_verify:
        failure += f"<p>{html.escape(idle_verify_text(result.idle_verify))}</p>"
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>scenario {html.escape(result.name)}</title>"
        f"<style>{_STYLE}</style></head><body>\n"
        f"<h1>scenario {html.escape(result.name)}: <span class='{verdict[0]}'>{verdict[1]}</span></h1>\n"
        f"<p>{html.escape(result.description)}</p><p>counter: {html.escape(result.counter)}</p>{failure}\n"
        f"<h2>Timeline</h2><table>{''.join(rows)}</table>\n"
        f"<h2>Expectations</h2><table>{''.join(checks)}</table>\n"
        f"<h2>Message flow</h2><pre class='mermaid'>{html.escape(diagram)}</pre>\n"
        + SCRIPT_TAGS
        + "</body></html>\n"
    )


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def write_outputs(result: ScenarioResult, diagram_path: Path) -> tuple[Path, Path]:
    """The Mermaid diagram at `diagram_path` and the timeline page beside it (same name, .html), with
    Mermaid itself to draw it."""
    diagram_path.parent.mkdir(parents=True, exist_ok=True)
    write_mermaid(diagram_path.parent)
    diagram = mermaid_diagram(result)
    page = diagram_path.with_suffix(".html")
    _write_atomically(diagram_path, diagram)
    _write_atomically(page, timeline_html(result, diagram))
    return diagram_path, page


def scenario_summary(result: ScenarioResult) -> dict[str, Any]:
    """The --json object: the verdict, the checks, and every node's final counters, data and states."""
    return result.model_dump(mode="json", exclude={"timeline", "description"})


if __name__ == "__main__":
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
