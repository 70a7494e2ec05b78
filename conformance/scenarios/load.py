"""Reading a scenario file: pydantic, then the references pydantic cannot see (names, partitions, the
protocol's steps and expectations). Every failure is a TidemarkError naming the file, the field's path and
what was expected there (exit 2)."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.scenarios.expectations import (
    Expectations,
    IdleVerifyExpectation,
    NodeExpectation,
    TopologyExpectation,
)
from tidemark.conformance.scenarios.format import STEP_TAGS, ScenarioFile, TxStartStep, _StepBase
from tidemark.conformance.scenarios.protocols import FEATURES, PROTOCOLS
from tidemark.conformance.scenarios.vocabulary import (
    INITIAL_WRITER,
    MAX_FILE_BYTES,
    MAX_TIMELINE_CELLS,
    NEAR_STATES,
    SERVER_STATES,
)
from tidemark.conformance.zoo.mutants import PME_MUTANTS
from tidemark.impl.messages import NEAR

_TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found")


def load_scenario(path: Path) -> ScenarioFile:
    """The scenario in `path`, checked, or a TidemarkError naming the file and the field."""
    source = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise TidemarkError(
                f"the file has {size} bytes", source=source, expected=f"at most {MAX_FILE_BYTES} bytes"
            )
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
    ScenarioChecker(scenario, source).check()
    return scenario


def _loc_path(loc: Sequence[int | str], error_type: str) -> str:
    """A pydantic location as a field path: ('steps', 3, 'Lock', 'node') -> steps[3].node.

    The discriminated union puts the step's tag after its index; the path leaves it out. A step whose
    tag is missing or unknown is reported on its `step` field.
    """
    parts = list(loc)
    if len(parts) > 2 and parts[0] == "steps" and parts[2] in STEP_TAGS:
        del parts[2]
    if error_type in _TAG_ERRORS:
        parts.append("step")
    path = ""
    for part in parts:
        if part == "[key]":
            continue  # the error is about the key itself, which the path already ends with
        # List indices and the integer keys of partitions and keys alike read as [3].
        indexed = isinstance(part, int) or part.isdigit()
        path += f"[{part}]" if indexed else (f".{part}" if path else str(part))
    return path


def _expected(loc: Sequence[int | str], error_type: str) -> str:
    if error_type in _TAG_ERRORS:
        return f"one of the steps {', '.join(STEP_TAGS)}"
    described = _description(loc)
    if described and error_type not in ("missing", "extra_forbidden"):
        return described
    if len(loc) > 2 and loc[0] == "steps" and isinstance(loc[2], str) and loc[2] in STEP_TAGS:
        return f"a {loc[2]} step with the fields {', '.join(STEP_TAGS[loc[2]].model_fields)}"
    return "a scenario as in conformance/schemas/scenario.schema.json"


def _description(loc: Sequence[int | str]) -> str | None:
    """The description of the field or value at `loc` (its range, for a bounded one), if it has one."""
    annotation: Any = ScenarioFile
    description = None
    for i, part in enumerate(loc):
        annotation = _bare(annotation)
        origin = typing.get_origin(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = next((f for name, f in annotation.model_fields.items() if part in (name, f.alias)), None)
            if field is None:
                return None
            annotation, description = (
                field.annotation,
                field.description or _own_description(field.annotation),
            )
        elif origin in (list, tuple, dict):
            # Into a container: the element's (or, for an error about a dict's key, the key's) type.
            args = typing.get_args(annotation)
            key = origin is dict and loc[i + 1 : i + 2] == ("[key]",)
            annotation = args[int(part)] if origin is tuple else args[0 if key else -1]
            description = _own_description(annotation)
        elif part in STEP_TAGS:
            annotation, description = STEP_TAGS[str(part)], None
        elif part != "[key]":
            return None
    return description


def _bare(annotation: Any) -> Any:
    """The type without Annotated metadata and without None of an optional value."""
    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and typing.get_origin(annotation) in (typing.Union, types.UnionType):
            annotation = args[0]
            continue
        return annotation


def _own_description(annotation: Any) -> str | None:
    """The description an Annotated type carries (e.g. format.Key's range), also as an optional value."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return next(filter(None, map(_own_description, typing.get_args(annotation))), None)
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    return next(
        (
            m.description
            for m in typing.get_args(annotation)[1:]
            if isinstance(m, FieldInfo) and m.description
        ),
        None,
    )


class ScenarioChecker:
    """The semantic checks of a parsed scenario; each failure names the file and the field's path."""

    def __init__(self, scenario: ScenarioFile, source: str) -> None:
        self.scenario = scenario
        self.source = source
        self.protocol = PROTOCOLS[scenario.protocol]
        self.servers = scenario.cluster.servers
        self.client = scenario.cluster.clients[0]
        self.txs: dict[str, int] = {}  # transaction -> index of its (first) TxStart step

    def fail(self, location: str, message: str, expected: str) -> TidemarkError:
        return TidemarkError(message, source=self.source, location=location, expected=expected)

    def partitions(self) -> str:
        return f"a partition 0..{self.scenario.cluster.partitions - 1}"

    def check(self) -> None:
        self._protocol()
        self._cluster()
        self._transactions()
        self.protocol.check_cluster(self)
        for index, step in enumerate(self.scenario.steps):
            self._references(index, step)
            if step.exchange is not None:
                self._feature(f"steps[{index}].exchange", "exchange")
                if step.step != "FullMessage":
                    raise self.fail(
                        f"steps[{index}].exchange",
                        f"{step.step} completes no exchange",
                        "an exchange expectation on a FullMessage step",
                    )
            self._expectations(f"steps[{index}]", step.expect, step.topology, step.idle_verify)
        scenario = self.scenario
        self._expectations("", scenario.expect, scenario.topology, scenario.idle_verify)

    def _protocol(self) -> None:
        """Each protocol takes its own steps, counters, options and expectations."""
        protocol = self.protocol
        for index, step in enumerate(self.scenario.steps):
            if step.step not in protocol.steps:
                other = next(p for p, rules in PROTOCOLS.items() if step.step in rules.steps)
                raise self.fail(
                    f"steps[{index}].step",
                    f"{step.step} is a step of protocol {other!r}, and this scenario's protocol is "
                    f"{protocol.name!r}",
                    f'one of {", ".join(protocol.steps)} (or "protocol": {other!r})',
                )
        if self.scenario.counter not in protocol.counters:
            raise self.fail(
                "counter",
                f"counter {self.scenario.counter!r} does not run on protocol {protocol.name!r}",
                f"one of {protocol.counters}",
            )
        for knob in ("wal_rebalance_threshold", "batch_size", "sync"):
            if getattr(self.scenario.cluster, knob) is not None:
                self._feature(f"cluster.{knob}", knob)
        if self.scenario.fixes:
            self._feature("fixes", "fixes")
        mutant = self.scenario.mutant
        if mutant is not None:
            self._feature("mutant", "mutant")
            if mutant not in PME_MUTANTS:
                raise self.fail("mutant", f"no mutant {mutant!r}", f"one of {sorted(PME_MUTANTS)}")

    def _feature(self, where: str, feature: str) -> None:
        if feature not in self.protocol.features:
            having = [name for name, rules in PROTOCOLS.items() if feature in rules.features]
            raise self.fail(
                where,
                f"protocol {self.protocol.name!r} {FEATURES[feature]}",
                " or ".join(f'"protocol": {name!r}' for name in having),
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
        cells = (len(self.scenario.steps) + 1) * len(self.servers) * cluster.partitions
        if cells > MAX_TIMELINE_CELLS:
            raise self.fail(
                "steps",
                f"{len(self.scenario.steps)} steps on {len(self.servers)} servers with {cluster.partitions} "
                f"partitions make a timeline of {cells} cells",
                f"at most {MAX_TIMELINE_CELLS} cells ((steps + 1) x servers x partitions): fewer steps, "
                "servers or partitions",
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

    def _transactions(self) -> None:
        """One TxStart per transaction taken (refused ones may come before it), all writing the same."""
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
            raise self.fail(f"steps[{index}].part", f"no partition {part}", self.partitions())

    def _expectations(
        self,
        where: str,
        expect: Expectations,
        topology: TopologyExpectation | None,
        idle_verify: IdleVerifyExpectation | None,
    ) -> None:
        """The expectations after a step (`where` = "steps[3]") or at the end (`where` = "")."""
        prefix = f"{where}." if where else ""
        for node, expectation in expect.items():
            self._node(f"{prefix}expect.{node}", node, expectation)
        if topology is not None:
            self._topology(f"{prefix}topology", topology)
        if idle_verify is not None:
            self._feature(f"{prefix}idle_verify", "idle_verify")
            nodes = {n for parts in (idle_verify.skipped or {}).values() for n in parts}
            for node in sorted(nodes - set(self.servers)):
                raise self.fail(
                    f"{prefix}idle_verify.skipped", f"unknown server {node!r}", f"one of {self.servers}"
                )

    def _node(self, at: str, node: str, expectation: NodeExpectation) -> None:
        given = [f for f in NodeExpectation.model_fields if getattr(expectation, f) is not None]
        if node == self.client:
            other = next((f for f in given if f != "txs"), None)
            if other is not None:
                raise self.fail(f"{at}.{other}", "the client holds only transactions", "txs")
            self._tx_states(f"{at}.txs", expectation.txs, NEAR_STATES)
            return
        if node not in self.servers:
            raise self.fail(
                at, f"unknown node {node!r}", f"a server or the client: {[*self.servers, self.client]}"
            )
        for field in given:
            if field in FEATURES:
                self._feature(f"{at}.{field}", field)
        for part, rebalance in (expectation.rebalanced or {}).items():
            if (
                rebalance is not None
                and rebalance.supplier is not None
                and rebalance.supplier not in self.servers
            ):
                raise self.fail(
                    f"{at}.rebalanced[{part}].supplier",
                    f"unknown server {rebalance.supplier!r}",
                    f"one of {self.servers}",
                )
        self.protocol.check_node(self, at, node, expectation)
        self._tx_states(f"{at}.txs", expectation.txs, SERVER_STATES)

    def _topology(self, where: str, expectation: TopologyExpectation) -> None:
        for field in ("pending", "coordinator"):
            if getattr(expectation, field) is not None:
                self._feature(f"{where}.{field}", field)
        if expectation.coordinator is not None and expectation.coordinator not in self.servers:
            raise self.fail(
                f"{where}.coordinator",
                f"unknown server {expectation.coordinator!r}",
                f"one of {self.servers}",
            )
        for part, owners in (expectation.owners or {}).items():
            at = f"{where}.owners[{part}]"
            if part >= self.scenario.cluster.partitions:
                raise self.fail(at, f"no partition {part}", self.partitions())
            for i, owner in enumerate(owners):
                if owner not in self.servers or owner in owners[:i]:
                    raise self.fail(
                        f"{at}[{i}]", f"{owner!r} is no server or is listed twice", f"one of {self.servers}"
                    )

    def _tx_states(self, at: str, states: Mapping[str, str] | None, allowed: tuple[str, ...]) -> None:
        for tx, state in (states or {}).items():
            if tx not in self.txs:
                raise self.fail(f"{at}.{tx}", f"unknown transaction {tx!r}", f"one of {', '.join(self.txs)}")
            if state not in allowed:
                raise self.fail(
                    f"{at}.{tx}", f"{state!r} is no state of a transaction here", f"one of {allowed}"
                )
