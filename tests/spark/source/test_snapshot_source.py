"""The `mssql_cdc_snapshot` batch format through Spark, against the emulator's current rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from mssql_cdc import register
from tests.support import emulator_profile


def read(spark: SparkSession, path: Path, ci: str, **options: str) -> list[dict[str, Any]]:
    register(spark)
    df = (
        spark.read.format("mssql_cdc_snapshot")
        .options(captureInstance=ci, backend="emulator", emulatorPath=str(path))
        .options(**options)
        .load()
    )
    return [r.asDict() for r in df.collect()]


def test_a_snapshot_is_stamped_before_its_read_and_reads_every_row_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "e.db"
    emu = emulator_profile.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.items", {"id": "int", "k": "int", "name": "nvarchar(10)"}, primary_key="id"
    )
    emu.enable_cdc("dbo.items")
    emu.commit(
        [("insert", "dbo.items", {"id": i, "k": i, "name": f"n{i}"}) for i in range(10)]
        + [("insert", "dbo.items", {"id": 10, "k": None, "name": "null key"})],
        at="2026-09-28T14:00:00",
    )
    emulator_profile.wait_for_capture(emu, "2026-09-28T14:00:00")
    stamp_floor = emu.max_lsn()
    emu.commit_before_read(
        [("insert", "dbo.items", {"id": 11, "k": 11, "name": "late"})], at="2026-09-28T14:01:00"
    )
    rows = read(spark, path, "dbo_items", numPartitions="4", snapshotKeys='["k"]')
    late = [r for r in emu.rows("dbo.items") if r["id"] == 11]
    assert late, "the hook committed its row during the read"
    assert sorted((r["id"], r["k"], r["name"]) for r in rows) == sorted(
        (r["id"], r["k"], r["name"]) for r in emu.rows("dbo.items")
    )
    stamps = {r["_start_lsn"] for r in rows}
    assert stamps == {stamp_floor}  # recorded before the read, so the late commit is above it
    emulator_profile.wait_for_capture(emu, "2026-09-28T14:01:00")
    assert emu.max_lsn() > stamp_floor
    assert {(r["_operation"], r["_seqval"], r["_command_id"]) for r in rows} == {(0, None, None)}
    assert {r["_commit_ts"] for r in rows} == {emu.lsn_time(stamp_floor)}


def test_snapshot_partitions_cut_string_and_composite_keys_without_losing_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "e.db"
    emu = emulator_profile.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.pairs", {"a": "nvarchar(5)", "b": "int", "v": "int"}, primary_key=["a", "b"]
    )
    emu.enable_cdc("dbo.pairs")
    emu.commit(
        [("insert", "dbo.pairs", {"a": a, "b": b, "v": 10 * i + b})
         for i, a in enumerate("pqrst") for b in range(3)],
        at="2026-09-28T14:00:00",
    )  # fmt: skip
    expected = sorted((r["a"], r["b"], r["v"]) for r in emu.rows("dbo.pairs"))
    for keys in ('["a"]', '["a", "b"]'):
        rows = read(spark, path, "dbo_pairs", numPartitions="4", snapshotKeys=keys)
        assert sorted((r["a"], r["b"], r["v"]) for r in rows) == expected, keys
    chunked = read(
        spark, path, "dbo_pairs", numPartitions="2", snapshotKeys='["a"]',
        snapshotChunks='[[0, null, "q"], [1, "q", "s"], [2, "s", null]]',
    )  # fmt: skip
    assert sorted((r["a"], r["b"], r["v"]) for r in chunked) == expected
    assert {r["a"]: r["_chunk"] for r in chunked} == {"p": 0, "q": 1, "r": 1, "s": 2, "t": 2}
