"""The scenario file format: pydantic models, their bounds, and the JSON Schema generated from them.

`python -m tidemark.conformance.scenarios` rewrites conformance/schemas/scenario.schema.json; a test keeps
it in sync. The package docstring (conformance/scenarios/__init__.py) explains what a scenario says.

Bounds. Every size and count a scenario can state has a range, checked when the file is read (a clear
error, exit 2), chosen so that any valid scenario runs in seconds to minutes and in bounded memory:

- servers 1..16: each one is a timeline column and a diagram participant, and the implementation copies
  every server's state at every step; Ignite's own counter tests use 2-4 nodes.
- partitions 1..1024: Ignite's default partition count (its maximum is 65000); every timeline row keeps
  every copy's counter, so the cost of a step grows with servers x partitions.
- steps 1..100,000, and at most 1,000,000 timeline cells ((steps + 1) x servers x partitions): the
  timeline holds one row per step with every server's copies, and the page shows them all.
- keys 0..2^31-1 (a Java int: a key's partition is Ignite's hash of an Integer); at most 1024 keys per
  transaction and 10,000 entries of initial data (every owner logs and copies them).
- counters in expectations 0..2^63-1 (a Java long, as Ignite's update counters); the rebalancing knobs
  are Java ints like Ignite's settings.
- names at most 64 characters (node and transaction names become diagram ids), a note 500, the
  description 4000; the file itself at most 64 MiB.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from tidemark.conformance.scenarios.expectations import (
    ExchangeExpectation,
    Expectations,
    IdleVerifyExpectation,
    TopologyExpectation,
)
from tidemark.conformance.scenarios.vocabulary import (
    MAX_INITIAL_ENTRIES,
    MAX_JAVA_INT,
    MAX_NAME_LENGTH,
    MAX_PARTITIONS,
    MAX_SERVERS,
    MAX_STEPS,
    MAX_TX_KEYS,
    TRACKING,
    CounterName,
    ErrorName,
    FixName,
    Key,
    Name,
    Namespace,
    Partition,
    ProtocolName,
    ReplicaIndex,
)

SCHEMA_PATH = Path(__file__).parents[1] / "schemas" / "scenario.schema.json"


# ---------------------------------------------------------------------------------------------------------
# Steps: each protocol's steps by their spec names (conformance/scenarios/protocols.py says which).


class _StepBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note: Annotated[str, StringConstraints(max_length=500)] | None = Field(
        default=None, description="shown in the timeline and the diagram; at most 500 characters"
    )
    refused: bool = Field(
        default=False,
        description="the step must NOT be possible here (checked; the run goes on without taking it)",
    )
    error: ErrorName | None = Field(
        default=None,
        description="the step must fail with this named error (checked; the run goes on from the state "
        "before the step)",
    )
    expect: Expectations = Field(default_factory=dict, description="checked right after this step")
    topology: TopologyExpectation | None = Field(default=None, description="checked right after this step")
    idle_verify: IdleVerifyExpectation | None = Field(
        default=None, description="pme: checked right after this step against tidemark.impl.pme.idle_verify"
    )
    exchange: ExchangeExpectation | None = Field(
        default=None, description="pme, on a FullMessage step: what the exchange it completes reported"
    )

    @model_validator(mode="after")
    def _one_outcome(self) -> _StepBase:
        if self.refused and self.error is not None:
            raise ValueError("a step is either refused or fails with an error, not both")
        return self


class TxStartStep(_StepBase):
    """The near node maps the transaction to its primary and sends the lock request; declares its writes."""

    step: Literal["TxStart"]
    tx: Name
    keys: dict[Key, str] = Field(
        min_length=1,
        max_length=MAX_TX_KEYS,
        description=f"key -> value the transaction writes (1..{MAX_TX_KEYS})",
    )


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


class OperatorStep(_StepBase):
    """Protocol pme: the operator sets the baseline to the live servers (BaselineChange), or activates the
    cluster after a total outage, once every baseline server is back (Activate)."""

    step: Literal["BaselineChange", "Activate"]


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


class HazelcastStep(_StepBase):
    """Protocol hazelcast (impl/hazelcast.py): a put, a message delivered (or lost) on a member, the owner's
    anti-entropy task, a timeout, a crash, a migration or a destroy. Which parameters each step takes is
    in protocols.HAZELCAST_STEPS (Join is the pme step of that name)."""

    step: Literal[
        "Put",
        "Backup",
        "BackupFailure",
        "Drop",
        "AntiEntropy",
        "BackupAntiEntropy",
        "SyncRequest",
        "SyncSend",
        "SyncResponse",
        "SyncRetry",
        "SyncTimeout",
        "Crash",
        "Migrate",
        "Destroy",
    ]
    node: Name | None = Field(default=None, description="the member taking the step (a message's receiver)")
    peer: Name | None = Field(
        default=None, description="SyncRequest: the requester answered; SyncSend: the member sent to"
    )
    ns: Namespace | None = None
    key: Key | None = Field(default=None, description="Put: the key written (its value is the put's number)")
    put: int | None = Field(
        default=None, ge=1, description="Backup, BackupFailure, Drop: whose put's backup (puts count from 1)"
    )
    replica: ReplicaIndex | None = Field(default=None, description="SyncTimeout, Migrate: the replica index")
    granted: list[Namespace] | None = Field(
        default=None,
        description="BackupAntiEntropy, SyncRequest: the namespaces that get a permit (default: the first "
        "ones by name)",
    )


class NCacheStep(_StepBase):
    """Protocol ncache (impl/ncache.py): a client write (or one whose synchronous replication fails), an
    owner's queued replication, a member leaving, one bucket's state transfer started or ended, an orphaned
    bucket pulled, a member stopped for maintenance and the three exits, a split-brain (a write on its
    loser, the merge). Which parameters each step takes is in protocols.NCACHE_STEPS (Join is the pme step
    of that name: the next server in the servers' order joins)."""

    step: Literal[
        "Write",
        "ReplicationFailure",
        "Replicate",
        "Leave",
        "StartTransfer",
        "EndTransfer",
        "PullOrphan",
        "StopForMaintenance",
        "MaintenanceRejoin",
        "MaintenanceTimeout",
        "MaintenanceFailure",
        "Split",
        "LoserWrite",
        "Merge",
    ]
    node: Name | None = Field(
        default=None,
        description="Replicate, Leave, StopForMaintenance, MaintenanceRejoin, MaintenanceTimeout: the "
        "member; MaintenanceFailure: the second member failing",
    )
    nodes: list[Name] | None = Field(
        default=None, min_length=1, description="Split: the members cut off (the loser side)"
    )
    key: Key | None = Field(
        default=None,
        description="Write, LoserWrite: the key (its own hash); its value is the write's number",
    )
    bucket: Partition | None = Field(
        default=None, description="StartTransfer, EndTransfer, PullOrphan: the bucket"
    )
    graceful: bool | None = Field(
        default=None, description="Leave: graceful (the async queue flushed) or abrupt"
    )


ScenarioStep = Annotated[
    TxStartStep
    | TxStep
    | TxNodeStep
    | NodeStep
    | ExchangeStep
    | PmeNodeStep
    | OperatorStep
    | PartitionStep
    | SupplyStep
    | HazelcastStep
    | NCacheStep,
    Field(discriminator="step"),
]
STEP_MODELS: tuple[type[_StepBase], ...] = (
    TxStartStep,
    TxStep,
    TxNodeStep,
    NodeStep,
    ExchangeStep,
    PmeNodeStep,
    OperatorStep,
    PartitionStep,
    SupplyStep,
    HazelcastStep,
    NCacheStep,
)
# Every step name -> its model.
STEP_TAGS: dict[str, type[_StepBase]] = {
    tag: model for model in STEP_MODELS for tag in get_args(model.model_fields["step"].annotation)
}
# Each step model's parameters, in the order a step's text shows them.
STEP_PARAMS: dict[type[_StepBase], tuple[str, ...]] = {
    model: tuple(
        p
        for p in (
            "tx",
            "node",
            "part",
            "peer",
            "ns",
            "key",
            "put",
            "replica",
            "granted",
            "bucket",
            "graceful",
        )
        if p in model.model_fields
    )
    for model in STEP_MODELS
}


def step_params(step: ScenarioStep) -> dict[str, str | int]:
    """The step's parameters given, e.g. {"tx": "t1", "node": "s1"}."""
    given = {p: getattr(step, p) for p in STEP_PARAMS[type(step)]}
    return {p: ",".join(v) if isinstance(v, list) else v for p, v in given.items() if v is not None}


def step_text(step: ScenarioStep) -> str:
    """The step as the timeline shows it, e.g. "Lock(tx=t1, node=s1)" (tidemark.impl.cluster.Step's text)."""
    params = ", ".join(f"{k}={v}" for k, v in step_params(step).items())
    return f"{step.step}({params})"


# ---------------------------------------------------------------------------------------------------------
# The file.


class ClusterSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: list[Name] = Field(
        min_length=1,
        max_length=MAX_SERVERS,
        description=f"server names (1..{MAX_SERVERS}), e.g. [s1, s2, s3]",
    )
    clients: list[Name] = Field(
        min_length=1, max_length=1, description="the client running the transactions (the model has one)"
    )
    partitions: int = Field(
        default=1,
        ge=1,
        le=MAX_PARTITIONS,
        description=f"1..{MAX_PARTITIONS} partitions (Ignite's default count; every timeline row keeps "
        "every copy's counter)",
    )
    backups: int = Field(
        default=0, ge=0, lt=MAX_SERVERS, description="backups per partition, below the servers"
    )
    owners: dict[Partition, list[Name]] | None = Field(
        default=None,
        description="partition -> its owners, primary first (default: the first backups+1 servers)",
    )
    initial_data: dict[Key, str] = Field(
        default_factory=dict,
        max_length=MAX_INITIAL_ENTRIES,
        description=f"key -> value (at most {MAX_INITIAL_ENTRIES}), committed on every owner before the "
        "first step",
    )
    wal_rebalance_threshold: int | None = Field(
        default=None,
        ge=0,
        le=MAX_JAVA_INT,
        description="pme: historical (WAL) rebalancing only for partitions with more entries than this "
        f"(0..{MAX_JAVA_INT}, default 0)",
    )
    batch_size: int | None = Field(
        default=None,
        ge=1,
        le=MAX_JAVA_INT,
        description=f"pme: entries per supply message (1..{MAX_JAVA_INT}, default 1)",
    )
    maps: list[Namespace] | None = Field(
        default=None, max_length=MAX_SERVERS, description='hazelcast: the maps (default ["map1"])'
    )
    max_parallel: int | None = Field(
        default=None,
        ge=0,
        le=MAX_JAVA_INT,
        description="hazelcast: replica sync permits per member (max parallel replications; 0 disables "
        "sync; default 10)",
    )
    sync: bool | None = Field(
        default=None, description="ncache: synchronous replication (default true; false: asynchronous)"
    )
    slots: int | None = Field(
        default=None,
        ge=1,
        le=6,
        description="hazelcast: versions per vector, the largest backup index (1..6, default: servers - 1, "
        "at most 6)",
    )


RealSystemName = Literal["ignite", "hazelcast"]
MAX_NOTE = 1000
MAX_NOTES = 200


class RealSystemNotes(BaseModel):
    """How the scenario fares on a real system (`tidemark scenario FILE --system NAME`): that it cannot run
    there and why, or which of its expectations do not hold there and why (docs/real-ignite.md,
    docs/real-hazelcast.md)."""

    model_config = ConfigDict(extra="forbid")

    cannot_run: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NOTE)] | None = Field(
        default=None,
        description="why the scenario cannot run on this system at all (e.g. a counter only tidemark has); "
        f"it is then not run there; at most {MAX_NOTE} characters",
    )
    differences: dict[
        Annotated[str, StringConstraints(min_length=1, max_length=200)],
        Annotated[str, StringConstraints(min_length=1, max_length=MAX_NOTE)],
    ] = Field(
        default_factory=dict,
        max_length=MAX_NOTES,
        description="expectation path (e.g. steps[15].expect.s3.counters[0].lwm; * and ? match any text) -> "
        "why it does not hold on this system: a step the system takes at another moment than the model, "
        f"or a simplification of the articles; at most {MAX_NOTES}",
    )


