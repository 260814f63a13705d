"""PrometheusTextExporter: the newest `mssql_cdc` figures of each query, in Prometheus's text
format, checked by a parser written from the documented grammar (tests/support/prometheus_text.py,
https://prometheus.io/docs/instrumenting/exposition_formats/)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from mssql_cdc import OBSERVED_METRICS, PrometheusTextExporter, observed_figures
from mssql_cdc.errors import ConfigError
from mssql_cdc.pipeline import PROMETHEUS_FAMILIES
from tests.support.prometheus_text import parse


def progress(
    name: str | None, query_id: str, batch_id: int, observed: dict[str, Any] | None
) -> dict[str, Any]:
    """A progress as `StreamingQueryProgress.json` writes it (only the fields read here)."""
    return {
        "id": query_id,
        "runId": "r-" + query_id,
        "name": name,
        "timestamp": "2026-10-01T12:00:05.250Z",
        "batchId": batch_id,
        "observedMetrics": {} if observed is None else {OBSERVED_METRICS: observed},
    }


def figures(rows: int, inserts: int, updates: int, deletes: int, generation: int) -> dict[str, Any]:
    return {
        "rows": rows,
        "min_lsn": "0x00000027000000240004",
        "max_lsn": "0x00000027000000250003",
        "min_commit_ts": "2026-10-01T11:59:00.000",
        "max_commit_ts": "2026-10-01T12:00:00.000",
        "deletes": deletes,
        "inserts": inserts,
        "updates": updates,
        "generation": generation,
    }


def test_the_exposition_holds_each_querys_newest_batch_under_the_documented_grammar() -> None:
    exporter = PrometheusTextExporter()
    assert exporter.render() == ""
    assert exporter.record(progress("orders", "q1", 3, figures(9, 5, 3, 1, 0)))
    assert exporter.record(json.dumps(progress("orders", "q1", 4, figures(4, 1, 2, 1, 0))))
    assert exporter.record(progress("items.g2", "q2", 0, figures(0, 0, 0, 0, 2)))
    parsed = parse(exporter.render())
    names = [family for family, _, _ in PROMETHEUS_FAMILIES]
    assert sorted(parsed.types) == sorted(names)
    assert set(parsed.types.values()) == {"gauge"}
    assert sorted(parsed.helps) == sorted(names)
    q1 = {"query": "orders", "id": "q1"}
    q2 = {"query": "items.g2", "id": "q2"}
    expected = {
        "mssql_cdc_batch_id": (4, 0),
        "mssql_cdc_batch_rows": (4, 0),
        "mssql_cdc_batch_inserts": (1, 0),
        "mssql_cdc_batch_updates": (2, 0),
        "mssql_cdc_batch_deletes": (1, 0),
        "mssql_cdc_generation": (0, 2),
    }
    for name, (one, two) in expected.items():
        assert (parsed.value(name, **q1), parsed.value(name, **q2)) == (one, two), name
    # 2026-10-01T12:00:05.250Z, computed by hand: 20727 days after 1970-01-01, then 12:00:05.25
    assert parsed.value("mssql_cdc_batch_timestamp_seconds", **q1) == 20727 * 86400 + 43205.25


def test_a_progress_without_the_observed_metric_keeps_the_querys_previous_figures() -> None:
    exporter = PrometheusTextExporter()
    exporter.record(progress("orders", "q1", 3, figures(9, 5, 3, 1, 1)))
    before = exporter.render()
    assert not exporter.record(progress("orders", "q1", 4, None))  # an idle trigger's progress
    assert not exporter.record(progress("other", "q9", 0, None))  # a query of someone else
    assert exporter.render() == before


def test_a_query_name_with_quotes_backslashes_and_line_feeds_is_escaped_in_its_label() -> None:
    exporter = PrometheusTextExporter()
    name = 'odd "name" \\ with\na line feed'
    exporter.record(progress(name, "q1", 1, figures(2, 2, 0, 0, 0)))
    text = exporter.render()
    assert parse(text).value("mssql_cdc_batch_rows", query=name, id="q1") == 2
    # no raw line feed leaked: a HELP, a TYPE and a sample per family, but the two event
    # families, which have no sample for a batch without events
    assert len(text.splitlines()) == 3 * len(PROMETHEUS_FAMILIES) - 2


def test_headroom_lags_and_each_batchs_events_are_exported_and_an_events_time_is_kept() -> None:
    exporter = PrometheusTextExporter()
    first = {**figures(3, 3, 0, 0, 1), "events": "resnapshot"}
    first |= {"retention_headroom_hours": 71.25, "ingestion_lag_seconds": 0.5}
    later = {**figures(1, 1, 0, 0, 1), "events": "data_skipped,schema_change"}
    later |= {"retention_headroom_hours": 70.0, "ingestion_lag_seconds": 2.125}
    later |= {"capture_lag_seconds": 4.0}
    assert exporter.record(progress("orders.g1", "q1", 0, first))
    after = {**progress("orders.g1", "q1", 1, later), "timestamp": "2026-10-01T13:00:05.250Z"}
    assert exporter.record(after)
    parsed = parse(exporter.render())
    q1 = {"query": "orders.g1", "id": "q1"}
    assert parsed.value("mssql_cdc_retention_headroom_hours", **q1) == 70.0
    assert parsed.value("mssql_cdc_ingestion_lag_seconds", **q1) == 2.125
    assert parsed.value("mssql_cdc_capture_lag_seconds", **q1) == 4.0
    # the newest batch's events, one sample each; the re-snapshot of batch 0 is not among them
    assert sorted(
        (labels["event"], value) for labels, value in parsed.samples["mssql_cdc_batch_event"]
    ) == [("data_skipped", 1), ("schema_change", 1)]
    # each event's newest batch: 2026-10-01 is 20727 days after 1970-01-01 (by hand)
    day = 20727 * 86400
    assert parsed.value("mssql_cdc_event_timestamp_seconds", **q1, event="resnapshot") == (
        day + 12 * 3600 + 5.25
    )
    assert parsed.value("mssql_cdc_event_timestamp_seconds", **q1, event="schema_change") == (
        day + 13 * 3600 + 5.25
    )


def test_a_figure_the_batch_lacks_is_exported_as_nan() -> None:
    exporter = PrometheusTextExporter()
    exporter.record(progress(None, "q1", 1, {**figures(0, 0, 0, 0, 0), "rows": None}))
    parsed = parse(exporter.render())
    assert math.isnan(parsed.value("mssql_cdc_batch_rows", query="", id="q1"))


def test_a_progress_of_another_kind_is_refused_naming_what_to_pass() -> None:
    exporter = PrometheusTextExporter()
    with pytest.raises(ConfigError, match="pass a StreamingQueryProgress"):
        exporter.record(42)
    with pytest.raises(ConfigError, match="not JSON"):
        exporter.record("{not json")


def test_the_listener_is_a_streaming_query_listener_that_records_each_progress() -> None:
    from pyspark.sql.streaming.listener import StreamingQueryListener, StreamingQueryProgress

    exporter = PrometheusTextExporter()
    listener = exporter.listener()
    assert isinstance(listener, StreamingQueryListener)
    query_id = "0b7a3c52-5f0e-4a8e-9d55-1f2a3b4c5d6e"
    raw = {
        **progress("orders", query_id, 7, figures(3, 3, 0, 0, 0)),
        "runId": "7e6d5c4b-3a29-4817-a6f5-e4d3c2b1a098",
        "batchDuration": 120,
        "stateOperators": [],
        "sources": [],
        "sink": {"description": "ForeachBatchSink", "numOutputRows": -1, "metrics": {}},
    }
    event = type("Event", (), {})()
    event.progress = StreamingQueryProgress.fromJson(raw)  # type: ignore[attr-defined]
    listener.onQueryProgress(event)  # type: ignore[arg-type]
    parsed = parse(exporter.render())
    assert parsed.value("mssql_cdc_batch_rows", query="orders", id=query_id) == 3
    assert parsed.value("mssql_cdc_batch_id", query="orders", id=query_id) == 7


def test_spark_connects_row_of_values_and_schema_reads_as_the_same_figures() -> None:
    # the shape a Spark Connect 4.2 server wrote for this metric, copied from a progress
    fields = [
        ("rows", "long"), ("min_lsn", "string"), ("max_lsn", "string"),
        ("min_commit_ts", "string"), ("max_commit_ts", "string"), ("deletes", "long"),
        ("inserts", "long"), ("updates", "long"), ("generation", "integer"),
    ]  # fmt: skip
    values = [4, "0x0A", "0x0B", "2026-09-28 13:54:00", "2026-09-28 13:55:00", 1, 1, 1, 2]
    schema = {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
    }
    connect = progress("orders", "q1", 1, {"values": values, "schema": schema})
    assert observed_figures(connect) == dict(zip([n for n, _ in fields], values, strict=True))
    exporter = PrometheusTextExporter()
    assert exporter.record(json.dumps(connect))
    parsed = parse(exporter.render())
    assert parsed.value("mssql_cdc_batch_rows", query="orders", id="q1") == 4
    assert parsed.value("mssql_cdc_generation", query="orders", id="q1") == 2


def test_observed_figures_are_none_for_a_progress_without_the_metric() -> None:
    assert observed_figures(progress("orders", "q1", 1, None)) is None
    assert observed_figures(progress("orders", "q1", 1, figures(1, 1, 0, 0, 0))) == figures(
        1, 1, 0, 0, 0
    )


@pytest.mark.parametrize(
    "text",
    [
        'm{query="a"b"} 1\n',  # an unescaped quote in a label value
        'm{query="a\\tb"} 1\n',  # an escape the format does not have
        "m 1\n# TYPE m gauge\n",  # a TYPE after the name's first sample
        "# TYPE m gauge\n# TYPE m gauge\n",  # a second TYPE
        "m one\n",  # not a float
        "m 1",  # no line feed at the end
        "1m 1\n",  # a metric name starting with a digit
    ],
)
def test_the_grammar_parser_refuses_what_the_format_refuses(text: str) -> None:
    with pytest.raises(AssertionError):
        parse(text)
