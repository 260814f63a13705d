"""Silver on a Spark Connect session: `apply_changes` keeps the latest image of every key, a
re-snapshot after a loss rebuilds it (keys deleted in the gap disappear), and finalization's
verdict moves with the stream's progress and reaches silver (docs/silver.md).

The oracle is the emulator's table; the verdict is the hour of a commit time typed out here.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from mssql_cdc import apply_changes, finalization
from tests.spark.support.recovery_support import Orders


def silver_rows(spark: SparkSession, path: str) -> list[tuple[int, str]]:
    return sorted(
        (int(r["order_id"]), str(r["status"]))
        for r in spark.read.format("delta").load(path).collect()
    )


def test_silver_follows_bronze_through_a_resnapshot_and_carries_the_verdict(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path / "stream", app_id="silver-v1")
    silver, control = str(tmp_path / "silver"), str(tmp_path / "control")

    def apply() -> Any:
        return apply_changes(
            spark, orders.target, silver, keys=["order_id"], control_table=control,
            facts_table=orders.facts,
        )  # fmt: skip

    orders.orders(3)
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.commit(("insert", 3, "new"))
    query = orders.run()
    first = apply()
    assert (first["bronze_found"], first["rebuilt"], first["finalized_until"]) == (True, True, None)
    assert first["applied_lsn"] == max(r["_start_lsn"] for r in orders.bronze())
    assert silver_rows(spark, silver) == orders.source() == [
        (0, "new"), (1, "paid"), (2, "new"), (3, "new")
    ]  # fmt: skip

    end = finalization.end_offset_from_progress(query.lastProgress)
    assert end is not None
    verdict = finalization.advance(spark, control, orders.target, end)
    assert verdict == datetime(2026, 9, 28, 13)  # the commits ran from 13:51 to 13:55
    assert finalization.finalized_until(spark, control, orders.target) == verdict
    assert finalization.is_final(spark, control, orders.target, datetime(2026, 9, 28, 13))
    again = apply()
    assert (again["rebuilt"], again["finalized_until"]) == (False, verdict)
    assert again["applied_lsn"] == first["applied_lsn"]

    orders.commit(("delete", 2, None))  # lost to the cleanup below: bronze never sees it
    orders.commit(("update", 0, "paid"))
    orders.cleanup_past_everything()
    orders.run()
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    rebuilt = apply()
    assert rebuilt["rebuilt"] is True
    assert silver_rows(spark, silver) == orders.source() == [(0, "paid"), (1, "paid"), (3, "new")]
    orders.commit(("insert", 4, "new"))
    orders.run()
    assert apply()["rebuilt"] is False
    assert silver_rows(spark, silver) == orders.source()