class ScenarioFile(BaseModel):
    """A scenario: a cluster, the steps it takes, and what must hold."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, title="tidemark scenario")

    schema_: str | None = Field(default=None, alias="$schema", description="for editors; ignored")
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)] = Field(
        description="the scenario's name (names its outputs): letters, digits, '_', '.', '-'; at most 100"
    )
    description: Annotated[str, StringConstraints(max_length=4000)] = Field(
        default="", description="what the scenario shows; at most 4000 characters"
    )
    protocol: ProtocolName = Field(
        default="2pc",
        description="2pc: impl/cluster.py (2PC with an atomic Exchange); pme: impl/pme.py (the whole "
        "protocol: exchange messages, joins, rebalancing); hazelcast: impl/hazelcast.py (replica versions, "
        "backups, anti-entropy, replica sync); ncache: impl/ncache.py (buckets - as many as partitions -, "
        "the distribution map, state transfer, replicas)",
    )
    counter: CounterName = Field(default=TRACKING, description="the counter implementation every copy runs")
    fixes: list[FixName] = Field(
        default_factory=list,
        description="pme: proposed fixes the cluster runs with (impl.cluster.Fix; none: Ignite's protocol)",
    )
    mutant: Annotated[str, StringConstraints(max_length=MAX_NAME_LENGTH)] | None = Field(
        default=None,
        description="pme: run a bug-zoo mutant of impl/pme.py (conformance/zoo/mutants.py PME_MUTANTS) "
        "instead "
        "of the correct implementation",
    )
    cluster: ClusterSection
    steps: list[ScenarioStep] = Field(
        min_length=1, max_length=MAX_STEPS, description=f"the steps in order (1..{MAX_STEPS})"
    )
    expect: Expectations = Field(default_factory=dict, description="checked after the last step")
    topology: TopologyExpectation | None = Field(default=None, description="checked after the last step")
    idle_verify: IdleVerifyExpectation | None = Field(
        default=None, description="pme: checked after the last step against tidemark.impl.pme.idle_verify"
    )
    systems: dict[RealSystemName, RealSystemNotes] = Field(
        default_factory=dict,
        description="per real system (--system NAME): why the scenario cannot run there, or the expectations "
        "that do not hold there and why",
    )


def schema_text() -> str:
    schema = ScenarioFile.model_json_schema(by_alias=True)
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
