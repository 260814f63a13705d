"""B5: the wall time from `to_delta` to a running query after a loss, minus the snapshot.

An emulator table of 10,000 rows is streamed by `to_delta(bootstrap=True,
on_data_loss="resnapshot")`. Each round then commits a change, lets four days pass and runs
the cleanup job, so the next run finds its range purged, and times `to_delta(...,
on_data_loss="resnapshot", resnapshot_interval_days=0)` until it returns the started query of
the new generation. The full snapshot's own step (`take_full`: its open row, the table read
and the append) is timed around it and subtracted; the facts' `duration_ms` of the round's
`resnapshot` row is in the notes. The baseline, measured in the same round once that query
has drained, is the same stream's plain `to_delta(on_data_loss="fail")` start with no loss.
What remains is what recovering costs beyond reading the table: the pre-flight, the state
writes, the event row and the new generation's paths. Lower is better.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from b3_preflight import failure_of  # noqa: E402
from report import Figure  # noqa: E402

ROWS = 10_000
PER_COMMIT = 1_000
ROUNDS = 5
START = datetime(2026, 9, 28, 13, 50)
APP_ID = "b5-v1"


def _timed(spent: list[float], fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - t0)

    return wrapper


def run() -> Figure:
    from mssql_cdc import stream
    from mssql_cdc.emulator import Emulator
    from mssql_cdc.recovery.spark_steps import SparkRecoveryWrites
    from mssql_cdc.spark import local_session

    with tempfile.TemporaryDirectory(prefix="b5-") as tmp:
        root = Path(tmp)
        emu = Emulator.create(root / "e.db", start=START)
        emu.create_table(
            "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
        )
        emu.enable_cdc("dbo.orders")
        minute = 1.0
        for c in range(ROWS // PER_COMMIT):
            ids = range(c * PER_COMMIT, (c + 1) * PER_COMMIT)
            emu.commit(
                [("insert", "dbo.orders", {"order_id": i, "status": "new"}) for i in ids],
                at=START + timedelta(minutes=minute),
            )
            minute += 1
        spark = local_session("mssql-cdc-bench-b5", warehouse=root / "wh")
        cdc = stream(
            spark,
            {"backend": "emulator", "emulatorPath": str(emu.path), "captureInstance": "dbo_orders"},
        )
        target, facts, ckpt = str(root / "bronze"), str(root / "facts"), str(root / "ckpt")

        def start(**kw: Any) -> tuple[float, Any]:
            t0 = time.perf_counter()
            query = cdc.to_delta(target, APP_ID, ckpt, facts, trigger={"availableNow": True}, **kw)
            spent = time.perf_counter() - t0
            drain(query)
            return spent, query

        def drain(query: Any) -> None:
            """Await the query; rerun it (untimed) when an overloaded machine lost a worker."""
            for _ in range(3):
                error = failure_of(query)
                if error is None:
                    return
                if "failed to connect back" not in error:
                    raise RuntimeError(f"B5: the stream failed: {error}")
                query = cdc.to_delta(
                    target, APP_ID, ckpt, facts, trigger={"availableNow": True},
                    on_data_loss="fail",
                )  # fmt: skip
            raise RuntimeError("B5: the stream kept losing its Python workers")

        start(bootstrap=True, on_data_loss="resnapshot")
        recovering: list[float] = []
        snapshots: list[float] = []
        facts_ms: list[int] = []
        plain: list[float] = []
        names: list[str] = []
        original = SparkRecoveryWrites.take_full
        for round_ in range(ROUNDS):
            key = ROWS + round_
            emu.commit(
                [("insert", "dbo.orders", {"order_id": key, "status": "late"})],
                at=START + timedelta(minutes=minute),
            )
            minute += 4 * 24 * 60
            emu.idle(at=START + timedelta(minutes=minute))
            emu.run_cleanup_job()
            minute += 1
            step: list[float] = []
            SparkRecoveryWrites.take_full = _timed(step, original)
            try:
                spent, query = start(on_data_loss="resnapshot", resnapshot_interval_days=0)
            finally:
                SparkRecoveryWrites.take_full = original
            if len(step) != 1:
                raise RuntimeError(f"B5: round {round_} took {len(step)} snapshots, not one")
            recovering.append(spent)
            snapshots.append(step[0])
            names.append(str(query.name))
            events = (
                spark.read.format("delta").load(facts)
                .where(f"event = 'resnapshot' AND app_id = '{APP_ID}.g{round_ + 1}'")
                .select("duration_ms", "rows").collect()
            )  # fmt: skip
            if len(events) != 1 or events[0]["rows"] != ROWS + round_ + 1:
                raise RuntimeError(f"B5: round {round_} left the events {events}")
            facts_ms.append(int(events[0]["duration_ms"]))
            spent, _ = start(on_data_loss="fail")
            plain.append(spent)
        emu.close()
        spark.stop()

    beyond = [r - s for r, s in zip(recovering, snapshots, strict=True)]

    def ms(values: list[float]) -> str:
        return ", ".join(f"{v * 1000:,.0f}" for v in values)

    return Figure(
        key="B5",
        title=f"recovery to a running query after a loss, minus the snapshot ({ROWS:,} rows)",
        unit="ms",
        ours=statistics.median(beyond) * 1000,
        baseline=statistics.median(plain) * 1000,
        baseline_name="to_delta(on_data_loss='fail') start, no loss",
        target="none set (measured; lower is better)",
        notes=[
            f"{ROUNDS} rounds, each a loss then a recovering to_delta, then a plain start; "
            f"medians; queries {', '.join(names)}",
            f"recovering to_delta per round (ms): {ms(recovering)}",
            f"snapshot step timed around take_full (ms): {ms(snapshots)}; the resnapshot "
            f"rows' duration_ms: {', '.join(f'{v:,}' for v in facts_ms)}",
            f"recovering minus the snapshot step (ms): {ms(beyond)}",
            f"plain to_delta start without a loss (ms): {ms(plain)}",
        ],
    )
