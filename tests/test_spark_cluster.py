"""tidemark's Spark jobs on a real standalone cluster (docs/cluster.md), not only in local mode.

A Master and one Worker are started from pyspark's own launcher (`spark-class`) on 127.0.0.1. Their
executors run a Python environment of their own, in which tidemark is not installed (only the third-party
packages the jobs import, tidemark.conformance.spark.EXECUTOR_REQUIREMENTS): the project's packages must reach
them in the zip the session ships, and what they read must travel as data, not as paths. The environment
records every start of its interpreter, which proves the executors ran it and not the driver's Python.

Each command runs as a user runs it, in its own process, once on the cluster and once in local mode, and
the two give the same figures. The cluster's processes (Master, Worker, executors and their Python
workers) are stopped whatever happens, and none is left.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pyspark
import pytest

from tidemark.conformance.spark import EXECUTOR_REQUIREMENTS

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.tlc]

ROOT = Path(__file__).resolve().parent.parent
SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
RECORD = "TIDEMARK_EXECUTOR_RECORD"  # the file the executors' Python appends its path to, at each start
# A .pth file's `import` lines run at every start of the environment's interpreter.
_RECORDER = (
    f"import os, sys; p = os.environ.get({RECORD!r}); p and open(p, 'a').write(sys.executable + '\\n')\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def executor_python(request: pytest.FixtureRequest) -> Path:
    """A virtual environment without tidemark, as a cluster's machines would have: made once, then kept
    in pytest's cache (keyed by the driver's Python and package versions)."""
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in EXECUTOR_REQUIREMENTS]
    key = f"{sys.version_info.major}.{sys.version_info.minor} {' '.join(pins)}"
    home = Path(request.config.cache.mkdir("executor-python"))
    python = home / "bin" / "python"
    made_for = home / "made-for"
    if not (python.exists() and made_for.exists() and made_for.read_text() == key):
        shutil.rmtree(home, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins], check=True
        )
        [site] = Path(home, "lib").glob("python*/site-packages")
        (site / "tidemark_record.pth").write_text(_RECORDER)
        (home / "made-for").write_text(key)
    probe = subprocess.run(
        [str(python), "-c", "import tidemark"], cwd=home, capture_output=True, text=True, check=False
    )
    assert probe.returncode != 0, "tidemark must not be importable in the executors' environment"
    return python


def _wait_for_line(log: Path, text: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        assert process.poll() is None, f"{log.name} ended early:\n{log.read_text(errors='replace')[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(
        f"no {text!r} in {log} after {timeout} s:\n{log.read_text(errors='replace')[-3000:]}"
    )


def _group_members(groups: set[int]) -> list[int]:
    """The processes still running in the process groups `groups`."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in groups and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each process group (the Worker's holds its executors and their Python workers), then
    SIGKILL to whatever is left after 20 s; reaps the launched processes."""
    groups = {p.pid for p in processes}
    for process in reversed(processes):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while _group_members(groups) and time.monotonic() < deadline:
        time.sleep(0.2)
        for process in processes:
            process.poll()
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    for process in processes:
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A standalone Master and one Worker (1 core, 1 GB) on 127.0.0.1; stopped, with everything they
    started, when the module's tests end or the start fails."""
    work = tmp_path_factory.mktemp("cluster")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "PYTHON"))}
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(work / "logs"), SPARK_WORKER_DIR=str(work / "w"))
    env[RECORD] = str(work / "record")  # the executors' environment is the Worker's
    port = _free_port()
    master = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        roles = [
            ("master", "org.apache.spark.deploy.master.Master", ["--port", str(port)], "elected leader"),
            (
                "worker",
                "org.apache.spark.deploy.worker.Worker",
                [
                    master,
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--port",
                    str(_free_port()),
                    "--work-dir",
                    str(work / "w"),
                ],
                "Successfully registered",
            ),
        ]
        for name, main_class, arguments, ready in roles:
            log = work / f"{name}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [
                        str(SPARK_CLASS),
                        main_class,
                        "--host",
                        "127.0.0.1",
                        "--webui-port",
                        str(_free_port()),
                        *arguments,
                    ],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=work,
                    start_new_session=True,
                )
            processes.append(process)
            _wait_for_line(log, ready, process)
        yield {"master": master, "work": work}
    finally:
        _stop(processes)
        assert not _group_members({p.pid for p in processes}), "a process of the cluster outlived it"


