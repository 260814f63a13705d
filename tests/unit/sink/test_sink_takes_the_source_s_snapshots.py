"""`delta_sink` and the source's own snapshots (`snapshotMode`), without a JVM (decision 1427).

The sink keeps the source's `_snapshot` (a STRING, bronze's own meaning) instead of refusing
the batch; any other `_snapshot`, and a `_batch_id`, it still refuses. The batch here has the
columns and types the `mssql_cdc` source infers for a table with each `snapshotMode`.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mssql_cdc import delta_sink
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from mssql_cdc.source.formats import CdcDataSource


def source_batch(path: Path, mode: str) -> SimpleNamespace:
    options = {
        "captureInstance": "dbo_orders",
        "backend": "emulator",
        "emulatorPath": str(path),
        "snapshotMode": mode,
    }
    schema = CdcDataSource(options).schema()
    return SimpleNamespace(
        columns=schema.names, dtypes=[(f.name, f.dataType.simpleString()) for f in schema.fields]
    )


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    return path


@pytest.mark.parametrize("mode", ["never", "initial", "when_needed"])
def test_delta_sink_takes_a_batch_of_the_source_with_each_snapshot_mode(
    tmp_path: Path, table: Path, mode: str
) -> None:
    sink = delta_sink(str(tmp_path / "bronze"), "orders")
    batch = source_batch(table, mode)
    assert ("_snapshot" in batch.columns) is (mode != "never")
    # the column check passes and the sink goes on to Spark, which the stand-in lacks
    with pytest.raises(AttributeError, match="sparkSession"):
        sink(batch, 0)  # type: ignore[arg-type]


def test_delta_sink_refuses_a_snapshot_column_that_is_not_the_source_s(
    tmp_path: Path, table: Path
) -> None:
    sink = delta_sink(str(tmp_path / "bronze"), "orders")
    batch = source_batch(table, "initial")
    batch.dtypes = [(n, "bigint" if n == "_snapshot" else t) for n, t in batch.dtypes]
    with pytest.raises(ConfigError, match="column _snapshot is bigint"):
        sink(batch, 0)  # type: ignore[arg-type]
    batch = source_batch(table, "never")
    batch.columns = [*batch.columns, "_batch_id"]
    with pytest.raises(ConfigError, match=r"already has the column\(s\) _batch_id"):
        sink(batch, 0)  # type: ignore[arg-type]
