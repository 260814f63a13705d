"""The batch figures a range's task hands Spark (decision 1391): with the internal option, the
source's schema gains `FIGURES_COLUMN`; every batch carries it NULL, and the task's last row
holds what its metrics file holds, with the events' names. The oracle is the metrics file the
same task writes, and Spark's own check of a Python data source's Arrow batches (the schema
`to_arrow_schema` makes of the declared StructType, which each batch must equal)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from mssql_cdc.core import BATCH_FIGURES_OPTION, FIGURES_COLUMN, FIGURES_FIELDS
from mssql_cdc.core.batch_files import read_batch_files
from mssql_cdc.core.offsets import LsnRange
from mssql_cdc.emulator import Emulator
from mssql_cdc.source.formats import CdcDataSource
from mssql_cdc.source.range_reader import read_range
from mssql_cdc.source.table_schema import read_columns


def orders(path: Path) -> list[str]:
    emu = Emulator.create(path, start="2026-10-01T12:00:00")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    lsns = [
        emu.commit([("insert", "dbo.orders", {"order_id": i, "status": "new"})]) for i in range(3)
    ]
    emu.close()
    return lsns


def test_the_tasks_last_row_holds_its_metrics_files_figures_and_change_rows_hold_none(
    tmp_path: Path,
) -> None:
    lsns = orders(tmp_path / "e.db")
    metrics = tmp_path / "metrics"
    options = {
        "captureInstance": "dbo_orders",
        "backend": "emulator",
        "emulatorPath": str(tmp_path / "e.db"),
        "metricsPath": str(metrics),
    }
    plain = CdcDataSource(options).schema()
    source = CdcDataSource({**options, BATCH_FIGURES_OPTION.lower(): "true"})
    schema = source.schema()
    assert schema.fieldNames() == [*plain.fieldNames(), FIGURES_COLUMN]
    arrow = to_arrow_schema(schema, timezone="UTC")
    part = LsnRange(
        capture_instance="dbo_orders",
        from_lsn=lsns[0],
        to_lsn=lsns[-1],
        last=True,
        start_ts=None,
        null_columns=(),
        time_zone="UTC",
        batch_start_lsn="0x00000000000000000000",
        batch_end_lsn=lsns[-1],
    )
    batches = list(
        read_range(
            source.config,
            read_columns(schema),
            part,
            figures=arrow,
            planned_events=("schema_change",),
        )
    )
    assert all(b.schema.equals(arrow) for b in batches)  # what Spark checks of the first one
    rows = pa.Table.from_batches(batches).to_pylist()
    *changes, last = rows
    assert [r["order_id"] for r in changes] == [0, 1, 2]
    assert all(r[FIGURES_COLUMN] is None for r in changes)
    assert all(v is None for k, v in last.items() if k != FIGURES_COLUMN)
    [written] = read_batch_files(metrics).ranges
    figures = last[FIGURES_COLUMN]
    assert set(figures) == {name for name, _ in FIGURES_FIELDS}
    for name in ("to_lsn", "to_commit_ts", "retention_watermark_ts", "source_max_commit_ts"):
        assert figures[name] == written[name], name
    assert figures["capture_lag_seconds"] == written["capture_lag_seconds"]
    assert figures["batch_start_lsn"] == "0x00000000000000000000"
    assert figures["events"] == "schema_change"
    assert figures["to_lsn"] == lsns[-1]
    assert figures["source_max_commit_ts"] is not None


def test_without_the_option_the_source_reads_change_rows_alone(tmp_path: Path) -> None:
    lsns = orders(tmp_path / "e.db")
    source = CdcDataSource(
        {
            "captureInstance": "dbo_orders",
            "backend": "emulator",
            "emulatorPath": str(tmp_path / "e.db"),
        }
    )
    schema = source.schema()
    assert FIGURES_COLUMN not in schema.fieldNames()
    part = LsnRange("dbo_orders", lsns[0], lsns[-1], True, None, (), "UTC", lsns[0], lsns[-1])
    rows = pa.Table.from_batches(list(read_range(source.config, read_columns(schema), part)))
    assert rows.num_rows == 3
    assert FIGURES_COLUMN not in rows.column_names
