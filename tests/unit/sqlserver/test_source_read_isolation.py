"""isolationLevel and lockTimeoutMs on every backend, against the emulator's row locks (decision
1335), without Spark: the snapshot reader of `open_backend` in process and over TDS.

The oracle is Microsoft's documentation: a READ COMMITTED read is blocked by another
transaction's exclusive row locks and SNAPSHOT reads are not, and SNAPSHOT needs
ALLOW_SNAPSHOT_ISOLATION ON
(https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql);
SET LOCK_TIMEOUT ends the wait with error 1222
(https://learn.microsoft.com/en-us/sql/t-sql/statements/set-lock-timeout-transact-sql).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.errors import ConfigError, LockTimeoutError
from mssql_cdc.options import SourceConfig
from mssql_cdc.sqlserver import open_backend
from mssql_cdc.sqlserver.metadata import ReadColumn

BACKENDS = ("emulator", "mssql-python", "pymssql")
COLUMNS = [ReadColumn("order_id", "INT", "int"), ReadColumn("status", "STRING", "nvarchar")]


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[tuple[Emulator, TdsServer]]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-01-01T00:00:00")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": i, "status": "new"}) for i in (1, 2, 3)])
    server = emu.serve()
    yield emu, server
    server.stop()
    emu.close()


def config(emu: Emulator, server: TdsServer, backend: str, **options: str) -> SourceConfig:
    where = (
        {"emulatorPath": str(emu.path)}
        if backend == "emulator"
        else {"connectionString": server.connection_string(backend)}
    )
    return SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": backend, **where, **options}
    )


def read_all(cfg: SourceConfig) -> list[dict[str, object]]:
    backend = open_backend(cfg)
    try:
        batches = list(
            backend.snapshots.read_table(
                "dbo",
                "orders",
                columns=COLUMNS,
                keys=["order_id"],
                lo=None,
                hi=None,
                batch_rows=100,
            )
        )
    finally:
        backend.close()
    rows: list[dict[str, object]] = pa.Table.from_batches(batches).to_pylist() if batches else []
    return sorted(rows, key=lambda r: int(str(r["order_id"])))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_read_committed_read_of_rows_an_open_transaction_holds_fails_naming_lock_timeout_ms(
    shop: tuple[Emulator, TdsServer], backend: str
) -> None:
    emu, server = shop
    writer = emu.begin()
    writer.execute([("update", "dbo.orders", {"order_id": 2, "status": "paid"})])
    cfg = config(emu, server, backend, isolationLevel="readCommitted", lockTimeoutMs="200")
    started = time.monotonic()
    with pytest.raises(LockTimeoutError, match=r"lockTimeoutMs=200") as caught:
        read_all(cfg)
    assert time.monotonic() - started >= 0.2
    assert "[dbo].[orders]" in str(caught.value)
    assert caught.value.lock_timeout_ms == 200
    writer.commit()
    assert read_all(cfg) == [
        {"order_id": 1, "status": "new"},
        {"order_id": 2, "status": "paid"},
        {"order_id": 3, "status": "new"},
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_read_committed_read_waits_for_the_writer_to_commit_and_reads_its_rows_once(
    shop: tuple[Emulator, TdsServer], backend: str
) -> None:
    emu, server = shop
    writer = emu.begin()
    writer.execute([("insert", "dbo.orders", {"order_id": 4, "status": "new"})])
    committer = threading.Timer(0.4, writer.commit)
    committer.start()
    started = time.monotonic()
    rows = read_all(config(emu, server, backend, lockTimeoutMs="20000"))
    committer.join()
    assert time.monotonic() - started >= 0.3
    assert [r["order_id"] for r in rows] == [1, 2, 3, 4]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_snapshot_read_returns_the_last_committed_rows_without_waiting(
    shop: tuple[Emulator, TdsServer], backend: str
) -> None:
    emu, server = shop
    emu.configure(allow_snapshot_isolation=True)
    writer = emu.begin()
    writer.execute([("delete", "dbo.orders", {"order_id": 1})])
    rows = read_all(config(emu, server, backend, isolationLevel="snapshot", lockTimeoutMs="0"))
    assert [r["order_id"] for r in rows] == [1, 2, 3]
    writer.rollback()


@pytest.mark.parametrize("backend", BACKENDS)
def test_snapshot_on_a_database_without_snapshot_isolation_is_a_config_error_saying_what_to_run(
    shop: tuple[Emulator, TdsServer], backend: str
) -> None:
    emu, server = shop
    with pytest.raises(ConfigError) as caught:
        read_all(config(emu, server, backend, isolationLevel="snapshot"))
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert "isolationLevel" in message
    assert "SET ALLOW_SNAPSHOT_ISOLATION ON" in message
    assert "ALTER DATABASE" in message
