"""Where a local session finds Delta's jars, and what it says when Java is missing (decision
0903). The filesystem is a temporary folder laid out like a checkout or a site-packages."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.core import classpath
from mssql_cdc.errors import ConfigError
from mssql_cdc.spark import local_session

INSTALLED = {"delta-spark": "4.4.0", "pyspark": "4.2.0"}


def package_in(root: Path) -> Path:
    package = root / "lib" / "python3.11" / "site-packages" / "mssql_cdc"
    package.mkdir(parents=True)
    return package


def jar_folder(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"PK")
    return folder


def test_the_project_jar_cache_above_the_package_is_used_when_there_is_one(tmp_path: Path) -> None:
    jars = jar_folder(tmp_path / ".cache" / "jars", "delta-spark_4.2_2.13-4.4.0.jar", "x-1.jar")
    found = classpath.delta_classpath(
        environ={}, package_dir=package_in(tmp_path), version_of=INSTALLED.get
    )
    assert found.origin == "cache"
    assert found.configs == {
        "spark.jars": f"{jars / 'delta-spark_4.2_2.13-4.4.0.jar'},{jars / 'x-1.jar'}"
    }


def test_the_s3a_connector_beside_delta_goes_on_the_drivers_class_path(tmp_path: Path) -> None:
    jars = jar_folder(tmp_path / ".cache" / "jars", "delta-spark_4.2_2.13-4.4.0.jar")
    s3a = jar_folder(jars / "s3a", "hadoop-aws-3.5.0.jar", "bundle-2.35.4.jar")
    found = classpath.delta_classpath(
        environ={}, package_dir=package_in(tmp_path), version_of=INSTALLED.get
    )
    assert found.configs == {
        "spark.jars": str(jars / "delta-spark_4.2_2.13-4.4.0.jar"),
        "spark.driver.extraClassPath": (
            f"{s3a / 'bundle-2.35.4.jar'}:{s3a / 'hadoop-aws-3.5.0.jar'}"
        ),
    }


def test_the_folder_of_mssql_cdc_jars_wins_over_the_cache(tmp_path: Path) -> None:
    jar_folder(tmp_path / ".cache" / "jars", "delta-spark_4.2_2.13-4.4.0.jar")
    mine = jar_folder(tmp_path / "mine", "delta-spark_4.2_2.13-4.4.0.jar")
    found = classpath.delta_classpath(
        environ={"MSSQL_CDC_JARS": str(mine)},
        package_dir=package_in(tmp_path),
        version_of=INSTALLED.get,
    )
    assert (found.origin, found.where) == ("env", str(mine))


def test_mssql_cdc_jars_naming_a_folder_without_delta_is_refused(tmp_path: Path) -> None:
    empty = jar_folder(tmp_path / "empty", "other-1.jar")
    with pytest.raises(ConfigError, match=r"MSSQL_CDC_JARS=.*empty holds no delta-spark jar"):
        classpath.delta_classpath(
            environ={"MSSQL_CDC_JARS": str(empty)},
            package_dir=package_in(tmp_path),
            version_of=INSTALLED.get,
        )


def test_without_a_cache_spark_fetches_delta_for_the_installed_spark(tmp_path: Path) -> None:
    jar_folder(tmp_path / ".cache" / "other", "delta-spark_4.2_2.13-4.4.0.jar")  # not jars/
    found = classpath.delta_classpath(
        environ={}, package_dir=package_in(tmp_path), version_of=INSTALLED.get
    )
    assert found.origin == "maven"
    assert found.configs == {"spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0"}


def test_the_coordinate_is_the_one_delta_spark_itself_would_fetch() -> None:
    from delta import configure_spark_with_delta_pip  # the oracle: delta-spark's own helper

    builder = configure_spark_with_delta_pip(SparkSession.Builder())
    ours = classpath.delta_classpath(
        environ={}, package_dir=Path("/nonexistent/site-packages/mssql_cdc")
    )
    assert ours.configs["spark.jars.packages"] == builder._options["spark.jars.packages"]


def test_without_a_cache_and_without_delta_spark_the_error_says_what_to_install(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"delta-spark is not installed.*pip install mssql-cdc"):
        classpath.delta_classpath(
            environ={}, package_dir=package_in(tmp_path), version_of={"pyspark": "4.2.0"}.get
        )


def test_no_java_at_all_says_to_install_java_17() -> None:
    with pytest.raises(ConfigError, match=r"no Java runtime found.*install a Java 17\+ runtime"):
        classpath.check_java(environ={}, which=lambda _: None)


def test_a_java_home_without_java_is_named() -> None:
    with pytest.raises(ConfigError, match=r"JAVA_HOME=/nowhere has no bin/java"):
        classpath.check_java(environ={"JAVA_HOME": "/nowhere"}, which=lambda _: "/usr/bin/java")


@pytest.mark.parametrize(
    ("output", "refused"),
    [
        ('openjdk version "17.0.15" 2025-04-15', False),
        ('openjdk version "21" 2023-09-19', False),
        ('openjdk version "11.0.2" 2019-01-15', True),
        ('java version "1.8.0_292"', True),
        ("something else entirely", False),  # unreadable: Spark's own check decides
    ],
    ids=["java-17", "java-21", "java-11", "java-8", "unreadable"],
)
def test_java_older_than_17_is_refused(output: str, refused: bool) -> None:
    def check() -> None:
        classpath.check_java(
            environ={}, which=lambda _: "/usr/bin/java", version_text=lambda _: output
        )

    if refused:
        with pytest.raises(ConfigError, match=r"/usr/bin/java is Java (8|11), and Spark needs"):
            check()
    else:
        check()


def test_local_session_without_java_fails_before_starting_spark(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    with pytest.raises(ConfigError, match=r"install a Java 17\+ runtime"):
        local_session(warehouse=tmp_path / "w")
    assert SparkSession.getActiveSession() is None
