"""Creating and opening the library's tables on a real local Delta."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from mssql_cdc.tables import refs as tables
from mssql_cdc.tables import writes as table_writes
from tests.spark.support import spec_columns as spec


def described(spark: SparkSession, sql_name: str) -> list[tuple[str, str, str | None]]:
    """(name, type, comment) of every column, as Spark reports them."""
    return [
        (f.name, f.dataType.simpleString(), f.metadata.get("comment"))
        for f in spark.table(sql_name).schema.fields
    ]


def detail(spark: SparkSession, sql_name: str) -> tuple[dict[str, str], str]:
    row = spark.sql(f"DESCRIBE DETAIL {sql_name}").collect()[0]
    return dict(row["properties"]), row["description"]


STREAM_DDL = (
    "_capture_instance STRING, _start_lsn STRING, _seqval STRING, _operation INT, "
    "_command_id INT, _commit_ts TIMESTAMP_NTZ, id INT, name STRING, amount DECIMAL(18,2)"
)


def test_every_kind_is_created_typed_commented_and_stamped(
    spark: SparkSession, table_dir: Path
) -> None:
    facts = tables.ensure_table(spark, str(table_dir / "facts"), "facts")
    spark.sql("CREATE DATABASE IF NOT EXISTS ops")
    control = tables.ensure_table(spark, "ops.control_created", "control")
    bronze = tables.ensure_table(
        spark, str(table_dir / "bronze"), "bronze", source_schema=StructType.fromDDL(STREAM_DDL)
    )

    silver = tables.ensure_table(
        spark, str(table_dir / "silver"), "silver", source_schema=StructType.fromDDL(STREAM_DDL)
    )
    assert facts.created
    assert control.created
    assert bronze.created
    for handle, expected, kind in (
        (facts, spec.FACTS, "facts"),
        (control, spec.CONTROL, "control"),
        (
            bronze,
            [
                *spec.BRONZE_OUTPUT,
                ("id", "int"),
                ("name", "string"),
                ("amount", "decimal(18,2)"),
                *spec.BRONZE_ADDED,
            ],
            "bronze",
        ),
        (
            silver,
            [
                ("id", "int"),
                ("name", "string"),
                ("amount", "decimal(18,2)"),
                ("_start_lsn", "string"),
                ("_commit_ts", "timestamp_ntz"),
            ],
            "silver",
        ),
    ):
        columns = described(spark, handle.ref.sql)
        assert [(name, kind_) for name, kind_, _ in columns] == expected
        library = [c for c in columns if kind not in ("bronze", "silver") or c[0].startswith("_")]
        assert all(comment for _, _, comment in library), library
        properties, table_comment = detail(spark, handle.ref.sql)
        assert properties["mssql_cdc.kind"] == kind
        assert properties["mssql_cdc.schema_version"] == str(spec.MIGRATION_COUNTS[kind])
        assert handle.version == spec.MIGRATION_COUNTS[kind]
        assert table_comment.startswith(f"mssql_cdc {kind}")
    captured = [c for c in described(spark, bronze.ref.sql) if not c[0].startswith("_")]
    assert [comment for _, _, comment in captured] == [None, None, None]
    assert "delta.columnMapping.mode" not in detail(spark, bronze.ref.sql)[0]


def test_bronze_without_command_id_and_with_a_spaced_column_uses_column_mapping(
    spark: SparkSession, table_dir: Path
) -> None:
    schema = StructType.fromDDL(
        "_capture_instance STRING, _start_lsn STRING, _seqval STRING, _operation INT, "
        "_commit_ts TIMESTAMP_NTZ, `order id` INT"
    )
    handle = tables.ensure_table(spark, str(table_dir / "spaced"), "bronze", source_schema=schema)
    names = [name for name, _, _ in described(spark, handle.ref.sql)]
    assert names == [
        "_capture_instance",
        "_start_lsn",
        "_seqval",
        "_operation",
        "_commit_ts",
        "order id",
        "_batch_id",
        "_snapshot",
        "_chunk",
    ]
    assert detail(spark, handle.ref.sql)[0]["delta.columnMapping.mode"] == "name"


def test_opening_a_table_as_another_kind_names_both_kinds(
    spark: SparkSession, table_dir: Path
) -> None:
    facts = str(table_dir / "facts")
    tables.ensure_table(spark, facts, "facts")
    with pytest.raises(ValueError, match=r"expected a control table .* kind 'facts'"):
        tables.ensure_table(spark, facts, "control")
    plain = str(table_dir / "plain")
    spark.range(1).write.format("delta").save(plain)
    with pytest.raises(ValueError, match=r"no mssql_cdc\.kind property"):
        tables.open_for_read(spark, plain, "facts")
    assert tables.open_for_read(spark, str(table_dir / "missing"), "facts") is None


def test_two_writers_creating_one_table_end_with_one_table(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "raced")
    handles: list[tables.TableHandle] = []
    errors: list[BaseException] = []

    def create() -> None:
        try:
            handles.append(tables.ensure_table(spark, path, "control"))
        except BaseException as exc:  # noqa: BLE001 - the test reports it below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(handles) == 2
    history = DeltaTable.forPath(spark, path).history().collect()
    assert [row["operation"] for row in history] == ["CREATE TABLE"]


def test_a_writer_that_finds_another_writers_log_folder_before_its_commit_uses_that_table(
    spark: SparkSession, table_dir: Path
) -> None:
    # The other writer's moment between creating `_delta_log` and committing version 0, where
    # Delta calls the location non-empty and not a Delta table: made deterministic here.
    path = table_dir / "raced"
    (path / "_delta_log").mkdir(parents=True)
    elsewhere = table_dir / "elsewhere"
    tables.ensure_table(spark, str(elsewhere), "control")
    first_commit = elsewhere / "_delta_log" / "00000000000000000000.json"

    def commit_later() -> None:
        threading.Event().wait(1.0)
        staged = path / "_delta_log" / "staged.tmp"
        staged.write_bytes(first_commit.read_bytes())
        staged.rename(path / "_delta_log" / first_commit.name)

    thread = threading.Thread(target=commit_later)
    thread.start()
    handle = tables.ensure_table(spark, str(path), "control")
    thread.join()
    assert not handle.created
    history = DeltaTable.forPath(spark, str(path)).history().collect()
    assert [row["operation"] for row in history] == ["CREATE TABLE"]


def test_a_location_with_files_but_no_delta_table_is_refused_and_left_alone(
    spark: SparkSession, table_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = table_dir / "occupied"
    path.mkdir(parents=True)
    (path / "notes.csv").write_text("a,b\n1,2\n")
    with monkeypatch.context() as no_clock:  # no log folder: refused without waiting for one
        no_clock.setattr(tables, "time", _NoWaiting())
        with pytest.raises(ValueError, match=r"occupied: the location holds files but no Delta"):
            tables.ensure_table(spark, str(path), "control")
    monkeypatch.setattr(tables, "_CREATION_WAIT_SECONDS", 0.5)
    assert sorted(p.name for p in path.iterdir()) == ["notes.csv"]
    assert (path / "notes.csv").read_text() == "a,b\n1,2\n"
    abandoned = table_dir / "abandoned"  # a creator died after making its log folder
    (abandoned / "_delta_log").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"abandoned: the location holds files but no Delta"):
        tables.ensure_table(spark, str(abandoned), "control")
    assert [p.name for p in abandoned.iterdir()] == ["_delta_log"]


class _NoWaiting:
    """A clock that fails the test when asked: the caller was not meant to wait."""

    def monotonic(self) -> float:
        raise AssertionError("ensure_table waited for a table nobody was creating")

    def sleep(self, seconds: float) -> None:
        raise AssertionError("ensure_table waited for a table nobody was creating")


def test_an_idempotent_append_commits_once_per_key_by_path_and_by_name(
    spark: SparkSession, table_dir: Path
) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS ops")
    for ref in (str(table_dir / "appended"), "ops.appended"):
        tables.ensure_table(spark, ref, "control")
        row = spark.createDataFrame([("t",)], "table_name STRING")
        for _ in range(2):
            table_writes.append_idempotent(row, ref, "orders#events", 1, {"k": 1})
        table_writes.append_idempotent(row, ref, "orders#events", 0)  # an older version: skipped
        handle = tables.open_for_read(spark, ref, "control")
        assert handle is not None
        assert spark.table(handle.ref.sql).count() == 1
        history = spark.sql(f"DESCRIBE HISTORY {handle.ref.sql}").collect()
        assert [r["operation"] for r in history] == ["WRITE", "CREATE TABLE"]
        assert history[0]["userMetadata"] == '{"k":1}'


def test_a_table_created_by_sql_matches_one_the_deltatable_builder_created(
    spark: SparkSession, table_dir: Path
) -> None:
    # The builder is how tables were created before decision 0810; both must come out the same.
    odd = StructType.fromDDL("`order id` BIGINT, name STRING")
    old = str(table_dir / "built")
    builder = DeltaTable.createIfNotExists(spark).location(old)
    builder = builder.addColumn("order id", "BIGINT", nullable=True)
    builder = builder.addColumn("name", "STRING", nullable=True)
    builder = builder.addColumn(
        "_start_lsn",
        "STRING",
        nullable=True,
        comment="LSN of the row's current image; the snapshot's LSN if unchanged since",
    )
    builder = builder.addColumn(
        "_commit_ts", "TIMESTAMP_NTZ", nullable=True, comment="Commit time of _start_lsn, UTC"
    )
    builder = builder.comment("mssql_cdc silver: the current row of each key of one source table")
    builder = builder.property("mssql_cdc.kind", "silver")
    builder = builder.property("mssql_cdc.schema_version", "0")
    builder.property("delta.columnMapping.mode", "name").execute()
    new = tables.ensure_table(spark, str(table_dir / "by_sql"), "silver", source_schema=odd)
    assert new.created
    expected_columns = [
        ("order id", "bigint", True, None),
        ("name", "string", True, None),
        (
            "_start_lsn",
            "string",
            True,
            "LSN of the row's current image; the snapshot's LSN if unchanged since",
        ),
        ("_commit_ts", "timestamp_ntz", True, "Commit time of _start_lsn, UTC"),
    ]
    expected_properties = {
        "delta.columnMapping.maxColumnId": "4",
        "delta.columnMapping.mode": "name",
        "mssql_cdc.kind": "silver",
        "mssql_cdc.schema_version": "0",
    }
    for sql_name in (f"delta.`{old}`", new.ref.sql):
        columns = [
            (f.name, f.dataType.simpleString(), f.nullable, f.metadata.get("comment"))
            for f in spark.table(sql_name).schema.fields
        ]
        assert columns == expected_columns, sql_name
        row = spark.sql(f"DESCRIBE DETAIL {sql_name}").collect()[0]
        assert dict(row["properties"]) == expected_properties, sql_name
        assert row["description"] == (
            "mssql_cdc silver: the current row of each key of one source table"
        )
        assert (row["minReaderVersion"], row["minWriterVersion"]) == (3, 7), sql_name
