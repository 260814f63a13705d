"""Overlapped backfill waves against sequential ones (decision 1142): is it faster to read the
next wave's chunks while the current wave is appended?

Both sides do a wave's Spark work as `run_wave` does (read the chunks through
`mssql_cdc_snapshot`, persist, count per chunk, append to Delta, unpersist); the overlapped side
starts the next wave's read and count in a second thread before the current append. The
bookkeeping around a wave (stamps, facts rows) is the same on both and left out. Rounds
alternate; the medians count. `MSSQL_CDC_OVERLAP_ROWS`, `..._CHUNKS`, `..._ROUNDS` scale it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ROWS = int(os.environ.get("MSSQL_CDC_OVERLAP_ROWS", "400000"))
CHUNKS = int(os.environ.get("MSSQL_CDC_OVERLAP_CHUNKS", "16"))
ROUNDS = int(os.environ.get("MSSQL_CDC_OVERLAP_ROUNDS", "3"))
PER_WAVE = 2  # numPartitions of a local[2] session
PER_COMMIT = 50_000


def _source(path: Path) -> None:
    from mssql_cdc.emulator import Emulator

    emu = Emulator.create(path)
    emu.create_table(
        "dbo.orders", {"order_id": "bigint", "note": "nvarchar(40)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    rows: list[Any] = [
        ("insert", "dbo.orders", {"order_id": i, "note": f"n{i}"}) for i in range(ROWS)
    ]
    emu.commit_many([rows[i : i + PER_COMMIT] for i in range(0, ROWS, PER_COMMIT)])
    emu.close()


def _waves() -> list[list[tuple[int, object, object]]]:
    width = ROWS // CHUNKS
    chunks = [(i, i * width, (i + 1) * width if i < CHUNKS - 1 else ROWS) for i in range(CHUNKS)]
    return [chunks[i : i + PER_WAVE] for i in range(0, CHUNKS, PER_WAVE)]


def _read(spark: SparkSession, db: Path, stamp: str, wave: list[tuple[int, object, object]],
          metrics: str) -> DataFrame:  # fmt: skip
    from pyspark import StorageLevel

    from mssql_cdc.options.config import SourceConfig
    from mssql_cdc.snapshot.read import read_chunks

    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(db),
         "numPartitions": str(PER_WAVE)}
    )  # fmt: skip
    frame = read_chunks(spark, config, stamp, stamp, wave, metrics_path=metrics)
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    frame.groupBy("_chunk").count().collect()
    return frame


def _append(frame: DataFrame, target: str) -> None:
    frame.write.format("delta").mode("append").save(target)
    frame.unpersist()


def sequential(spark: SparkSession, db: Path, stamp: str, target: str, metrics: str) -> float:
    began = time.perf_counter()
    for wave in _waves():
        _append(_read(spark, db, stamp, wave, metrics), target)
    return time.perf_counter() - began


def overlapped(spark: SparkSession, db: Path, stamp: str, target: str, metrics: str) -> float:
    began = time.perf_counter()
    waves = _waves()
    with ThreadPoolExecutor(max_workers=1) as pool:
        current = _read(spark, db, stamp, waves[0], metrics)
        for wave in [*waves[1:], None]:
            ahead = None if wave is None else pool.submit(_read, spark, db, stamp, wave, metrics)
            _append(current, target)
            if ahead is not None:
                current = ahead.result()
    return time.perf_counter() - began


def main() -> None:
    from mssql_cdc import register
    from mssql_cdc.emulator import Emulator
    from mssql_cdc.spark import local_session

    with tempfile.TemporaryDirectory(prefix="mssql_cdc_overlap_") as tmp:
        root = Path(tmp)
        db = root / "source.db"
        _source(db)
        stamp = Emulator.open(db).max_lsn() or ""
        spark = local_session("wave-overlap", cores=2)
        register(spark)
        times: dict[str, list[float]] = {"sequential": [], "overlapped": []}
        for n in range(ROUNDS):
            for name, run in (("sequential", sequential), ("overlapped", overlapped)):
                target = str(root / f"{name}-{n}")
                times[name].append(run(spark, db, stamp, target, str(root / "metrics")))
        seq, ovl = statistics.median(times["sequential"]), statistics.median(times["overlapped"])
        print(f"rows {ROWS:,}, {CHUNKS} chunks, {PER_WAVE} per wave, {ROUNDS} rounds")
        print(f"sequential {seq:.2f} s, overlapped {ovl:.2f} s, ratio {ovl / seq:.2f}")
        print(f"all: {times}")
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
