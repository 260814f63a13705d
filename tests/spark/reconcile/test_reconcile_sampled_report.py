"""A sampled reconcile and its report table (decision 1376) against a streamed silver.

The oracles are plain Python: which keys are in a sample is computed here with hashlib from the
digest's definition (docs/reconcile.md, 'The digest': U+0002 then the key's text, UTF-16LE,
SHA-256, the first 8 bytes big-endian, below fraction * 2**64), the differences are the ones
injected, and the bound is 1 - 0.05**(1/n) for no difference in n keys.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from mssql_cdc import ReconcileResult, apply_changes, reconcile
from tests.spark.support.recovery_support import Orders

ROWS = 2000


def _in_sample(key: int, fraction: float) -> bool:
    text = "\u0002" + str(key)
    digest = int.from_bytes(hashlib.sha256(text.encode("utf-16-le")).digest()[:8], "big")
    return digest < fraction * 2**64


def test_a_sampled_reconcile_checks_the_same_keys_on_both_sides_and_reports_each_run(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="sampled-v1", profile="immediate")
    orders.commit(*[("insert", k, "new") for k in range(ROWS)])
    orders.run()
    silver, control = str(tmp_path / "silver"), str(tmp_path / "control")
    report = str(tmp_path / "report")
    apply_changes(
        spark, orders.target, silver, keys=["order_id"], control_table=control,
        facts_table=orders.facts,
    )  # fmt: skip

    def check(**kw: Any) -> ReconcileResult:
        return reconcile(
            spark, orders.options(), silver, control_table=control, tiles=8, report_table=report,
            **kw,
        )  # fmt: skip

    sampled_keys = [k for k in range(ROWS) if _in_sample(k, 0.25)]
    assert 400 < len(sampled_keys) < 600

    found = check(sampled=0.25)
    assert found.equal, found
    assert found.sampled is not None
    assert (found.sampled.fraction, found.sampled.keys, found.sampled.differing) == (
        0.25,
        len(sampled_keys),
        0,
    )
    assert found.source_rows == found.target_rows == len(sampled_keys)
    assert found.sampled.share_below is not None
    assert abs(found.sampled.share_below - (1 - 0.05 ** (1 / len(sampled_keys)))) < 1e-12

    # A row count is a share of the source's rows: 500 of 2000 is the same quarter.
    by_count = check(sampled=500)
    assert by_count.sampled is not None
    assert by_count.sampled.fraction == 0.25
    assert by_count.source_rows == len(sampled_keys)

    # Silver edited behind the library's back: one key in the sample lost and one changed,
    # and one key outside the sample lost too.
    inside = sampled_keys[10]
    changed = sampled_keys[20]
    outside = next(k for k in range(ROWS) if not _in_sample(k, 0.25))
    spark.sql(f"DELETE FROM delta.`{silver}` WHERE order_id IN ({inside}, {outside})")
    spark.sql(f"UPDATE delta.`{silver}` SET status = 'wrong' WHERE order_id = {changed}")

    found = check(sampled=0.25)
    assert not found.equal
    assert (found.missing, found.extra, found.different) == ((inside,), (), (changed,))
    assert found.sampled is not None
    assert found.sampled.differing == 2
    whole = check()
    assert (whole.missing, whole.different) == (tuple(sorted((inside, outside))), (changed,))
    assert whole.sampled is None

    # Every run is in the report, appended: four runs, the two equal ones as one 'none' row.
    rows = [r.asDict() for r in spark.read.format("delta").load(report).collect()]
    runs = {r["run_id"] for r in rows}
    assert len(runs) == 4
    assert {x.report_run for x in (found, whole, by_count)} < runs
    assert sorted(r["kind"] for r in rows) == sorted(
        ["none", "none", "missing", "different", "missing", "missing", "different"]
    )
    mine = [r for r in rows if r["run_id"] == found.report_run]
    assert sorted((r["kind"], json.loads(r["key"])) for r in mine) == [
        ("different", {"order_id": changed}),
        ("missing", {"order_id": inside}),
    ]
    assert {(r["target"], r["against"], r["sampled_fraction"]) for r in mine} == {
        (silver, "silver", 0.25)
    }
    assert all(r["key_columns"] == ["order_id"] and r["columns"] is None for r in rows)
