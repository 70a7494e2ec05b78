"""impl/ as a driver: the in-process implementation behind the driver protocol.

    python -m tidemark.conformance.kit.python_driver SPEC [--mutant NAME]

It answers through the spec's mapping (conformance/mappings/), so `tidemark conform SPEC --driver
'python -m tidemark.conformance.kit.python_driver SPEC'` checks exactly what in-process replay checks, through
the protocol: the test that both agree is the protocol's own conformance test. Specs whose mapping
has an `initial` state: UpdateCounter and TxCounters.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

from pydantic import TypeAdapter, ValidationError

from tidemark.conformance.kit.protocol import PROTOCOL, Batch, Enabled, Hello, Init, Load, Request, Step
from tidemark.conformance.mappings import ReplayError, SpecMapping, mapping_for
from tidemark.conformance.tlc.values import canonical_state_json, canonical_text, from_itf, state_from_itf

REQUEST: TypeAdapter[Any] = TypeAdapter(Hello | Batch | Request)


class Session:
    """One driver's state: the mapping built by `init`, the implementation's current value."""

    def __init__(self, spec: str, mutant: str | None) -> None:
        self.spec, self.mutant = spec, mutant
        self.mapping: SpecMapping | None = None
        self.impl: Any = None

    def _state(self) -> str:
        assert self.mapping is not None
        return '{"type":"state","state":' + canonical_state_json(self.mapping.abstract(self.impl)) + "}"

    def answer(self, request: Any) -> str:
        """The answer line's JSON text for one request."""
        if isinstance(request, Hello):
            return json.dumps(
                {
                    "type": "hello",
                    "protocol": PROTOCOL,
                    "spec": self.spec,
                    "implementation": "impl/ (Python)" + (f", mutant {self.mutant}" if self.mutant else ""),
                    "capabilities": ["load", "enabled", "batch"],
                }
            )
        if isinstance(request, Batch):
            return '{"type":"batch","answers":[' + ",".join(map(self.answer, request.requests)) + "]}"
        try:
            if isinstance(request, Init):
                self.mapping = mapping_for(
                    self.spec, {name: from_itf(v) for name, v in request.constants.items()}, self.mutant
                )
                initial = getattr(self.mapping, "initial", None)
                if initial is None:
                    raise ReplayError(f"the Python driver has no initial state for {self.spec}")
                self.impl = initial()
                return self._state()
            if self.mapping is None:
                raise ReplayError("init comes first")
            if isinstance(request, Load):
                self.impl = self.mapping.concretize(state_from_itf(request.state))
                return '{"type":"ok"}'
            if isinstance(request, Step):
                self.impl = self.mapping.apply(self.impl, from_itf(request.action))
                return self._state()
            assert isinstance(request, Enabled)
            actions = sorted(map(canonical_text, self.mapping.enabled(self.impl)))
            return '{"type":"enabled","actions":[' + ",".join(actions) + "]}"
        except Exception as error:  # whatever the implementation raises is its answer, never a crash
            return json.dumps({"type": "error", "message": f"{type(error).__name__}: {error}"})


def serve(session: Session, requests: IO[str], answers: IO[str]) -> None:
    for line in requests:
        try:
            request = REQUEST.validate_json(line)
        except ValidationError as error:
            text = json.dumps({"type": "error", "message": f"not a request: {error.errors()[0]['msg']}"})
        else:
            text = session.answer(request)
        answers.write(text + "\n")
        answers.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tidemark.conformance.kit.python_driver", description=__doc__
    )
    parser.add_argument("spec", help="the spec module's name, e.g. UpdateCounter")
    parser.add_argument("--mutant", help="a deliberately broken implementation (conformance/zoo/mutants.py)")
    args = parser.parse_args(argv)
    serve(Session(args.spec, args.mutant), sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
