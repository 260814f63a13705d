"""The CDC procedures and writes over TDS, through pymssql (FreeTDS) and python-tds.

The oracle is the emulator's own Python API: the help procedures' rows equal what its reader
says, and a write sent over the wire leaves the same change rows as `Emulator.commit` leaves
on a twin file. Connections stay on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymssql
import pytds
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.sqlserver.tsql import queries
from mssql_cdc.sqlserver.tsql.drivers import open_session
from tests.unit.emulator.test_tds_drivers import server_error
from tests.unit.support.tds_clients import connect

# The drivers whose DB-API this file speaks: `%s` parameters, `callproc`, numbered errors.
# mssql-python (qmark, no callproc) reaches the same handlers through the backends' own tests
# (tests/unit/sqlserver/test_backends_over_tds.py).
DRIVERS = ["pymssql", "python-tds"]


def build(path: Path) -> Emulator:
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20)", "amount": "decimal(18,2)"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at="2026-09-28T14:00")
    emu.add_column("dbo.orders", "note", "varchar(10)", at="2026-09-28T14:01")
    return emu


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = build(tmp_path / "shop.db")
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def result(conn: Any, sql: str, params: tuple[Any, ...] | None = None) -> list[dict[str, Any]]:
    """The rows of the statement's one result set, by column name."""
    cursor = conn.cursor()
    if params is None:
        cursor.execute(sql)
    else:
        cursor.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def lsn(text: str | None) -> bytes:
    assert text is not None
    return bytes.fromhex(text[2:])


def bracketed(names: list[str]) -> str:
    return ", ".join(f"[{n}]" for n in names)


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_help_procedure_lists_each_instance_as_the_reader_does(
    driver: str, emulator: Emulator, server: TdsServer
) -> None:
    emulator.enable_cdc("dbo.orders", capture_instance="orders_v2", captured_columns=["order_id"])
    expected = emulator.reader().capture_instances("dbo.orders")
    conn = connect(server, driver)
    try:
        rows = result(conn, "EXEC sys.sp_cdc_help_change_data_capture")
        one_table = result(
            conn,
            "EXEC sys.sp_cdc_help_change_data_capture @source_schema = %s, @source_name = %s",
            ("dbo", "orders"),
        )
    finally:
        conn.close()
    assert one_table == rows
    assert [r["capture_instance"] for r in rows] == [i["name"] for i in expected]
    for row, info in zip(rows, expected, strict=True):
        captured = [c["name"] for c in emulator.captured_columns(info["name"])]
        assert (row["source_schema"], row["source_table"]) == ("dbo", "orders")
        assert row["start_lsn"] == lsn(info["start_lsn"])
        assert row["end_lsn"] is None
        assert row["create_date"] == info["create_date"]
        assert row["index_column_list"] == bracketed(info["index_columns"])
        assert row["captured_column_list"] == bracketed(captured)
    assert list(rows[0]) == [
        "source_schema", "source_table", "capture_instance", "object_id", "source_object_id",
        "start_lsn", "end_lsn", "supports_net_changes", "has_drop_pending", "role_name",
        "index_name", "filegroup_name", "create_date", "index_column_list",
        "captured_column_list",
    ]  # fmt: skip


