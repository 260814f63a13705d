"""apply_changes against hand-built bronze and facts tables, checked by plain-Python oracles."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.silver import apply_changes
from mssql_cdc.silver import table_state as table_state_module
from mssql_cdc.silver.table_state import TableState, table_state
from mssql_cdc.tables.reference import TableOutOfReach
from mssql_cdc.tables.refs import table_ref
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.silver_builder import (
    SourceTable,
    latest,
    lsn_text,
    random_commits,
    rebuild_oracle,
)


def apply(src: SourceTable, keys_override: list[str] | None = None, **extra: object):  # type: ignore[no-untyped-def]
    return apply_changes(
        src.spark,
        src.bronze,
        src.silver,
        keys=keys_override or ["id"],
        control_table=src.control,
        facts_table=src.facts,
        **extra,  # type: ignore[arg-type]
    )


def test_silver_equals_the_latest_image_of_every_key(spark: SparkSession, tmp_path: Path) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(18)
    for round_ in range(3):
        random_commits(src, rng, 25)
        src.flush(rng)
        result = apply(src)
        assert result["bronze_found"] is True
        assert result["rebuilt"] is False
        rows = src.bronze_rows()
        assert result["applied_lsn"] == max(r["_start_lsn"] for r in rows), round_
        assert src.silver_rows() == latest(rows) == src.rows, round_
    assert any(r["id"] is None for r in src.bronze_rows())  # a NULL key was exercised
    assert any(r["_operation"] == 3 for r in src.bronze_rows())

    version = src.silver_version()
    src.bronze_verdict(datetime(2026, 11, 1, 5), result["applied_lsn"])
    again = apply(src)
    assert src.silver_version() == version  # nothing new in bronze: no silver commit
    assert again["applied_lsn"] == result["applied_lsn"]
    assert again["finalized_until"] == datetime(2026, 11, 1, 5)  # copied from bronze's
    src.bronze_verdict(datetime(2026, 11, 1, 3), result["applied_lsn"])
    assert apply(src)["finalized_until"] == datetime(2026, 11, 1, 5)  # never moves back


FULL_RESNAPSHOT = {"mode": "full", "kind": "resnapshot", "generation": 1}


def bootstrap(src: SourceTable, rng: random.Random) -> str:
    """Rows that predate the stream, a bootstrap snapshot of them, then captured changes."""
    random_commits(src, rng, 8, captured=False)
    lsn = src.whole_snapshot()
    src.event("bootstrap", lsn, rows=len(src.rows))
    random_commits(src, rng, 8)
    src.flush(rng)
    return lsn


def test_silver_rebuilds_after_a_resnapshot_and_forgets_keys_deleted_in_the_gap(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(3)
    first = bootstrap(src, rng)
    result = apply(src)
    assert result["rebuilt"] is True
    assert src.silver_rows() == rebuild_oracle(src.bronze_rows(), first) == src.rows

    victim = 100  # random_commits never inserts a key this high, so it cannot come back
    with src.commit() as tx:
        tx.insert({"id": victim, "name": "victim", "qty": 0})
    src.flush(rng)
    apply(src)
    assert victim in src.silver_rows()
    with src.commit(captured=False) as tx:  # purged by CDC cleanup: no delete row in bronze
        tx.delete(victim)
    random_commits(src, rng, 6, captured=False)
    second = src.whole_snapshot()
    src.event("resnapshot", second, rows=len(src.rows))
    random_commits(src, rng, 6)
    src.flush(rng)
    result = apply(src)
    assert result["rebuilt"] is True
    assert victim not in src.silver_rows()
    assert src.silver_rows() == rebuild_oracle(src.bronze_rows(), second) == src.rows
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    version = src.silver_version()
    assert apply(src)["rebuilt"] is False
    assert src.silver_version() == version

    with src.commit(captured=False) as tx:  # the table is emptied inside another gap
        for key in list(src.rows):
            tx.delete(key)
    emptied = src.whole_snapshot()  # no rows: the event is the snapshot's only trace
    src.event("resnapshot", emptied, rows=0)
    result = apply(src)
    assert result["rebuilt"] is True
    assert result["applied_lsn"] == emptied
    assert src.silver_rows() == {} == src.rows
    assert apply(src)["rebuilt"] is False


def test_a_failed_resnapshot_attempt_does_not_rebuild_but_the_next_one_does(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(5)
    bootstrap(src, rng)
    apply(src)
    before = src.silver_rows()

    random_commits(src, rng, 6, captured=False)
    failed = src.whole_snapshot()  # its own LSN was purged during the read: no event
    src.event("snapshot_open", failed, detail=FULL_RESNAPSHOT)
    assert apply(src)["rebuilt"] is False
    assert src.silver_rows() == before != src.rows

    random_commits(src, rng, 4, captured=False)
    good = src.whole_snapshot()
    src.event("snapshot_open", good, detail={**FULL_RESNAPSHOT, "generation": 2})
    src.event("resnapshot", good, rows=len(src.rows))
    result = apply(src)
    assert result["rebuilt"] is True
    assert src.silver_rows() == rebuild_oracle(src.bronze_rows(), good) == src.rows

    random_commits(src, rng, 4, captured=False)
    by_hand = src.whole_snapshot()  # snapshot(target) taken by hand: no open row, counts
    result = apply(src)
    assert result["rebuilt"] is True
    assert result["applied_lsn"] == by_hand
    assert src.silver_rows() == src.rows


def test_a_crash_after_the_merge_is_finished_by_the_next_call(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(11)
    bootstrap(src, rng)
    doomed = 100
    with src.commit() as tx:
        tx.insert({"id": doomed, "name": "doomed", "qty": 0})
    src.flush(rng)
    applied = apply(src)["applied_lsn"]
    assert applied is not None
    assert doomed in src.silver_rows()
    random_commits(src, rng, 12)
    with src.commit() as tx:
        tx.delete(doomed)
    src.flush(rng)
    with failpoints({"silver.after_merge": "raise"}), pytest.raises(InjectedFault):
        apply(src)
    assert src.silver_rows() == src.rows  # the MERGE landed; the position did not move

    with src.commit() as tx:  # the deleted key comes back, then goes again, before the rerun
        tx.insert({"id": doomed, "name": "back", "qty": 1})
    with src.commit() as tx:
        tx.delete(doomed)
    random_commits(src, rng, 5)
    src.flush(rng)
    result = apply(src)
    assert result["rebuilt"] is False
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows()) > applied
    assert src.silver_rows() == latest_after_bootstrap(src) == src.rows
    assert doomed not in src.silver_rows()


def operations(table: str, spark: SparkSession) -> list[str]:
    """The Delta operations of `table`, oldest first."""
    history = DeltaTable.forPath(spark, table).history().orderBy("version")
    return [r["operation"] for r in history.select("operation").collect()]


def control_row_count(src: SourceTable) -> int:
    return (
        src.spark.read.format("delta")
        .load(src.control)
        .where(F.col("table_name") == src.silver)
        .count()
    )


def test_an_empty_silver_is_written_by_one_append_and_a_crash_after_it_is_finished_by_the_next_call(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path / "changes"))
    rng = random.Random(23)
    random_commits(src, rng, 20)
    src.flush(rng)
    with failpoints({"silver.after_merge": "raise"}), pytest.raises(InjectedFault):
        apply(src)
    assert src.silver_rows() == latest(src.bronze_rows()) == src.rows  # the append landed
    assert operations(src.silver, spark) == ["CREATE TABLE", "WRITE"]
    assert not DeltaTable.isDeltaTable(spark, src.control)  # no position: it comes after

    random_commits(src, rng, 8)  # more changes, also to keys the crashed call wrote
    src.flush(rng)
    result = apply(src)  # silver holds rows now: a MERGE under the newer-image rule
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    assert src.silver_rows() == latest(src.bronze_rows()) == src.rows  # no key twice
    assert operations(src.silver, spark)[-1] == "MERGE"
    random_commits(src, rng, 4)
    src.flush(rng)
    assert apply(src)["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    assert src.silver_rows() == latest(src.bronze_rows()) == src.rows
    assert control_row_count(src) == 1  # appended by the first position, then updated

    rebuilt = SourceTable(spark, str(tmp_path / "rebuild"))
    snapshot = bootstrap(rebuilt, rng)
    with failpoints({"silver.after_merge": "raise"}), pytest.raises(InjectedFault):
        apply(rebuilt)
    assert rebuilt.silver_rows() == rebuild_oracle(rebuilt.bronze_rows(), snapshot) == rebuilt.rows
    assert operations(rebuilt.silver, spark) == ["CREATE TABLE", "WRITE"]
    random_commits(rebuilt, rng, 6)
    rebuilt.flush(rng)
    result = apply(rebuilt)  # the position was not recorded: rebuilt again, by a MERGE
    assert result["rebuilt"] is True
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in rebuilt.bronze_rows())
    assert rebuilt.silver_rows() == rebuild_oracle(rebuilt.bronze_rows(), snapshot) == rebuilt.rows
    assert operations(rebuilt.silver, spark)[-1] == "MERGE"


KILL_CHILD = """
import sys
from mssql_cdc.spark import local_session
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.silver import apply_changes
from mssql_cdc.silver import table_state as table_state_module
from mssql_cdc.silver.table_state import TableState, table_state
from mssql_cdc.tables.refs import TableRef
spark = local_session("silver-kill-child", warehouse=sys.argv[5])
apply_changes(spark, sys.argv[1], sys.argv[2], keys=["id"], control_table=sys.argv[3],
              facts_table=sys.argv[4])
