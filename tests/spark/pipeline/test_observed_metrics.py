"""Each micro-batch's figures as the `mssql_cdc` observed metric of Spark's streaming progress
(docs/operations.md, 'In Spark's streaming progress'), equal to the facts row of the same batch,
and their Prometheus text through a StreamingQueryListener (tests/spark/support/observed_story.py).

Observed metrics are Spark's documented channel for named aggregates of a streaming query
(https://spark.apache.org/docs/latest/structured-streaming-programming-guide.html, 'Reporting
Metrics programmatically using Asynchronous APIs'; `DataFrame.observe`).
"""

from __future__ import annotations

import time
from pathlib import Path

from pyspark.sql import SparkSession

from mssql_cdc import PrometheusTextExporter
from tests.spark.support.observed_story import (
    batch_facts,
    check_batches_observe_their_facts,
    observed,
)
from tests.spark.support.recovery_support import Orders
from tests.support.prometheus_text import parse


def test_each_batch_observes_its_facts_figures_in_the_progress_and_the_prometheus_text(
    spark: SparkSession, tmp_path: Path
) -> None:
    check_batches_observe_their_facts(spark, tmp_path / "s")


def test_a_recovered_stream_observes_its_new_generation_and_its_resnapshot(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path / "s", app_id="observed-v2")
    orders.orders(2)
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.cleanup_past_everything()
    exporter = PrometheusTextExporter()
    listener = exporter.listener()
    spark.streams.addListener(listener)
    try:
        recovered = orders.run()  # the loss is found before the query starts: generation 1
        assert recovered.name == "observed-v2.g1"
        assert len(orders.events("resnapshot")) == 1
        orders.commit(("insert", 7, "after"))
        later = orders.run()
        deadline = time.monotonic() + 30  # the listener bus delivers after the query ends
        while 'event="resnapshot"' not in exporter.render():
            assert time.monotonic() < deadline, "the re-snapshot's batch reached no listener"
            time.sleep(0.2)
    finally:
        spark.streams.removeListener(listener)
    seen = {**observed(recovered), **observed(later)}
    assert seen == batch_facts(orders, "observed-v2.g1")
    assert {s["generation"] for s in seen.values()} == {1}
    assert any(s["rows"] == 1 and s["inserts"] == 1 for s in seen.values())
    # the re-snapshot shows itself on the first batch that read after it, and only there
    [(reading, figures)] = [(b, s) for b, s in seen.items() if s["events"] is not None]
    assert figures["events"] == "resnapshot"
    assert reading == min(b for b, s in seen.items() if s["end_lsn"] is not None)
    # the cleanup ran: the headroom is known, on both sides of the equality above
    assert figures["retention_headroom_hours"] is not None
    text = parse(exporter.render())
    labels = {"query": "observed-v2.g1", "id": str(later.id), "event": "resnapshot"}
    assert text.value("mssql_cdc_event_timestamp_seconds", **labels) > 0
    assert text.value("mssql_cdc_generation", query="observed-v2.g1", id=str(later.id)) == 1
