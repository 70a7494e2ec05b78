"""Scenario files: a cluster, the steps it takes and what must hold, run on impl/cluster.py.

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

- `cluster`: servers, the one client (the model's near node), partitions, backups, optionally the owner
  list of each partition (primary first; default: the first backups+1 servers own every partition) and
  data committed on every owner before the scenario starts.
- `steps`: the cluster's steps by their spec names (impl/cluster.py STEPS), each delivering one message
  or taking one local action: TxStart (which also declares the transaction's keys and values), Lock,
  Prepare, BackupPrepare, Commit, BackupCommit, Rollback, NodeFail, Restart, Exchange, Checkpoint, ...
  A step may carry a `note` (shown in the timeline and diagram) and an `expect` checked right after it.
- `expect`: per node, checked after the last step: `state` (alive, down, restarted), `counters` per
  partition (lwm, hwm, items), `data` (the whole key -> value map), `partitions` (see
  `partition_state`) and `txs` (a transaction's state on that server, or on the client).
- `counter`: "tracking" (Ignite's counter, the default) or a counter mutant of conformance/mutants.py,
  e.g. "no-out-of-order-tracking".

The model's value of a write is the transaction that made it; the scenario's values are a naming layer
over that: (transaction, key) -> value. Running a scenario gives a `ScenarioResult`: a timeline (one row
per step: messages delivered, sent and lost, messages in flight, every node's counters), the checks and
the final state of every node; `mermaid_diagram` draws the message flow and `timeline_html` the page.
"""

from __future__ import annotations

import html
import json
import os
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
    receiver,
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

NodeState = Literal["alive", "down", "restarted"]
# OWNING: a live owner; MOVING: a restarted copy behind the live owners (rebalanced if it rejoined);
# OFFLINE: the server is down.
PartitionState = Literal["OWNING", "MOVING", "OFFLINE"]
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
    partitions: dict[Partition, PartitionState] | None = None
    txs: dict[Name, TxStateName] | None = Field(
        default=None, description="transaction -> its state on this server (or on the client)"
    )

    @model_validator(mode="after")
    def _something(self) -> NodeExpectation:
        if all(getattr(self, f) is None for f in type(self).model_fields):
            raise ValueError("give at least one of state, counters, data, partitions, txs")
        return self


Expectations: TypeAlias = dict[Name, NodeExpectation]


class _StepBase(_Strict):
    note: str | None = Field(default=None, description="shown in the timeline and the diagram")
    expect: Expectations = Field(default_factory=dict, description="checked right after this step")


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
    """The partition map exchange for the new topology."""

    step: Literal["Exchange"]


ScenarioStep = Annotated[
    TxStartStep | TxStep | TxNodeStep | NodeStep | ExchangeStep, Field(discriminator="step")
]
STEP_MODELS: tuple[type[_StepBase], ...] = (TxStartStep, TxStep, TxNodeStep, NodeStep, ExchangeStep)


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


