"""Is the copy right? `reconcile()` and `mssql-cdc reconcile` against a streamed silver and
bronze (issue 20): nothing found under a running workload, an injected difference found and
named, the verdict filed as a facts row.

The oracle is the emulator's own table and plain-Python set comparisons of silver's rows.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from mssql_cdc import ReconcileResult, apply_changes, reconcile
from mssql_cdc.cli import main
from tests.spark.support.recovery_support import Orders


def test_a_running_workload_is_no_difference_and_an_injected_one_is_named(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Immediate: a commit during the reconcile is corrected only once captured; on the
    # realistic profile it is a difference until capture catches up (docs/reconcile.md, Limits).
    orders = Orders(spark, tmp_path, app_id="check-v1", profile="immediate")
    orders.commit(*[("insert", k, "new") for k in range(300)])
    orders.commit(("update", 5, "paid"), ("delete", 6, None))
    orders.run()
    silver, control = str(tmp_path / "silver"), str(tmp_path / "control")
    applied = apply_changes(
        spark,
        orders.target,
        silver,
        keys=["order_id"],
        control_table=control,
        facts_table=orders.facts,
    )

    def check_silver() -> ReconcileResult:
        return reconcile(
            spark, orders.options(), silver, control_table=control, tiles=8, sample=5,
            facts_table=orders.facts, app_id=orders.app_id,
        )  # fmt: skip

    # A workload keeps committing while reconcile reads: none of it is a difference.
    stop = threading.Event()

    failed: list[BaseException] = []

    def workload() -> None:
        n = 0
        try:
            while not stop.is_set():
                changes = [("insert", 1000 + n, "late"), ("update", 100 + n % 100, f"moved{n}")]
                if n < 100:
                    changes.append(("delete", 200 + n, None))
                orders.commit(*changes)
                n += 1
                stop.wait(0.02)  # a busy source, not one that never lets a read settle
        except Exception as exc:  # noqa: BLE001 - the test asserts there was none, below
            failed.append(exc)

    before = orders.source()
    writer = threading.Thread(target=workload)
    writer.start()
    try:
        found = check_silver()
        on_bronze = reconcile(spark, orders.options(), orders.target, against="bronze", tiles=4)
    finally:
        stop.set()
        writer.join()
    assert failed == []
    assert found.equal, found
    assert found.lsn == applied["applied_lsn"]
    assert (found.source_rows, found.target_rows) == (299, 299)
    assert found.columns == ("order_id", "status")
    assert on_bronze.equal, on_bronze
    # The workload did land in the source meanwhile. Its first 100 commits insert one key and
    # delete another, so the count can stay 299: compare the rows, not their number.
    assert orders.source() != before

    # Silver edited behind the library's back: a key lost, one invented, one changed.
    spark.sql(f"DELETE FROM delta.`{silver}` WHERE order_id = 17")
    spark.sql(f"UPDATE delta.`{silver}` SET status = 'wrong' WHERE order_id = 250")
    ghost = spark.read.format("delta").load(silver).where("order_id = 1")
    ghost = ghost.withColumn("order_id", F.lit(9999)).withColumn("status", F.lit("ghost"))
    ghost.write.format("delta").mode("append").save(silver)
    rows = {r["order_id"]: r["status"] for r in spark.read.format("delta").load(silver).collect()}
    assert set(rows) ^ {k for k in range(300) if k != 6} == {17, 9999}  # the oracle's view

    found = check_silver()
    assert not found.equal
    assert (found.missing, found.extra, found.different) == ((17,), (9999,), (250,))
    assert (found.missing_count, found.extra_count, found.different_count) == (1, 1, 1)
    assert found.complete
    [first, second] = sorted(orders.events("reconcile"), key=lambda r: r["written_at"])
    assert json.loads(first["detail"])["equal"] is True
    detail = json.loads(second["detail"])
    assert (detail["missing"], detail["extra"], detail["different"]) == ([17], [9999], [250])
    assert (second["app_id"], second["end_lsn"], second["target"]) == (
        "check-v1",
        applied["applied_lsn"],
        silver,
    )

    # The CLI says the same, and exits 1 on a difference.
    options = tmp_path / "options.json"
    options.write_text(json.dumps(orders.options()))
    cli = ["reconcile", "--options", str(options), "--target", silver, "--control", control]
    assert main([*cli, "--json", "--tiles", "4"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert (printed["missing"], printed["extra"], printed["different"]) == ([17], [9999], [250])
