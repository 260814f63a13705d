"""A stream resolves its capture instance without listing every instance of the database, on
every backend, and gets the answer `resolve_instance` gives over the full list.

Oracles: `resolve_instance` over `sys.sp_cdc_help_change_data_capture` with no arguments (the
procedure lists every instance the login may read; Microsoft Learn,
"sys.sp_cdc_help_change_data_capture (Transact-SQL)"), and the statements the served emulator
logged, as a client sent them.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver import find_instance, resolve_instance
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend

EVERY_INSTANCE = "EXEC sys.sp_cdc_help_change_data_capture;"


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "e.db", start=datetime(2026, 9, 28, 13, 50))
    for name in ("orders", "lines", "order_notes"):
        emu.create_table(f"dbo.{name}", {"id": "int", "v": "nvarchar(20)"}, primary_key="id")
        emu.enable_cdc(f"dbo.{name}")
    emu.commit([("insert", "dbo.orders", {"id": 1, "v": "a"})], at="2026-09-28T13:51:00")
    emu.enable_cdc("dbo.lines", capture_instance="lines_v2")
    emu.commit([("insert", "dbo.lines", {"id": 1, "v": "a"})], at="2026-09-28T13:52:00")
    emu.disable_cdc("dbo_lines")
    yield emu
    emu.close()


def _backend(emu: Emulator, kind: str, connection_string: str | None) -> Backend:
    options = {"captureInstance": "dbo_orders", "backend": kind}
    if connection_string is None:
        options["emulatorPath"] = str(emu.path)
    else:
        options["connectionString"] = connection_string
    return open_backend(SourceConfig.from_options(options))


@pytest.mark.parametrize("kind", ["emulator", "pymssql", "mssql-python"])
@pytest.mark.parametrize("configured", ["dbo_orders", "DBO_ORDERS", "dbo_lines", "lines_v2"])
def test_an_instance_resolves_as_over_the_full_list(
    emulator: Emulator, tmp_path: Path, kind: str, configured: str
) -> None:
    log = tmp_path / "statements.log"
    with emulator.serve(log_statements=log) as server:
        text = (
            None
            if kind == "emulator"
            else server.connection_string(
                "pymssql" if kind == "python-tds" else kind  # type: ignore[arg-type]
            )
        )
        backend = _backend(emulator, kind, text)
        try:
            found = find_instance(backend.catalog, configured)
            before = log.read_text() if log.exists() else ""
            expected = resolve_instance(configured, backend.catalog.capture_instances())
        finally:
            backend.close()
    assert found == expected
    exact = configured in ("dbo_orders", "lines_v2")
    if kind != "emulator":
        assert (EVERY_INSTANCE in before) == (not exact)


@pytest.mark.parametrize("kind", ["pymssql", "mssql-python"])
def test_an_instances_captured_columns_are_read_without_listing_every_instance(
    emulator: Emulator, tmp_path: Path, kind: str
) -> None:
    log = tmp_path / "statements.log"
    with emulator.serve(log_statements=log) as server:
        backend = _backend(emulator, kind, server.connection_string(kind))  # type: ignore[arg-type]
        try:
            columns = [c.name for c in backend.catalog.captured_columns("dbo_order_notes")]
        finally:
            backend.close()
    assert columns == ["id", "v"]
    assert EVERY_INSTANCE not in log.read_text()
