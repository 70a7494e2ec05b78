"""The one place that starts Spark: local[*] by default, any master URL for a cluster (docs/cluster.md).

On a local master the workers are this machine's processes, so they run this very interpreter (its
packages are the driver's). On a cluster the executors run the Python the user names (`--executor-python`,
PYSPARK_PYTHON, or spark.pyspark.python; Spark's default is `python3`), an environment with the
project's third-party runtime packages (EXECUTOR_REQUIREMENTS) but not the project itself: the project's
packages are shipped to the executors as a zip added to the session, and what a job reads travels as
data (conformance/conform.py, conformance/audit/engine.py), never as a path on the driver's disk.

Everything the driver writes stays in the process's scratch directory (conformance/scratch.py): Spark's
local directories (SPARK_LOCAL_DIRS: shuffle and spill files), the warehouse, and the JVM's
java.io.tmpdir (where Spark and its compression libraries unpack native code). The web UI is off and
the driver's ports are chosen free by the OS, so sessions of runs side by side never meet. The JVM is
watched by the process's guardian: killed with the process, it does not run on.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from tidemark.conformance.scratch import scratch_dir, scratch_root, watch

_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{1}: %m%n
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""

# The project's packages that executors import, as named inside the distribution's top level.
_PACKAGES = ("impl", "conformance")

# What the executors' Python must have besides pyspark (which Spark puts on their path itself): the
# third-party packages that the jobs' functions import (impl/ and conformance/ travel in the zip).
EXECUTOR_REQUIREMENTS = ("pyarrow", "pandas", "numpy", "pydantic", "immutables")


def is_local(master: str) -> bool:
    """Whether `master` runs the executors in this machine's processes, with this machine's files."""
    return master.startswith("local")


def _project_zip(directory: Path) -> Path:
    """Zip the project's packages so executors on another machine can import them, under the names this
    process imports them by (with the enclosing package's __init__.py when they live inside one)."""
    parent = (__package__ or "").rpartition(".")[0]
    names = [f"{parent}.{name}" if parent else name for name in _PACKAGES]
    target = directory / "tidemark-packages.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        if parent:
            archive.write(_module_file(parent), f"{parent.replace('.', '/')}/__init__.py")
        for name in names:
            folder = _module_file(name).parent
            for path in sorted(folder.rglob("*.py")):
                archive.write(path, f"{name.replace('.', '/')}/{path.relative_to(folder).as_posix()}")
    return target


def _module_file(name: str) -> Path:
    file = importlib.import_module(name).__file__
    assert file is not None, f"{name} is a package with an __init__.py"
    return Path(file).resolve()


_PY4J = f"{os.sep}py4j{os.sep}"  # in the path of Py4J's modules


class _WithoutPy4jTracebacks(logging.Filter):
    """Drops the tracebacks Py4J logs for a call to the JVM that failed or was cut short (Ctrl-C,
    SIGTERM): the caller gets the same error as an exception, which the CLI reports in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _PY4J in record.pathname)


_QUIET = _WithoutPy4jTracebacks()


def _quiet_py4j() -> None:
    # Py4J logs through the root logger and its own; a logger's filters apply to its own records only.
    for name in ("", "py4j.clientserver", "py4j.java_gateway"):
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)


def _jvm_directory() -> Path:
    """The java.io.tmpdir, local directories and logging configuration of the JVM pyspark starts: one
    JVM per process (later sessions reuse it), so they stay as long as the process."""
    directory = scratch_root() / "spark-jvm"
    (directory / "tmp").mkdir(parents=True, exist_ok=True)
    (directory / "log4j2.properties").write_text(_LOG4J)
    # The driver's (in local mode the executor's) shuffle and spill files; the environment variable,
    # unlike spark.local.dir, reaches only this machine's JVM and draws no warning from Spark.
    os.environ.setdefault("SPARK_LOCAL_DIRS", str(directory / "local"))
    return directory


@contextmanager
def _python_tempdir(directory: Path) -> Iterator[None]:
    """Python's temporary files inside `directory` for the block: pyspark passes the new JVM's port
    through a temporary directory, which a kill at that moment would leave in the shared one."""
    previous = tempfile.tempdir
    tempfile.tempdir = str(directory)
    try:
        yield
    finally:
        tempfile.tempdir = previous


@contextmanager
def executor_python(python: str | None) -> Iterator[None]:
    """The block's Spark sessions on a cluster run `python` on their executors (if given): pyspark takes
    it from PYSPARK_PYTHON, which is set back afterwards."""
    if python is None:
        yield
        return
    previous = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = python
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = previous


@contextmanager
def spark_session(master: str | None = None, app_name: str = "tidemark") -> Iterator[Any]:
    """A configured SparkSession, stopped on exit. `master` defaults to local[*].

    If this process already has an active session on the same master (a test suite's shared one), it
    is reused and left running.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        yield active
        return

    master = master or "local[*]"
    local = is_local(master)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    jvm = _jvm_directory()
    log4j = f"-Dlog4j2.configurationFile=file:{jvm / 'log4j2.properties'}"
    driver = f"{log4j} -Djava.io.tmpdir={jvm / 'tmp'} -XX:-UsePerfData"
    with scratch_dir("spark-") as scratch:
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.extraJavaOptions", driver)
            .config("spark.executor.extraJavaOptions", log4j)
            .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        )
        if local:
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1"
            )
        _quiet_py4j()
        interrupt = signal.getsignal(signal.SIGINT)
        try:
            with _python_tempdir(jvm):
                session = builder.getOrCreate()
        finally:
            if interrupt is not None and threading.current_thread() is threading.main_thread():
                # pyspark's Ctrl-C handler calls the JVM from inside the signal handler, in the middle of
                # another call; Ctrl-C raises KeyboardInterrupt again, and the stop below cancels the jobs.
                signal.signal(signal.SIGINT, interrupt)
        gateway = getattr(session.sparkContext._gateway, "proc", None)  # the JVM pyspark started
        if gateway is not None:
            watch(gateway.pid, group=False)
        session.sparkContext.setLogLevel("WARN")
        # One shuffle partition per core of the master (Spark's 200 would be mostly empty tasks here): the
        # joins' shuffles set the replay's partitions, so every core of a cluster is busy.
        session.conf.set("spark.sql.shuffle.partitions", str(session.sparkContext.defaultParallelism))
        context = session.sparkContext
        # The Python the jobs' functions run on, set on the context (not in the environment, which a
        # later session of this process would inherit). pyspark itself reads only PYSPARK_PYTHON.
        if local:
            context.pythonExec = sys.executable
        else:
            named = context.getConf().get("spark.pyspark.python")
            if named and "PYSPARK_PYTHON" not in os.environ:
                context.pythonExec = named
            context.addPyFile(str(_project_zip(scratch)))
        try:
            yield session
        except KeyboardInterrupt:
            session.sparkContext.setLogLevel("OFF")  # not the stack trace of every job the stop cancels
            raise
        finally:
            session.stop()


