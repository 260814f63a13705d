"""apply_changes against hand-built bronze and facts tables, checked by plain-Python oracles."""

from __future__ import annotations

import random
from pathlib import Path

from pyspark.sql import SparkSession
from silver_builder import SourceTable, latest, random_commits

from mssql_cdc.silver import apply_changes


def apply(src: SourceTable, **extra: object):  # type: ignore[no-untyped-def]
    return apply_changes(
        src.spark,
        src.bronze,
        src.silver,
        keys=["id"],
        control_table=src.control,
        facts_table=src.facts,
        **extra,  # type: ignore[arg-type]
    )


def test_silver_equals_the_latest_image_of_every_key(spark: SparkSession, tmp_path: Path) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(18)
    for round_ in range(3):
        random_commits(src, rng, 25)
        src.flush(rng)
        result = apply(src)
        assert result["bronze_found"] is True
        assert result["rebuilt"] is False
        rows = src.bronze_rows()
        assert result["applied_lsn"] == max(r["_start_lsn"] for r in rows), round_
        assert src.silver_rows() == latest(rows) == src.rows, round_
    assert None in src.rows or any(r["id"] is None for r in src.bronze_rows())

    version = src.silver_version()
    again = apply(src)
    assert src.silver_version() == version  # nothing new in bronze: no silver commit
    assert again["applied_lsn"] == result["applied_lsn"]
