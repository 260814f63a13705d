"""`delta_sink` and the source's own snapshots (`snapshotMode`), without a JVM.

docs/pipelines.md, 'What a sink of its own sees of a re-snapshot', says `delta_sink` cannot take
them: it adds `_snapshot` to bronze itself and refuses a batch that has it. The batch here has
the columns the `mssql_cdc` source infers for a table with each `snapshotMode`.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mssql_cdc import delta_sink
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from mssql_cdc.source.formats import CdcDataSource


def source_columns(path: Path, mode: str) -> list[str]:
    options = {
        "captureInstance": "dbo_orders",
        "backend": "emulator",
        "emulatorPath": str(path),
        "snapshotMode": mode,
    }
    return CdcDataSource(options).schema().names


def test_delta_sink_refuses_a_batch_of_the_source_that_snapshots_itself(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    sink = delta_sink(str(tmp_path / "bronze"), "orders")
    for mode in ("initial", "when_needed"):
        batch = SimpleNamespace(columns=source_columns(path, mode))
        with pytest.raises(ConfigError, match=r"already has the column\(s\) _snapshot"):
            sink(batch, 0)  # type: ignore[arg-type]
    # without the option the same table's batch passes the column check and goes on to Spark
    batch = SimpleNamespace(columns=source_columns(path, "never"))
    with pytest.raises(AttributeError, match="sparkSession"):
        sink(batch, 0)  # type: ignore[arg-type]
