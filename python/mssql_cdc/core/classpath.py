"""Where a local session's Delta Lake comes from, and the Java runtime it needs (decision 0903).

Delta's JVM half comes from, in this order: the folder named by `MSSQL_CDC_JARS`; the project's
jar cache (`.cache/jars` in a folder above the package, made by `make setup`); else Spark fetches
it from Maven Central into ivy's cache at start-up (`spark.jars.packages`), with the coordinate
delta-spark's `configure_spark_with_delta_pip` would choose for the installed PySpark. Spark's
S3A connector, when the folder has an `s3a/` beside Delta's jars (`make setup` puts hadoop-aws
and the AWS SDK there), goes on the driver's class path: a local session's executors run in the
driver's JVM, and the SDK's bundle is too large to copy to them through `spark.jars`
(decision 1353).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from mssql_cdc.errors import ConfigError

__all__ = [
    "JARS_ENV",
    "MIN_JAVA",
    "DeltaClasspath",
    "cached_jars",
    "check_java",
    "delta_classpath",
    "java_major",
    "maven_coordinate",
]

JARS_ENV = "MSSQL_CDC_JARS"
MIN_JAVA = 17  # Spark 4 runs on Java 17 and 21
SCALA = "2.13"  # Spark 4 is built for Scala 2.13 only
_PACKAGE_DIR = Path(__file__).resolve().parent
_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


@dataclass(frozen=True, slots=True)
class DeltaClasspath:
    """How a local session gets Delta's jars.

    `origin` is `env` (the folder of MSSQL_CDC_JARS), `cache` (the project's `.cache/jars`) or
    `maven` (fetched by Spark at start-up); `configs` are the Spark settings that say so.
    """

    origin: Literal["env", "cache", "maven"]
    configs: Mapping[str, str]
    where: str  # the folder, or the Maven coordinate


def maven_coordinate(delta_version: str, spark_version: str) -> str:
    """Return Delta's Maven coordinate for a delta-spark and a PySpark version.

    Delta publishes one artifact per Spark minor version (`delta-spark_4.2_2.13`), at the
    version of the Python package; delta-spark's own `configure_spark_with_delta_pip` names it
    the same way.
    """
    spark_minor = ".".join(spark_version.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_{SCALA}:{delta_version}"


def cached_jars(
    *, environ: Mapping[str, str] | None = None, package_dir: Path = _PACKAGE_DIR
) -> tuple[Literal["env", "cache"], Path, list[Path]] | None:
    """Return the origin, the folder and the jars of a local copy of Delta's jars.

    Returns:
        `env` and the folder of MSSQL_CDC_JARS when set, else `cache` and the first
        `.cache/jars` above `package_dir` that holds a delta-spark jar; None when neither.
    Raises:
        ConfigError: MSSQL_CDC_JARS names a folder without a delta-spark jar.
    """
    env = os.environ if environ is None else environ
    named = env.get(JARS_ENV, "").strip()
    if named:
        jars = _delta_folder(Path(named))
        if jars is None:
            raise ConfigError(
                f"{JARS_ENV}={named} holds no delta-spark jar: point it at a folder holding "
                f"delta-spark and its dependencies, or unset it to let Spark fetch Delta from "
                f"Maven Central"
            )
        return "env", Path(named), jars
    for parent in package_dir.parents:
        folder = parent / ".cache" / "jars"
        jars = _delta_folder(folder)
        if jars is not None:
            return "cache", folder, jars
    return None


def delta_classpath(
    *,
    environ: Mapping[str, str] | None = None,
    package_dir: Path = _PACKAGE_DIR,
    version_of: Callable[[str], str | None] | None = None,
) -> DeltaClasspath:
    """Decide where a local session's Delta comes from (the module's docstring gives the order).

    Raises:
        ConfigError: MSSQL_CDC_JARS names a folder without Delta, or there is no local copy and
            delta-spark or pyspark is not installed, so no Maven coordinate can be named.
    """
    found = cached_jars(environ=environ, package_dir=package_dir)
    if found is not None:
        origin, folder, jars = found
        configs = {"spark.jars": ",".join(str(j) for j in jars)}
        s3a = sorted((folder / "s3a").glob("*.jar"))
        if s3a:
            configs["spark.driver.extraClassPath"] = os.pathsep.join(str(j) for j in s3a)
        return DeltaClasspath(origin, configs, str(folder))
    versions = version_of or _installed_version
    delta, spark = versions("delta-spark"), versions("pyspark")
    if delta is None or spark is None:
        missing = " and ".join(n for n, v in (("delta-spark", delta), ("pyspark", spark)) if not v)
        raise ConfigError(
            f"Delta Lake's jars were not found and {missing} is not installed, so Spark cannot "
            f"fetch them: pip install mssql-cdc (it brings both), or point {JARS_ENV} at a "
            f"folder holding delta-spark and its dependencies"
        )
    coordinate = maven_coordinate(delta, spark)
    return DeltaClasspath("maven", {"spark.jars.packages": coordinate}, coordinate)


def check_java(
    *,
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    version_text: Callable[[str], str] | None = None,
) -> None:
    """Check that a Java runtime Spark can start is there: JAVA_HOME's, else `java` on PATH.

    Raises:
        ConfigError: no Java runtime was found, or it is older than Java 17.
    """
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME", "").strip()
    java = str(Path(home) / "bin" / "java") if home else which("java")
    if home and not Path(str(java)).is_file():
        raise ConfigError(
            f"JAVA_HOME={home} has no bin/java: point JAVA_HOME at a Java {MIN_JAVA}+ runtime, "
            f"or unset it to use the java on PATH"
        )
    if java is None:
        raise ConfigError(
            f"no Java runtime found (JAVA_HOME is unset and `java` is not on PATH): Spark needs "
            f"Java {MIN_JAVA} or newer; install a Java {MIN_JAVA}+ runtime (on Debian or Ubuntu: "
            f"apt install openjdk-{MIN_JAVA}-jre-headless) and run again"
        )
    major = java_major((version_text or _java_version_text)(java))
    if major is not None and major < MIN_JAVA:
        raise ConfigError(
            f"{java} is Java {major}, and Spark needs Java {MIN_JAVA} or newer: install a Java "
            f"{MIN_JAVA}+ runtime and put it first on PATH, or point JAVA_HOME at it"
        )


def java_major(version_output: str) -> int | None:
    """Return the major version in `java -version`'s output (1.8 is 8); None when unreadable."""
    match = _JAVA_VERSION.search(version_output)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _delta_folder(folder: Path) -> list[Path] | None:
    jars = sorted(folder.glob("*.jar"))
    return jars if any(j.name.startswith("delta-spark") for j in jars) else None


def _installed_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _java_version_text(java: str) -> str:
    # `java -version` writes to stderr; an unreadable answer only skips the version check
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as exc:
        raise ConfigError(
            f"{java} could not be run ({exc.strerror}): install a Java {MIN_JAVA}+ runtime"
        ) from exc
    except subprocess.TimeoutExpired:
        return ""
    return done.stderr + done.stdout
