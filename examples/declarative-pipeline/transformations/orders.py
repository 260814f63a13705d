"""The pipeline's datasets: `bronze` from the mssql_cdc source, `silver` equal to the table.

`spark-pipelines` runs this file with `spark` set to the pipeline's Spark Connect session.
The source's options are the configuration keys under `mssql_cdc.source.` of
spark-pipeline.yml, plus `connectionString` from MSSQL_CDC_CONNECTION_STRING when it is set.
"""

from __future__ import annotations

import os

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import mssql_cdc
from mssql_cdc.silver import DELETE_FLAG, bronze_shape, latest_images

spark: SparkSession = globals()["spark"]  # set by spark-pipelines before this file runs

SOURCE = "mssql_cdc.source."
STAMP = "__newest_snapshot"

mssql_cdc.register(spark)


def source_options() -> dict[str, str]:
    """The source's options: the pipeline configuration under SOURCE, and the connection
    string from the environment."""
    options = {k[len(SOURCE) :]: v for k, v in spark.conf.getAll.items() if k.startswith(SOURCE)}
    connection = os.environ.get("MSSQL_CDC_CONNECTION_STRING")
    if connection:
        options["connectionString"] = connection
    return options


@dp.table(comment="Every row the mssql_cdc source read: its snapshots and changes, in order")
def bronze() -> DataFrame:
    return spark.readStream.format("mssql_cdc").options(**source_options()).load()


@dp.materialized_view(comment="The source table's rows: bronze applied from its newest snapshot")
def silver() -> DataFrame:
    """One row per key: the last row of each key in apply order among the rows of bronze's
    newest snapshot (`_snapshot` = S) and the changes after S. Rows from before S are left
    out, so a key deleted while the stream could not read (a loss) is gone once the source's
    re-snapshot at S is in bronze; a run ends only after the snapshot it started is whole."""
    listed = spark.conf.get("mssql_cdc.silver.keys", "") or ""
    keys = [k.strip() for k in listed.split(",") if k.strip()]
    rows = spark.read.table("bronze")
    shape = bronze_shape(rows, "bronze")
    newest = rows.agg(F.max("_snapshot").alias(STAMP))
    since = rows.crossJoin(newest).where(
        F.col(STAMP).isNull()
        | (F.col("_snapshot") == F.col(STAMP))
        | (F.col("_snapshot").isNull() & (F.col("_start_lsn") > F.col(STAMP)))
    )
    images = latest_images(since.drop(STAMP), keys, shape, ref="bronze")
    return images.where(~F.col(DELETE_FLAG)).select(
        *shape.captured_names, "_start_lsn", "_commit_ts"
    )
