"""Where tidemark's own files are: the specs and their models (spec/), the zoo's small models
(tests/models/) and the scenarios (scenarios/).

Run from a checkout, they are the repository's folders; installed from a wheel, the same files ship as
package data of the `tidemark` package (pyproject.toml's package-data), so every command works from any
directory. A path is named as in the repository ("spec/PME.tla") and given relative to the working
directory when it lies under it, so that what the commands print and record (reports, run directories,
JUnit names) reads the same as before and carries no machine's absolute path.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

# The repository's folders that ship, and their names inside the installed package.
SHIPPED = {"spec": "spec", "scenarios": "scenarios", "tests/models": "models"}
# This file is conformance/resources.py of a checkout (symbolic links resolved) or of an installed wheel.
_CHECKOUT = Path(__file__).resolve().parents[1]


def in_checkout() -> bool:
    """Whether this code runs from a repository checkout (where spec/ sits beside the packages)."""
    return (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "spec").is_dir()


def _located(folder: str) -> Path:
    if in_checkout():
        return _CHECKOUT / folder
    return Path(str(resources.files("tidemark"))) / SHIPPED[folder]


def resource(relative: str) -> Path:
    """The file or folder named by its repository path, e.g. resource("spec/PME.tla")."""
    folder = next(
        (name for name in SHIPPED if relative == name or relative.startswith(f"{name}/")),
        None,
    )
    if folder is None:
        raise ValueError(f"{relative!r} is not under a shipped folder ({', '.join(SHIPPED)})")
    path = _located(folder) / relative[len(folder) :].lstrip("/")
    return _short(path)


def _short(path: Path) -> Path:
    """`path` relative to the working directory when it lies under it, else absolute."""
    try:
        return path.relative_to(Path(os.getcwd()))
    except ValueError:
        return path
