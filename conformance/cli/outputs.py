"""What each command prints with --json, and its JSON Schema (conformance/schemas/output/COMMAND.schema.json).

Every command's object carries `holds` (its check holds), `exit_code` (the code it returns, 0 exactly
when it holds) and `run` (its arguments, its model's constants, the tools' versions, its input files'
digests and its seconds per phase: conformance/runinfo.py's CommandRun), beside its result: a pydantic
model dumped with some fields left out and, for a few commands, some fields added. `OUTPUTS` says which,
per command; the CLI dumps through it and the schemas are generated from it
(`python -m tidemark.conformance.cli.outputs`), so the two cannot drift apart. A test checks every command's
real
output against its published schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

SCHEMA_DIR = Path(__file__).parent.parent / "schemas" / "output"

# Added to every command's object.
VERDICT: dict[str, Any] = {
    "holds": {"type": "boolean", "description": "the command's check holds (exit code 0)"},
    "exit_code": {
        "type": "integer",
        "enum": [0, 1],
        "description": "the code the command returns: 0 holds, 1 does not hold (errors print no JSON)",
    },
}


@dataclass(frozen=True)
class Output:
    """A command's JSON: `model` dumped without `exclude`, with `extra` fields (name -> JSON Schema)."""

    model: str  # "module:Class", imported only when used (the CLI stays quick to start)
    exclude: frozenset[str] = frozenset()
    extra: dict[str, Any] = field(default_factory=dict)

    def model_class(self) -> type[BaseModel]:
        import importlib

        module, name = self.model.split(":")
        cls: type[BaseModel] = getattr(importlib.import_module(module), name)
        return cls

    def schema(self, command: str) -> dict[str, Any]:
        from tidemark.conformance.runinfo import CommandRun

        schema = self.model_class().model_json_schema(mode="serialization")
        # verify's own `run` (a RunInfo) is printed as the CommandRun it becomes.
        left_out = {*self.exclude, "run"}
        properties = {k: v for k, v in schema["properties"].items() if k not in left_out}
        required = [k for k in schema.get("required", []) if k not in left_out]
        run = CommandRun.model_json_schema(mode="serialization")
        common = {"run": {k: v for k, v in run.items() if k != "title"} | {"description": CommandRun.__doc__}}
        schema["properties"] = {**properties, **self.extra, **common, **VERDICT}
        schema["required"] = [*required, *self.extra, *common, *VERDICT]
        schema["title"] = f"tidemark {command} --json"
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


_PATH = {"type": "string"}
OUTPUTS: dict[str, Output] = {
    "check": Output(
        "tidemark.conformance.tlc.output:TlcResult",
        extra={
            "documented": {
                "type": "array",
                "description": "the documented-violation models run (conformance/expectations.py): config, "
                "violated, as_documented, verdict, outcome, violation",
                "items": {"type": "object"},
            }
        },
    ),
    "conform": Output("tidemark.conformance.conform:ConformResult", frozenset({"tlc"})),
    "simulate": Output("tidemark.conformance.simulate:SimulationResult", frozenset({"tlc"})),
    "zoo": Output("tidemark.conformance.zoo.entries:ZooReport"),
    "explain": Output("tidemark.conformance.explain:Explanation"),
    "prove": Output("tidemark.conformance.prove.counter:CounterProofReport"),
    "affinity": Output("tidemark.conformance.cli.outputs:AffinityOutput"),
    "distribution": Output("tidemark.conformance.lab.distribution:DistributionReport", frozenset({"trials"})),
    "hazelcast-lab": Output("tidemark.conformance.lab.hazelcast:LabReport", frozenset({"trials"})),
    "ncache-lab": Output("tidemark.conformance.lab.ncache:LabReport", frozenset({"trials"})),
    "validate": Output("tidemark.conformance.validate:ValidationReport"),
    "validate --mapping": Output("tidemark.conformance.kit.logs:LogReport"),
    "scenario": Output(
        "tidemark.conformance.scenarios.result:ScenarioResult",
        frozenset({"timeline", "description"}),
        {"diagram": _PATH, "page": _PATH},
    ),
    "verify": Output("tidemark.conformance.verify:VerifyReport"),
    "campaign": Output(
        "tidemark.conformance.campaign:CampaignReport",
        extra={"scenario": {"type": ["string", "null"], "description": "the shrunk failing walk, if any"}},
    ),
    # `audit` prints its findings only (the partitions with something to say) and what it wrote.
    "audit": Output(
        "tidemark.conformance.audit.audit:AuditReport",
        extra={
            "conflict": {"type": "boolean"},
            "dump": {"type": ["string", "null"]},
            "report": {"type": ["string", "null"]},
        },
    ),
    "audit --generate": Output("tidemark.conformance.cli.outputs:GeneratedOutput"),
}


class AffinityKey(BaseModel):
    key: str | int
    partition: int
    primary: str
    backups: list[str]


class AffinityOutput(BaseModel):
    """`tidemark affinity --json`: where each key lives."""

    partitions: int
    nodes: list[str]
    keys: list[AffinityKey]


class GeneratedOutput(BaseModel):
    """`tidemark audit --generate DIR --json`: what was written and what the audit must find there."""

    directory: str
    config: dict[str, Any]
    expected: dict[str, Any]


def finish(command: str, data: dict[str, Any], code: int, result: BaseModel | None = None) -> str:
    """The command's JSON text: `data`, its run (timings from `result`) and the verdict."""
    from tidemark.conformance.runinfo import command_run

    run = {"run": command_run(command, result).model_dump(mode="json")}
    verdict = {"holds": code == 0, "exit_code": code}
    return json.dumps({**data, **run, **verdict}, separators=(",", ":"))


def dump(command: str, result: BaseModel, code: int, **extra: Any) -> str:
    """The command's JSON text: its result as OUTPUTS says, `extra` fields, its run and the verdict."""
    output = OUTPUTS[command]
    data = result.model_dump(mode="json", by_alias=True, exclude={*output.exclude, "run"})
    return finish(command, {**data, **extra}, code, result)


def emit(command: str, result: BaseModel, code: int, **extra: Any) -> int:
    """Print the command's one JSON object on stdout and return its exit code."""
    print(dump(command, result, code, **extra))
    return code


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for command, output in OUTPUTS.items():
        path = directory / f"{command.replace(' --', '-')}.schema.json"
        path.write_text(json.dumps(output.schema(command), indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_schemas():
        print(path)