@pytest.mark.parametrize("driver", DRIVERS)
def test_captured_columns_and_ddl_history_equal_the_readers(
    driver: str, emulator: Emulator, server: TdsServer
) -> None:
    reader = emulator.reader()
    conn = connect(server, driver)
    try:
        columns = result(
            conn, "EXEC sys.sp_cdc_get_captured_columns @capture_instance = %s", ("dbo_orders",)
        )
        ddl = result(
            conn, "EXEC sys.sp_cdc_get_ddl_history @capture_instance = %s", ("dbo_orders",)
        )
    finally:
        conn.close()
    assert [(c["column_name"], c["column_id"], c["column_ordinal"]) for c in columns] == [
        (c["name"], c["column_id"], c["ordinal"]) for c in reader.captured_columns("dbo_orders")
    ]
    assert [c["data_type"] for c in columns] == ["int", "nvarchar", "decimal"]
    assert (columns[2]["numeric_precision"], columns[2]["numeric_scale"]) == (18, 2)
    assert columns[1]["character_maximum_length"] == 20
    history = reader.ddl_history("dbo_orders")
    assert [(d["ddl_lsn"], d["ddl_command"], d["ddl_time"]) for d in ddl] == [
        (lsn(h["ddl_lsn"]), h["ddl_command"], h["ddl_time"]) for h in history
    ]
    assert len(ddl) == 1


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_call_by_name_reaches_the_same_handler_as_exec(
    driver: str, emulator: Emulator, server: TdsServer
) -> None:
    # callproc sends an RPC naming the procedure: python-tds with named parameters, pymssql
    # with positional ones.
    conn = connect(server, driver)
    try:
        cursor = conn.cursor()
        if driver == "python-tds":
            cursor.callproc("sys.sp_cdc_get_captured_columns", {"@capture_instance": "dbo_orders"})
        else:
            cursor.callproc("sys.sp_cdc_get_captured_columns", ("dbo_orders",))
        by_rpc = cursor.fetchall()
        if driver == "python-tds":
            assert cursor.return_value == 0
        cursor.execute("EXEC sys.sp_cdc_get_captured_columns N'dbo_orders'")
        by_exec = cursor.fetchall()
    finally:
        conn.close()
    assert by_rpc == by_exec
    assert [row[3] for row in by_rpc] == ["order_id", "status", "amount"]


def test_the_pymssql_backend_reads_capture_instances_over_the_wire(
    emulator: Emulator, server: TdsServer
) -> None:
    session = open_session(
        "pymssql", ConnectionString.parse(server.connection_string("pymssql")), connect_timeout=10
    )
    try:
        found = queries.capture_instances(session, "dbo", "orders")
    finally:
        session.close()
    assert [(ci.name, ci.start_lsn, ci.index_columns) for ci in found] == [
        ("dbo_orders", emulator.min_lsn("dbo_orders"), ("order_id",))
    ]


WRITES: list[tuple[str, list[tuple[str, str, dict[str, object]]]]] = [
    (
        "INSERT INTO dbo.orders (order_id, status, amount) "
        "VALUES (2, N'new', 12.50), (3, 'paid', 7)",
        [
            ("insert", "dbo.orders", {"order_id": 2, "status": "new", "amount": Decimal("12.50")}),
            ("insert", "dbo.orders", {"order_id": 3, "status": "paid", "amount": 7}),
        ],
    ),
    (
        "UPDATE dbo.orders SET status = 'shipped', note = 'x' WHERE order_id = 2",
        [("update", "dbo.orders", {"order_id": 2, "status": "shipped", "note": "x"})],
    ),
    ("DELETE FROM orders WHERE order_id = 3", [("delete", "dbo.orders", {"order_id": 3})]),
]


@pytest.mark.parametrize("driver", DRIVERS)
def test_writes_over_the_wire_are_captured_as_emulator_commit_captures_them(
    driver: str, tmp_path: Path, emulator: Emulator, server: TdsServer
) -> None:
    twin = build(tmp_path / "twin.db")
    try:
        conn = connect(server, driver)
        try:
            for sql, changes in WRITES:
                cursor = conn.cursor()
                cursor.execute(sql)
                assert cursor.rowcount == len(changes)
                twin.commit(changes)
        finally:
            conn.close()
        assert emulator.change_rows("dbo_orders") == twin.change_rows("dbo_orders")
        assert emulator.rows("dbo.orders") == twin.rows("dbo.orders")
        assert emulator.max_lsn() == twin.max_lsn()
    finally:
        twin.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_parameter_reaches_a_write_as_a_literal_does(
    driver: str, emulator: Emulator, server: TdsServer
) -> None:
    # pymssql inlines the values; python-tds sends them to sp_executesql as typed parameters.
    conn = connect(server, driver)
    try:
        conn.cursor().execute(
            "INSERT INTO dbo.orders (order_id, status, amount) VALUES (%s, %s, %s)",
            (5, "típico", 3),
        )
    finally:
        conn.close()
    assert emulator.rows("dbo.orders")[-1] == {
        "order_id": 5, "status": "típico", "amount": Decimal("3.00"), "note": None
    }  # fmt: skip


