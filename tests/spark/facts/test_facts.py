"""Facts and event rows written to a real facts table and read back."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from mssql_cdc.core.events import EventRecord
from mssql_cdc.facts import keys as facts_keys
from mssql_cdc.facts import rows as facts
from mssql_cdc.facts import snapshot_rows as facts_snapshots
from mssql_cdc.tables import refs as tables
from mssql_cdc.tables import writes as table_writes
from tests.spark.support import spec_columns as spec

T0 = datetime(2026, 10, 1, 12, 0, 0, 123_000)
S = "0x0000002A000001F00003"
M = "0x0000002B000000100001"


def txn_actions(path: str) -> list[tuple[str, int]]:
    """Every `txn` action in the Delta log's JSON commits, read as plain files."""
    found = []
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "txn" in action:
                found.append((action["txn"]["appId"], action["txn"]["version"]))
    return found


def test_a_batch_row_and_its_event_rows_land_in_one_commit_once(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "facts")
    tables.ensure_table(spark, path, "facts")
    batch = facts.batch_row(
        app_id="orders",
        generation=1,
        batch_id=5,
        target="bronze.orders",
        aggregates=facts.BatchAggregates(3, S, M, T0, T0 + timedelta(seconds=1), 1, 1, 0),
        metrics=None,
        started_at=T0,
        duration_ms=1500,
        written_at=T0 + timedelta(seconds=2),
    )
    record = EventRecord(
        event="schema_change",
        capture_instance="dbo_orders",
        lsn=M,
        commit_ts="2026-10-01T12:00:01.123",
        detail={"capture_instance": "dbo_orders", "ddl": "ALTER TABLE o ADD c INT"},
        lost_from_ts=None,
        lost_to_ts=None,
        batch_start_lsn=S,
        batch_end_lsn=M,
    )
    event = facts.source_event_row(
        record,
        app_id="orders",
        generation=1,
        batch_id=5,
        target="bronze.orders",
        started_at=T0,
        written_at=T0 + timedelta(seconds=2),
    )
    key = facts_keys.facts_key("orders", 1, 5)
    for _ in range(2):  # a replayed batch offers the same commit again
        facts.append_facts(spark, path, [batch, event], key=key)

    frame = spark.read.format("delta").load(path)
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == spec.FACTS
    rows = sorted(frame.collect(), key=lambda r: r["event"] or "")
    assert [r.asDict() for r in rows] == [
        dict(zip([n for n, _ in spec.FACTS], batch.as_tuple(), strict=True)),
        dict(zip([n for n, _ in spec.FACTS], event.as_tuple(), strict=True)),
    ]
    assert rows[0]["started_at"] == T0  # TIMESTAMP_NTZ keeps the naive UTC value
    assert rows[1]["min_commit_ts"] == datetime(2026, 10, 1, 12, 0, 1, 123_000)
    history = DeltaTable.forPath(spark, path).history().collect()
    assert [h["operation"] for h in history] == ["WRITE", "CREATE TABLE"]
    assert txn_actions(path) == [("orders.g1#facts", 5)]


def test_event_keys_store_a_resnapshot_and_a_chunked_open_once(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "facts")
    tables.ensure_table(spark, path, "facts")
    resnapshot = facts_snapshots.snapshot_completion_row(
        "resnapshot",
        app_id="orders",
        generation=1,
        target="bronze.orders",
        snapshot_lsn=S,
        commit_ts=T0,
        rows=10,
        started_at=T0,
        duration_ms=900,
        written_at=T0,
        lost_from_ts=T0 - timedelta(days=4),
        lost_to_ts=T0 - timedelta(hours=1),
    )
    opened = facts_snapshots.snapshot_open_row(
        app_id="orders",
        target="bronze.orders",
        lsn=S,
        commit_ts=T0,
        detail={
            "mode": "chunked",
            "kind": "resnapshot",
            "generation": 1,
            "lost_from_ts": None,
            "lost_to_ts": None,
            "keys": ["id"],
            "plan": None,
        },
        started_at=T0,
        written_at=T0,
    )
    for _ in range(2):
        facts.append_facts(spark, path, [resnapshot], key=facts_keys.events_key("orders", 1))
        facts.append_facts(spark, path, [opened], key=facts_keys.snapshots_key("orders", 1))

    events = sorted(
        (r["event"], r["app_id"], r["generation"])
        for r in spark.read.format("delta").load(path).collect()
    )
    assert events == [("resnapshot", "orders.g1", 1), ("snapshot_open", "orders.g1", 1)]
    assert sorted(txn_actions(path)) == [("orders#events", 1), ("orders#snapshots", 1)]
    assert table_writes.txn_version(spark, path, "orders#events") == 1
    assert table_writes.txn_version(spark, path, "orders#snapplan.x") is None
    assert table_writes.txn_version(spark, str(table_dir / "missing"), "orders#events") is None


def test_a_facts_table_not_yet_migrated_is_refused_before_writing(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "old_facts")
    columns = ", ".join(f"`{n}` {t.upper()}" for n, t in spec.FACTS_V0)
    spark.sql(
        f"CREATE TABLE delta.`{path}` ({columns}) USING delta "
        "TBLPROPERTIES ('mssql_cdc.kind' = 'facts', 'mssql_cdc.schema_version' = '0')"
    )
    row = facts.FactsRow(app_id="orders", generation=0, event="bootstrap")
    with pytest.raises(ValueError, match="lacks the columns read_seconds, read_mb"):
        facts.append_facts(spark, path, [row], key=facts_keys.events_key("orders", 0))
    assert spark.read.format("delta").load(path).count() == 0


def test_the_stream_family_and_the_last_batch_are_exact_matches(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "facts")
    tables.ensure_table(spark, path, "facts")
    rows = [
        facts.FactsRow(app_id="orders", generation=0, batch_id=4),
        facts.FactsRow(app_id="orders", generation=0, batch_id=7, end_lsn=M),
        facts.FactsRow(app_id="orders", generation=0, batch_id=9, event="schema_change"),
        facts.FactsRow(app_id="orders.g1", generation=1, batch_id=2),
        facts.FactsRow(app_id="orders.g3", generation=0, batch_id=1),  # another stream's name
        facts.FactsRow(app_id="orders.g2", generation=3, batch_id=1),  # not generation 2's id
        facts.FactsRow(app_id="order", generation=0, batch_id=1),
    ]
    facts.append_facts(spark, path, rows, key=None)

    family = spark.read.format("delta").load(path).where(facts.family_condition("orders"))
    assert sorted((r["app_id"], r["batch_id"]) for r in family.collect()) == [
        ("orders", 4),
        ("orders", 7),
        ("orders", 9),
        ("orders.g1", 2),
    ]
    assert facts.last_batch(spark, path, "orders") == (7, M)
    assert facts.last_batch(spark, path, "orders.g5") is None
    assert facts.last_batch(spark, str(table_dir / "none"), "orders") is None
