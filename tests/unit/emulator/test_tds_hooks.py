"""Fault hooks fire in the reads the TDS server serves (decision 0760): a T-SQL backend reading
over pymssql or mssql-python sees what the in-process backend sees with the same hook armed.

The oracle is a twin file given the same calls (spec 40, section 3.9), read in process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pytest

from mssql_cdc.core import lsn
from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.unit.support.emulator_oracle import at, orders

Driver = Literal["pymssql", "mssql-python"]
DRIVERS: list[Driver] = ["pymssql", "mssql-python"]
READ = (ReadColumn("order_id", "INT", "int"),)


def _filled(path: Path) -> tuple[Emulator, list[str]]:
    emu = orders(path)
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(6)]
    return emu, lsns


def _read(backend: Backend, low: str, high: str) -> pa.Table:
    batches = backend.changes.read_changes(
        "dbo_orders",
        lsn.Lsn(low),
        lsn.Lsn(high),
        columns=READ,
        include_command_id=True,
        time_zone="UTC",
        batch_rows=2,
    )
    return pa.Table.from_batches(list(batches))


@contextmanager
def _opened(options: dict[str, str]) -> Iterator[Backend]:
    backend = open_backend(SourceConfig.from_options({"captureInstance": "dbo_orders", **options}))
    try:
        yield backend
    finally:
        backend.close()


ARM: dict[str, Callable[[Emulator, list[str]], None]] = {
    "mid": lambda emu, lsns: emu.cleanup_mid_read("dbo_orders", lsns[4], after_rows=2),
    "during": lambda emu, lsns: emu.cleanup_during_read("dbo_orders", lsns[3]),
}


@pytest.mark.parametrize("hook", sorted(ARM))
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_cleanup_racing_a_change_read_over_the_wire_reads_as_in_process(
    tmp_path: Path, driver: Driver, hook: str
) -> None:
    wire_emu, lsns = _filled(tmp_path / "wire.db")
    twin_emu, twin_lsns = _filled(tmp_path / "twin.db")
    assert lsns == twin_lsns
    low, high = wire_emu.min_lsn("dbo_orders"), wire_emu.max_lsn()
    assert high is not None
    for emu in (wire_emu, twin_emu):
        ARM[hook](emu, lsns)
    options = {"backend": driver}
    with (
        wire_emu.serve() as server,
        _opened({**options, "connectionString": server.connection_string(driver)}) as wire,
    ):
        got = _read(wire, low, high)
        moved = wire.changes.min_lsn("dbo_orders")
    with _opened({"backend": "emulator", "emulatorPath": str(tmp_path / "twin.db")}) as oracle:
        expected = _read(oracle, low, high)
        twin_moved = oracle.changes.min_lsn("dbo_orders")
    assert got.equals(expected)
    assert moved == twin_moved == {"mid": lsns[4], "during": lsns[3]}[hook]
    assert wire_emu.pending_hooks() == []
    starts = got.column("_start_lsn").to_pylist()
    if hook == "mid":  # two rows, then the cleanup: the rows below its mark are gone
        assert starts == [lsns[0], lsns[1], lsns[4], lsns[5]]
    else:  # every row, and min_lsn moved before the read was over
        assert starts == lsns
