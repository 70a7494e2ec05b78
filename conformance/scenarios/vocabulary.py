"""The scenario format's vocabulary: its limits, the names and values a scenario may use, and the strict
base of its models (conformance/scenarios/format.py has the steps and the file, expectations.py what
must hold)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

MAX_SERVERS = 16
MAX_PARTITIONS = 1024
MAX_STEPS = 100_000
MAX_TIMELINE_CELLS = 1_000_000
MAX_TX_KEYS = 1024
MAX_INITIAL_ENTRIES = 10_000
MAX_JAVA_INT = 2**31 - 1
MAX_JAVA_LONG = 2**63 - 1
MAX_NAME_LENGTH = 64
MAX_FILE_BYTES = 64 * 2**20

# The writer of the cluster's initial data, as the results name it (EntryView.tx): a reserved name.
INITIAL_WRITER = "initial"

# Node and transaction names end up as Mermaid participant ids and in labels: letters, digits, '_'.
Name = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=MAX_NAME_LENGTH),
    Field(description=f"a name: a letter, then letters, digits or '_', at most {MAX_NAME_LENGTH} characters"),
]
Key = Annotated[
    int,
    Field(ge=0, le=MAX_JAVA_INT, description=f"a key 0..{MAX_JAVA_INT} (a Java int, as Ignite hashes it)"),
]
Partition = Annotated[int, Field(ge=0, lt=MAX_PARTITIONS, description=f"a partition 0..{MAX_PARTITIONS - 1}")]
CounterValue = Annotated[
    int, Field(ge=0, le=MAX_JAVA_LONG, description="an update counter 0..2^63-1 (a Java long)")
]

ProtocolName = Literal["2pc", "pme", "hazelcast", "ncache"]
# Hazelcast: a namespace (a map's name, or the non-fragmented namespace "internal").
Namespace = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=MAX_NAME_LENGTH),
    Field(description="hazelcast: a namespace: a map's name, or internal (the non-fragmented namespace)"),
]
# Hazelcast: a replica index 1..6 (MAX_BACKUP_COUNT), and a version (a Java long, -1 "requires sync").
ReplicaIndex = Annotated[int, Field(ge=1, le=6, description="hazelcast: a backup replica index 1..6")]
VersionValue = Annotated[
    int, Field(ge=-1, le=MAX_JAVA_LONG, description='hazelcast: a version, -1 for "requires sync"')
]
NodeState = Literal["alive", "down", "restarted"]
# A copy's state; which ones a protocol has is in conformance/scenarios/protocols.py.
PartitionState = Literal["OWNING", "MOVING", "RENTING", "EVICTED", "LOST", "OFFLINE"]
# The kinds of topology events a pending exchange handles (tidemark.impl.pme.Event).
EventName = Literal["left", "joined", "baseline", "affinity", "activate"]
# The proposed fixes a pme scenario may turn on (tidemark.impl.cluster.Fix).
FixName = Literal["recovery-closes-range", "exchange-raises-hwm", "exchange-closes-uncovered-gaps"]
# A topology version as "major.minor", e.g. "3.1".
VersionText = Annotated[str, StringConstraints(pattern=r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")]
SkippedState = Literal["MOVING", "RENTING", "LOST"]
RebalanceMode = Literal["historical", "full"]
NEAR_STATES = ("idle", "locking", "preparing", "committed", "rolledBack")
SERVER_STATES = ("locked", "preparing", "prepared", "rollingBack", "committed", "rolledBack")
TxStateName = Literal[
    "idle", "locking", "preparing", "committed", "rolledBack", "locked", "prepared", "rollingBack"
]
CounterName = Literal["tracking", "no-out-of-order-tracking"]
TRACKING: CounterName = "tracking"
# The named errors a step may be expected to raise (the implementation's exception class names).
ErrorName = Literal["CounterInconsistencyError", "TooManyGapsError"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _something(self) -> _Strict:
        """An expectation that checks nothing is a mistake: every field is optional, one must be given."""
        if all(getattr(self, f) is None for f in type(self).model_fields):
            fields = ", ".join(info.alias or f for f, info in type(self).model_fields.items())
            raise ValueError(f"give at least one of {fields}")
        return self
