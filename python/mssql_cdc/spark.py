"""Local SparkSessions with Delta Lake (classic or Spark Connect), for tests, the demo and
users' own work."""

from __future__ import annotations

import os
import re
import secrets
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mssql_cdc.core import JARS_ENV, DeltaClasspath, cached_jars, check_java, delta_classpath
from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "NATIVE_CHECKED_ENV",
    "delta_jars",
    "local_connect_session",
    "local_session",
    "skip_native_rebuild_check",
]

NATIVE_CHECKED_ENV = "MSSQL_CDC_NATIVE_CHECKED"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def delta_jars() -> list[Path]:
    """Return the jar files of a local copy of Delta's jars (`make setup` writes one).

    The folder is `$MSSQL_CDC_JARS` when set, else the project's `.cache/jars` found above
    this package. Without either, sessions let Spark fetch Delta from Maven Central instead.

    Raises:
        ConfigError: no folder with Delta's jars was found, or MSSQL_CDC_JARS names one
            without them.
    """
    found = cached_jars()
    if found is None:
        raise ConfigError(
            "Delta Lake's jars were not found (no .cache/jars above "
            f"{Path(__file__).resolve().parent}): run `make setup` in the repository, or "
            f"point {JARS_ENV} at a folder holding delta-spark and its dependencies"
        )
    return found[2]


def skip_native_rebuild_check() -> bool:
    """In a process whose driver already imported the native module, skip the editable
    install's rebuild check on import; return whether it was skipped.

    An editable install runs `cmake --build` and `cmake --install` under a file lock when
    `mssql_cdc._native` is first imported in a process, also in every Python worker Spark
    starts. `local_session` imports the module first (so the driver still rebuilds when the
    C++ changed) and sets NATIVE_CHECKED_ENV, which its workers inherit. A regular install has
    no such finder, and nothing changes.
    """
    if os.environ.get(NATIVE_CHECKED_ENV) != "1":
        return False
    skipped = False
    for finder in sys.meta_path:
        if type(finder).__name__ == "ScikitBuildRedirectingFinder" and hasattr(finder, "rebuilt"):
            finder.rebuilt = True  # the finder's own once-per-process flag
            skipped = True
    return skipped


def local_session(
    app_name: str = "mssql-cdc",
    *,
    cores: int = 2,
    warehouse: str | os.PathLike[str] | None = None,
    driver_memory: str = "2g",
    verbose: bool = False,
) -> SparkSession:
    """Return a local SparkSession (`local[cores]`) with Delta Lake.

    Delta's jars come from `$MSSQL_CDC_JARS` or the project's `.cache/jars` when there is
    one, else Spark fetches them from Maven Central into ivy's cache on the first start
    (`spark.jars.packages`, as delta-spark documents). The session uses UTC, few shuffle
    partitions and no UI; its warehouse and metastore live under `warehouse`, or under a new
    temporary folder. An active session is returned as is,
    a Spark Connect one first. With the SPARK_REMOTE environment variable set (a Spark Connect
    URL, `sc://host:port/;token=...`), a Connect session to that server is returned instead:
    the server brings Delta Lake (docs/spark-connect.md).

    Spark's start-up lines and its warnings are silenced (its log level is ERROR) unless
    `verbose`, which leaves Spark's own logging as it comes.

    Raises:
        ConfigError: `cores` is below 1, no Java 17+ runtime is found, MSSQL_CDC_JARS names
            a folder without Delta, or Spark could not fetch Delta from Maven Central.
    """
    _checked(cores)
    from pyspark.sql import SparkSession

    active = _active_connect_session() or SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = os.environ.get("SPARK_REMOTE", "").strip()
    if remote:
        return SparkSession.builder.remote(remote).getOrCreate()
    configs, delta = _local_configs(cores, warehouse, driver_memory)
    builder = SparkSession.builder.appName(app_name).master(f"local[{cores}]")
    if not verbose:
        configs = quiet_configs(configs)
    for key, value in configs.items():
        builder = builder.config(key, value)
    if verbose:
        session = _started(builder, delta)
    else:
        with quiet_launch():
            session = _started(builder, delta)
    session.sparkContext.setLogLevel("ERROR")
    return session


def local_connect_session(
    app_name: str = "mssql-cdc",
    *,
    cores: int = 2,
    warehouse: str | os.PathLike[str] | None = None,
    driver_memory: str = "2g",
) -> SparkSession:
    """Return a Spark Connect session to a local Connect server with Delta Lake, started here.

    The server runs `local[cores]` in this process's JVM with the settings of `local_session`,
    on a free port of 127.0.0.1 with a random token; stopping the returned session stops it.
    An active Connect session is returned as is. Needs the `connect` extra
    (`pip install mssql-cdc[connect]`); docs/spark-connect.md.

    Raises:
        ConfigError: `cores` is below 1, no Java 17+ runtime is found, Delta's jars could be
            neither found nor fetched (as for `local_session`), or this process runs a
            classic SparkSession already (start the Connect session in a process of its own).
    """
    _checked(cores)
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    active = _active_connect_session()
    if active is not None:
        return active
    if SparkSession.getActiveSession() is not None:
        raise ConfigError(
            "local_connect_session: this process runs a classic SparkSession, whose JVM the "
            "Connect server would have to share; stop it first, or start the Connect session "
            "in a process of its own"
        )
    port = _free_port()
    # The client sends the token and the server requires it; pyspark's own local mode does
    # the same, but always on port 15002, which another local server may hold.
    os.environ.setdefault("SPARK_CONNECT_AUTHENTICATE_TOKEN", secrets.token_hex(16))
    local, delta = _local_configs(cores, warehouse, driver_memory)
    configs = {
        **local,
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.artifact.isolation.enabled": "true",
        "spark.sql.artifact.isolation.alwaysApplyClassloader": "true",
    }
    builder = SparkSession.builder.appName(app_name).master(f"local[{cores}]")
    for key, value in quiet_configs(configs).items():
        builder = builder.config(key, value)
    with quiet_launch():
        _started(builder, delta).sparkContext.setLogLevel("ERROR")
    # pyspark's functions build Connect columns only while this is set, and a Connect session
    # stops its local server on stop() while SPARK_LOCAL_REMOTE is set (pyspark's local mode).
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    os.environ["SPARK_LOCAL_REMOTE"] = "1"
    # pyspark's own builder types a Connect session as a SparkSession the same way
    return cast(
        "SparkSession", ConnectSession.builder.remote(f"sc://localhost:{port}").getOrCreate()
    )


