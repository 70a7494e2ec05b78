"""The one place that starts Spark: local[*] by default, any master URL for a cluster.

Workers must run the same Python with the same packages as the driver, so PYSPARK_PYTHON is pinned to
this interpreter; on a real cluster the project's packages are shipped to executors as a zip.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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

_PACKAGES = ("impl", "conformance")


def _project_zip(directory: Path) -> Path:
    """Zip the project's packages so executors on another machine can import them."""
    root = Path(__file__).resolve().parent.parent
    target = directory / "tidemark-packages.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in _PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                archive.write(path, path.relative_to(root).as_posix())
    return target


@contextmanager
def spark_session(master: str | None = None, app_name: str = "tidemark") -> Iterator[Any]:
    """A configured SparkSession, stopped on exit. `master` defaults to local[*].

    If this process already has an active session on the same master (a test suite's shared one), it
    is reused and left running.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        yield active
        return

    master = master or "local[*]"
    with tempfile.TemporaryDirectory(prefix="tidemark-spark-") as scratch:
        log4j = Path(scratch) / "log4j2.properties"
        log4j.write_text(_LOG4J)
        java_opts = f"-Dlog4j2.configurationFile=file:{log4j}"
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.extraJavaOptions", java_opts)
            .config("spark.executor.extraJavaOptions", java_opts)
            .config("spark.sql.warehouse.dir", str(Path(scratch) / "warehouse"))
        )
        if master.startswith("local"):
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1"
            )
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("WARN")
        # One shuffle partition per core of the master (Spark's 200 would be mostly empty tasks here): the
        # joins' shuffles set the replay's partitions, so every core of a cluster is busy.
        session.conf.set("spark.sql.shuffle.partitions", str(session.sparkContext.defaultParallelism))
        if not master.startswith("local"):
            session.sparkContext.addPyFile(str(_project_zip(Path(scratch))))
        try:
            yield session
        finally:
            session.stop()
