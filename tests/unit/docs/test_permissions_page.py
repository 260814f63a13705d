"""docs/permissions.md: the page's grant script, run against the emulator, is enough for the
library's reads, and each grant left out gives the error the page quotes.

The ```sql block holding `CREATE LOGIN` is the page's grant script; it runs over TDS through
pymssql as `sa` after CDC is enabled on dbo.orders with the gating role `cdc_reader`, as the
quickstart does. Then the library's own T-SQL backends log in as the page's login, through
mssql-python and pymssql, and read: the instance resolves, min_lsn is established, a batch
plans, the change rows and the table's rows come back. The oracle for the rows is the list of
order ids this test inserted. Leaving one statement out of the script must then fail with the
```text block the page quotes for it.

SQL Server's rules the page relies on are Microsoft's: a login outside the gating role, or
without SELECT on the captured columns, does not see the instance in
sys.sp_cdc_help_change_data_capture
(https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-help-change-data-capture-transact-sql)
and gets zeros from sys.fn_cdc_get_min_lsn
(https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-get-min-lsn-transact-sql);
a SELECT without the permission is error 229, "The SELECT permission was denied on the object
'%.*ls', database '%.*ls', schema '%.*ls'."
(https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors-0-to-999).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mssql_python
import pymssql
import pytest

from mssql_cdc.core import lsn
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.errors import ConfigError, DataLossError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.batch_plan import plan_batch
from mssql_cdc.source.table_schema import declared_columns, resolve_table
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend

PAGE = Path(__file__).resolve().parents[3] / "docs" / "permissions.md"
SQL_BLOCK = re.compile(r"```sql\n(.*?)```", re.DOTALL)
TEXT_BLOCK = re.compile(r"```text\n(.*?)\n```", re.DOTALL)
ENABLE = [
    "EXEC sys.sp_cdc_enable_db",
    "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
    "@role_name = N'cdc_reader'",
]
ORDER_IDS = [3, 1, 2]
DRIVERS = ["mssql-python", "pymssql"]


def grant_script() -> list[str]:
    """The statements of the page's ```sql block that creates the login, in order."""
    [block] = [b for b in SQL_BLOCK.findall(PAGE.read_text()) if "CREATE LOGIN" in b]
    return [" ".join(s.split()) for s in re.split(r";\s*(?:\n|$)", block) if s.strip()]


def quoted_errors() -> list[str]:
    """The error texts the page quotes, in the order of its sections."""
    return TEXT_BLOCK.findall(PAGE.read_text())


def login() -> tuple[str, str]:
    [create] = [s for s in grant_script() if s.startswith("CREATE LOGIN")]
    match = re.fullmatch(r"CREATE LOGIN (\w+) WITH PASSWORD = '([^']*)'", create)
    assert match is not None
    return match.group(1), match.group(2)


def run_as_sa(server: TdsServer, statements: list[str]) -> None:
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        for sql in statements:
            cursor.execute(sql)
    finally:
        conn.close()


@contextmanager
def serve_with(tmp_path: Path, leave_out: str | None) -> Iterator[TdsServer]:
    """shop.db with dbo.orders captured under cdc_reader, the page's script run without the
    statement starting with `leave_out`, and ORDER_IDS inserted afterwards."""
    emu = Emulator.create(tmp_path / "shop.db")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "varchar(12)"}, primary_key="order_id"
    )
    script = [s for s in grant_script() if leave_out is None or not s.startswith(leave_out)]
    assert leave_out is None or len(script) == len(grant_script()) - 1
    with emu.serve() as server:
        run_as_sa(server, ENABLE + script)
        run_as_sa(
            server,
            [f"INSERT INTO dbo.orders (order_id, status) VALUES ({i}, 'new')" for i in ORDER_IDS],
        )
        yield server


@pytest.fixture
def granted(tmp_path: Path) -> Iterator[TdsServer]:
    with serve_with(tmp_path, None) as server:
        yield server


def as_login(server: TdsServer, driver: str) -> tuple[SourceConfig, Backend]:
    user, password = login()
    text = re.sub(
        r"UID=[^;]*;PWD=[^;]*",
        f"UID={user};PWD={password}",
        server.connection_string("pymssql" if driver == "pymssql" else "mssql-python"),
    )
    assert f"UID={user};PWD={password}" in text
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": driver, "connectionString": text}
    )
    return config, open_backend(config)


