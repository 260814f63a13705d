"""Overlapped backfill waves against sequential ones (decisions 1142, 1430): is it faster to
read and append the next wave while the previous wave's facts rows are written?

Both sides run the library's own `backfill()` to completion on a fresh chunked open of the same
emulator table: sequential without `target_wave_seconds`, overlapped with it. The width is
pinned to `numPartitions` chunks per wave on both (the sizing under `target_wave_seconds` is
replaced for the run), so overlap is the only difference; waves are read once, observed on
their append (decision 1348). Rounds alternate; the medians count. `MSSQL_CDC_OVERLAP_ROWS`,
`..._CHUNKS`, `..._ROUNDS` scale it.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


def _pinned(
    waves: Sequence[Any], *, target_seconds: float | None, default: int, remaining: int
) -> int:
    """The sizing of both sides: `numPartitions` chunks per wave, whatever the target."""
    return max(0, min(default, remaining))


def run(spark: SparkSession, db: Path, root: Path, name: str, overlap: bool) -> float:
    """One side's backfill of a fresh chunked open to completion, in wall seconds."""
    from mssql_cdc.options.config import SourceConfig
    from mssql_cdc.snapshot import open_chunked

    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(db),
         "numPartitions": str(PER_WAVE)}
    )  # fmt: skip
    target, facts, app_id = str(root / name), str(root / f"{name}-facts"), f"bench-{name}"
    open_chunked(
        spark, config, target, kind="bootstrap", generation=0, app_id=app_id, facts_table=facts
    )
    module = importlib.import_module("mssql_cdc.snapshot.backfill")
    began = time.perf_counter()
    status = module.backfill(
        spark, config, target, app_id=app_id, facts_table=facts,
        chunk_rows=-(-ROWS // CHUNKS), target_wave_seconds=3600.0 if overlap else None,
    )  # fmt: skip
    seconds = time.perf_counter() - began
    if status["state"] != "done":
        raise SystemExit(f"{name}: the backfill ended {status}")
    print(f"{name}: {status['chunks_total']} chunks", flush=True)
    return seconds


def main() -> None:
    from mssql_cdc import register
    from mssql_cdc.spark import local_session

    importlib.import_module("mssql_cdc.snapshot.backfill").next_wave_chunks = _pinned
    with tempfile.TemporaryDirectory(prefix="mssql_cdc_overlap_") as tmp:
        root = Path(tmp)
        db = root / "source.db"
        _source(db)
        spark = local_session("wave-overlap", cores=2)
        register(spark)
        times: dict[str, list[float]] = {"sequential": [], "overlapped": []}
        for n in range(ROUNDS):
            for name, overlap in (("sequential", False), ("overlapped", True)):
                times[name].append(run(spark, db, root, f"{name}-{n}", overlap))
                print(f"round {n + 1} {name}: {times[name][-1]:.1f} s", flush=True)
        seq, ovl = statistics.median(times["sequential"]), statistics.median(times["overlapped"])
        print(f"rows {ROWS:,}, {CHUNKS} chunks, {PER_WAVE} per wave, {ROUNDS} rounds")
        print(f"sequential {seq:.2f} s, overlapped {ovl:.2f} s, ratio {ovl / seq:.2f}")
        print(f"all: {times}")
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
