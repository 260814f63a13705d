"""The apply order's ties and LSN widths, through apply_changes into an empty and a filled silver.

The oracle orders rows by the LSNs and seqvals as integers, not as the text bronze holds, so a
ranking that compared an encoding of them wrongly (a lost high byte, a carry into the last byte,
seqvals compared before command ids) would pick another winner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from mssql_cdc.silver import apply_changes
from tests.spark.support.silver_builder import (
    BRONZE_COLUMNS,
    CAPTURED,
    T0,
    create,
    lsn_text,
    schema,
)

TOP = (1 << 80) - 1  # the largest LSN: ten bytes of 0xFF


def change(key: int, lsn: int, seq: int, op: int, name: str, cmd: int | None = 1) -> dict[str, Any]:
    return {
        "_capture_instance": "dbo_orders",
        "_start_lsn": lsn_text(lsn),
        "_seqval": lsn_text(seq),
        "_operation": op,
        "_command_id": cmd,
        "_commit_ts": T0,
        "id": key,
        "name": name,
        "qty": lsn % 1000,
        "_batch_id": 0,
        "_snapshot": None,
        "_chunk": None,
    }


def ties(base: int) -> list[dict[str, Any]]:
    """Per key, rows whose winner only the full order finds; each key's winner is named 'win'.

    `base` shifts every LSN and key, so a second batch repeats the cases above the first.
    """
    k, high = base // (1 << 60), base
    return [
        # LSNs differing in the last byte, across a carry from 0xFF.
        change(k + 1, high + 0x1FF, 1, 2, "lose"),
        change(k + 1, high + 0x200, 1, 4, "win"),
        # LSNs differing only in their high bytes; the lower one has the larger low bytes.
        change(k + 2, high + (1 << 64) + 0xFFFF, 1, 2, "lose"),
        change(k + 2, high + (2 << 64), 1, 4, "win"),
        # One LSN: command id decides before seqval.
        change(k + 3, high + 0x300, 0x900, 2, "lose", cmd=1),
        change(k + 3, high + 0x300, 0x100, 4, "win", cmd=2),
        # One LSN and command: seqvals differing only in their high bytes.
        change(k + 4, high + 0x400, 0x00FF_FFFF_FFFF_FFFF_FFFF, 2, "lose"),
        change(k + 4, high + 0x400, 0x0100_0000_0000_0000_0000, 4, "win"),
        # An update in place: the after-image (4) outranks its before-image (3).
        change(k + 5, high + 0x500, 0x10, 4, "win"),
        change(k + 5, high + 0x500, 0x10, 3, "lose"),
        # An update that moved the row from key 6 to key 7: 6 is gone.
        change(k + 6, high + 0x600, 0x10, 2, "lose"),
        change(k + 6, high + 0x601, 0x10, 3, "lose"),
        change(k + 7, high + 0x601, 0x10, 4, "win"),
        # A NULL command id sorts first.
        change(k + 8, high + 0x800, 0x900, 4, "lose", cmd=None),
        change(k + 8, high + 0x800, 0x100, 4, "win", cmd=0),
        # A delete, then a later insert of the same key.
        change(k + 9, high + 0x900, 1, 1, "lose"),
        change(k + 9, high + 0x901, 1, 2, "win"),
    ]


def integer_order(row: dict[str, Any]) -> tuple[Any, ...]:
    cmd = row["_command_id"]
    return (
        int(row["_start_lsn"], 16),
        (cmd is not None, cmd),
        int(row["_seqval"], 16),
        row["_operation"],
    )


def oracle(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for row in sorted(rows, key=integer_order):
        if row["_operation"] in (1, 3):
            state.pop(row["id"], None)
        else:
            state[row["id"]] = {n: row[n] for n, _ in CAPTURED} | {"_start_lsn": row["_start_lsn"]}
    return state


def append(spark: SparkSession, path: str, rows: list[dict[str, Any]]) -> None:
    names = [n for n, _ in BRONZE_COLUMNS]
    values = [tuple(r[n] for n in names) for r in reversed(rows)]  # winners are written first
    spark.createDataFrame(values, schema(BRONZE_COLUMNS)).write.format("delta").mode("append").save(
        path
    )


def silver(spark: SparkSession, path: str) -> dict[int, dict[str, Any]]:
    rows = spark.read.format("delta").load(path).collect()
    return {r["id"]: {n: r[n] for n in ("id", "name", "qty", "_start_lsn")} for r in rows}


def test_the_latest_image_follows_the_apply_order_across_lsn_bytes_command_ids_and_seqvals(
    spark: SparkSession, tmp_path: Path
) -> None:
    bronze, target, control = (str(tmp_path / n) for n in ("bronze", "silver", "control"))
    create(spark, bronze, BRONZE_COLUMNS, "bronze")
    first = ties(0x10)
    append(spark, bronze, first)
    apply_changes(spark, bronze, target, keys=["id"], control_table=control)  # the append path
    expected = oracle(first)
    assert {v["name"] for v in expected.values()} == {"win"}
    assert sorted(expected) == [1, 2, 3, 4, 5, 7, 8, 9]
    assert silver(spark, target) == expected

    second = ties(TOP - (3 << 64))  # the same cases near the largest LSN, over new keys
    second.append(change(1, TOP, TOP, 4, "win"))
    second.append(change(1, TOP - 1, TOP, 4, "lose"))
    append(spark, bronze, second)
    result = apply_changes(spark, bronze, target, keys=["id"], control_table=control)
    history = DeltaTable.forPath(spark, target).history(1).first()
    assert history is not None
    assert history["operation"] == "MERGE"
    assert result["applied_lsn"] == lsn_text(TOP)
    assert silver(spark, target) == oracle(first + second)
    assert silver(spark, target)[1]["_start_lsn"] == lsn_text(TOP)


def test_an_empty_silver_gets_no_commit_when_every_key_ends_deleted_or_nothing_is_new(
    spark: SparkSession, tmp_path: Path
) -> None:
    skip = "spark.databricks.delta.skipRecordingEmptyCommits"
    bronze = str(tmp_path / "bronze")
    create(spark, bronze, BRONZE_COLUMNS, "bronze")
    append(spark, bronze, [change(1, 0x20, 1, 2, "a"), change(1, 0x21, 1, 1, "a")])
    for setting in ("true", "false"):
        target, control = str(tmp_path / f"silver-{setting}"), str(tmp_path / f"control-{setting}")
        spark.conf.set(skip, setting)
        try:
            first = apply_changes(spark, bronze, target, keys=["id"], control_table=control)
            assert first["applied_lsn"] == lsn_text(0x21)
            assert silver(spark, target) == {}
            version = DeltaTable.forPath(spark, target).history(1).first()["version"]
            again = apply_changes(spark, bronze, target, keys=["id"], control_table=control)
            assert again["applied_lsn"] == lsn_text(0x21)
            assert DeltaTable.forPath(spark, target).history(1).first()["version"] == version
        finally:
            spark.conf.unset(skip)