class ScenarioFile(_Strict):
    """A scenario: a cluster, the steps it takes, and what must hold."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, title="tidemark scenario")

    schema_: str | None = Field(default=None, alias="$schema", description="for editors; ignored")
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
    description: str = ""
    counter: CounterName = Field(default=TRACKING, description="the counter implementation every copy runs")
    cluster: ClusterSection
    steps: list[ScenarioStep] = Field(min_length=1)
    expect: Expectations = Field(default_factory=dict, description="checked after the last step")


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
    if len(parts) > 2 and parts[0] == "steps" and parts[2] in STEPS:
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
    """The fields a step with this tag takes, e.g. "note, expect, step, tx, node"."""
    model = next(m for m in STEP_MODELS if tag in get_args(m.model_fields["step"].annotation))
    return ", ".join(model.model_fields)


def _expected(loc: Sequence[int | str], error_type: str) -> str:
    if error_type in ("union_tag_invalid", "union_tag_not_found"):
        return f"one of the steps {', '.join(STEPS)}"
    if len(loc) > 2 and loc[0] == "steps" and isinstance(loc[2], str) and loc[2] in STEPS:
        return f"a {loc[2]} step with the fields {_step_fields(loc[2])}"
    return "a scenario as in conformance/schemas/scenario.schema.json"


class _Checker:
    """The semantic checks of a parsed scenario; each failure names the file and the field's path."""

    def __init__(self, scenario: ScenarioFile, source: str) -> None:
        self.scenario = scenario
        self.source = source
        self.servers = scenario.cluster.servers
        self.client = scenario.cluster.clients[0]
        self.txs: dict[str, int] = {}  # transaction -> index of its TxStart step

    def fail(self, location: str, message: str, expected: str) -> TidemarkError:
        return TidemarkError(message, source=self.source, location=location, expected=expected)

    def check(self) -> Config:
        self._cluster()
        for index, step in enumerate(self.scenario.steps):
            if isinstance(step, TxStartStep):
                if step.tx in self.txs:
                    raise self.fail(
                        f"steps[{index}].tx",
                        f"transaction {step.tx!r} already started at steps[{self.txs[step.tx]}]",
                        "one TxStart step per transaction",
                    )
                if step.tx == INITIAL_WRITER:
                    raise self.fail(f"steps[{index}].tx", f"{INITIAL_WRITER!r} is reserved", "another name")
                self.txs[step.tx] = index
        config = self._config()
        for index, step in enumerate(self.scenario.steps):
            self._references(index, step)
            self._expectations(f"steps[{index}].expect", step.expect, config)
        self._expectations("expect", self.scenario.expect, config)
        return config

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
        for part, owners in cluster.owners.items():
            where = f"cluster.owners[{part}]"
            if len(owners) != cluster.backups + 1 or len(set(owners)) != len(owners):
                raise self.fail(
                    where, f"owners {owners}", f"{cluster.backups + 1} distinct servers (backups + 1)"
                )
            for i, owner in enumerate(owners):
                if owner not in self.servers:
                    raise self.fail(f"{where}[{i}]", f"unknown server {owner!r}", f"one of {self.servers}")

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
        return Config(tuple(self.servers), owners, writes)

    def _references(self, index: int, step: _StepBase) -> None:
        tx, node = getattr(step, "tx", None), getattr(step, "node", None)
        if tx is not None and tx not in self.txs:
            raise self.fail(
                f"steps[{index}].tx",
                f"unknown transaction {tx!r}",
                f"one started by a TxStart step: {', '.join(self.txs) or 'none'}",
            )
        if node is not None and node not in self.servers:
            raise self.fail(
                f"steps[{index}].node", f"unknown server {node!r}", f"one of {', '.join(self.servers)}"
            )

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
            owned = config.owned(node)
            for field in ("counters", "partitions"):
                for part in getattr(expectation, field) or {}:
                    if part not in owned:
                        raise self.fail(
                            f"{at}.{field}[{part}]",
                            f"{node} holds no copy of partition {part}",
                            f"one of {owned}",
                        )
            self._tx_states(f"{at}.txs", expectation.txs, SERVER_STATES)

    def _client_expectation(self, at: str, expectation: NodeExpectation) -> None:
        other = next(
            (f for f in ("state", "counters", "data", "partitions") if getattr(expectation, f) is not None),
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
    """A server in one timeline row: up or not, and its counters per partition."""

    state: NodeState
    counters: dict[int, CounterView]


class NodeView(NodeSnapshot):
    """A server at the end: counters, data, partition states and its transactions."""

    data: dict[int, EntryView]
    partitions: dict[int, PartitionState]
    txs: dict[str, str]


class MessageEvent(BaseModel):
    """A message delivered (consumed by the step's node), sent, or lost (its receiver failed, or recovery
    or a rollback cancelled it)."""

    kind: Literal["delivered", "sent", "lost"]
    sender: str
    receiver: str
    label: str


class TimelineRow(BaseModel):
    index: int | None = Field(description="the step's index in steps; None for the initial state")
    step: str
    note: str | None = None
    messages: list[MessageEvent] = Field(default_factory=list)
    in_flight: int
    nodes: dict[str, NodeSnapshot]


class Check(BaseModel):
    path: str = Field(description="the expectation's place in the file, e.g. steps[3].expect.s2.data")
    expected: JsonValue
    actual: JsonValue
    holds: bool


class ScenarioResult(BaseModel):
    name: str
    description: str
    counter: str
    client: str
    servers: list[str]
    passed: bool = Field(description="every step ran and every expectation holds")
    failure: str | None = Field(description="the step that could not run, if any")
    timeline: list[TimelineRow]
    checks: list[Check]
    nodes: dict[str, NodeView] = Field(description="every server after the last step that ran")
    txs: dict[str, str] = Field(description="every transaction's state on the client")


def _counter_view(counter: PartitionUpdateCounter) -> CounterView:
    return CounterView(lwm=counter.lwm, hwm=counter.hwm, items=counter.items)


def node_state(cluster: Cluster, node: str) -> NodeState:
    if node in cluster.alive:
        return "alive"
    return "restarted" if node in cluster.restarted else "down"


def partition_state(cluster: Cluster, node: str, part: int) -> PartitionState:
    """A copy's state: OWNING on a live owner (the model rebalances nothing, so every live owner owns);
    OFFLINE on a server that is down. A restarted server has not rejoined: its state is the one the
    exchange on its rejoin would give it - MOVING (to be rebalanced) when its LWM is below the live
    owners' maximum, else OWNING (ignite-internals.md, PME: on server join, OWNING copies below the max
    LWM become MOVING). That is where a counter claiming updates the copy lacks loses them for good."""
    state = node_state(cluster, node)
    if state != "restarted":
        return "OWNING" if state == "alive" else "OFFLINE"
    live = [cluster.nodes[o].counters[part].lwm for o in cluster.owners[part] if o in cluster.alive]
    return "MOVING" if live and max(live) > cluster.nodes[node].counters[part].lwm else "OWNING"


def _snapshot(cluster: Cluster, node: str) -> NodeSnapshot:
    counters = cluster.nodes[node].counters
    return NodeSnapshot(
        state=node_state(cluster, node), counters={p: _counter_view(c) for p, c in counters.items()}
    )


Values: TypeAlias = Mapping[tuple[str, int], str]


def node_view(cluster: Cluster, node: str, values: Values) -> NodeView:
    n = cluster.nodes[node]
    return NodeView(
        **_snapshot(cluster, node).model_dump(),
        data={k: EntryView(value=values[e.tx, k], tx=e.tx, cntr=e.cntr) for k, e in sorted(n.data.items())},
        partitions={p: partition_state(cluster, node, p) for p in sorted(n.counters)},
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


def _messages(before: Cluster, after: Cluster, step: Step, client: str) -> list[MessageEvent]:
    """What the step did to the network: a message it consumed was delivered if addressed to the node the
    step runs on (the near node for Tx* steps), else lost; a crash and tx recovery only lose messages."""
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
    # Sets have no order across processes: sort, so the same scenario gives the same output.
    return sorted(consumed, key=lambda e: (e.kind, e.sender, e.receiver, e.label)) + sorted(
        sent, key=lambda e: (e.sender, e.receiver, e.label)
    )


def _row(
    index: int | None, step: str, note: str | None, messages: list[MessageEvent], cluster: Cluster
) -> TimelineRow:
    return TimelineRow(
        index=index,
        step=step,
        note=note,
        messages=messages,
        in_flight=len(cluster.network),
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
            actual = view.counters[part].model_dump(mode="json")
            for field, expected in counter.model_dump(mode="json", exclude_none=True).items():
                add(f"{at}.counters[{part}].{field}", expected, actual[field])
        if e.data is not None:
            add(
                f"{at}.data",
                {str(k): v for k, v in e.data.items()},
                {str(k): v.value for k, v in view.data.items()},
            )
        for part, copy_state in (e.partitions or {}).items():
            add(f"{at}.partitions[{part}]", copy_state, view.partitions[part])
        for tx, state in (e.txs or {}).items():
            add(f"{at}.txs.{tx}", state, view.txs.get(tx))
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
    done, as after the activation exchange of a cluster loaded earlier."""
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


def run_scenario(scenario: ScenarioFile, config: Config) -> ScenarioResult:
    """Run the steps in order, checking each step's expectations after it and the final ones at the end.
    A step that is not enabled (or that a counter refuses) stops the run: the scenario fails."""
    client = scenario.cluster.clients[0]
    values = _values(scenario)
    cluster = _initial_cluster(
        CLUSTER_COUNTERS.get(scenario.counter, Cluster), config, scenario.cluster.initial_data
    )
    timeline = [_row(None, "initial state", None, [], cluster)]
    checks: list[Check] = []
    failure = None
    for index, entry in enumerate(scenario.steps):
        step = Step(entry.step, tx=getattr(entry, "tx", None), node=getattr(entry, "node", None))
        try:
            after = cluster.apply(step)
        except StepNotEnabled:
            enabled = ", ".join(map(str, cluster.enabled())) or "none"
            failure = f"steps[{index}]: {step} is not enabled here; enabled: {enabled}"
            break
        except (CounterInconsistencyError, TooManyGapsError) as error:
            failure = f"steps[{index}]: {step} failed: {error}"
            break
        timeline.append(_row(index, str(step), entry.note, _messages(cluster, after, step, client), after))
        cluster = after
        checks += _checks(f"steps[{index}].expect", entry.expect, cluster, values, client)
    else:
        checks += _checks("expect", scenario.expect, cluster, values, client)
    return ScenarioResult(
        name=scenario.name,
        description=scenario.description,
        counter=scenario.counter,
        client=client,
        servers=list(config.servers),
        passed=failure is None and all(c.holds for c in checks),
        failure=failure,
        timeline=timeline,
        checks=checks,
        nodes={n: node_view(cluster, n, values) for n in config.servers},
        txs={tx: near.state.value for tx, near in sorted(cluster.near.items())},
    )


# ---------------------------------------------------------------------------------------------------------
# Output: the timeline (terminal and HTML) and the Mermaid sequence diagram.


def counter_text(view: CounterView) -> str:
    """e.g. `lwm=0 hwm=5 (3,2)`: the items are the out-of-order ranges (start, delta)."""
    items = " ".join(f"({start},{delta})" for start, delta in view.items)
    return f"lwm={view.lwm} hwm={view.hwm}" + (f" {items}" if items else "")


def _node_cell(snapshot: NodeSnapshot) -> str:
    if snapshot.state == "down":
        return "(down)"  # its memory is gone; the counters it will have come from its WAL at restart
    several = len(snapshot.counters) > 1
    lines = [f"p{p}: {counter_text(c)}" if several else counter_text(c) for p, c in snapshot.counters.items()]
    if snapshot.state != "alive":
        lines.insert(0, f"({snapshot.state})")
    return "\n".join(lines)


def _arrow(event: MessageEvent) -> str:
    return f"{event.sender}->{event.receiver} {event.label}"


def _messages_cell(row: TimelineRow) -> str:
    marks = {"delivered": "in ", "sent": "out", "lost": "lost"}
    return "\n".join(f"{marks[e.kind]} {_arrow(e)}" for e in row.messages)


def _step_cell(row: TimelineRow) -> str:
    return row.step + (f"\n{row.note}" if row.note else "")


def timeline_table(result: ScenarioResult) -> Table:
    """One row per step: the step, messages in / out / lost, messages in flight, every server's counters."""
    table = Table("#", "step", "messages", "in flight", *result.servers, title=f"scenario {result.name}")
    for row in result.timeline:
        cells = [_node_cell(row.nodes[n]) for n in result.servers]
        index = "" if row.index is None else str(row.index)
        table.add_row(index, _step_cell(row), _messages_cell(row), str(row.in_flight), *cells)
    return table


# One pass: replacing '#' and then ';' would mangle the ';' of the '#35;' just written.
_MERMAID_ENTITIES = str.maketrans({"#": "#35;", ";": "#59;"})


def _mermaid_text(text: str) -> str:
    """Text safe in a Mermaid message or note: ';' and '#' would end a statement or start an entity."""
    return " ".join(text.translate(_MERMAID_ENTITIES).split())


def _state_text(before: NodeSnapshot, after: NodeSnapshot) -> str | None:
    """A note on what a step did to a server: crash, restart, or its counters."""
    if after.state == "down" and before.state != "down":
        return "crashed: memory lost, WAL kept"
    if after == before:
        return None
    prefix = "restarted from its WAL: " if after.state == "restarted" and before.state != "restarted" else ""
    return prefix + "; ".join(
        f"p{p} {counter_text(c)}" for p, c in after.counters.items() if c != before.counters.get(p) or prefix
    )


def mermaid_diagram(result: ScenarioResult) -> str:
    """The message flow: each message drawn when it is delivered (so reordering shows) or lost, a note
    for steps that deliver nothing, and a note with a server's counters whenever they change."""
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
            node = next((n for n in servers if f"node={n})" in row.step), None)
            where = node or (result.client if row.step.startswith("Tx") else f"{servers[0]},{servers[-1]}")
            lines.append(f"    Note over {where}: {row.index}. {_mermaid_text(row.step)}")
        if row.note:
            lines.append(f"    Note over {everyone}: {_mermaid_text(row.note)}")
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

    As with reports/index.html, the page asks for `mermaid.min.js` beside itself: with a copy there the
    diagram is drawn, without it the source stays readable."""
    verdict = ("holds", "holds") if result.passed else ("fails", "FAILS")
    rows = [_cells("th", ["#", "step", "messages", "in flight", *result.servers])]
    for row in result.timeline:
        nodes = [_node_cell(row.nodes[n]) for n in result.servers]
        index = "" if row.index is None else str(row.index)
        rows.append(_cells("td", [index, _step_cell(row), _messages_cell(row), str(row.in_flight), *nodes]))
    checks = [_cells("th", ["expectation", "expected", "actual", ""])]
    checks += [
        _cells("td", [c.path, json.dumps(c.expected), json.dumps(c.actual), "holds" if c.holds else "FAILS"])
        for c in result.checks
    ]
    failure = f"<p class='fails'>{html.escape(result.failure)}</p>" if result.failure else ""
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>scenario {html.escape(result.name)}</title>"
        f"<style>{_STYLE}</style></head><body>\n"
        f"<h1>scenario {html.escape(result.name)}: <span class='{verdict[0]}'>{verdict[1]}</span></h1>\n"
        f"<p>{html.escape(result.description)}</p><p>counter: {html.escape(result.counter)}</p>{failure}\n"
        f"<h2>Timeline</h2><table>{''.join(rows)}</table>\n"
        f"<h2>Expectations</h2><table>{''.join(checks)}</table>\n"
        f"<h2>Message flow</h2><pre class='mermaid'>{html.escape(diagram)}</pre>\n"
        "<script src='mermaid.min.js'></script>\n</body></html>\n"
    )


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def write_outputs(result: ScenarioResult, diagram_path: Path) -> tuple[Path, Path]:
    """The Mermaid diagram at `diagram_path` and the timeline page beside it (same name, .html)."""
    diagram_path.parent.mkdir(parents=True, exist_ok=True)
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
