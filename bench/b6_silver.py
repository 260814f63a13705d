"""B6 silver: apply_changes of bronze changes into silver, against a plain Delta MERGE.

The baseline MERGEs the same net rows (the latest image per key, computed before the clock starts)
into an empty Delta table; ours reads bronze, ranks every change (a row_number window: decision
0462), writes the images into its empty silver (one append: decision 0460) and records its position
(the silver's first, also appended: decision 0461); its control table is empty, so no control row
is read (decision 0463). Each side's empty target (silver and the control table for ours) is
created before its clock starts, as the baseline's is. The two alternate over ROUNDS rounds (the
first side of a round changes each time, so neither always runs on a cold JVM) and the medians are
compared. Both rates are bronze changes per second, so the ratio is the baseline's time over ours.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from report import Figure

CHANGES = 1_000_000
KEYS = 100_000
ROUNDS = 3
CAPTURED = ("id", "name", "qty")


def _bronze(spark: object, path: str, changes: int, keys: int) -> None:
    from pyspark.sql import functions as F

    from mssql_cdc.tables import refs as tables

    # Each key is inserted once, then updated; every 97th later change deletes its key.
    i = F.col("id")
    lsn = F.format_string("0x%020X", i + 16)
    rows = spark.range(changes).select(  # type: ignore[attr-defined]
        F.lit("dbo_bench").alias("_capture_instance"),
        lsn.alias("_start_lsn"),
        lsn.alias("_seqval"),
        F.when(i < keys, 2).when(i % 97 == 0, 1).otherwise(4).cast("int").alias("_operation"),
        F.lit(1).alias("_command_id"),
        (F.lit("2026-11-01 00:00:00").cast("timestamp_ntz")).alias("_commit_ts"),
        (i % keys).alias("id"),
        F.concat(F.lit("name-"), i.cast("string")).alias("name"),
        (i % 1000).cast("int").alias("qty"),
        F.floor(i / 100_000).cast("bigint").alias("_batch_id"),
        F.lit(None).cast("string").alias("_snapshot"),
        F.lit(None).cast("int").alias("_chunk"),
    )
    # Created by the library, as the stream creates bronze: typed, commented and stamped.
    tables.ensure_table(spark, path, "bronze", source_schema=rows.schema)  # type: ignore[arg-type]
    rows.write.format("delta").mode("append").save(path)


def run(changes: int = CHANGES, keys: int = KEYS, rounds: int = ROUNDS) -> Figure:
    """Measure B6 at `changes` bronze rows over `keys` keys (the benchmark's size by default)."""
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from mssql_cdc import apply_changes
    from mssql_cdc.spark import local_session
    from mssql_cdc.tables import refs as tables

    root = Path(tempfile.mkdtemp(prefix="mssql-cdc-b6-"))
    try:
        spark = local_session("mssql-cdc-b6", warehouse=root / "spark")
        bronze = str(root / "bronze")
        _bronze(spark, bronze, changes, keys)
        captured = StructType(
            [f for f in spark.read.format("delta").load(bronze).schema if f.name in CAPTURED]
        )
        # Baseline input, prepared off the clock: the net rows of the same bronze.
        window = Window.partitionBy("id").orderBy(F.col("_start_lsn").desc())
        net = (
            spark.read.format("delta")
            .load(bronze)
            .withColumn("rank", F.row_number().over(window))
            .where("rank = 1 AND _operation <> 1")
            .select("id", "name", "qty", "_start_lsn", "_commit_ts")
        )
        net.write.format("delta").save(str(root / "net"))
        net_rows = spark.read.format("delta").load(str(root / "net"))

        def ours(n: int) -> float:
            silver, control = str(root / f"silver{n}"), str(root / f"control{n}")
            tables.ensure_table(spark, silver, "silver", source_schema=captured)
            tables.ensure_table(spark, control, "control")
            spark.sparkContext.setJobGroup(f"b6-ours-{n}", "apply_changes")
            started = time.perf_counter()
            apply_changes(spark, bronze, silver, keys=["id"], control_table=control)
            return time.perf_counter() - started

        def baseline(n: int) -> float:
            plain = str(root / f"plain{n}")
            spark.createDataFrame([], net_rows.schema).write.format("delta").save(plain)
            spark.sparkContext.setJobGroup(f"b6-baseline-{n}", "plain MERGE")
            started = time.perf_counter()
            (
                DeltaTable.forPath(spark, plain)
                .alias("t")
                .merge(net_rows.alias("s"), "t.id = s.id")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
            return time.perf_counter() - started

        times: dict[str, list[float]] = {"ours": [], "baseline": []}
        jobs: dict[str, int] = {}  # Spark jobs of one timed call: fixed costs on a busy machine
        sides: list[tuple[str, Callable[[int], float]]] = [("baseline", baseline), ("ours", ours)]
        context = spark.sparkContext
        for n in range(rounds):
            for name, side in sides if n % 2 == 0 else sides[::-1]:
                times[name].append(side(n))
                jobs[name] = len(context.statusTracker().getJobIdsForGroup(f"b6-{name}-{n}"))
        ours_s, base_s = statistics.median(times["ours"]), statistics.median(times["baseline"])
        silver_rows = spark.read.format("delta").load(str(root / "silver0")).count()
        plain_rows = spark.read.format("delta").load(str(root / "plain0")).count()
        if silver_rows != plain_rows:
            raise RuntimeError(f"B6: silver has {silver_rows} rows, the baseline {plain_rows}")
        shown = {name: ", ".join(f"{t:.1f}" for t in ts) for name, ts in times.items()}
        missed = []
        if base_s / ours_s < 0.7:
            missed = [
                f"target missed by {0.7 - base_s / ours_s:.2f}: apply_changes would need "
                f"{base_s / 0.7:.1f} s or less; it took {ours_s:.1f} s",
                f"why: the baseline starts from the {silver_rows:,} net rows, computed off its "
                f"clock, while apply_changes ranks all {changes:,} changes (10 times the input) "
                "inside its append (a row_number window per key, decision 0462), and the "
                "snapshot survey, Delta's file filtering before the append and the position "
                "append add Spark jobs and commits on top",
            ]
        return Figure(
            key="B6",
            title="silver apply_changes",
            unit="changes/s",
            ours=changes / ours_s,
            baseline=changes / base_s,
            baseline_name="plain Delta MERGE of the net rows",
            target=">= 0.7",
            notes=[
                f"{changes:,} bronze changes over {keys:,} keys; {silver_rows:,} rows in silver",
                f"apply_changes median {ours_s:.1f} s of {shown['ours']} s (finds the control "
                "table empty in its Delta log, pins bronze, surveys it for snapshots, ranks every "
                "change per key, appends the images to the empty silver, appends its first "
                "position to the control table)",
                f"plain MERGE of the precomputed net rows median {base_s:.1f} s of "
                f"{shown['baseline']} s",
                "both targets exist and are empty when the clock starts; rounds alternate sides",
                f"Spark jobs per timed call: apply_changes {jobs['ours']}, "
                f"plain MERGE {jobs['baseline']}",
                f"local[2] Spark, {os.cpu_count()} cores on the machine",
                *missed,
            ],
        )
    finally:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    import sys

    size = [int(a) for a in sys.argv[1:4]]
    print(run(*size).summary())