def ship_files(spark: Any, paths: tuple[Path, ...]) -> tuple[str, ...] | None:
    """Have the session send `paths` to every executor that asks (SparkContext.addFile) and give their
    names there (`shipped_paths`), or None on a local master, whose executors read the paths themselves.

    Spark knows a shipped file by its name alone, so each is linked under a name drawn from its full path:
    a hard link (Spark would follow a symbolic one back to the file's own name), a copy across file
    systems.
    """
    if is_local(spark.sparkContext.master):
        return None
    directory = scratch_root() / "shipped"
    directory.mkdir(exist_ok=True)
    names = []
    for path in paths:
        full = path.resolve()
        name = f"{hashlib.sha256(str(full).encode()).hexdigest()[:16]}-{full.name}"
        link = directory / name
        if not link.exists():
            try:
                link.hardlink_to(full)
            except OSError:  # another file system
                shutil.copyfile(full, link)
        spark.sparkContext.addFile(str(link))
        names.append(name)
    return tuple(names)


def shipped_paths(names: tuple[str, ...]) -> tuple[Path, ...]:
    """On an executor: where the files `ship_files` sent are on its disk."""
    from pyspark import SparkFiles

    return tuple(Path(SparkFiles.get(name)) for name in names)


def session_running() -> bool:
    """Whether this thread has an active Spark session (which `spark_session` would reuse)."""
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is not None


class SparkWarmup:
    """A Spark session started in a background thread (and warmed by `warm`, a small job of the plan the
    session will run) while this thread does other work, such as waiting for TLC: the JVM's start,
    class loading and the Python workers' imports are then paid out of sight.

    `session()` waits for it and gives it (or raises what starting it raised); `close()` stops it. A
    failed warm-up job is no failure: the real job meets the same problem and reports it.
    """

    def __init__(self, master: str | None, warm: Callable[[Any], object]) -> None:
        self._stack = ExitStack()
        self._session: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, args=(master, warm), name="spark-warmup")
        self._thread.start()

    def _start(self, master: str | None, warm: Callable[[Any], object]) -> None:
        try:
            self._session = self._stack.enter_context(spark_session(master))
        except BaseException as error:  # handed to the thread that asks for the session
            self._error = error
            return
        try:
            warm(self._session)
        except Exception as error:
            logging.getLogger("tidemark").debug("Spark warm-up job failed: %s", error)

    def session(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._session

    def close(self) -> None:
        self._thread.join()
        self._stack.close()
