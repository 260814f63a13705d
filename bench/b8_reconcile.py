"""B8: reconcile of a silver table of 1,000,000 rows equal to its source, against a full
snapshot read of the same table.

The table lives in the emulator; silver is built before the clock starts (a full snapshot into
bronze, then `apply_changes`). The baseline is B4's: one `spark.read.format("mssql_cdc_snapshot")`
of the table appended to a fresh Delta table, the least a re-snapshot must do to learn the same
thing by copying. Ours is `reconcile(spark, options, silver, control_table=...)`: the source's
side digests its rows per key tile (in process on the emulator, by `HASHBYTES` aggregates on SQL
Server), the target's side in Spark, and finds them equal. Seconds per run; the ratio printed
is the baseline's time over ours, the goal at most half the snapshot's time (ratio >= 2).
`MSSQL_CDC_B8_ROWS` and `MSSQL_CDC_B8_ROUNDS` scale it down.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import Figure  # noqa: E402

ROWS = int(os.environ.get("MSSQL_CDC_B8_ROWS", "1000000"))
ROUNDS = int(os.environ.get("MSSQL_CDC_B8_ROUNDS", "3"))
PER_COMMIT = 10_000


def _fill(path: Path) -> None:
    """dbo.orders with ROWS rows, a decimal column among them, committed PER_COMMIT at a time."""
    from decimal import Decimal

    from mssql_cdc.emulator import Emulator

    emu = Emulator.create(path)
    columns = {"order_id": "bigint", "status": "nvarchar(20)", "amount": "decimal(12,2)"}
    emu.create_table("dbo.orders", columns, primary_key="order_id")
    emu.enable_cdc("dbo.orders")

    def batch(first: int) -> list[tuple[str, str, dict[str, object]]]:
        last = min(first + PER_COMMIT, ROWS)
        return [
            ("insert", "dbo.orders", {"order_id": i, "status": f"s{i % 97}",
                                      "amount": Decimal(i % 10_000) / 100})
            for i in range(first, last)
        ]  # fmt: skip

    emu.commit_many([batch(first) for first in range(0, ROWS, PER_COMMIT)])
    emu.close()


def run() -> Figure:
    from mssql_cdc import apply_changes, reconcile, register
    from mssql_cdc.options.config import SourceConfig
    from mssql_cdc.snapshot.full import take_full, write_completion
    from mssql_cdc.spark import local_session

    with tempfile.TemporaryDirectory(prefix="b8-") as tmp:
        root = Path(tmp)
        source = root / "source.db"
        _fill(source)
        spark = local_session("b8", warehouse=root / "wh")
        register(spark)
        options = {
            "captureInstance": "dbo_orders",
            "backend": "emulator",
            "emulatorPath": str(source),
        }
        config = SourceConfig.from_options(options)
        bronze, facts, silver, control = (
            str(root / n) for n in ("bronze", "facts", "silver", "control")
        )
        built = time.perf_counter()
        taken = take_full(
            spark, config, bronze, kind="bootstrap", generation=0, new=False,
            app_id="b8", facts_table=facts,
        )  # fmt: skip
        write_completion(
            spark, facts, app_id="b8", generation=0, kind="bootstrap", target=bronze,
            snapshot=taken,
        )  # fmt: skip
        apply_changes(
            spark, bronze, silver, keys=["order_id"], control_table=control, facts_table=facts
        )
        build_s = time.perf_counter() - built
        times: dict[str, list[float]] = {"plain": [], "reconcile": []}
        results = []
        for r in range(ROUNDS):
            started = time.perf_counter()
            frame = spark.read.format("mssql_cdc_snapshot").options(**options).load()
            frame.write.format("delta").mode("append").save(str(root / f"plain{r}"))
            times["plain"].append(time.perf_counter() - started)
            started = time.perf_counter()
            result = reconcile(spark, options, silver, control_table=control)
            times["reconcile"].append(time.perf_counter() - started)
            results.append(result)
            if not result.equal or result.source_rows != ROWS:
                raise RuntimeError(f"B8: reconcile found the copy different: {result}")
            print(
                f"B8 round {r}: plain {times['plain'][-1]:.1f} s, reconcile "
                f"{times['reconcile'][-1]:.1f} s",
                flush=True,
            )
        spark.stop()
    median = {name: statistics.median(values) for name, values in times.items()}

    def seconds(name: str) -> str:
        return ", ".join(f"{t:.1f}" for t in times[name])

    return Figure(
        key="B8",
        title=f"reconcile of {ROWS:,} equal rows (silver against the emulator)",
        unit="rows/s",
        ours=ROWS / median["reconcile"],
        baseline=ROWS / median["plain"],
        baseline_name="mssql_cdc_snapshot read + Delta append",
        target="reconcile in at most half the snapshot read's time (ratio >= 2)",
        notes=[
            f"median of {ROUNDS} alternating rounds; seconds per round: baseline "
            f"{seconds('plain')}; reconcile {seconds('reconcile')}",
            f"silver built before timing (full snapshot into bronze, apply_changes): "
            f"{build_s:.1f} s",
            f"reconcile: {results[-1].tiles} tiles, all equal; the emulator's side digests every "
            "row in process (decision 1100), the target's side is one Spark aggregation per "
            "question over the cached keys and digests; the two sides are asked at once",
            "before the tile lookup by binary search (one CASE branch per tile, 64 tiles, ran "
            "interpreted): 27.5 and 26.1 s against a baseline of 3.4 and 4.6 s, ratio 0.15 "
            "(2026-12-03, load about 2)",
            "the floor on this machine: the target side alone (silver read, SHA-256 of every row "
            "in Spark, cached, one aggregation) took 5 to 7 s warm when measured by itself "
            "(3.3 to 4.3 s to cache, 1.6 to 2.8 s to aggregate, load 2 to 5), twice the whole "
            "baseline, which is a C++ read of the emulator and an append of three columns; half "
            "the baseline is out of reach here. "
            "Against SQL Server the baseline moves every row over the network while reconcile "
            "moves one digest per tile (HASHBYTES on the server)",
        ],
    )
