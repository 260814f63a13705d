"""Each micro-batch's figures as the `mssql_cdc` observed metric of Spark's streaming progress
(docs/operations.md, 'In Spark's streaming progress'), equal to the facts row of the same batch,
and their Prometheus text through a StreamingQueryListener, read by a parser written from
Prometheus's documented grammar (https://prometheus.io/docs/instrumenting/exposition_formats/).

Observed metrics are Spark's documented channel for named aggregates of a streaming query
(https://spark.apache.org/docs/latest/structured-streaming-programming-guide.html, 'Reporting
Metrics programmatically using Asynchronous APIs'; `DataFrame.observe`).
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
    """Each progress's `mssql_cdc` metric by batch id, as plain values."""
    found = {}
    for progress in query.recentProgress:
        metric = progress["observedMetrics"].get(OBSERVED_METRICS)
        if metric is not None:
            found[progress["batchId"]] = {k: plain(v) for k, v in metric.asDict().items()}
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


def test_each_batch_observes_its_facts_figures_in_the_progress_and_the_prometheus_text(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path / "s", app_id="observed-v1")
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
    assert seen == facts
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


def test_a_recovered_stream_observes_its_new_generation(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path / "s", app_id="observed-v2")
    orders.orders(2)
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.cleanup_past_everything()
    recovered = orders.run()  # the loss is found before the query starts: generation 1
    assert recovered.name == "observed-v2.g1"
    assert len(orders.events("resnapshot")) == 1
    orders.commit(("insert", 7, "after"))
    later = orders.run()
    seen = {**observed(recovered), **observed(later)}
    assert seen == batch_facts(orders, "observed-v2.g1")
    assert {s["generation"] for s in seen.values()} == {1}
    assert any(s["rows"] == 1 and s["inserts"] == 1 for s in seen.values())