print("the failpoint did not fire")
"""


def test_a_killed_call_after_the_merge_is_finished_by_the_next_call(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(13)
    bootstrap(src, rng)
    apply(src)
    random_commits(src, rng, 10)
    src.flush(rng)
    version = src.silver_version()
    env = {**os.environ, "MSSQL_CDC_FAILPOINTS": "silver.after_merge=kill"}
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            KILL_CHILD,
            src.bronze,
            src.silver,
            src.control,
            src.facts,
            str(tmp_path / "child"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert child.returncode == 137, child.stdout + child.stderr[-2000:]
    assert src.silver_version() == version + 1  # the MERGE committed before the kill
    random_commits(src, rng, 4)
    src.flush(rng)
    result = apply(src)
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    assert src.silver_rows() == latest_after_bootstrap(src) == src.rows


def latest_after_bootstrap(src: SourceTable) -> dict[object, dict[str, object]]:
    rows = src.bronze_rows()
    snapshot = max(r["_snapshot"] for r in rows if r["_operation"] == 0)
    return rebuild_oracle(rows, snapshot)


def test_a_missing_bronze_is_reported_and_nothing_is_created(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = tmp_path / "nothing"
    result = apply_changes(
        spark,
        str(root / "bronze"),
        str(root / "silver"),
        keys=["id"],
        control_table=str(root / "control"),
        facts_table=str(root / "facts"),
    )
    assert result == {
        "rebuilt": False,
        "applied_lsn": None,
        "finalized_until": None,
        "bronze_found": False,
    }
    assert not root.exists()


def test_silver_applies_open_waves_and_holds_the_verdict_until_completion(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(17)
    random_commits(src, rng, 10, captured=False)  # rows that predate the stream
    with src.commit(captured=False) as tx:
        tx.insert({"id": 100, "name": "untouched", "qty": 1})
        tx.insert({"id": 101, "name": "doomed", "qty": 2})
    opened = lsn_text(src.take_lsn())  # the stream starts at S; backfill() reads the chunks
    src.event("snapshot_open", opened, detail={"mode": "chunked", "kind": "bootstrap"})
    random_commits(src, rng, 8)
    src.flush(rng)
    stamp = src.chunk_rows(opened, 0, None, 150)  # keys below 150, NULL included, read at L
    src.event("snapshot_chunk", lsn_text(stamp), detail=chunk_detail(opened, 0, 0))
    with src.commit() as tx:  # deleted after its chunk's stamp: must stay deleted
        tx.delete(101)
    random_commits(src, rng, 4)
    src.flush(rng)
    src.bronze_verdict(datetime(2026, 11, 1, 6), opened)

    result = apply(src)
    assert result["rebuilt"] is False
    assert result["finalized_until"] is None  # held while the snapshot is open
    silver = src.silver_rows()
    assert silver[100] == {"id": 100, "name": "untouched", "qty": 1}  # from the wave
    assert 101 not in silver
    assert silver == latest(src.bronze_rows())  # changes and wave 0, in apply order

    stamp = src.chunk_rows(opened, 1, 150, None)  # the last chunk, empty, in wave 1
    src.event("snapshot_chunk", lsn_text(stamp), detail=chunk_detail(opened, 1, 1, last=True))
    src.event("bootstrap", opened, rows=len(src.rows))
    random_commits(src, rng, 4)
    src.flush(rng)
    result = apply(src)
    assert result["rebuilt"] is True
    assert result["finalized_until"] == datetime(2026, 11, 1, 6)
    assert src.silver_rows() == rebuild_oracle(src.bronze_rows(), opened) == src.rows
    with pytest.raises(ValueError, match=r"holds chunked snapshot rows.*pass facts_table"):
        apply_changes(spark, src.bronze, src.silver, keys=["id"], control_table=src.control)


def chunk_detail(snapshot: str, chunk: int, wave: int, *, last: bool = False) -> dict[str, object]:
    return {
        "snapshot": snapshot,
        "chunk": chunk,
        "wave": wave,
        "lo": None,
        "hi": None,
        "last": last,
    }


def test_bronze_columns_and_capture_instances_are_checked_and_new_columns_reach_silver(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path), ci="dbo_orders_v2")
    with src.commit() as tx:
        tx.insert({"id": 1, "name": "a", "qty": 1})
    src.flush()
    with pytest.raises(ValueError, match="key column 'nope' is not in bronze"):
        apply(src, keys_override=["nope"])
    with pytest.raises(ValueError, match=r"capture instance 'dbo_orders_v2'.*dbo_other"):
        apply(src, capture_instance="dbo_other")
    assert apply(src, capture_instance="DBO_ORDERS_V2")["applied_lsn"] is not None
    assert spark.read.format("delta").load(src.silver).columns[-1] == "_commit_ts"
    src.event(
        "capture_instance_switched",
        "0x00000000000000000001",
        detail={"old": "dbo_orders", "new": "DBO_ORDERS_V2", "uncaptured": []},
    )

    row = src.bronze_rows()[0]
    gained = spark.createDataFrame(
        [(*[row[c] for c in src.spark.read.format("delta").load(src.bronze).columns], "late")],
        src.spark.read.format("delta").load(src.bronze).schema.add("note", "string"),
    ).withColumn("_start_lsn", F.lit("0x00000000000000000FFF"))
    gained.write.format("delta").mode("append").option("mergeSchema", "true").save(src.bronze)
    assert apply(src, capture_instance="dbo_orders")["bronze_found"] is True  # v2 follows it
    silver = spark.read.format("delta").load(src.silver)
    assert silver.columns[-1] == "note"
    assert [r.asDict() for r in silver.select("id", "name", "note").collect()] == [
        {"id": 1, "name": "a", "note": "late"}
    ]

    other = SourceTable(spark, str(tmp_path / "retyped"))
    with other.commit() as tx:
        tx.insert({"id": 1, "name": "a", "qty": 1})
    other.flush()
    builder = DeltaTable.createIfNotExists(spark).location(other.silver)
    for name, sql_type in (("id", "INT"), ("name", "STRING"), ("qty", "STRING")):
        builder = builder.addColumn(name, sql_type)
    builder.addColumn("_start_lsn", "STRING").addColumn("_commit_ts", "TIMESTAMP_NTZ").property(
        "mssql_cdc.kind", "silver"
    ).execute()
    with pytest.raises(SchemaChangedError, match="column qty is string in silver but int"):
        apply(other)


def test_the_table_state_read_from_delta_s_log_equals_the_public_commands_answer(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "t")
    DeltaTable.createIfNotExists(spark).location(path).addColumn("id", "BIGINT").execute()
    ref = table_ref(path)
    assert table_state(spark, ref) == TableState(version=0, files=0)
    for rows in ([(1,), (2,)], [(3,)]):  # one file each
        one_file = spark.createDataFrame(rows, "id BIGINT").coalesce(1)
        one_file.write.format("delta").mode("append").save(path)
    direct = table_state(spark, ref)
    assert direct == TableState(version=2, files=2)

    def out_of_reach(*_: object, **__: object) -> TableState:
        raise TableOutOfReach("as a location only Spark reads")

    monkeypatch.setattr(table_state_module, "newest_version", out_of_reach)
    assert table_state(spark, ref) == direct  # DESCRIBE HISTORY and DESCRIBE DETAIL agree