def _cli(*argv: str, env: dict[str, str] | None = None, expect: int = 0) -> dict[str, Any]:
    """A tidemark command run as a user runs it, in its own process; its JSON report."""
    done = subprocess.run(
        [sys.executable, "-m", "tidemark.conformance.cli.main", *argv, "--json"],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == expect, done.stdout[-2000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what depends on where and how fast it ran."""
    return {
        k: v
        for k, v in report.items()
        if "seconds" not in k and k not in ("master", "engine", "tlc", "out", "run")
    }


def _ran_executor_python(record: Path, python: Path) -> None:
    started = record.read_text().split() if record.exists() else []
    assert started, "the executors never started their Python"
    assert set(started) == {str(python)}, started
    record.unlink()


# Small executors: the machines that run the suite are small and shared.
_DEFAULTS = "spark.executor.memory 512m\nspark.executor.cores 1\n"


def _cluster_env(cluster: dict[str, Any], conf: str = "") -> dict[str, str]:
    """The environment of a command run against the cluster, its spark-defaults.conf holding `conf`."""
    directory = Path(cluster["work"]) / f"conf-{len(list(Path(cluster['work']).glob('conf-*')))}"
    directory.mkdir()
    (directory / "spark-defaults.conf").write_text(_DEFAULTS + conf)
    return {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(directory),
        RECORD: str(cluster["work"] / "record"),
    }


def test_conform_on_the_cluster_matches_local_mode(
    cluster: dict[str, Any], executor_python: Path, tmp_path: Path
) -> None:
    # The reference runs in this process: the replay is the same code, without a second JVM to start.
    spec = ["conform", "spec/UpdateCounter.tla", "--config", "tests/models/UpdateCounter-tiny.cfg"]
    local = _cli(*spec, "--local", "--run-dir", str(tmp_path / "local"))
    # Named as on a cluster's machines: the environment variable pyspark reads.
    env = {**_cluster_env(cluster), "PYSPARK_PYTHON": str(executor_python)}
    remote = _cli(*spec, "--master", cluster["master"], "--run-dir", str(tmp_path / "remote"), env=env)
    _ran_executor_python(cluster["work"] / "record", executor_python)
    assert remote["master"] == cluster["master"] and remote["edges_replayed"] == remote["edges"] > 0
    assert _figures(remote) == _figures(local)
    tables = [pq.read_table(tmp_path / run / "results.parquet").sort_by("fp") for run in ("local", "remote")]
    assert tables[0].to_pylist() == tables[1].to_pylist()


def test_simulate_on_the_cluster_matches_local_mode(cluster: dict[str, Any], executor_python: Path) -> None:
    spec = ["simulate", "spec/UpdateCounter.tla", "--config", "spec/UpdateCounter-sim.cfg"]
    spec += ["--traces", "8", "--depth", "20", "--seed", "3"]
    local = _cli(*spec, "--local")
    remote = _cli(
        *spec,
        "--master",
        cluster["master"],
        "--executor-python",
        str(executor_python),
        env=_cluster_env(cluster),
    )
    _ran_executor_python(cluster["work"] / "record", executor_python)
    assert remote["traces"] > 0 and _figures(remote) == _figures(local)


def test_distribution_lab_on_the_cluster_matches_local_mode(
    cluster: dict[str, Any], executor_python: Path, tmp_path: Path
) -> None:
    lab = ["distribution", "--partitions", "64", "--nodes", "3", "5", "--trials", "2", "--backups", "1"]
    local = _cli(*lab, "--master", "local[1]", "--out", str(tmp_path / "local"))
    # Named in the cluster's configuration: spark.pyspark.python in spark-defaults.conf.
    env = _cluster_env(cluster, f"spark.pyspark.python {executor_python}\n")
    remote = _cli(*lab, "--master", cluster["master"], "--out", str(tmp_path / "remote"), env=env)
    _ran_executor_python(cluster["work"] / "record", executor_python)
    assert _figures(remote) == _figures(local)


def test_audit_on_the_cluster_matches_local_mode(
    cluster: dict[str, Any], executor_python: Path, tmp_path: Path
) -> None:
    _cli("audit", "--generate", str(tmp_path), "--partitions", "64", "--copies", "2")
    snapshot = str(tmp_path / "snapshot")
    local = _cli("audit", snapshot, "--local", expect=1)
    remote = _cli(
        "audit",
        snapshot,
        "--master",
        cluster["master"],
        "--executor-python",
        str(executor_python),
        env=_cluster_env(cluster),
        expect=1,
    )
    _ran_executor_python(cluster["work"] / "record", executor_python)
    assert _figures(remote) == _figures(local)
