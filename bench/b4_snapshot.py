"""B4: a full snapshot of a table of 1,000,000 rows, and a chunked backfill of the same table,
against a plain Spark read and Delta append of the same rows.

The table lives in the emulator. The baseline reads the same rows from a Parquet copy (written
before timing) and appends them to a fresh Delta table: the least a snapshot must do, without
the stamp, the facts rows, the history search or the chunk bookkeeping. Rows per second; the
target is a ratio of at least 0.5 for the full snapshot. `MSSQL_CDC_B4_ROWS` scales it down.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pyarrow.parquet as pq  # noqa: E402

import mssql_cdc  # noqa: E402
from mssql_cdc.backfill import backfill  # noqa: E402
from mssql_cdc.chunked import open_chunked  # noqa: E402
from mssql_cdc.config import SourceConfig  # noqa: E402
from mssql_cdc.emulator import Emulator, EmulatorReader  # noqa: E402
from mssql_cdc.snapshot import take_full  # noqa: E402
from mssql_cdc.spark import local_session  # noqa: E402
from report import Figure  # noqa: E402

ROWS = int(os.environ.get("MSSQL_CDC_B4_ROWS", "1000000"))
PER_COMMIT = 10_000


def _fill(path: Path) -> None:
    emu = Emulator.create(path)
    emu.create_table(
        "dbo.orders",
        {"order_id": "bigint", "status": "nvarchar(20)", "qty": "int"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    for start in range(0, ROWS, PER_COMMIT):
        ids = range(start, min(start + PER_COMMIT, ROWS))
        emu.commit(
            [
                ("insert", "dbo.orders", {"order_id": i, "status": f"s{i % 97}", "qty": i % 13})
                for i in ids
            ]
        )
    emu.close()


def run() -> Figure:
    if getattr(mssql_cdc, "register", None) is None:
        raise RuntimeError("B4 needs the mssql_cdc_snapshot format (mssql_cdc.register)")
    with tempfile.TemporaryDirectory(prefix="b4-") as tmp:
        root = Path(tmp)
        source = root / "source.db"
        _fill(source)
        parquet = root / "rows.parquet"
        pq.write_table(EmulatorReader(source).read_table("dbo.orders").read_all(), parquet)
        spark = local_session("b4", warehouse=root / "wh")
        config = SourceConfig.from_options(
            {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(source)}
        )
        t0 = time.perf_counter()
        spark.read.parquet(str(parquet)).write.format("delta").mode("append").save(
            str(root / "plain")
        )
        plain = time.perf_counter() - t0
        t0 = time.perf_counter()
        full = take_full(
            spark, config, str(root / "full"), kind="bootstrap", generation=0, new=True,
            app_id="b4", facts_table=str(root / "facts"),
        )  # fmt: skip
        ours = time.perf_counter() - t0
        if full.rows != ROWS:
            raise RuntimeError(f"B4: the full snapshot wrote {full.rows} rows, expected {ROWS}")
        t0 = time.perf_counter()
        open_chunked(
            spark, config, str(root / "chunked"), kind="bootstrap", generation=0,
            app_id="b4c", facts_table=str(root / "facts_c"),
        )  # fmt: skip
        status = backfill(
            spark, config, str(root / "chunked"), app_id="b4c", facts_table=str(root / "facts_c"),
            chunk_rows=max(ROWS // 4, 1),
        )  # fmt: skip
        chunked = time.perf_counter() - t0
        if status["state"] != "done":
            raise RuntimeError(f"B4: backfill ended {status['state']}: {status['reason']}")
        spark.stop()
    return Figure(
        key="B4",
        title=f"full snapshot of {ROWS:,} rows",
        unit="rows/s",
        ours=ROWS / ours,
        baseline=ROWS / plain,
        baseline_name="Parquet read + Delta append",
        target=">= 0.5",
        notes=[
            f"full snapshot {ours:,.1f} s, plain read and append {plain:,.1f} s",
            f"chunked open + backfill (4 chunks) {chunked:,.1f} s, "
            f"{ROWS / chunked:,.1f} rows/s, ratio {plain / chunked:.2f} to the baseline",
        ],
    )
