"""A full disk under the checkpoint or the metrics folder, or a read-only checkpoint: the run
refuses to start, naming the fault, the folder and what to do; nothing committed changes; once
space is freed (the disk is writable again) the next run resumes and ends equal to the source.

The disk is a real tmpfs of a few MB filled to its last byte (tests/support/full_disk.py), so
Spark's own checkpoint writer would meet ENOSPC too. The oracles are the emulator's rows read
directly and the plain-Python rebuild of tests/spark/support/recovery_support.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.errors import ConfigError, DiskFullError
from tests.spark.support.recovery_support import Orders
from tests.support.full_disk import FILLER, small_disk


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` but the filler, by relative path, with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != FILLER
    }


def delta_versions(table: str) -> list[str]:
    return sorted(p.name for p in (Path(table) / "_delta_log").glob("*.json"))


@pytest.mark.parametrize("on_disk", ["checkpoint", "metrics"])
def test_a_full_disk_stops_the_run_before_it_writes_and_the_next_run_resumes_once_freed(
    spark: SparkSession, tmp_path: Path, on_disk: str
) -> None:
    with small_disk(tmp_path / "disk", size_mb=8) as disk:
        orders = Orders(spark, tmp_path / "story", app_id="disk-v1")
        if on_disk == "checkpoint":
            orders.checkpoint = disk.path / "ckpt"
            orders.extra = {"metricsPath": str(disk.path / "metrics")}
            folder, what = orders.checkpoint, "the checkpoint"
        else:
            orders.extra = {"metricsPath": str(disk.path / "metrics")}
            folder, what = disk.path / "metrics", "the metrics folder (option metricsPath)"
        orders.orders(3)
        orders.run()
        orders.commit(("insert", 10, "late"), ("update", 1, "paid"))
        before = (files(disk.path), delta_versions(orders.target), delta_versions(orders.facts))
        state_before = orders.state()

        disk.fill()
        assert disk.free_bytes() == 0
        with pytest.raises(DiskFullError) as refused:
            orders.to_delta()
        message = str(refused.value)
        assert message.startswith(f"no space left on device for {what} at {folder}: ")
        assert "Free space on that file system" in message
        assert "run again" in message
        assert refused.value.path == str(folder)
        assert refused.value.free_bytes == 0
        assert spark.streams.active == []
        after = (files(disk.path), delta_versions(orders.target), delta_versions(orders.facts))
        assert after == before  # nothing committed is lost or rewritten
        assert orders.state() == state_before

        disk.free()
        orders.run()
        bronze = orders.bronze()
        changes = Counter(
            (r["_start_lsn"], r["_seqval"], r["_operation"]) for r in bronze if r["_operation"]
        )
        assert all(n == 1 for n in changes.values())
        assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (2, "new"),
                                                       (10, "late")]  # fmt: skip
        assert len(delta_versions(orders.target)) == len(before[1]) + 1


def test_a_read_only_checkpoint_stops_the_run_before_it_writes_and_the_next_run_resumes(
    spark: SparkSession, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk", size_mb=8) as disk:
        orders = Orders(spark, tmp_path / "story", app_id="ro-v1")
        orders.checkpoint = disk.path / "ckpt"
        orders.orders(3)
        orders.run()
        orders.commit(("insert", 10, "late"))
        before = (files(disk.path), delta_versions(orders.target), delta_versions(orders.facts))

        disk.read_only()
        with pytest.raises(ConfigError) as refused:
            orders.to_delta()
        assert str(refused.value) == (
            f"the checkpoint at {orders.checkpoint} cannot be written: {orders.checkpoint} is "
            "on a read-only file system. Nothing was started or written. Mount it read-write "
            "(or give the stream a folder it may write) and run again: the run resumes after "
            "the last committed batch."
        )
        assert spark.streams.active == []
        after = (files(disk.path), delta_versions(orders.target), delta_versions(orders.facts))
        assert after == before

        disk.writable()
        orders.run()
        assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "new"), (2, "new"),
                                                       (10, "late")]  # fmt: skip
