"""The observed-metric story both session kinds run: each micro-batch's `mssql_cdc` metric in
Spark's streaming progress equals the facts row of the same batch, and the Prometheus text a
StreamingQueryListener keeps holds the newest batch's figures, read by a parser written from
Prometheus's documented grammar (https://prometheus.io/docs/instrumenting/exposition_formats/).
"""

from __future__ import annotations

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


def batch_facts(orders: Orders, app_id: str) -> dict[int, dict[str, Any]]:
    rows = orders.facts_rows()
    return {
        r["batch_id"]: {k: r[k] for k in OBSERVED_FIELDS}
        for r in rows
        if r["event"] is None and r["app_id"] == app_id
    }


def check_batches_observe_their_facts(spark: SparkSession, root: Path) -> None:
    """Two runs of a stream: each batch's `mssql_cdc` metric in the progress equals its facts
    row, and the listener's Prometheus text holds the newest batch's figures."""
    orders = Orders(spark, root, app_id="observed-v1")
    orders.orders(3)
    exporter = PrometheusTextExporter()
    listener = exporter.listener()
    spark.streams.addListener(listener)
    try:
        first = orders.run()
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
    ]:
        assert text.value(family, **labels) == facts[newest][column], family
