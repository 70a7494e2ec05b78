"""Shared test configuration: a pinned Hypothesis profile so CI runs are reproducible."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from conformance.spark import spark_session

# CI and local runs use the same derandomized profile: failures reproduce byte for byte.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=200,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("TIDEMARK_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One real local Spark session for the whole run (starting one costs ~10 s)."""
    with spark_session("local[2]", app_name="tidemark-tests") as session:
        yield session
