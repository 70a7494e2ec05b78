"""The client of the real-Hazelcast harness (systems/hazelcast/): build it, start it, drive it, observe it.

`HazelcastHarness` starts the harness JVM (Hazelcast 5.x members in one process, on loopback ports of their
own), sends it one JSON command per line and parses each answer; `observe()` returns pydantic models of what
every member shows: per partition its replica index, per namespace the replica version vector (six slots, -1
"requires sync") and dirty flag, the entries; per member its free sync permits and requests in flight. The
replica-versioning messages (backups, anti-entropy operations, sync requests, responses and retries) can be
held, dropped or delayed between chosen members (`rule`), held ones released in a chosen order, made to fail
on their receiver, or discarded. docs/real-hazelcast.md has the commands and the internal API each reads.

Java or Maven missing, a failed build, a member that does not start or a dead JVM are HazelcastError (exit
code 3); a command the harness refuses as bad input is HazelcastInputError (exit code 2). The JVM and its work
directory do not outlive this process (conformance/systems/process.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.systems.process import (
    ROOT,
    HarnessClient,
    build_module,
    free_ports,
    java_command,
    options_file,
)

MODULE: Final = ROOT / "systems" / "hazelcast"
DEFAULT_VERSION: Final = "5.7.0"
PORTS_PER_HARNESS: Final = 21  # members at base+1 .. base+20
SLOTS: Final = 6  # Hazelcast's vector: one version per backup replica index 1..6
Kind = Literal["backup", "anti_entropy", "sync_request", "sync_response", "sync_retry"]


class HazelcastError(ToolError):
    """Java, Maven, the harness or the Hazelcast members failed (an environment error)."""


class HazelcastInputError(TidemarkError):
    """The harness refused a command as bad input (an unknown member, a missing field)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class FragmentView(_Model):
    """One namespace's replica versions on one member (PartitionReplicaManager)."""

    versions: tuple[int, ...]
    dirty: bool


class CopyView(_Model):
    """A member's copy of one partition: its replica index (-1: none), fragments, entries."""

    replica: int
    namespaces: dict[str, FragmentView] = Field(default_factory=dict)
    entries: dict[str, dict[int, int]] = Field(default_factory=dict)


class SyncView(_Model):
    partition: int
    ns: str
    replica: int
    to: str | None


class MemberView(_Model):
    permits: int  # free replica sync permits
    syncs: tuple[SyncView, ...] = ()  # sync requests in flight
    partitions: dict[int, CopyView] = Field(default_factory=dict)


class MessageView(_Model):
    """A controlled message (held, or in the log): what it is about, by its fields."""

    id: int | None = None
    kind: Kind
    sender: str = Field(alias="from")
    to: str
    partition: int | None = None
    replica: int | None = None
    ns: str | None = None
    key: int | None = None
    value: int | None = None
    versions: tuple[int, ...] | dict[str, int] | None = None
    namespaces: tuple[str, ...] = ()
    seq: int | None = None
    event: str | None = None
    undecoded: str | None = None


class Observation(_Model):
    state: str
    table: dict[int, tuple[str | None, ...]]
    alive: tuple[str, ...]
    down: tuple[str, ...] = ()
    members: dict[str, MemberView] = Field(default_factory=dict)
    held: tuple[MessageView, ...] = ()

    def copy_of(self, member: str, partition: int = 0) -> CopyView | None:
        view = self.members.get(member)
        return view.partitions.get(partition) if view else None


class Convergence(_Model):
    """Hazelcast's AntiEntropyCorrectnessTest's check, counted over every partition, replica and namespace."""

    converged: bool
    data_converged: bool
    checked: int
    behind: int
    dirty: int
    data: int
    permits_out: int
    in_flight: int


def build_harness(version: str = DEFAULT_VERSION, *, maven_repo: Path | None = None) -> Path:
    """Build the harness for this Hazelcast version unless its jar is newer than the pom and the sources."""
    return build_module(MODULE, "hazelcast.version", version, HazelcastError, maven_repo=maven_repo)


