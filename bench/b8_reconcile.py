"""B8: reconcile of a silver table of 1,000,000 rows equal to its source, against a full
snapshot read of the same table.

The table lives in the emulator; silver is built before the clock starts (a full snapshot into
bronze, then `apply_changes`). The baseline is B4's: one `spark.read.format("mssql_cdc_snapshot")`
of the table appended to a fresh Delta table, the least a re-snapshot must do to learn the same
thing by copying. Ours is `reconcile(spark, options, silver, control_table=...)`: the source's
side digests its rows per key tile (natively in process on the emulator, by `HASHBYTES`
aggregates on SQL Server), the target's side in Spark, and finds them equal. Seconds per run;
the ratio printed is the baseline's time over ours, the goal no slower than the snapshot read
(ratio >= 1). Each round also times the target's side alone (silver read, SHA-256 of every row
in Spark, one aggregation per tile), the floor of reconcile's time on this machine.
`MSSQL_CDC_B8_ROWS` and `MSSQL_CDC_B8_ROUNDS` scale it down.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def _target_alone(spark: Any, silver: str, tiles: int) -> None:
    """The target's side of one equal reconcile by itself: silver's rows digested and summed
    per tile in one Spark job, as reconcile's first question asks."""
    from mssql_cdc.reconciliation.target_side import TargetRows

    frame = spark.read.format("delta").load(silver)
    fields = [f for f in frame.schema.fields if f.name in ("order_id", "status", "amount")]
    step = max(ROWS // tiles, 1)
    bounds = list(range(step, ROWS, step))[: tiles - 1]
    ranges = list(zip([None, *bounds], [*bounds, None], strict=True))
    digests = TargetRows(frame, keys=["order_id"], fields=fields, time_zone="UTC").digests(ranges)
    if sum(d.rows for d in digests) != ROWS:
        raise RuntimeError("B8: the target side alone did not count every row")


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
        times: dict[str, list[float]] = {"plain": [], "reconcile": [], "target": []}
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
            started = time.perf_counter()
            _target_alone(spark, silver, result.tiles)
            times["target"].append(time.perf_counter() - started)
            print(
                f"B8 round {r}: plain {times['plain'][-1]:.1f} s, reconcile "
                f"{times['reconcile'][-1]:.1f} s, target side alone {times['target'][-1]:.1f} s",
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
        target="reconcile no slower than the snapshot read (ratio >= 1)",
        notes=[
            f"median of {ROUNDS} alternating rounds; seconds per round: baseline "
            f"{seconds('plain')}; reconcile {seconds('reconcile')}",
            f"the floor: the target's side alone (silver read, SHA-256 of every row in Spark, "
            f"one aggregation into {results[-1].tiles} tiles, nothing cached) took "
            f"{seconds('target')} s, median {median['target']:.1f} s, "
            f"{ROWS / median['target']:,.0f} rows/s",
            f"silver built before timing (full snapshot into bronze, apply_changes): "
            f"{build_s:.1f} s",
            f"reconcile: {results[-1].tiles} tiles, all equal; the emulator's side is computed "
            "by its native code as it reads the rows (texts, SHA-256, tile sums; decision 1432), "
            "the target's side is one uncached Spark aggregation summing each row's digest as "
            "three bigints (decision 1433); the two sides are asked at once",
            "before: 0.44 (2026-12-03), the emulator's side hashing every row in Python and the "
            "target's side summing decimal(20,0) digests over a cached copy; before the tile "
            "lookup by binary search (64 CASE branches, run interpreted) 0.15",
            "against SQL Server the baseline moves every row over the network while reconcile "
            "moves one digest per tile (HASHBYTES on the server)",
        ],
    )
