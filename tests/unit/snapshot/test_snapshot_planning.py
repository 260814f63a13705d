"""Snapshot partition planning and registration, without a JVM."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql.streaming import datasource as streaming

from mssql_cdc import register
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.formats import CdcDataSource, CdcSnapshotDataSource
from mssql_cdc.source.snapshot_format import CdcSnapshotReader, SnapshotPartition
from mssql_cdc.sqlserver import integer_bounds
from mssql_cdc.sqlserver.metadata import ReadColumn


def items(path: Path) -> Emulator:
    emu = Emulator.create(path)
    emu.create_table("dbo.items", {"id": "int", "k": "int"}, primary_key="id")
    emu.enable_cdc("dbo.items")
    emu.commit(
        [("insert", "dbo.items", {"id": i, "k": i}) for i in range(10)]
        + [("insert", "dbo.items", {"id": 10, "k": None})]
    )
    return emu


def plan(path: Path, n: int, **options: str) -> list[SnapshotPartition]:
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_items", "backend": "emulator", "emulatorPath": str(path)} | options
    )
    reader = CdcSnapshotReader(config, [ReadColumn("id", "INT"), ReadColumn("k", "INT")], n)
    parts = list(reader.partitions())
    assert all(isinstance(p, SnapshotPartition) for p in parts)
    return parts  # type: ignore[return-value]


def test_integer_bounds_follow_the_formula_and_drop_duplicates() -> None:
    assert integer_bounds(0, 9, 4) == [2, 5, 7]  # 0 + floor(i * 10 / 4)
    assert integer_bounds(5, 6, 4) == [6]
    assert integer_bounds(3, 3, 4) == []


def test_an_integer_key_is_cut_at_its_bounds_and_the_stamp_is_recorded_first(
    tmp_path: Path,
) -> None:
    emu = items(tmp_path / "e.db")
    parts = plan(tmp_path / "e.db", 4, snapshotKeys='["k"]')
    assert [p.ranges for p in parts] == [
        ((None, None, 2),),
        ((None, 2, 5),),
        ((None, 5, 7),),
        ((None, 7, None),),
    ]
    assert {p.stamp_lsn for p in parts} == {emu.max_lsn()}
    assert [p.ranges for p in plan(tmp_path / "e.db", 1)] == [((None, None, None),)]
    chunks = plan(tmp_path / "e.db", 2, snapshotChunks="[[0, null, 3], [1, 3, 6], [2, 6, null]]")
    assert [p.ranges for p in chunks] == [((0, None, 3), (2, 6, None)), ((1, 3, 6),)]


class Conf(dict[str, str]):
    def set(self, key: str, value: str) -> None:
        self[key] = value


def explained(splits: int) -> Any:
    """`spark.sql("EXPLAIN SELECT id FROM range(1)")` of a session with that parallelism."""
    plan = f"== Physical Plan ==\n*(1) Range (0, 1, step=1, splits={splits})\n\n"
    return lambda _text: SimpleNamespace(collect=lambda: [(plan,)])


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, "(?i)url|(?i)connectionString|(?i)password|(?i)accessToken"),  # default: url
        ("(?i)url|token", "(?i)url|token|(?i)connectionString|(?i)password|(?i)accessToken"),
        (
            "(?i)url|connectionstring|password|accesstoken",
            "(?i)url|connectionstring|password|accesstoken",
        ),  # covered: left alone
        ("(?i)url|connectionstring", "(?i)url|connectionstring|(?i)password|(?i)accessToken"),
        ("", "(?i)connectionString|(?i)password|(?i)accessToken"),
    ],
)
def test_register_extends_the_redaction_pattern_to_cover_connection_strings(
    before: str | None, after: str
) -> None:
    conf = Conf() if before is None else Conf({"spark.sql.redaction.options.regex": before})
    spark = SimpleNamespace(
        sql=explained(1),
        dataSource=SimpleNamespace(register=lambda _c: None),
        conf=conf,
    )
    register(spark)
    assert conf["spark.sql.redaction.options.regex"] == after


def test_register_stores_parallelism_and_refuses_an_older_pyspark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered: list[Any] = []
    spark = SimpleNamespace(
        sql=explained(3),
        dataSource=SimpleNamespace(register=registered.append),
        conf=Conf(),
    )
    register(spark)
    assert [c.name() for c in registered] == ["mssql_cdc", "mssql_cdc_snapshot"]
    assert [c.default_num_partitions for c in registered] == [3, 3]
    assert CdcDataSource.default_num_partitions == CdcSnapshotDataSource.default_num_partitions == 3
    monkeypatch.delattr(streaming, "ReadMaxRows")
    with pytest.raises(ImportError, match=r"PySpark 4\.2.*ReadMaxRows"):
        register(spark)


def test_schema_is_inferred_at_load_and_a_bad_zone_fails_there(tmp_path: Path) -> None:
    items(tmp_path / "e.db")
    path = str(tmp_path / "e.db")
    options = {"captureInstance": "DBO_ITEMS", "backend": "emulator", "emulatorPath": path}
    stream = CdcDataSource(options).schema()
    assert stream.simpleString() == (
        "struct<_capture_instance:string,_start_lsn:string,_seqval:string,_operation:int,"
        "_command_id:int,_commit_ts:timestamp_ntz,id:int,k:int>"
    )
    # each captured column carries its SQL type; the library's columns carry none
    assert [f.metadata for f in stream.fields] == [{}] * 6 + [{"mssql_cdc.sql_type": "int"}] * 2
    snapshot = CdcSnapshotDataSource(
        options | {"includeCommandId": "false", "snapshotChunks": "[[0, null, null]]"}
    ).schema()
    assert snapshot.simpleString() == (
        "struct<_capture_instance:string,_start_lsn:string,_seqval:string,_operation:int,"
        "_commit_ts:timestamp_ntz,id:int,k:int,_chunk:int>"
    )
    with pytest.raises(ConfigError, match="sourceTimeZone"):
        CdcDataSource(options | {"sourceTimeZone": "Mars/Olympus"}).schema()
    with pytest.raises(ConfigError, match="dbo_items"):
        CdcDataSource(options | {"captureInstance": "nope"}).schema()
