"""Implementation walks are the same whether generated in this process or as a Spark job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tidemark.conformance.mappings import mapping_for
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.values import canonical_json, state_to_itf
from tidemark.conformance.validate import initial_states
from tidemark.conformance.walks import random_walks, random_walks_on_spark

SPEC = Path("spec/UpdateCounter.tla")
SMALL = Path("tests/models/UpdateCounter-small.cfg")


@pytest.mark.tlc
@pytest.mark.spark
def test_spark_walks_equal_local_walks(spark: Any) -> None:
    constants = read_config(SMALL).constants
    initial = initial_states(SPEC, SMALL)
    local = random_walks(mapping_for(SPEC.stem, constants), initial, count=40, steps=25, seed=5)
    parallel = random_walks_on_spark(spark, SPEC.stem, constants, None, initial, count=40, steps=25, seed=5)
    assert parallel == local
    texts = {tuple(canonical_json(state_to_itf(state)) for state in walk.states) for walk in local}
    assert len(texts) > 30  # distinct walks, not one walk forty times
    other_seed = random_walks_on_spark(spark, SPEC.stem, constants, None, initial, count=40, steps=25, seed=6)
    assert other_seed != local
