"""isolationLevel and lockTimeoutMs of the `mssql_cdc_snapshot` read over every backend, against
an open writer transaction of the emulator (decision 1335).

The oracle is Microsoft's documentation: a READ COMMITTED read waits for another transaction's
exclusive row locks, a SNAPSHOT read does not and sees the last committed rows, and SNAPSHOT
needs ALLOW_SNAPSHOT_ISOLATION ON
(https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql);
SET LOCK_TIMEOUT ends the wait with error 1222
(https://learn.microsoft.com/en-us/sql/t-sql/statements/set-lock-timeout-transact-sql).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import register
from tests.spark.support.backends import BACKENDS, Backend, backend_options
from tests.support import emulator_profile


def read(
    spark: SparkSession, path: Path, backend: Backend, **options: str
) -> list[tuple[Any, ...]]:
    register(spark)
    df = (
        spark.read.format("mssql_cdc_snapshot")
        .options(captureInstance="dbo_items", **backend_options(path, backend))
        .options(**options)
        .load()
    )
    return sorted((r["id"], r["name"]) for r in df.collect())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_snapshot_read_meets_an_open_writer_as_its_isolation_level_says(
    spark: SparkSession, tmp_path: Path, backend: Backend
) -> None:
    path = tmp_path / "shop.db"
    emu = emulator_profile.create(path, start="2026-09-28T13:50:00")
    emu.create_table("dbo.items", {"id": "int", "name": "nvarchar(10)"}, primary_key="id")
    emu.enable_cdc("dbo.items")
    emu.commit(
        [("insert", "dbo.items", {"id": i, "name": f"n{i}"}) for i in range(1, 6)],
        at="2026-09-28T14:00:00",
    )
    emulator_profile.wait_for_capture(emu, "2026-09-28T14:00:00")
    committed = [(i, f"n{i}") for i in range(1, 6)]
    writer = emu.begin(at="2026-09-28T14:01:00")
    writer.execute([("update", "dbo.items", {"id": 3, "name": "changed"})])

    with pytest.raises(Exception) as waited:  # noqa: PT011  Spark wraps the executor's error
        read(spark, path, backend, isolationLevel="readCommitted", lockTimeoutMs="300")
    assert "lockTimeoutMs=300" in str(waited.value)
    assert "isolationLevel=snapshot" in str(waited.value)

    with pytest.raises(Exception) as refused:  # noqa: PT011
        read(spark, path, backend, isolationLevel="snapshot")
    assert "isolationLevel=snapshot needs snapshot isolation" in str(refused.value)
    assert "SET ALLOW_SNAPSHOT_ISOLATION ON" in str(refused.value)

    emu.configure(allow_snapshot_isolation=True)
    # lockTimeoutMs=0: a read that waited at all would fail; SNAPSHOT reads the committed rows.
    assert read(spark, path, backend, isolationLevel="snapshot", lockTimeoutMs="0") == committed

    writer.commit(at="2026-09-28T14:02:00")
    after = read(spark, path, backend, isolationLevel="readCommitted", lockTimeoutMs="300")
    assert after == [(1, "n1"), (2, "n2"), (3, "changed"), (4, "n4"), (5, "n5")]