def _active_connect_session() -> SparkSession | None:
    # a process that never imported pyspark's Connect client has no Connect session
    if "pyspark.sql.connect.session" not in sys.modules:
        return None
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    return cast("SparkSession | None", ConnectSession.getActiveSession())


def _checked(cores: int) -> int:
    if cores < 1:
        raise ConfigError(f"local_session: cores={cores} must be at least 1")
    return cores


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _started(builder: SparkSession.Builder, delta: DeltaClasspath) -> SparkSession:
    """Start the builder's session; a JVM that died fetching Delta gets a message that says so."""
    from pyspark.errors import PySparkRuntimeError

    try:
        return builder.getOrCreate()
    except PySparkRuntimeError as exc:
        if delta.origin != "maven":
            raise
        raise ConfigError(
            f"Spark did not start: it fetches Delta Lake ({delta.where}) from Maven Central on "
            f"a first start, which failed or was refused (see Spark's output above). Check "
            f"access to repo1.maven.org, or point {JARS_ENV} at a folder holding "
            f"delta-spark and its dependencies ({exc.getErrorClass()})"
        ) from exc


def _local_configs(
    cores: int, warehouse: str | os.PathLike[str] | None, driver_memory: str
) -> tuple[dict[str, str], DeltaClasspath]:
    """The settings of a local session with Delta, and where Delta comes from; checks Java and
    prepares this process for its workers."""
    delta = delta_classpath()
    check_java()
    # Executors' Python workers must run the same interpreter as the driver (the venv's).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import mssql_cdc._native  # noqa: F401 - an editable install rebuilds it here, in the driver

    os.environ[NATIVE_CHECKED_ENV] = "1"  # so Spark's Python workers skip that check
    home = Path(warehouse) if warehouse is not None else Path(tempfile.mkdtemp(prefix="mssql-cdc-"))
    home.mkdir(parents=True, exist_ok=True)
    return {
        **delta.configs,
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(max(2, cores)),
        "spark.default.parallelism": str(max(2, cores)),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # a Python worker on a loaded machine can take longer than the default 15 s to connect
        "spark.python.authenticate.socketTimeout": "120s",
        "spark.driver.memory": driver_memory,
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home / 'derby'}",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.databricks.delta.stats.collect": "true",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    }, delta


# Quiet start-up unless verbose. A fresh local_session printed eight lines on stderr before
# any work: the JVM's "Using incubator modules" warning (Spark's launcher always adds
# jdk.incubator.vector, and no JVM flag silences it), two "Using Spark's default log4j profile"
# lines, the loopback-address and native-hadoop warnings and the "Setting default log level"
# hint. A log4j2 configuration at level ERROR removes the log4j lines; the JVM's own line is
# dropped by a pipe on the JVM's stderr that passes every other line on, for the JVM's life.

# Lines a JVM launch prints before log4j's configuration applies, or outside log4j.
NOISE = re.compile(
    rb"^(WARNING: Using incubator modules: |Using Spark's default log4j profile: |"
    rb"Setting default log level to |To adjust logging level use sc\.setLogLevel)"
)

LOG4J2_PROPERTIES = """\
# Written by mssql_cdc.spark.local_session: Spark logs errors only (verbose=True logs more).
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def quiet_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """`configs` with the driver's log4j2 configuration set to the quiet one, written beside
    the session's warehouse."""
    home = Path(configs["spark.sql.warehouse.dir"]).parent
    home.mkdir(parents=True, exist_ok=True)
    properties = home / "log4j2-quiet.properties"
    properties.write_text(LOG4J2_PROPERTIES, encoding="utf-8")
    java = configs.get("spark.driver.extraJavaOptions", "")
    option = f"-Dlog4j2.configurationFile={properties.as_uri()}"
    return {**configs, "spark.driver.extraJavaOptions": f"{java} {option}".strip()}


@contextmanager
def quiet_launch() -> Iterator[None]:
    """While the block runs, a process started here gets a stderr that drops `NOISE` lines
    and passes every other line on to this process's stderr, for as long as it lives."""
    if os.name != "posix":
        yield
        return
    sys.stderr.flush()
    target = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(
        target=_forward, args=(read_end, target), name="mssql-cdc-jvm-stderr", daemon=True
    ).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(target, 2)  # the pipe's write end is now held by the JVM alone


def _forward(read_end: int, target: int) -> None:
    """Copy lines from `read_end` to `target` without `NOISE`, until every writer is gone."""
    with os.fdopen(read_end, "rb") as lines, os.fdopen(target, "wb", buffering=0) as out:
        for line in lines:
            if NOISE.match(line):
                continue
            try:
                out.write(line)
            except OSError:  # this process's stderr is gone; keep draining so the JVM never blocks
                continue