def batch_bounds(backend: Backend) -> tuple[StreamOffset, StreamOffset]:
    low, high = backend.planner.min_lsn("dbo_orders"), backend.planner.max_lsn()
    assert low is not None
    assert high is not None
    return StreamOffset(lsn.decrement(low), None), StreamOffset(high, None)


def test_the_page_grants_the_three_things_it_says_the_login_needs() -> None:
    user, _ = login()
    assert grant_script()[2:] == [
        f"GRANT SELECT ON OBJECT::dbo.orders TO {user}",
        f"GRANT SELECT ON OBJECT::cdc.dbo_orders_CT TO {user}",
        f"ALTER ROLE cdc_reader ADD MEMBER {user}",
    ]
    assert len(quoted_errors()) == 3


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_pages_login_makes_every_read_of_the_library(granted: TdsServer, driver: str) -> None:
    config, backend = as_login(granted, driver)
    try:
        table = resolve_table(backend.catalog, "dbo_orders")
        columns = declared_columns(backend.catalog, config, table)
        assert [c.name for c in columns] == ["order_id", "status"]
        start, end = batch_bounds(backend)
        assert backend.planner.min_lsn("dbo_orders") != lsn.ZERO
        ranges = plan_batch(
            backend, config, table, columns, start, end, time_zone="UTC", num_partitions=1
        )
        assert ranges
        low = backend.planner.min_lsn("dbo_orders")
        assert low is not None
        changes = backend.changes.read_changes(
            "dbo_orders",
            low,
            end.lsn,
            columns=columns,
            include_command_id=False,
            time_zone="UTC",
            batch_rows=10,
        )
        assert sorted(i for b in changes for i in b.column("order_id").to_pylist()) == sorted(
            ORDER_IDS
        )
        rows = backend.snapshots.read_table(
            "dbo", "orders", columns=columns, keys=["order_id"], lo=None, hi=None, batch_rows=10
        )
        assert sorted(i for b in rows for i in b.column("order_id").to_pylist()) == sorted(
            ORDER_IDS
        )
    finally:
        backend.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_without_the_role_membership_the_stream_stops_with_the_pages_config_error(
    tmp_path: Path, driver: str
) -> None:
    with serve_with(tmp_path, "ALTER ROLE") as server:
        _, backend = as_login(server, driver)
        try:
            assert backend.planner.min_lsn("dbo_orders") == lsn.ZERO
            with pytest.raises(ConfigError) as raised:
                resolve_table(backend.catalog, "dbo_orders")
        finally:
            backend.close()
    assert str(raised.value) == quoted_errors()[0]


@pytest.mark.parametrize("driver", DRIVERS)
def test_without_select_on_the_change_table_the_batch_stops_with_the_pages_permission_error(
    tmp_path: Path, driver: str
) -> None:
    with serve_with(tmp_path, "GRANT SELECT ON OBJECT::cdc.") as server:
        config, backend = as_login(server, driver)
        try:
            table = resolve_table(backend.catalog, "dbo_orders")
            columns = declared_columns(backend.catalog, config, table)
            start, end = batch_bounds(backend)
            with pytest.raises(PermissionError) as planned:
                plan_batch(
                    backend, config, table, columns, start, end, time_zone="UTC", num_partitions=1
                )
            with pytest.raises(PermissionError) as read:
                list(
                    backend.changes.read_changes(
                        "dbo_orders",
                        lsn.increment(start.lsn),
                        end.lsn,
                        columns=columns,
                        include_command_id=False,
                        time_zone="UTC",
                        batch_rows=10,
                    )
                )
        finally:
            backend.close()
    assert not isinstance(planned.value, DataLossError)
    assert str(planned.value) == quoted_errors()[1]
    assert str(read.value) == quoted_errors()[1]


@pytest.mark.parametrize("driver", DRIVERS)
def test_without_select_on_the_source_table_a_table_read_fails_with_error_229(
    tmp_path: Path, driver: str
) -> None:
    with serve_with(tmp_path, "GRANT SELECT ON OBJECT::dbo.") as server:
        config, backend = as_login(server, driver)
        try:
            table = resolve_table(backend.catalog, "dbo_orders")  # the emulator's looser rule
            columns = declared_columns(backend.catalog, config, table)
            with pytest.raises((pymssql.Error, mssql_python.Error)) as raised:
                list(
                    backend.snapshots.read_table(
                        "dbo",
                        "orders",
                        columns=columns,
                        keys=["order_id"],
                        lo=None,
                        hi=None,
                        batch_rows=10,
                    )
                )
        finally:
            backend.close()
    assert quoted_errors()[2] in str(raised.value)
