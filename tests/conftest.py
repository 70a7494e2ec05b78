"""Shared test configuration: a pinned Hypothesis profile so CI runs are reproducible."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
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


def headless_chromium(
    page: Path, profile: Path, *arguments: str, window: tuple[int, int] = (1280, 2000)
) -> str:
    """Run Debian's chromium headless on a local page (flags that keep it off this machine's closed
    network); returns its stdout. Fails, never skips, when chromium is missing."""
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail(
            "chromium is not on PATH: this test renders a page in a real headless browser. "
            "Install Debian's chromium ('apt-get install chromium'; scripts/bootstrap.sh does so as root)."
        )
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--window-size={window[0]},{window[1]}",
        *arguments,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
