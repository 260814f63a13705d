"""Bronze, facts and the metrics folder on an object store (docs/object-stores.md): a stream on
the emulator into `s3a://` tables on moto's S3 server, through Spark's S3A connector, with the
checkpoint local, then a loss of CDC data and its automatic re-snapshot, then silver built
from that bronze on the store and kept current by a MERGE.

Bronze is checked by the plain-Python rebuild oracle (tests/spark/support/recovery_support.py)
against the emulator's table; what lies on the store is listed with boto3, not the library.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import apply_changes
from tests.spark.support.recovery_support import Orders, rebuild
from tests.support.s3_server import S3Server


@pytest.fixture
def on_s3(spark: SparkSession, s3: S3Server) -> Iterator[S3Server]:
    """The bucket's S3A settings on the running session, per bucket so that no other test's
    paths change; taken away again after the test."""
    for key, value in s3.hadoop.items():
        spark.conf.set(key, value)
    yield s3
    for key in s3.hadoop:
        spark.conf.unset(key)


def _rows(spark: SparkSession, uri: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.read.format("delta").load(uri).collect()]


def test_a_stream_into_s3a_tables_recovers_from_a_loss_with_its_metrics_on_s3a(
    spark: SparkSession, on_s3: S3Server, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="s3-v1")
    orders.target, orders.facts = on_s3.uri("bronze"), on_s3.uri("facts")
    orders.extra = {"metricsPath": on_s3.uri("metrics")}
    orders.orders(3)
    inserted = orders.commit(("insert", 3, "new"))
    orders.run(bootstrap=False)  # streamed from the capture instance's start

    facts = _rows(spark, orders.facts)
    [batch] = [f for f in facts if f["event"] is None and f["rows"]]
    # read_mb comes only from the range files the executors wrote to s3a://.../metrics and the
    # driver's sink read back there; without them it would be NULL.
    assert (batch["rows"], batch["end_lsn"]) == (4, inserted)
    assert batch["read_mb"] is not None
    assert batch["read_mb"] > 0
    assert on_s3.keys("metrics/") == []  # the sink removed what it read
    assert any(k.startswith("bronze/_delta_log/") for k in on_s3.keys("bronze/"))

    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()
    orders.run()  # the loss is found and re-snapshot into generation 1
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1

    facts = _rows(spark, orders.facts)
    [event] = [f for f in facts if f["event"] == "resnapshot"]
    assert (event["app_id"], event["rows"], event["target"]) == ("s3-v1.g1", 3, orders.target)
    assert on_s3.keys("metrics/") == []
    bronze = _rows(spark, orders.target)
    assert rebuild(bronze, facts, orders.target) == orders.source()
    assert orders.source() == [(0, "new"), (1, "paid"), (3, "new")]

    # silver and its control table on the store too: built, then a MERGE of a later change
    silver, control = on_s3.uri("silver"), on_s3.uri("control")
    for change in (None, ("update", 3, "sent")):
        if change is not None:
            orders.commit(change)
            orders.run()
        apply_changes(
            spark, orders.target, silver, keys=["order_id"], control_table=control,
            facts_table=orders.facts,
        )  # fmt: skip
        held = sorted((int(r["order_id"]), str(r["status"])) for r in _rows(spark, silver))
        assert held == orders.source()
    assert orders.source() == [(0, "new"), (1, "paid"), (3, "sent")]
