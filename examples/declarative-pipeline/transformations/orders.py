"""The pipeline's datasets: `bronze` from the mssql_cdc source, `silver` equal to the table.

`spark-pipelines` runs this file with `spark` set to the pipeline's Spark Connect session.
The source's options are the configuration keys under `mssql_cdc.source.` of
spark-pipeline.yml, plus `connectionString` from MSSQL_CDC_CONNECTION_STRING when it is set.
Query functions may not analyze a DataFrame (no `.columns`, `.schema` or actions), so
everything they need is read when the file runs.
"""

from __future__ import annotations

import os

from pyspark import pipelines as dp
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import mssql_cdc

spark: SparkSession = globals()["spark"]  # set by spark-pipelines before this file runs

mssql_cdc.register(spark)

SOURCE = "mssql_cdc.source."
OPTIONS = {k[len(SOURCE) :]: v for k, v in spark.conf.getAll.items() if k.startswith(SOURCE)}
if os.environ.get("MSSQL_CDC_CONNECTION_STRING"):
    OPTIONS["connectionString"] = os.environ["MSSQL_CDC_CONNECTION_STRING"]
LISTED = spark.conf.get("mssql_cdc.silver.keys", "") or ""
KEYS = [k.strip() for k in LISTED.split(",") if k.strip()]

# A key's rows apply in this order (docs/silver.md); the last one is its image.
APPLY_ORDER = ("_start_lsn", "_command_id", "_seqval", "_operation")
DELETES = (1, 3)  # a delete, and an update's before-image whose after-image went to another key
STAMP, RANK = "__newest_snapshot", "__rank"
NOT_IN_SILVER = ("_capture_instance", "_seqval", "_operation", "_command_id", "_snapshot")


def changes() -> DataFrame:
    return spark.readStream.format("mssql_cdc").options(**OPTIONS).load()


def column(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


# The stream's columns, asked of the source here: a query function may not analyze a DataFrame.
BRONZE_COLUMNS = changes().columns
SILVER_COLUMNS = [c for c in BRONZE_COLUMNS if c not in NOT_IN_SILVER]


@dp.table(comment="Every row the mssql_cdc source read: its snapshots and changes, in order")
def bronze() -> DataFrame:
    return changes()


@dp.materialized_view(comment="The source table's rows: bronze applied from its newest snapshot")
def silver() -> DataFrame:
    """One row per key: the last row of each key in apply order among the rows of bronze's
    newest snapshot (`_snapshot` = S) and the changes after S, deletes left out. Rows older
    than S are left out, so a key deleted while the stream could not read (a loss) is gone
    once the source's re-snapshot at S is in bronze; a run ends only after the snapshot it
    started is whole. Only `select` and `where`: Spark Connect analyzes `withColumn` and `drop`
    when the flow is registered, before bronze exists."""
    newest = F.max("_snapshot").over(Window.partitionBy())  # S, over all of bronze
    rows = spark.read.table("bronze").select(*map(column, BRONZE_COLUMNS), newest.alias(STAMP))
    since = rows.where(
        F.col(STAMP).isNull()
        | (F.col("_snapshot") == F.col(STAMP))
        | (F.col("_snapshot").isNull() & (F.col("_start_lsn") > F.col(STAMP)))
    )
    last_first = Window.partitionBy(*map(column, KEYS)).orderBy(
        *[column(c).desc_nulls_last() for c in APPLY_ORDER]
    )
    ranked = since.select(*map(column, BRONZE_COLUMNS), F.row_number().over(last_first).alias(RANK))
    images = ranked.where((F.col(RANK) == 1) & ~F.col("_operation").isin(*DELETES))
    return images.select(*map(column, SILVER_COLUMNS))