class HazelcastHarness(HarnessClient):
    """One harness JVM: real Hazelcast members driven command by command (use as a context manager)."""

    error = HazelcastError
    refused = HazelcastInputError
    prefix = "hazelcast-"

    def __init__(
        self, version: str = DEFAULT_VERSION, *, timeout: float = 300.0, keep_dir: bool = False
    ) -> None:
        super().__init__(version, timeout=timeout, keep_dir=keep_dir)

    def build(self) -> Path:
        return build_harness(self.version)

    def command(self, target: Path, work_dir: Path) -> list[str]:
        return java_command(target, options_file(MODULE), work_dir, "tidemark.hazelcast.Harness")

    # --- the cluster -------------------------------------------------------------------------------------

    def start(
        self,
        members: Sequence[str] = ("m1", "m2", "m3"),
        *,
        partitions: int = 1,
        backups: int = 1,
        async_backups: int = 0,
        maps: Sequence[str] = ("map1", "map2"),
        interval_s: int = 3600,
        max_parallel: int = 10,
        no_migration: bool = False,
        seed: int = 0,
        log: bool = False,
        backup_timeout_ms: int = 1000,
    ) -> Observation:
        """Members in this order (the first is the master), partitions assigned once all joined. The anti-
        entropy task every `interval_s` seconds (the default practically never: rounds are asked for);
        `no_migration`: cluster state NO_MIGRATION afterwards (a crash promotes, nothing else moves until
        `migrate`); `log`: every controlled message's fate is logged for `log()`."""
        table = self.call(
            "start",
            members=list(members),
            partitions=partitions,
            backups=backups,
            async_backups=async_backups,
            maps=list(maps),
            interval_s=interval_s,
            max_parallel=max_parallel,
            no_migration=no_migration,
            seed=seed,
            log=log,
            backup_timeout_ms=backup_timeout_ms,
            base_port=free_ports(PORTS_PER_HARNESS, HazelcastError),
        )
        return Observation.model_validate(table)

    def put(self, ns: str, key: int, value: int | None = None) -> dict[str, Any]:
        """One put on the owner of the key's partition (value: the next put number); returns once the owner
        applied it and sent its backups."""
        args: dict[str, Any] = {"ns": ns, "key": key} | ({} if value is None else {"value": value})
        result: dict[str, Any] = self.call("put", **args)
        return result

    def fill(self, per_partition: int, namespaces: Sequence[str] | None = None) -> list[dict[str, Any]]:
        args: dict[str, Any] = {"per_partition": per_partition}
        if namespaces is not None:
            args["namespaces"] = list(namespaces)
        return list(self.call("fill", **args))

    def rule(
        self,
        action: Literal["hold", "drop", "delay"],
        kinds: Sequence[Kind] = (),
        *,
        sender: str | None = None,
        to: str | None = None,
        partition: int = -1,
        fraction: float = 1.0,
        min_delay_ms: int = 0,
        max_delay_ms: int = 0,
    ) -> int:
        """Hold, drop or delay (a fraction of) the messages of these kinds (all when empty) from `sender` to
        `to` in `partition`; the first matching rule applies. Returns the rule's id."""
        result = self.call(
            "rule",
            action=action,
            kinds=list(kinds),
            partition=partition,
            fraction=fraction,
            min_delay_ms=min_delay_ms,
            max_delay_ms=max_delay_ms,
            **{"from": sender, "to": to},
        )
        return int(result["rule"])

    def unrule(self, rule: int | None = None) -> None:
        self.call("unrule", **({} if rule is None else {"rule": rule}))

    def held(self) -> list[MessageView]:
        return [MessageView.model_validate(m) for m in self.call("held")]

    def release(self, ids: Sequence[int], *, fail: bool = False) -> list[MessageView]:
        """Deliver held messages in this order, each settled on its receiver (`fail`: their backups throw)."""
        return [MessageView.model_validate(m) for m in self.call("release", ids=list(ids), fail=fail)]

    def discard(self, ids: Sequence[int]) -> list[MessageView]:
        return [MessageView.model_validate(m) for m in self.call("discard", ids=list(ids))]

    def anti_entropy(self, partitions: Sequence[int] = ()) -> int:
        """The owners run their anti-entropy task now (every partition when none are named), each once no
        sync is being prepared for it (the task does nothing meanwhile); how many rounds had to wait."""
        return int(self.call("anti_entropy", partitions=list(partitions))["deferred"])

    def kill(self, members: Sequence[str]) -> Observation:
        """Terminate members at once (no graceful shutdown); returns once the survivors settled."""
        return Observation.model_validate(self.call("kill", members=list(members)))

    def join(self, member: str) -> Observation:
        return Observation.model_validate(self.call("join", member=member))

    def migrate(self) -> Observation:
        """Let the master repartition until done (then NO_MIGRATION again if the cluster started so)."""
        return Observation.model_validate(self.call("migrate"))

    def destroy(self, ns: str) -> None:
        self.call("destroy", ns=ns)

    def sync_timeout(self, member: str, ns: str, replica: int, partition: int = 0) -> None:
        self.call("sync_timeout", member=member, ns=ns, replica=replica, partition=partition)

    def observe(self, partitions: Sequence[int] = (), *, entries: bool = True) -> Observation:
        return Observation.model_validate(self.call("observe", partitions=list(partitions), entries=entries))

    def convergence(self) -> Convergence:
        return Convergence.model_validate(self.call("convergence"))

    def log(self, since: int = 0) -> tuple[list[MessageView], int]:
        """The controlled messages' fates after sequence number `since`, and the next mark."""
        result = self.call("log", since=since)
        return [MessageView.model_validate(e) for e in result["events"]], int(result["mark"])
