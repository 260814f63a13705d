"""A local SparkSession with Delta Lake, for tests, the demo and users' own work."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["NATIVE_CHECKED_ENV", "delta_jars", "local_session", "skip_native_rebuild_check"]

JARS_ENV = "MSSQL_CDC_JARS"
NATIVE_CHECKED_ENV = "MSSQL_CDC_NATIVE_CHECKED"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def delta_jars() -> list[Path]:
    """Return Delta's jar files resolved by `make setup`.

    The folder is `$MSSQL_CDC_JARS` when set, else the project's `.cache/jars` found above
    this package. Sessions never resolve packages at start-up.

    Raises:
        ConfigError: no folder with Delta's jars was found.
    """
    candidates: list[Path] = []
    if os.environ.get(JARS_ENV):
        candidates.append(Path(os.environ[JARS_ENV]))
    candidates += [parent / ".cache" / "jars" for parent in Path(__file__).resolve().parents]
    for folder in candidates:
        jars = sorted(folder.glob("*.jar"))
        if any(j.name.startswith("delta-spark") for j in jars):
            return jars
    raise ConfigError(
        "Delta Lake's jars were not found (looked in "
        + ", ".join(str(c) for c in candidates[:3])
        + ", ...); run `make setup`, or point "
        + JARS_ENV
        + " at a folder holding delta-spark and its dependencies"
    )


def skip_native_rebuild_check() -> bool:
    """In a process whose driver already imported the native module, skip the editable
    install's rebuild check on import; return whether it was skipped.

    An editable install runs `cmake --build` and `cmake --install` under a file lock when
    `mssql_cdc._native` is first imported in a process, also in every Python worker Spark
    starts. `local_session` imports the module first (so the driver still rebuilds when the
    C++ changed) and sets NATIVE_CHECKED_ENV, which its workers inherit. A regular install has
    no such finder, and nothing changes. Decision 0371.
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
) -> SparkSession:
    """Return a local SparkSession (`local[cores]`) with Delta Lake from the cached jars.

    The session uses UTC, few shuffle partitions and no UI; its warehouse and metastore live
    under `warehouse`, or under a new temporary folder. An active session is returned as is.

    Raises:
        ConfigError: `cores` is below 1, or Delta's jars are missing (run `make setup`).
    """
    if cores < 1:
        raise ConfigError(f"local_session: cores={cores} must be at least 1")
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # Executors' Python workers must run the same interpreter as the driver (the venv's).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import mssql_cdc._native  # noqa: F401 - an editable install rebuilds it here, in the driver

    os.environ[NATIVE_CHECKED_ENV] = "1"  # so Spark's Python workers skip that check
    home = Path(warehouse) if warehouse is not None else Path(tempfile.mkdtemp(prefix="mssql-cdc-"))
    home.mkdir(parents=True, exist_ok=True)
    jars = ",".join(str(j) for j in delta_jars())
    builder = (
        SparkSession.builder.appName(app_name)
        .master(f"local[{cores}]")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(max(2, cores)))
        .config("spark.default.parallelism", str(max(2, cores)))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # a Python worker on a loaded machine can take longer than the default 15 s to connect
        .config("spark.python.authenticate.socketTimeout", "120s")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.warehouse.dir", str(home / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={home / 'derby'}")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.databricks.delta.stats.collect", "true")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
