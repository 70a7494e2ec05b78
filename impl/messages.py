"""The messages of Ignite's pessimistic two-phase commit, as immutable values (spec/TxCounters.tla).

Names follow Ignite's classes without the ``GridNear``/``GridDht`` prefixes: the near node sends lock,
prepare and finish requests to the primary (GridNearLockRequest, GridNearTxPrepareRequest,
GridNearTxFinishRequest); the primary sends prepare and finish requests to the backups
(GridDhtTxPrepareRequest, GridDhtTxFinishRequest). A message without a ``to`` field goes to the near node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

# The near node (the client running the transactions); it never fails in this model.
NEAR = "near"

# A write of a transaction: (key, the update counter the primary gave it).
Write: TypeAlias = tuple[int, int]


class Version(NamedTuple):
    """A topology version (Ignite's AffinityTopologyVersion): major for node events, minor for others."""

    major: int
    minor: int


@dataclass(frozen=True, slots=True)
class LockRequest:
    """Near node -> primary: lock the transaction's keys; mapped on topology version `ver`."""

    tx: str
    to: str
    ver: Version


@dataclass(frozen=True, slots=True)
class LockResponse:
    """Primary -> near node: locked if `ver` is the transaction's version, else "remap to `ver`"."""

    tx: str
    sender: str
    ver: Version


@dataclass(frozen=True, slots=True)
class PrepareRequest:
    """Near node -> primary: prepare (the application called commit)."""

    tx: str
    to: str


@dataclass(frozen=True, slots=True)
class PrepareResponse:
    """Primary -> near node: prepared on the primary and every live backup."""

    tx: str
    sender: str


@dataclass(frozen=True, slots=True)
class DhtPrepareRequest:
    """Primary -> backup: the keys the backup owns and the counters the primary gave them."""

    tx: str
    sender: str
    to: str
    writes: frozenset[Write]


@dataclass(frozen=True, slots=True)
class DhtPrepareResponse:
    """Backup -> primary: prepared."""

    tx: str
    sender: str
    to: str


@dataclass(frozen=True, slots=True)
class FinishRequest:
    """Near node -> primary: the near node's decision, commit or roll back."""

    tx: str
    to: str
    commit: bool


@dataclass(frozen=True, slots=True)
class DhtFinishRequest:
    """Primary -> backup: commit or roll back."""

    tx: str
    sender: str
    to: str
    commit: bool


@dataclass(frozen=True, slots=True)
class DhtFinishResponse:
    """Backup -> primary: rolled back (the primary rolls back only after its backups)."""

    tx: str
    sender: str
    to: str


Message: TypeAlias = (
    LockRequest
    | LockResponse
    | PrepareRequest
    | PrepareResponse
    | DhtPrepareRequest
    | DhtPrepareResponse
    | FinishRequest
    | DhtFinishRequest
    | DhtFinishResponse
)

MESSAGE_TYPES: tuple[type[Message], ...] = (
    LockRequest,
    LockResponse,
    PrepareRequest,
    PrepareResponse,
    DhtPrepareRequest,
    DhtPrepareResponse,
    FinishRequest,
    DhtFinishRequest,
    DhtFinishResponse,
)


def receiver(message: Message) -> str:
    """The node a message is addressed to: its ``to`` field, or the near node."""
    to: str = getattr(message, "to", NEAR)
    return to
