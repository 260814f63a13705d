"""Facts rows, event rows, keys and payloads as plain values, without a JVM."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest

from mssql_cdc.core.events import EventRecord
from mssql_cdc.errors import InternalError
from mssql_cdc.facts import detail_payloads as payloads
from mssql_cdc.facts import keys as facts_keys
from mssql_cdc.facts import rows as facts
from mssql_cdc.facts import snapshot_rows as facts_snapshots
from mssql_cdc.facts.metrics import FoldedMetrics, fold_metrics

SPEC_FACTS_COLUMNS = [
    "app_id", "generation", "batch_id", "rows", "min_lsn", "max_lsn", "min_commit_ts",
    "max_commit_ts", "deletes", "inserts", "updates", "started_at", "duration_ms",
    "read_seconds", "read_mb", "retention_watermark_ts", "retention_headroom_hours", "event",
    "lost_from_ts", "lost_to_ts", "source_max_commit_ts", "capture_lag_seconds",
    "ingestion_lag_seconds", "end_lsn", "end_commit_ts", "detail", "target", "written_at",
]  # fmt: skip

T0 = datetime(2026, 10, 1, 12, 0, 0)
S = "0x0000002A000001F00003"
M = "0x0000002B000000100001"


def test_a_facts_row_holds_the_spec_columns_in_creation_order() -> None:
    assert facts.FactsRow.__dataclass_fields__.keys() == set(SPEC_FACTS_COLUMNS)
    assert list(facts.FactsRow.__dataclass_fields__) == SPEC_FACTS_COLUMNS
    assert [f.name for f in facts.facts_schema().fields] == SPEC_FACTS_COLUMNS


def aggregates(rows: int = 3) -> facts.BatchAggregates:
    return facts.BatchAggregates(
        rows=rows,
        min_lsn=S if rows else None,
        max_lsn=M if rows else None,
        min_commit_ts=T0 - timedelta(minutes=5) if rows else None,
        max_commit_ts=T0 - timedelta(minutes=1) if rows else None,
        deletes=1,
        inserts=1,
        updates=0,
    )


def test_a_batch_row_without_metrics_leaves_every_metric_column_null() -> None:
    row = facts.batch_row(
        app_id="orders", generation=2, batch_id=7, target="bronze.orders",
        aggregates=aggregates(), metrics=None, started_at=T0, duration_ms=1200,
        written_at=T0 + timedelta(seconds=2),
    )  # fmt: skip
    assert (row.app_id, row.generation, row.batch_id, row.event) == ("orders.g2", 2, 7, None)
    assert (row.rows, row.deletes, row.inserts, row.updates) == (3, 1, 1, 0)
    metric_columns = [
        "read_seconds", "read_mb", "retention_watermark_ts", "source_max_commit_ts",
        "capture_lag_seconds", "end_lsn", "end_commit_ts", "detail", "ingestion_lag_seconds",
    ]  # fmt: skip
    assert [getattr(row, c) for c in metric_columns] == [None] * len(metric_columns)
    # E falls back to max_commit_ts, but without a watermark there is no headroom.
    assert row.retention_headroom_hours is None


def test_headroom_and_lags_come_from_the_end_offset_and_round_half_up() -> None:
    end = T0
    watermark = end - timedelta(hours=70, seconds=18)  # 70.005 h: half-up gives 70.01
    source_max = end + timedelta(seconds=12, microseconds=345_500)  # 12.3455 s -> 12.346
    metrics = fold_metrics(
        [
            {"from_lsn": S, "to_lsn": M, "to_commit_ts": "2026-10-01T12:00:00.000", "rows": 3,
             "bytes": 2_500_000, "seconds": 1.5,
             "retention_watermark_ts": payloads.format_time(watermark),
             "source_max_commit_ts": "2026-10-01T12:00:12.3455", "capture_lag_seconds": 0.25},
        ]
    )  # fmt: skip
    row = facts.batch_row(
        app_id="orders", generation=0, batch_id=0, target="t", aggregates=aggregates(0),
        metrics=metrics, started_at=T0, duration_ms=5, written_at=T0,
    )  # fmt: skip
    assert row.retention_headroom_hours == 70.01
    assert row.ingestion_lag_seconds == 12.346
    assert (row.end_lsn, row.end_commit_ts) == (M, end)
    assert row.source_max_commit_ts == source_max
    # The section 4.4 identity: 3600 x headroom + lag = source head - watermark, to rounding.
    head_to_watermark = (source_max - watermark).total_seconds()
    assert (
        abs(3600 * row.retention_headroom_hours + row.ingestion_lag_seconds - head_to_watermark)
        <= 18.001
    )


def test_folding_takes_the_largest_end_sums_reads_and_keeps_distinct_warnings() -> None:
    event = {"event": "data_skipped", "capture_instance": "dbo_orders", "lsn": M,
             "commit_ts": "2026-10-01T11:00:00.000", "detail": {}, "lost_from_ts": None,
             "lost_to_ts": None}  # fmt: skip
    folded = fold_metrics(
        [
            {"to_lsn": "0x00000001000000010001", "to_commit_ts": "2026-10-01T10:00:00.000",
             "bytes": 1_000_000, "seconds": 2.0, "warnings": ["slow", "wide"],
             "retention_watermark_ts": "2026-09-28T10:00:00.000"},
            {"to_lsn": "0x00000002000000010001", "to_commit_ts": "2026-10-01T11:00:00.000",
             "bytes": 500_000, "seconds": 0.5, "warnings": ["wide"], "events": [event],
             "retention_watermark_ts": "2026-09-28T11:00:00.000", "capture_lag_seconds": -1.5},
        ]
    )  # fmt: skip
    assert folded.end_lsn == "0x00000002000000010001"
    assert folded.end_commit_ts == datetime(2026, 10, 1, 11)
    assert (folded.read_seconds, folded.read_mb) == (2.5, 1.5)
    assert folded.retention_watermark_ts == datetime(2026, 9, 28, 11)
    assert folded.capture_lag_seconds == -1.5
    assert folded.warnings == ("slow", "wide")  # the events are core.batch_files' to read
    assert fold_metrics([]) == FoldedMetrics()


def test_a_skip_event_becomes_a_row_of_its_batch_with_the_gap() -> None:
    record = EventRecord(
        event="data_skipped", capture_instance="dbo_orders", lsn=M,
        commit_ts="2026-10-01T11:00:00.000",
        detail={"from": S, "to": M, "certain": False, "reason": "cleanup mid-read",
                "capture_instance": "dbo_orders"},
        lost_from_ts="2026-09-27T01:02:03.004", lost_to_ts="2026-10-01T11:00:00.000",
        batch_start_lsn=S, batch_end_lsn=M,
    )  # fmt: skip
    row = facts.source_event_row(
        record, app_id="orders", generation=1, batch_id=4, target="t", started_at=T0,
        written_at=T0,
    )  # fmt: skip
    assert (row.app_id, row.batch_id, row.rows, row.event) == ("orders.g1", 4, 0, "data_skipped")
    assert row.min_lsn == row.max_lsn == row.end_lsn == M
    assert row.lost_from_ts == datetime(2026, 9, 27, 1, 2, 3, 4000)
    assert row.lost_to_ts == datetime(2026, 10, 1, 11)
    assert (row.deletes, row.inserts, row.updates, row.retention_watermark_ts) == (None,) * 4
    assert row.detail is not None
    assert json.loads(row.detail) == record.detail
    assert list(json.loads(row.detail)) == ["from", "to", "certain", "reason", "capture_instance"]
    switched = facts.source_event_row(
        replace(record, event="capture_instance_switched"), app_id="orders", generation=1,
        batch_id=4, target="t", started_at=T0, written_at=T0,
    )  # fmt: skip
    assert (switched.lost_from_ts, switched.lost_to_ts) == (None, None)
    assert len(facts.distinct_events([row, row, switched])) == 2
    with pytest.raises(InternalError, match="'resnapshot' is not a source event"):
        facts.source_event_row(
            replace(record, event=cast(Any, "resnapshot")), app_id="orders", generation=1,
            batch_id=4, target="t", started_at=T0, written_at=T0,
        )  # fmt: skip


def test_a_resnapshot_row_carries_the_gap_watermark_and_headroom() -> None:
    lost_to = T0 - timedelta(hours=2, minutes=30)
    row = facts_snapshots.snapshot_completion_row(
        "resnapshot", app_id="orders", generation=3, target="t", snapshot_lsn=S,
        commit_ts=T0, rows=None, started_at=None, duration_ms=None, written_at=T0,
        lost_from_ts=T0 - timedelta(days=5), lost_to_ts=lost_to,
    )  # fmt: skip
    assert (row.app_id, row.generation, row.batch_id, row.event) == (
        "orders.g3",
        3,
        None,
        "resnapshot",
    )
    assert row.min_lsn == row.max_lsn == row.end_lsn == S
    assert row.retention_watermark_ts == lost_to
    assert row.retention_headroom_hours == 2.5
    assert row.detail is None
    with pytest.raises(InternalError, match="bootstrap row belongs to generation 0"):
        facts_snapshots.snapshot_completion_row(
            "bootstrap", app_id="orders", generation=1, target="t", snapshot_lsn=S,
            commit_ts=T0, rows=0, started_at=T0, duration_ms=1, written_at=T0,
        )  # fmt: skip


def test_an_open_row_takes_generation_and_gap_from_its_detail() -> None:
    detail: payloads.SnapshotOpenDetail = {
        "mode": "chunked", "kind": "resnapshot", "generation": 2,
        "lost_from_ts": "2026-09-27T00:00:00.000", "lost_to_ts": "2026-09-30T00:00:00.000",
        "keys": ["id"], "plan": {"kind": "int", "lo": 1, "hi": 900, "rows": 850},
    }  # fmt: skip
    row = facts_snapshots.snapshot_open_row(
        app_id="orders", target="t", lsn=S, commit_ts=T0, detail=detail, started_at=T0,
        written_at=T0,
    )  # fmt: skip
    assert (row.app_id, row.generation, row.rows, row.event) == ("orders.g2", 2, 0, "snapshot_open")
    assert (row.lost_from_ts, row.lost_to_ts) == (datetime(2026, 9, 27), datetime(2026, 9, 30))
    assert row.detail == (
        '{"mode":"chunked","kind":"resnapshot","generation":2,'
        '"lost_from_ts":"2026-09-27T00:00:00.000","lost_to_ts":"2026-09-30T00:00:00.000",'
        '"keys":["id"],"plan":{"kind":"int","lo":1,"hi":900,"rows":850}}'
    )


def test_a_chunk_row_spans_its_stamp_to_the_max_lsn_read_after_it() -> None:
    detail: payloads.SnapshotChunkDetail = {
        "snapshot": S, "chunk": 4, "wave": 1, "lo": 100, "hi": 200, "last": False
    }  # fmt: skip
    row = facts_snapshots.snapshot_chunk_row(
        app_id="orders", generation=0, target="t", stamp_lsn=M, stamp_commit_ts=T0,
        high_lsn="0x0000002C000000100001", high_commit_ts=T0 + timedelta(seconds=3), rows=100,
        read_seconds=0.5, read_mb=0.2, detail=detail, started_at=T0, written_at=T0,
    )  # fmt: skip
    assert (row.min_lsn, row.max_lsn, row.end_lsn) == (M, "0x0000002C000000100001", M)
    assert (row.rows, row.read_seconds, row.duration_ms) == (100, 0.5, None)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (facts_keys.batch_key("orders", 0, 5), ("orders", 5)),
        (facts_keys.batch_key("orders", 2, 5), ("orders.g2", 5)),
        (facts_keys.facts_key("orders", 0, 5), ("orders#facts", 5)),
        (facts_keys.facts_key("orders", 3, 0), ("orders.g3#facts", 0)),
        (facts_keys.events_key("orders", 0), ("orders#events", 0)),
        (facts_keys.events_key("orders", 4), ("orders#events", 4)),
        (facts_keys.snapshots_key("orders", 1), ("orders#snapshots", 1)),
        (facts_keys.snapplan_key("orders", S), (f"orders#snapplan.{S}", 0)),
        (facts_keys.snapchunks_key("orders", S, 3), (f"orders#snapchunks.{S}", 3)),
        (facts_keys.wave_key("orders", S, 3), (f"orders#snap.{S}", 3)),
    ],
)
def test_every_write_has_the_spec_transaction_key(
    key: facts_keys.TxnKey, expected: tuple[str, int]
) -> None:
    assert (key.app_id, key.version) == expected


@pytest.mark.parametrize("bad", ["", "a#b", "tab\there", None, 7])
def test_a_bad_app_id_is_a_value_error_quoting_it(bad: object) -> None:
    with pytest.raises(ValueError, match="app_id="):
        facts_keys.validate_app_id(bad)


def test_times_are_utc_millisecond_text_and_read_back_naive() -> None:
    aware = datetime(2026, 10, 1, 14, 3, 12, 117_900, tzinfo=timezone(timedelta(hours=-3)))
    assert payloads.format_time(aware) == "2026-10-01T17:03:12.117"
    assert payloads.parse_time("2026-10-01T17:03:12.117") == datetime(
        2026, 10, 1, 17, 3, 12, 117_000
    )
    assert payloads.parse_time("2026-10-01T17:03:12Z") == datetime(2026, 10, 1, 17, 3, 12)
    assert payloads.parse_time(datetime(2026, 1, 1, tzinfo=UTC)) == datetime(2026, 1, 1)
    assert payloads.parse_time("") is None
    with pytest.raises(ValueError, match="'yesterday' is not ISO-8601"):
        payloads.parse_time("yesterday")


def test_key_values_json_cannot_hold_are_written_as_text() -> None:
    assert payloads.json_key(b"\x01\xab") == "0x01AB"
    assert payloads.json_key((1, "a", None)) == [1, "a", None]
    assert payloads.json_key(float("nan")) == "nan"
    with pytest.raises(ValueError, match="JSON compliant"):
        payloads.to_json({"x": float("nan")})


def test_old_open_and_skip_details_read_with_their_defaults() -> None:
    assert payloads.read_open('{"mode":"resnapshot","generation":2}') == {
        "mode": "chunked", "kind": "resnapshot", "generation": 2, "lost_from_ts": None,
        "lost_to_ts": None,
    }  # fmt: skip
    assert payloads.read_open("{}")["mode"] == "chunked"
    assert payloads.read_open("{}")["kind"] == "bootstrap"
    assert payloads.read_data_skipped(f"{S}..{M}") == {
        "from": S, "to": M, "certain": True, "capture_instance": None
    }  # fmt: skip
    assert payloads.read_data_skipped({"from": S, "to": M})["certain"] is True


def test_a_plan_row_sits_at_its_snapshot_lsn_and_times_the_planning() -> None:
    detail: payloads.SnapshotPlanDetail = {
        "snapshot": S, "kind": "int", "keys": ["id"], "chunk_rows": 100,
        "chunks": [[None, 100], [100, None]],
    }  # fmt: skip
    row = facts_snapshots.snapshot_plan_row(
        app_id="orders", generation=2, target="t", commit_ts=T0, detail=detail,
        started_at=T0, duration_ms=350, written_at=T0,
    )  # fmt: skip
    assert (row.app_id, row.event, row.rows, row.duration_ms) == (
        "orders.g2",
        "snapshot_plan",
        0,
        350,
    )
    assert row.min_lsn == row.max_lsn == row.end_lsn == S
    assert row.detail == (
        f'{{"snapshot":"{S}","kind":"int","keys":["id"],"chunk_rows":100,'
        '"chunks":[[null,100],[100,null]]}'
    )


def test_a_batch_commit_names_its_batch_without_its_counts() -> None:
    # the bronze commit is written before the one read of the batch ends (decision 1350)
    metadata = facts.batch_commit_metadata(app_id="orders", generation=1, batch_id=9)
    assert payloads.to_json(metadata) == '{"batch_id":9,"app_id":"orders.g1","generation":1}'
    assert payloads.read_batch_commit(payloads.to_json(metadata) or "") == metadata


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '{"batch_id":9,"app_id":"orders.g1","rows":3,"min_lsn":"0x01","max_lsn":"0x02",'
            '"min_commit_ts":"2026-10-01T11:55:00.000","max_commit_ts":"2026-10-01T11:59:00.000",'
            '"inserts":1,"updates":0,"deletes":1}',
            {"batch_id": 9, "app_id": "orders.g1", "generation": 1},
            id="an earlier version's commit with its counts, generation from the sink id",
        ),
        pytest.param(
            '{"batch_id":0,"app_id":"orders","rows":0,"min_lsn":null,"max_lsn":null,'
            '"min_commit_ts":null,"max_commit_ts":null,"inserts":0,"updates":0,"deletes":0}',
            {"batch_id": 0, "app_id": "orders", "generation": 0},
            id="an earlier generation-0 commit",
        ),
        pytest.param(
            '{"batch_id":4,"app_id":"a.gold","generation":0}',
            {"batch_id": 4, "app_id": "a.gold", "generation": 0},
            id="an app id with .g in its name",
        ),
        pytest.param('{"snapshot":"0x01","lsn":"0x01","commit_ts":null}', None, id="a snapshot"),
        pytest.param('{"facts":"batch","app_id":"a","batch_id":5}', None, id="a facts commit"),
        pytest.param("free text", None, id="another writer's text"),
        pytest.param('{"batch_id":"9","app_id":"a"}', None, id="a batch id that is text"),
    ],
)
def test_a_bronze_commit_of_either_shape_reads_as_its_batch(
    text: str, expected: dict[str, object] | None
) -> None:
    assert payloads.read_batch_commit(text) == expected