@pytest.mark.parametrize("driver", DRIVERS)
def test_enable_cleanup_and_disable_over_the_wire_change_the_emulator(
    driver: str, emulator: Emulator, server: TdsServer
) -> None:
    emulator.commit([("insert", "dbo.orders", {"order_id": 2})], at="2026-09-28T14:02")
    mark = emulator.max_lsn()
    conn = connect(server, driver)
    try:
        cursor = conn.cursor()
        cursor.execute("EXEC sys.sp_cdc_enable_db")
        cursor.execute(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
            "@role_name = NULL, @capture_instance = N'orders_v2', "
            "@captured_column_list = N'order_id, status'"
        )
        assert emulator.capture_instances("dbo.orders") == ["dbo_orders", "orders_v2"]
        assert [c["name"] for c in emulator.captured_columns("orders_v2")] == ["order_id", "status"]
        cursor.execute(
            f"EXEC sys.sp_cdc_cleanup_change_table @capture_instance = 'dbo_orders', "
            f"@low_water_mark = {mark}, @threshold = 5000"
        )
        assert emulator.min_lsn("dbo_orders") == mark
        cursor.execute("EXEC sys.sp_cdc_disable_table 'dbo', 'orders', 'dbo_orders'")
        assert emulator.capture_instances("dbo.orders") == ["orders_v2"]
    finally:
        conn.close()


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize(
    ("sql", "number", "message"),
    [
        (
            "EXEC sys.sp_cdc_get_captured_columns",
            201,
            "Procedure or function 'sp_cdc_get_captured_columns' expects parameter "
            "'@capture_instance', which was not supplied.",
        ),
        (
            "EXEC sys.sp_cdc_get_ddl_history @instance = 'x'",
            8145,
            "@instance is not a parameter for procedure sp_cdc_get_ddl_history.",
        ),
        (
            "EXEC sys.sp_cdc_get_captured_columns 'no_such_instance'",
            22981,
            "Object does not exist or access is denied.",
        ),
        (
            "INSERT INTO dbo.orders (order_id) VALUES (1)",
            2627,
            "Violation of PRIMARY KEY constraint 'PK_orders'. Cannot insert duplicate key in "
            "object 'dbo.orders'. The duplicate key value is (1).",
        ),
        (
            "INSERT INTO dbo.orders (status) VALUES ('a')",
            515,
            "Cannot insert the value NULL into column 'order_id', table 'shop.dbo.orders'; "
            "column does not allow nulls. INSERT fails.",
        ),
        (
            "UPDATE dbo.orders SET note = 'much too long' WHERE order_id = 1",
            2628,
            "String or binary data would be truncated in table 'shop.dbo.orders', column "
            "'note'. Truncated value: 'much too l'.",
        ),
        ("DELETE FROM dbo.nothing WHERE id = 1", 208, "Invalid object name 'dbo.nothing'."),
        (
            "UPDATE dbo.orders SET colour = 'red' WHERE order_id = 1",
            207,
            "Invalid column name 'colour'.",
        ),
    ],
    ids=[
        "missing parameter",
        "unknown parameter",
        "unknown capture instance",
        "duplicate key",
        "null key",
        "truncation",
        "unknown table",
        "unknown column",
    ],
)
def test_a_bad_call_or_write_gets_sql_servers_error_and_changes_nothing(
    driver: str, sql: str, number: int, message: str, emulator: Emulator, server: TdsServer
) -> None:
    before = emulator.max_lsn()
    conn = connect(server, driver)
    try:
        with pytest.raises((pymssql.Error, pytds.Error)) as caught:
            conn.cursor().execute(sql)
        assert server_error(caught.value) == (number, message)
        assert result(conn, "SELECT 42 AS x") == [{"x": 42}]
    finally:
        conn.close()
    assert emulator.max_lsn() == before
    assert emulator.rows("dbo.orders") == [
        {"order_id": 1, "status": "new", "amount": None, "note": None}
    ]
