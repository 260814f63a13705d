"""`reconcile()` over TDS (issue 20): the stream's options name a T-SQL backend reading the
emulator's front end through pymssql, so the source side's tile digests are HASHBYTES sums the
server computes, compared with Spark's digests of silver.

The oracle is the emulator's own table and a plain-Python set comparison of silver's rows.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from mssql_cdc import apply_changes, reconcile
from tests.spark.support.recovery_support import Orders


def test_reconcile_over_tds_finds_no_difference_in_an_equal_copy_and_names_an_injected_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="tds-check", backend="pymssql")
    orders.commit(*[("insert", k, f"K\u00f8benhavn {k} \U0001f600") for k in range(60)])
    orders.commit(("update", 5, "paid"), ("delete", 6, None), ("insert", 70, None))
    orders.run()
    assert "connectionString" in orders.options()  # the source is read over the wire
    silver, control = str(tmp_path / "silver"), str(tmp_path / "control")
    apply_changes(spark, orders.target, silver, keys=["order_id"], control_table=control)

    def check() -> tuple[bool, tuple[object, ...], tuple[object, ...], tuple[object, ...]]:
        found = reconcile(spark, orders.options(), silver, control_table=control, tiles=4)
        return found.equal, found.missing, found.extra, found.different

    assert check() == (True, (), (), ())

    spark.sql(f"UPDATE delta.`{silver}` SET status = 'K\u00f8benhavn 9' WHERE order_id = 9")
    spark.sql(f"DELETE FROM delta.`{silver}` WHERE order_id = 41")
    rows = {r["order_id"]: r["status"] for r in spark.read.format("delta").load(silver).collect()}
    source = {r["order_id"]: r["status"] for r in orders.emu.rows("dbo.orders")}
    assert set(source) - set(rows) == {41}  # the oracle's view of what was injected
    assert {k for k in rows if rows[k] != source[k]} == {9}
    assert check() == (False, (41,), (), (9,))
