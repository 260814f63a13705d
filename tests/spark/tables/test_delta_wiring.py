"""The Delta behaviours the library relies on, proven on the local session."""

from __future__ import annotations

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession


def test_the_session_runs_in_utc_without_a_ui(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.master == "local[2]"


def test_two_appends_with_the_same_txn_app_id_and_version_leave_one_commit(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "idempotent")
    rows = spark.createDataFrame([(1, "a"), (2, "b")], "id INT, name STRING")
    for _ in range(2):
        (
            rows.write.format("delta")
            .mode("append")
            .option("txnAppId", "orders-v1")
            .option("txnVersion", 0)
            .save(path)
        )
    table = DeltaTable.forPath(spark, path)
    assert table.toDF().count() == 2
    assert [r["version"] for r in table.history().collect()] == [0]

    rows.write.format("delta").mode("append").option("txnAppId", "orders-v1").option(
        "txnVersion", 1
    ).save(path)
    assert table.toDF().count() == 4


def test_a_commits_user_metadata_appears_in_the_history(
    spark: SparkSession, table_dir: Path
) -> None:
    path = str(table_dir / "metadata")
    rows = spark.createDataFrame([(1,)], "id INT")
    rows.write.format("delta").option("userMetadata", '{"batch_id": 7}').save(path)
    history = DeltaTable.forPath(spark, path).history().collect()
    assert history[0]["userMetadata"] == '{"batch_id": 7}'
