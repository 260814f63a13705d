"""Verdicts in a real control table: monotonic, idempotent, safe under concurrent writers."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from mssql_cdc import finalization


def offset(commit_ts: str, lsn: str = "0x0000002A000001F00003") -> finalization.Offset:
    return {"lsn": lsn, "commit_ts": commit_ts}


def commits(spark: SparkSession, path: str) -> int:
    return len(DeltaTable.forPath(spark, path).history().collect())


def test_advance_is_monotonic_and_a_repeat_is_a_no_op(spark: SparkSession, table_dir: Path) -> None:
    control = str(table_dir / "control")
    assert finalization.finalized_until(spark, control, "bronze.orders") is None
    assert finalization.advance(spark, control, "bronze.orders", None) is None
    assert finalization.advance(spark, control, "bronze.orders", offset("")) is None

    first = finalization.advance(spark, control, "bronze.orders", offset("2026-10-01T15:37:05.000"))
    assert first == datetime(2026, 10, 1, 15)
    after_first = commits(spark, control)
    assert (
        finalization.advance(spark, control, "bronze.orders", offset("2026-10-01T15:59:00.000"))
        == first
    )
    older = '{"lsn": "0x00000029000000010001", "commit_ts": "2026-10-01T14:10:00.000"}'
    assert finalization.advance(spark, control, "bronze.orders", older) == first
    assert commits(spark, control) == after_first  # neither call wrote anything

    stored = spark.read.format("delta").load(control).collect()
    assert [(r["table_name"], r["end_lsn"], r["end_commit_ts"]) for r in stored] == [
        ("bronze.orders", "0x0000002A000001F00003", datetime(2026, 10, 1, 15, 37, 5))
    ]
    assert finalization.is_final(spark, control, "bronze.orders", datetime(2026, 10, 1, 15))
    assert not finalization.is_final(spark, control, "bronze.orders", datetime(2026, 10, 1, 16))
    # 12:00 at UTC-3 is 15:00 UTC.
    minus3 = timezone(timedelta(hours=-3))
    assert finalization.is_final(
        spark, control, "bronze.orders", datetime(2026, 10, 1, 12, tzinfo=minus3)
    )
    assert not finalization.is_final(spark, control, "other", datetime(2000, 1, 1, tzinfo=UTC))

    later = finalization.advance(
        spark, control, "bronze.orders", offset("2026-10-02T01:00:00.000"), granularity="day"
    )
    assert later == datetime(2026, 10, 2)


def test_candidate_writes_nothing_and_the_next_advance_records_exactly_it(
    spark: SparkSession, table_dir: Path
) -> None:
    control = str(table_dir / "control")
    first = offset("2026-10-01T15:37:05.000")
    assert finalization.candidate(spark, control, "bronze.orders", first) == datetime(
        2026, 10, 1, 15
    )
    assert not (table_dir / "control").exists()  # a missing control table is not created

    assert finalization.advance(spark, control, "bronze.orders", first) == datetime(2026, 10, 1, 15)
    before = commits(spark, control)
    later = offset("2026-10-01T18:05:00.000", lsn="0x0000002B000000100001")
    older = offset("2026-10-01T09:00:00.000", lsn="0x00000029000000010001")
    expected = datetime(2026, 10, 1, 18)
    assert finalization.candidate(spark, control, "bronze.orders", later) == expected
    assert finalization.candidate(spark, control, "bronze.orders", older) == datetime(
        2026, 10, 1, 15
    )
    assert finalization.candidate(spark, control, "bronze.orders", None) == datetime(
        2026, 10, 1, 15
    )
    assert commits(spark, control) == before  # the control table's Delta version is unchanged
    assert finalization.finalized_until(spark, control, "bronze.orders") == datetime(
        2026, 10, 1, 15
    )

    assert finalization.advance(spark, control, "bronze.orders", later) == expected
    assert commits(spark, control) == before + 1
    [row] = finalization.control_rows(spark, control, ["bronze.orders"])
    assert (row.finalized_until, row.end_lsn, row.end_commit_ts) == (
        expected,
        "0x0000002B000000100001",
        datetime(2026, 10, 1, 18, 5),
    )


def test_two_threads_advancing_two_names_both_land(spark: SparkSession, table_dir: Path) -> None:
    control = str(table_dir / "control")
    finalization.advance(spark, control, "seed", offset("2026-10-01T00:00:00.000"))
    errors: list[BaseException] = []

    def run(name: str, ts: str) -> None:
        try:
            finalization.advance(spark, control, name, offset(ts), granularity="minute")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=("bronze.a", "2026-10-01T10:11:12.000")),
        threading.Thread(target=run, args=("bronze.b", "2026-10-01T20:21:22.000")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    verdicts = {
        r["table_name"]: r["finalized_until"]
        for r in spark.read.format("delta").load(control).collect()
    }
    assert verdicts == {
        "seed": datetime(2026, 10, 1),
        "bronze.a": datetime(2026, 10, 1, 10, 11),
        "bronze.b": datetime(2026, 10, 1, 20, 21),
    }
