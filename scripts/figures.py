"""Rewrite docs/figures.json from real TLC runs: the figures of every model the docs quote.

The docs mark each figure they take from a run with a comment naming it, right after the number:

    every edge of that graph (68,644<!-- figure spec/TxCounters.cfg edges -->) replayed ...

tests/test_docs_figures.py checks every marked number against docs/figures.json (the test suite runs in
CI); after changing a spec or a model, run this script and fix the numbers the test then points to:

    .venv/bin/python scripts/figures.py            # all models, a few minutes
    .venv/bin/python scripts/figures.py spec/PME.cfg

Figures per model: TLC's distinct states, states generated and depth (`tidemark check`), its initial
states, and the state graph's edges: every generated state but the initial ones is reached by one edge,
so edges = generated - initial (the count `tidemark conform` replays; tests/test_conform.py checks the
relation on a dumped graph).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tidemark.conformance.tlc.output import parse_output, tlc_failure  # noqa: E402
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc  # noqa: E402

FIGURES = ROOT / "docs" / "figures.json"

# Every model a doc quotes figures of, with its spec.
MODELS = {
    "spec/UpdateCounter.cfg": "spec/UpdateCounter.tla",
    "spec/UpdateCounter-limit.cfg": "spec/UpdateCounter.tla",
    "spec/UpdateCounter-large.cfg": "spec/UpdateCounter.tla",
    "tests/models/UpdateCounter-small.cfg": "spec/UpdateCounter.tla",
    "spec/TxCounters.cfg": "spec/TxCounters.tla",
    "spec/PME.cfg": "spec/PME.tla",
    "spec/PME-liveness.cfg": "spec/PME.tla",
    "tests/models/PME-history.cfg": "spec/PME.tla",
    "tests/models/PME-lost.cfg": "spec/PME.tla",
    "tests/models/PME-small.cfg": "spec/PME.tla",
    "tests/models/PMEFixed-outage-mutation.cfg": "spec/PMEFixed.tla",
    "spec/HazelcastAntiEntropy.cfg": "spec/HazelcastAntiEntropy.tla",
    "spec/HazelcastAntiEntropy-promotion.cfg": "spec/HazelcastAntiEntropy.tla",
    "spec/HazelcastAntiEntropy-liveness.cfg": "spec/HazelcastAntiEntropy.tla",
    "tests/models/HazelcastAntiEntropy-small.cfg": "spec/HazelcastAntiEntropy.tla",
    "tests/models/HazelcastAntiEntropy-zoo.cfg": "spec/HazelcastAntiEntropy.tla",
    "tests/models/HazelcastAntiEntropy-promotion-zoo.cfg": "spec/HazelcastAntiEntropy.tla",
}
_INITIAL = re.compile(r"Finished computing initial states: ([\d,]+) distinct states? generated")


def figures(config: str) -> dict[str, int]:
    """One model's figures from a real TLC run."""
    spec = ROOT / MODELS[config]
    run = run_tlc(spec, ROOT / config, TlcOptions(heap="2g", timeout=1800))
    result = parse_output(run, source=f"TLC on {config}")
    error = tlc_failure(result, spec, ROOT / config)
    if error is not None or result.outcome != "ok":
        raise SystemExit(f"{config}: {error.describe() if error else result.outcome}")
    initial = _INITIAL.search(run.output)
    assert initial and result.distinct_states and result.generated_states and result.depth
    count = int(initial.group(1).replace(",", ""))
    return {
        "distinct_states": result.distinct_states,
        "generated_states": result.generated_states,
        "initial_states": count,
        "edges": result.generated_states - count,
        "depth": result.depth,
    }


def main(configs: list[str]) -> None:
    unknown = sorted(set(configs) - set(MODELS))
    if unknown:
        raise SystemExit(f"not a model the docs quote: {unknown} (MODELS in {Path(__file__).name})")
    known = json.loads(FIGURES.read_text(encoding="utf-8")) if FIGURES.is_file() else {}
    for config in configs or list(MODELS):
        known[config] = figures(config)
        print(config, known[config], flush=True)
    ordered = {config: known[config] for config in MODELS if config in known}
    FIGURES.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
