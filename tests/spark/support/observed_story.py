"""The observed-metric story both session kinds run: each micro-batch's `mssql_cdc` metric in
Spark's streaming progress equals the facts row of the same batch, and the Prometheus text a
StreamingQueryListener keeps holds the newest batch's figures, read by a parser written from
Prometheus's documented grammar (https://prometheus.io/docs/instrumenting/exposition_formats/).
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from mssql_cdc import OBSERVED_METRICS, PrometheusTextExporter
from mssql_cdc.pipeline import OBSERVED_FIELDS
from tests.spark.support.recovery_support import Orders
from tests.support.prometheus_text import parse


def observed(query: StreamingQuery) -> dict[int, dict[str, Any]]:
    """Each progress's `mssql_cdc` metric by batch id, as plain values. A classic session hands
    the metric as a Row of its fields; Spark Connect as a Row of `values` and `schema`."""
    found = {}
    for progress in query.recentProgress:
        metric = progress["observedMetrics"].get(OBSERVED_METRICS)
        if metric is None:
            continue
        row = metric.asDict(recursive=True)
        if set(row) == {"values", "schema"}:
            row = dict(
                zip([f["name"] for f in row["schema"]["fields"]], row["values"], strict=True)
            )
        found[progress["batchId"]] = {k: plain(v) for k, v in row.items()}
    return found


def plain(value: Any) -> Any:
    """A progress value as the facts hold it: a commit time as a datetime."""
    if isinstance(value, str) and value[:2] == "20":
        return datetime.fromisoformat(value)
    return value


SOURCE_EVENTS = ("capture_instance_switched", "data_skipped", "schema_change")


def batch_facts(orders: Orders, app_id: str) -> dict[int, dict[str, Any]]:
    """Each micro-batch's figures as the facts table holds them. `events`, which no column
    holds, is derived from the event rows: the source events recorded with the batch's id, and
    the snapshot row that opened the generation on the first batch that read after it (the
    lowest batch id with an `end_lsn`: a batch with nothing to read has none)."""
    rows = [r for r in orders.facts_rows() if r["app_id"] == app_id]
    opened = {r["event"] for r in rows if r["event"] in ("bootstrap", "resnapshot")}
    batches = [r for r in rows if r["event"] is None]
    first = min((r["batch_id"] for r in batches if r["end_lsn"] is not None), default=None)
    found = {}
    for r in batches:
        names = {
            e["event"]
            for e in rows
            if e["event"] in SOURCE_EVENTS and e["batch_id"] == r["batch_id"]
        }
        if r["batch_id"] == first:
            names |= opened
        figures = {k: r[k] for k in OBSERVED_FIELDS if k != "events"}
        found[r["batch_id"]] = {**figures, "events": ",".join(sorted(names)) or None}
    return found


def check_batches_observe_their_facts(spark: SparkSession, root: Path) -> None:
    """Two runs of a stream, CDC cleanup between them: each batch's `mssql_cdc` metric in the
    progress equals its facts row (headroom, lags and events too), and the listener's
    Prometheus text holds the newest batch's figures."""
    orders = Orders(spark, root, app_id="observed-v1")
    orders.orders(3)
    exporter = PrometheusTextExporter()
    listener = exporter.listener()
    spark.streams.addListener(listener)
    try:
        first = orders.run()
        # CDC cleanup up to what the stream has read: a watermark, so a headroom, and no loss
        [bootstrap] = orders.events("bootstrap")
        orders.emu.cleanup("dbo_orders", bootstrap["min_lsn"])
        orders.commit(("insert", 5, "new"), ("update", 1, "paid"))
        orders.commit(("delete", 2, None))
        second = orders.run()
        deadline = time.monotonic() + 30  # the listener bus delivers after the query ends
        while not exporter.render() or str(second.id) not in exporter.render():
            assert time.monotonic() < deadline, "no progress reached the listener"
            time.sleep(0.2)
    finally:
        spark.streams.removeListener(listener)

    facts = batch_facts(orders, "observed-v1")
    seen = {**observed(first), **observed(second)}
    assert seen == facts, (seen, facts)
    [newest] = [b for b in seen if b == max(seen)]
    # the changes committed above, counted by hand: an insert, an update (before- and
    # after-image) and a delete
    assert (seen[newest]["rows"], seen[newest]["inserts"], seen[newest]["updates"]) == (4, 1, 1)
    assert (seen[newest]["deletes"], seen[newest]["generation"]) == (1, 0)
    # the task's figures are there, not NULL on both sides
    assert seen[newest]["retention_headroom_hours"] is not None
    assert seen[newest]["ingestion_lag_seconds"] is not None
    assert seen[newest]["end_lsn"] is not None
    assert seen[newest]["events"] == "bootstrap"  # the first batch that read after it

    for _ in range(100):  # the listener may still be handed the last progress
        text = parse(exporter.render())
        if text.value("mssql_cdc_batch_id", query="observed-v1", id=str(second.id)) == newest:
            break
        time.sleep(0.1)
    labels = {"query": "observed-v1", "id": str(second.id)}
    assert text.types["mssql_cdc_batch_rows"] == "gauge"
    for family, column in [
        ("mssql_cdc_batch_rows", "rows"),
        ("mssql_cdc_batch_inserts", "inserts"),
        ("mssql_cdc_batch_updates", "updates"),
        ("mssql_cdc_batch_deletes", "deletes"),
        ("mssql_cdc_generation", "generation"),
        ("mssql_cdc_retention_headroom_hours", "retention_headroom_hours"),
        ("mssql_cdc_ingestion_lag_seconds", "ingestion_lag_seconds"),
        ("mssql_cdc_capture_lag_seconds", "capture_lag_seconds"),
    ]:
        value, wanted = text.value(family, **labels), facts[newest][column]
        if wanted is None:  # Prometheus's missing value (no cleanup has run: no watermark)
            assert math.isnan(value), family
        else:
            assert value == wanted, family
