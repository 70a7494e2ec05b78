"""The distribution as a user gets it: the wheel built from this checkout, installed into a fresh virtualenv,
runs the main job (`tidemark verify --local --only UpdateCounter --skip-zoo`) from a directory outside the
checkout.

What it proves: the wheel carries everything the main job reads (the packages; the specs, their models, the
zoo's models and the scenarios as package data of `tidemark`; the schemas), its console script starts, the
code that runs is the installed copy, and no file of the checkout is needed (the working directory is
elsewhere and the sources are copied before the build). It also checks that the wheel installs no top-level
package other than the project's own. For time, the main job runs on one standard model (`--only
UpdateCounter`, in full, with the audit) and without the zoo; every other model and the zoo's models are
checked to be in the wheel.
What it does not prove: that the dependency pins resolve from PyPI. The fresh virtualenv gets the
third-party packages of the environment running this test through a .pth file instead of downloading
them again (pyspark alone is hundreds of megabytes); scripts/bootstrap.sh's install is where they resolve.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tidemark.conformance
import tidemark.impl
from tidemark.conformance.resources import SHIPPED, resource

ROOT = Path(__file__).resolve().parent.parent
# What a build does not need: version control, environments, caches, outputs, the Maven modules' builds.
NOT_SHIPPED = shutil.ignore_patterns(
    ".git", ".venv", ".cache", "runs", "reports", "build", "*.egg-info", "target", "__pycache__", ".*_cache",
    ".hypothesis", "spark-warehouse", "states",
)  # fmt: skip


def _run(*command: str | Path, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of this checkout's files (with this environment's setuptools)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_SHIPPED)
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
        "--wheel-dir", work / "dist", source, cwd=work, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (path,) = (work / "dist").glob("tidemark-*.whl")
    return path


def test_wheel_holds_every_package_and_the_shipped_files_under_the_projects_names(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = {name for name in archive.namelist() if ".dist-info/" not in name}
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {
        "tidemark",
        tidemark.conformance.__name__.split(".")[0],
        tidemark.impl.__name__.split(".")[0],
    }
    # Every package of the checkout and every schema, under the name it is imported by.
    for name, init in (
        (tidemark.impl.__name__, tidemark.impl.__file__),
        (tidemark.conformance.__name__, tidemark.conformance.__file__),
    ):
        folder = Path(str(init)).resolve().parent
        prefix = name.replace(".", "/")
        for file in [*folder.rglob("__init__.py"), *folder.glob("schemas/**/*.json")]:
            assert f"{prefix}/{file.relative_to(folder).as_posix()}" in names
    # The files conformance/resources.py finds in the installed package.
    for repository_folder, shipped in SHIPPED.items():
        for file in (ROOT / repository_folder).iterdir():
            assert f"tidemark/{shipped}/{file.name}" in names


@pytest.mark.install
@pytest.mark.tlc
def test_wheel_installs_into_a_fresh_venv_and_verifies_from_elsewhere(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "fresh"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path, timeout=120)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path, timeout=60
    ).stdout.strip()
    # This environment's installed packages, after the fresh venv's own (a .pth line only adds a path:
    # the editable install's import hook in the project's venv is not loaded there).
    shared = [entry for entry in sys.path if entry.endswith("site-packages") and Path(entry).is_dir()]
    Path(purelib, "dependencies.pth").write_text("\n".join(shared) + "\n", encoding="utf-8")
    installed = _run(
        sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
        "--ignore-installed", wheel, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run(
        python,
        "-c",
        "import tidemark.conformance.cli.main as c; print(c.__file__)",
        cwd=elsewhere,
        timeout=60,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout + where.stderr

    verified = _run(
        venv / "bin" / "tidemark", "verify", "--local", "--only", "UpdateCounter", "--skip-zoo",
        "--traces", "5", "--walks", "0", "--json", "--out", "report", cwd=elsewhere, timeout=3600,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stderr[-4000:]
    result = json.loads(verified.stdout)
    assert result["holds"] is True
    assert (elsewhere / "report" / "index.html").is_file()
    assert (
        elsewhere / "runs" / "UpdateCounter-UpdateCounter"
    ).is_dir()  # the work goes where the user runs it
    assert [spec["spec"] for spec in result["specs"]] == ["UpdateCounter"]


def test_resources_are_named_as_in_the_repository_and_found_from_any_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    assert resource("spec/PME.tla") == Path("spec/PME.tla")
    assert resource("tests/models") == Path("tests/models")
    monkeypatch.chdir(tmp_path)
    found = resource("spec/PME.tla")
    assert found.is_absolute()
    assert found.read_bytes() == (ROOT / "spec" / "PME.tla").read_bytes()
    with pytest.raises(ValueError, match="not under a shipped folder"):
        resource("docs/design.md")
