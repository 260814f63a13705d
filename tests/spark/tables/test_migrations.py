"""Tables in older shapes, created by hand here, are brought to the newest shape on opening."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from mssql_cdc.tables import refs as tables
from mssql_cdc.tables import writes as table_writes
from tests.spark.support import spec_columns as spec

OLD_TABLE_COMMENT = "the table comment of an older library"


def create_by_hand(
    spark: SparkSession,
    path: str,
    kind: str,
    columns: list[tuple[str, str]],
    version: int,
    extra: list[tuple[str, str]] | None = None,
) -> None:
    """A table as an older library left it: plain SQL, every column with an 'old' comment."""
    parts = ", ".join(
        f"`{name}` {type_.upper()} COMMENT 'version 0 text of {name}'"
        for name, type_ in [*columns, *(extra or [])]
    )
    spark.sql(
        f"CREATE TABLE delta.`{path}` ({parts}) USING delta COMMENT '{OLD_TABLE_COMMENT}' "
        f"TBLPROPERTIES ('mssql_cdc.kind' = '{kind}', 'mssql_cdc.schema_version' = '{version}')"
    )


def shape(spark: SparkSession, path: str) -> dict[str, tuple[str, str | None]]:
    return {
        f.name: (f.dataType.simpleString(), f.metadata.get("comment"))
        for f in spark.read.format("delta").load(path).schema.fields
    }


def stored(spark: SparkSession, path: str) -> tuple[str, str]:
    row = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    return row["properties"]["mssql_cdc.schema_version"], row["description"]


CAPTURED = [("id", "int"), ("name", "string")]
BRONZE_V0 = [*spec.BRONZE_OUTPUT, *CAPTURED, ("_batch_id", "bigint")]


@pytest.mark.parametrize(
    ("kind", "version_0", "recommented"),
    [
        ("facts", spec.FACTS_V0, spec.FACTS_RECOMMENTED),
        ("control", spec.CONTROL_V0, spec.CONTROL_RECOMMENTED),
        ("bronze", BRONZE_V0, spec.BRONZE_RECOMMENTED),
    ],
)
def test_a_version_0_table_migrates_to_the_shape_of_a_new_one(
    spark: SparkSession,
    table_dir: Path,
    kind: tables.TableKind,
    version_0: list[tuple[str, str]],
    recommented: set[str],
) -> None:
    old, new = str(table_dir / "old"), str(table_dir / "new")
    create_by_hand(spark, old, kind, version_0, 0)
    schema = StructType.fromDDL(", ".join(f"`{n}` {t}" for n, t in BRONZE_V0[:-1]))
    tables.ensure_table(spark, new, kind, source_schema=schema)

    handle = tables.ensure_table(spark, old, kind)

    assert handle.version == spec.MIGRATION_COUNTS[kind]
    migrated, fresh = shape(spark, old), shape(spark, new)
    assert {n: t for n, (t, _) in migrated.items()} == {n: t for n, (t, _) in fresh.items()}
    untouched = {name for name, _ in version_0} - recommented
    for name, (_, comment) in migrated.items():
        if name in untouched:
            assert comment == f"version 0 text of {name}"
        else:
            assert comment == fresh[name][1], name
    version, table_comment = stored(spark, old)
    assert version == str(spec.MIGRATION_COUNTS[kind])
    if kind == "facts":  # migration 10 gives the facts table its comment
        assert table_comment == stored(spark, new)[1]

    commits = len(DeltaTable.forPath(spark, old).history().collect())
    tables.ensure_table(spark, old, kind)
    assert len(DeltaTable.forPath(spark, old).history().collect()) == commits


def test_a_crash_between_a_migration_and_its_stamp_is_finished_harmlessly(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "crashed")
    # Migrations 1 and 2 stamped, migration 3 applied (event, lost_*), its stamp never written.
    done = [n for n in spec.FACTS if n[0] in {"read_seconds", "read_mb", "retention_watermark_ts"}]
    done += [n for n in spec.FACTS if n[0] in {"retention_headroom_hours", "event"}]
    done += [n for n in spec.FACTS if n[0] in {"lost_from_ts", "lost_to_ts"}]
    create_by_hand(spark, path, "facts", spec.FACTS_V0, 2, extra=done)

    handle = tables.ensure_table(spark, path, "facts")

    assert handle.version == 11
    assert sorted(shape(spark, path)) == sorted(name for name, _ in spec.FACTS)
    assert stored(spark, path)[0] == "11"


def test_a_table_newer_than_the_library_is_used_with_one_warning(
    spark: SparkSession, table_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(table_dir / "newer")
    tables.ensure_table(spark, path, "control")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('mssql_cdc.schema_version' = '4')")

    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        first = tables.ensure_table(spark, path, "control")
        second = tables.ensure_table(spark, path, "control")

    assert (first.version, second.version) == (4, 4)
    newer = [r for r in caplog.records if "newer than this library" in r.getMessage()]
    assert len(newer) == 1
    row = spark.createDataFrame([("t",)], "table_name STRING")
    table_writes.append_idempotent(row, path, "x", 0)
    assert spark.read.format("delta").load(path).count() == 1

    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('mssql_cdc.min_version' = '4')")
    with pytest.raises(ValueError, match="upgrade mssql-cdc"):
        tables.ensure_table(spark, path, "control")


def test_two_writers_migrating_one_table_at_once_both_finish(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "shared")
    create_by_hand(spark, path, "control", spec.CONTROL_V0, 0)
    versions: list[int] = []
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            versions.append(tables.ensure_table(spark, path, "control").version)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [str(e) for e in errors] == []
    assert versions == [3, 3]
    assert sorted(shape(spark, path)) == sorted(name for name, _ in spec.CONTROL)
    assert stored(spark, path)[0] == "3"
