"""Building `delta_sink` validates its arguments at once and touches no Spark (no JVM here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.core import MAX_GENERATION
from mssql_cdc.errors import ConfigError
from mssql_cdc.sink.writer import delta_sink


def test_building_a_sink_needs_no_spark_and_names_its_sink_id(tmp_path: Path) -> None:
    from pyspark.sql import SparkSession

    sink = delta_sink("bronze.orders", "orders", "ops.facts", metrics_path=str(tmp_path))
    later = delta_sink("bronze.orders", "orders", "ops.facts", metrics_path=tmp_path, generation=3)

    assert SparkSession.getActiveSession() is None  # nothing started a session
    assert (sink.sink_id, sink.generation, sink.metrics_path) == ("orders", 0, tmp_path)
    assert (later.sink_id, later.generation) == ("orders.g3", 3)
    assert delta_sink("/data/bronze", "orders").facts_table is None


@pytest.mark.parametrize(
    ("app_id", "says"),
    [
        ("", "non-empty string"),
        (None, "non-empty string"),
        ("orders#2", "contains '#'"),
        ("orders\n", "control character"),
    ],
    ids=["empty", "none", "hash", "newline"],
)
def test_a_bad_app_id_is_refused_naming_it(app_id: object, says: str) -> None:
    with pytest.raises(ValueError, match=says) as raised:
        delta_sink("bronze.orders", app_id, "ops.facts")  # type: ignore[arg-type]
    assert "app_id=" in str(raised.value)


@pytest.mark.parametrize(
    "path",
    ["dbfs:/mnt/metrics", "wasbs://c@a.blob.core.windows.net/m", "hdfs://nn/m"],
    ids=["dbfs", "wasbs", "hdfs"],
)
def test_a_uri_metrics_path_of_a_scheme_the_library_cannot_open_is_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="is a URI the library cannot open") as raised:
        delta_sink("bronze.orders", "orders", "ops.facts", metrics_path=path)
    assert path in str(raised.value)


@pytest.mark.parametrize(
    "path",
    ["abfss://c@a.dfs.core.windows.net/m", "s3a://bucket/m/", "gs://bucket/m", "file:/tmp/m"],
    ids=["abfss", "s3a", "gs", "file"],
)
def test_an_object_store_metrics_path_is_kept_as_its_uri(path: str) -> None:
    sink = delta_sink("bronze.orders", "orders", "ops.facts", metrics_path=path)
    assert sink.metrics_path == path.rstrip("/")


def test_a_drive_letter_is_a_path_not_a_uri() -> None:
    sink = delta_sink("bronze.orders", "orders", metrics_path="C:/metrics")
    assert sink.metrics_path == Path("C:/metrics").resolve()  # a path, kept resolved


@pytest.mark.parametrize("path", ["", "   ", 42], ids=["empty", "blank", "number"])
def test_a_metrics_path_that_is_not_a_path_is_refused(path: object) -> None:
    with pytest.raises(ConfigError, match="metrics_path="):
        delta_sink("bronze.orders", "orders", metrics_path=path)  # type: ignore[arg-type]


def test_the_same_table_as_target_and_facts_is_refused() -> None:
    with pytest.raises(ConfigError, match="target and facts_table are the same table"):
        delta_sink("ops.t", "orders", "ops.t")


@pytest.mark.parametrize(
    ("target", "facts_table"),
    [("lake/t", "./lake/t/"), ("/lake/x/../t", "/lake/t"), ("Ops.T", "`ops`.`t`")],
)
def test_two_spellings_of_one_table_as_target_and_facts_are_refused(
    target: str, facts_table: str
) -> None:
    with pytest.raises(ConfigError, match="target and facts_table are the same table"):
        delta_sink(target, "orders", facts_table)


def test_a_target_that_would_add_sql_is_refused() -> None:
    with pytest.raises(ConfigError, match="is not a valid table name"):
        delta_sink("default.t1 SET TBLPROPERTIES ('x' = 'y')", "orders")


@pytest.mark.parametrize("target", ["", None, 7], ids=["empty", "none", "number"])
def test_a_target_that_is_not_a_table_name_is_refused(target: object) -> None:
    with pytest.raises(ConfigError, match="target="):
        delta_sink(target, "orders")  # type: ignore[arg-type]


@pytest.mark.parametrize("generation", [-1, True, 1.5], ids=["negative", "bool", "float"])
def test_a_bad_generation_is_refused(generation: object) -> None:
    with pytest.raises(ConfigError, match="generation="):
        delta_sink("bronze.orders", "orders", generation=generation)  # type: ignore[arg-type]


def test_the_filesystem_root_as_metrics_path_is_refused() -> None:
    with pytest.raises(ConfigError, match="the filesystem root") as raised:
        delta_sink("bronze.orders", "orders", "ops.facts", metrics_path="/")
    assert "pass a folder of its own" in str(raised.value)


@pytest.mark.parametrize("relative", [".", "..", "./a/../.."], ids=["dot", "parent", "dotted"])
def test_the_working_folder_or_a_parent_as_metrics_path_is_refused(
    relative: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with pytest.raises(ConfigError, match="working folder"):
        delta_sink("bronze.orders", "orders", "ops.facts", metrics_path=relative)


def test_the_home_folder_as_metrics_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="the home folder"):
        delta_sink("bronze.orders", "orders", "ops.facts", metrics_path=str(tmp_path))


def test_a_file_as_metrics_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        delta_sink("bronze.orders", "orders", "ops.facts", metrics_path=tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_metrics_path_is_kept_resolved(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    built = delta_sink("bronze.orders", "orders", metrics_path=tmp_path / "link" / ".." / "m")
    assert built.metrics_path == tmp_path.resolve() / "m"


@pytest.mark.parametrize("generation", [MAX_GENERATION + 1, 2**31 - 1, 2**40])
def test_a_generation_the_state_file_cannot_hold_is_refused_naming_the_bound(
    generation: int,
) -> None:
    with pytest.raises(ConfigError, match=f"generation={generation} must be an integer from 0 to"):
        delta_sink("bronze.orders", "orders", generation=generation)


def test_the_highest_generation_the_state_file_holds_is_accepted() -> None:
    assert delta_sink("bronze.orders", "orders", generation=MAX_GENERATION).generation == (
        MAX_GENERATION
    )
