"""The client of the real-Ignite harness (systems/ignite/): build it, start it, drive it, observe it.

`IgniteHarness` starts the harness JVM (N Ignite servers and a client in one process, on loopback ports of
their own), sends it one JSON command per line and parses each answer; `observe()` returns pydantic
models of what every server shows. Steps carry tidemark's names where they map (`step("TxStart", ...)`,
`step("BackupCommit", tx=..., node=...)`), so a scenario runner can put the real system beside impl/.

The JVM dies with this process (PR_SET_PDEATHSIG, and it stops at end of input; the process's guardian,
conformance/scratch.py, stops it if this process is killed), and its work directory (persistence, WAL,
ignite.log, the JVM's java.io.tmpdir) is in the process's scratch directory, removed on close.
Everything that goes wrong on the Java side (no Java or Maven, a failed build, a node that does not
start, a dead JVM) is an IgniteError, exit code 3; a command the harness refuses as bad input is a
HarnessInputError (exit code 2).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.scratch import scratch_root, watch
from tidemark.conformance.systems.process import (
    HarnessClient,
    build_module,
    free_ports,
    java_command,
    options_file,
)
from tidemark.conformance.systems.process import pdeathsig as _pdeathsig
from tidemark.conformance.systems.process import stop_jvm as _stop

ROOT: Final = Path(__file__).resolve().parents[2]
MODULE: Final = ROOT / "systems" / "ignite"
DEFAULT_VERSION: Final = "2.18.0"
PORTS_PER_HARNESS: Final = 40  # discovery base..base+19, communication base+20..base+39


class IgniteError(ToolError):
    """Java, Maven, the harness or the Ignite cluster failed (an environment error)."""


class HarnessInputError(TidemarkError):
    """The harness refused a command as bad input (an unknown node, a missing field)."""


# --- observations -------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PartitionView(_Model):
    """One copy of a partition on one server (GridDhtLocalPartition and its PartitionUpdateCounter)."""

    state: str  # OWNING, MOVING, RENTING, EVICTED, LOST
    lwm: int = 0  # counter.get()
    hwm: int = 0  # counter.reserved()
    highest: int = 0  # counter.highestAppliedCounter()
    initial: int = 0  # counter.initial(): where a MOVING copy's rebalancing starts
    gaps: tuple[tuple[int, int], ...] = ()  # out-of-order items (start, delta)
    comparable: str = ""  # what idle_verify compares: "[lwm=N, missed=[...], hwm=H]"
    size: int = 0
    entries: dict[int, str | None] = Field(default_factory=dict)


class NodeView(_Model):
    """A running server's view: topology versions (ready, and the latest discovery event's), the events its
    unfinished exchanges handle, coordinator, its copies, the ready assignment, the harness's transactions
    on it (Ignite's TransactionState names) and per partition its WAL history's earliest counter."""

    top_ver: str = Field(alias="topVer")
    disco_ver: str = Field(default="", alias="discoVer")
    exchange_done: bool = Field(alias="exchangeDone")
    pending: tuple[str, ...] = ()
    coordinator: str | None
    order: int  # join order: the oldest server (lowest order) is the coordinator
    active: bool = True  # the cluster's state as this node sees it (inactive after a total outage)
    lost: tuple[int, ...] = ()
    rebalance_done: bool = Field(default=True, alias="rebalanceDone")
    partitions: dict[int, PartitionView] = Field(default_factory=dict)
    assignment: dict[int, tuple[str, ...]] = Field(default_factory=dict)
    txs: dict[str, str] = Field(default_factory=dict)
    history: dict[int, int] = Field(default_factory=dict)


class HashRecord(_Model):
    """One copy in idle_verify's report (PartitionHashRecord)."""

    node: str
    primary: bool
    update_counter: str = Field(alias="updateCounter")
    size: int
    hash: int
    ver_hash: int = Field(default=0, alias="verHash")
    state: str


class IdleVerifyView(_Model):
    """idle_verify's verdict (IdleVerifyResult), per partition."""

    has_conflicts: bool = Field(alias="hasConflicts")
    counter_conflicts: dict[int, tuple[HashRecord, ...]] = Field(alias="counterConflicts")
    hash_conflicts: dict[int, tuple[HashRecord, ...]] = Field(alias="hashConflicts")
    moving: dict[int, tuple[HashRecord, ...]]
    lost: dict[int, tuple[HashRecord, ...]]
    exceptions: tuple[str, ...]
    text: str


class TxView(_Model):
    tx: str
    phase: str  # started, locked, prepared, committed, rolledBack, failed
    done: bool
    state: str | None = None  # Ignite's TransactionState
    error: str | None = None


class Observation(_Model):
    """Every running server's view after a step, the starting servers' (as far as they are started: None
    before their caches are), the down servers, the baseline and the client's transactions."""

    nodes: dict[str, NodeView]
    starting: dict[str, NodeView | None] = Field(default_factory=dict)

    @field_validator("starting", mode="before")
    @classmethod
    def _not_yet_observable(cls, value: Any) -> Any:
        """The harness reports no view (only why) for a server not far enough into its start."""
        if not isinstance(value, dict):
            return value
        return {n: None if not v or "unobservable" in v else v for n, v in value.items()}

    down: tuple[str, ...] = ()
    baseline: tuple[str, ...] = ()
    # the client lost the cluster (every server down; it reconnects once one is back): no baseline read
    client_disconnected: bool = Field(default=False, alias="clientDisconnected")
    txs: dict[str, TxView] = Field(default_factory=dict)
    idle_verify: IdleVerifyView | None = None

    def copy_of(self, node: str, part: int = 0) -> PartitionView | None:
        view = self.nodes.get(node)
        return view.partitions.get(part) if view else None


class HeldMessage(_Model):
    id: int
    type: str
    sender: str = Field(alias="from")
    to: str
    tx: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class DemandView(_Model):
    """A demand message with partitions: how a demander was rebalanced (historical ranges or full)."""

    demander: str
    supplier: str
    top_ver: str = Field(alias="topVer")
    historical: tuple[dict[str, int], ...]  # {"part", "from", "to"}
    full: tuple[int, ...]


# --- tidemark's step names -> messages of Ignite 2.x ---------------------------------------------------

# A message-level step of tidemark is the delivery of one Ignite message: hold it with block(), then the
# step releases it. Steps Ignite takes by itself (single/full messages, supply rounds) become waits.
MESSAGE_STEPS: Final[Mapping[str, str]] = {
    "Prepare": "GridNearTxPrepareRequest",  # near -> primary: the primary reserves counters
    "BackupPrepare": "GridDhtTxPrepareRequest",  # primary -> backup
    "Commit": "GridNearTxFinishRequest",  # near -> primary (commit)
    "Rollback": "GridNearTxFinishRequest",  # near -> primary (rollback)
    "BackupCommit": "GridDhtTxFinishRequest",  # primary -> backup (commit)
    "BackupRollback": "GridDhtTxFinishRequest",  # primary -> backup (rollback)
    "SendSingle": "GridDhtPartitionsSingleMessage",
    "FullMessage": "GridDhtPartitionsFullMessage",
    "Demand": "GridDhtPartitionDemandMessage",
    "Supply": "GridDhtPartitionSupplyMessage",
}
_RECEIVER_IS_NODE: Final = frozenset({"BackupPrepare", "BackupCommit", "BackupRollback", "Prepare", "Commit"})


def build_harness(version: str = DEFAULT_VERSION, *, maven_repo: Path | None = None) -> Path:
    """Build the harness for this Ignite version unless its jar is newer than the pom and the sources;
    returns the build directory (harness.jar and lib/). Maven's repository is the project's .cache/m2, so
    after the first build everything is offline."""
    return build_module(MODULE, "ignite.version", version, IgniteError, maven_repo=maven_repo)


def free_base_port(rng: random.Random | None = None) -> int:
    """A base port with PORTS_PER_HARNESS free ports above it on 127.0.0.1, so harnesses run side by side."""
    return free_ports(PORTS_PER_HARNESS, IgniteError, rng)


def jvm_options() -> list[str]:
    return options_file(MODULE)


class IgniteHarness(HarnessClient):
    """One harness JVM: a real Ignite cluster driven command by command (use as a context manager)."""

    error = IgniteError
    refused = HarnessInputError
    prefix = "ignite-"

    def __init__(
        self,
        version: str = DEFAULT_VERSION,
        *,
        timeout: float = 180.0,
        keep_dir: bool = False,
        heap: str | None = None,
    ) -> None:
        super().__init__(version, timeout=timeout, keep_dir=keep_dir)
        self.heap = heap  # the JVM's -Xmx instead of jvm.options' (e.g. "1g")

    def build(self) -> Path:
        return build_harness(self.version)

    def command(self, target: Path, work_dir: Path) -> list[str]:
        options = jvm_options()
        if self.heap is not None:
            options = [o for o in options if not o.startswith("-Xm")] + [f"-Xmx{self.heap}"]
        return java_command(target, options, work_dir, "tidemark.ignite.Harness", "--work-dir", str(work_dir))

    # --- the cluster -----------------------------------------------------------------------------------

    def start(
        self,
        servers: int = 3,
        *,
        partitions: int = 1,
        backups: int | None = None,
        wal_rebalance_threshold: int | None = None,
        loss_policy: str = "READ_WRITE_SAFE",
        checkpoints: bool = True,
        order: list[str] | None = None,
        rebalance_batch_bytes: int = 0,
        base_port: int | None = None,
    ) -> dict[str, Any]:
        """Servers s1..sN (started in `order`, default by number: the first is the oldest and coordinates)
        and client c1, persistence on, cache `tidemark` (TRANSACTIONAL, FULL_SYNC), active, baseline = the
        servers. Checkpoints run only when forced (and before a rebalanced copy owns); a failed server has
        them disabled just before it stops. `checkpoints` False disables them everywhere.
        `rebalance_batch_bytes` > 0: supply messages of about that many bytes, one in flight at a time."""
        args: dict[str, Any] = {
            "order": order or [],
            "rebalance_batch_bytes": rebalance_batch_bytes,
            "servers": servers,
            "partitions": partitions,
            "backups": servers - 1 if backups is None else backups,
            "loss_policy": loss_policy,
            "checkpoints": checkpoints,
            "base_port": free_base_port() if base_port is None else base_port,
        }
        if wal_rebalance_threshold is not None:
            args["wal_rebalance_threshold"] = wal_rebalance_threshold
        result: dict[str, Any] = self.call("start", **args)
        return result

    def reset(self) -> None:
        """Stop every node and forget the cluster (its persistence directories are deleted): the next
        `start` runs a fresh cluster in the same JVM."""
        self.call("reset")

    def observe(self, *, entries: bool = True, idle_verify: bool = False) -> Observation:
        return Observation.model_validate(self.call("observe", entries=entries, idle_verify=idle_verify))

    def idle_verify(self) -> IdleVerifyView:
        return IdleVerifyView.model_validate(self.call("idle_verify"))

    def held(self) -> list[HeldMessage]:
        return [HeldMessage.model_validate(m) for m in self.call("held")]

    def demands(self) -> list[DemandView]:
        return [DemandView.model_validate(m) for m in self.call("demands")]

    def logs(self, pattern: str = ".", since: int = 0, limit: int = 200) -> tuple[list[str], int]:
        """Ignite's log lines after line `since` matching the regular expression; and the new mark."""
        result = self.call("logs", pattern=pattern, since=since, limit=limit)
        return list(result["lines"]), int(result["mark"])

    def block(
        self,
        type: str,
        *,
        sender: str | None = None,
        to: str | None = None,
        tx: str | None = None,
        drop: bool = False,
    ) -> int:
        """Hold (or drop) every message of this class from `sender` to `to` (of transaction `tx`)."""
        result = self.call(
            "block", type=type, to=to, tx=tx, action="drop" if drop else "hold", **{"from": sender}
        )
        return int(result["rule"])

    def release(self, **match: Any) -> list[HeldMessage]:
        """Release held messages: `ids=[...]` in that order, or all matching type/from/to/tx, oldest first."""
        if "sender" in match:
            match["from"] = match.pop("sender")
        return [HeldMessage.model_validate(m) for m in self.call("release", **match)]

    def await_exchange(self, timeout_ms: int = 30_000) -> bool:
        return bool(self.call("await_exchange", timeout_ms=timeout_ms)["done"])

    def await_rebalance(self, timeout_ms: int = 60_000) -> bool:
        return bool(self.call("await_rebalance", timeout_ms=timeout_ms)["done"])

    # --- tidemark's steps -------------------------------------------------------------------------------

    def step(self, name: str, **params: Any) -> Any:
        """One step under tidemark's name. Transaction steps act on the client (TxStart writes `keys`, a
        mapping key -> value); message-level steps release the held message of that step (hold it first with
        `hold_step`); AwaitExchange and AwaitRebalance are the points where Ignite's own steps finish."""
        wait = params.pop("wait_ms", 10_000)
        if name == "TxStart":
            writes = {str(k): v for k, v in params["keys"].items()}
            return self.call("tx_begin", tx=params["tx"], writes=writes, wait_ms=wait)
        simple = {"TxPrepare": "tx_prepare", "TxCommit": "tx_commit", "TxRollback": "tx_rollback"}
        if name in simple:
            return self.call(simple[name], tx=params["tx"], wait_ms=wait)
        if name in MESSAGE_STEPS:
            to = params.get("node") if name in _RECEIVER_IS_NODE else params.get("peer")
            return self.release(type=MESSAGE_STEPS[name], tx=params.get("tx"), to=to)
        if name == "NodeFail":
            return self.call("fail", node=params["node"])
        if name in ("Restart", "Join"):
            return self.call(name.lower(), node=params["node"], wait_ms=wait)
        if name == "BaselineChange":
            return self.call("baseline", **({"nodes": params["nodes"]} if "nodes" in params else {}))
        if name == "Checkpoint":
            return self.call("checkpoint", nodes=[params["node"]])
        if name == "AwaitExchange":
            return self.await_exchange(wait)
        if name == "AwaitRebalance":
            return self.await_rebalance(wait)
        raise HarnessInputError(f"no real-Ignite step {name!r}", expected=f"one of {sorted(STEP_NAMES)}")

    def hold_step(self, name: str, **params: Any) -> int:
        """Hold the messages of a message-level step (e.g. hold_step("BackupCommit", tx="t1", node="s3"))."""
        to = params.get("node") if name in _RECEIVER_IS_NODE else params.get("peer")
        return self.block(MESSAGE_STEPS[name], to=to, tx=params.get("tx"), sender=params.get("sender"))


STEP_NAMES: Final = frozenset(
    {"TxStart", "TxPrepare", "TxCommit", "TxRollback", "NodeFail", "Restart", "Join", "BaselineChange"}
    | {"Checkpoint", "AwaitExchange", "AwaitRebalance"}
    | set(MESSAGE_STEPS)
)


class AffinityOracle:
    """Ignite's own RendezvousAffinityFunction in a JVM (the harness in --affinity mode), for comparisons:
    `ask(request)` sends one case set (see Affinity.java) and returns its assignment and key partitions."""

    def __init__(self, version: str = DEFAULT_VERSION) -> None:
        target = build_harness(version)
        classpath = f"{target / 'harness.jar'}{os.pathsep}{target / 'lib' / '*'}"
        self._tmp = Path(tempfile.mkdtemp(prefix="ignite-affinity-", dir=scratch_root()))
        tmpdir = f"-Djava.io.tmpdir={self._tmp}"
        cmd = ["java", *jvm_options(), tmpdir, "-cp", classpath, "tidemark.ignite.Harness", "--affinity"]
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
                preexec_fn=_pdeathsig,
            )
        except OSError as e:
            raise IgniteError(f"cannot start java: {e}") from e
        watch(self._proc.pid, group=False)

    def __enter__(self) -> AffinityOracle:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except OSError as e:
            raise IgniteError(f"the affinity JVM is gone: {e}") from e
        if not line:
            raise IgniteError("the affinity JVM exited")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise IgniteError(f"Ignite's affinity failed: {answer.get('error')}")
        result: dict[str, Any] = answer["result"]
        return result

    def close(self) -> None:
        _stop(self._proc)
        shutil.rmtree(self._tmp, ignore_errors=True)
