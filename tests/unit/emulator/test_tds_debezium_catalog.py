"""The statements Debezium's SQL Server connector and Microsoft's JDBC driver send around a
snapshot and streaming, over the emulator's TDS front end through pymssql (a client nobody here
wrote). The oracle is Microsoft's documentation:
- sys.databases (is_cdc_enabled, database_id):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-catalog-views/sys-databases-transact-sql
- DB_ID / DB_NAME: https://learn.microsoft.com/en-us/sql/t-sql/functions/db-id-transact-sql and
  https://learn.microsoft.com/en-us/sql/t-sql/functions/db-name-transact-sql
- OBJECT_NAME / OBJECT_SCHEMA_NAME (the optional database_id):
  https://learn.microsoft.com/en-us/sql/t-sql/functions/object-name-transact-sql and
  https://learn.microsoft.com/en-us/sql/t-sql/functions/object-schema-name-transact-sql
- table hints (NOLOCK, TABLOCKX, UPDLOCK, HOLDLOCK, READPAST; error 321 for another word):
  https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table
- sp_tables, sp_columns, sp_pkeys result columns:
  https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-tables-transact-sql
  https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-columns-transact-sql
  https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-pkeys-transact-sql
  and the ODBC type codes sp_columns' DATA_TYPE holds (SQL_INTEGER 4, SQL_WVARCHAR -9,
  SQL_DECIMAL 3): https://learn.microsoft.com/en-us/sql/odbc/reference/appendixes/sql-data-types
- TODATETIMEOFFSET (its example: 2007-05-08 12:35:29.1234567 at -07:00):
  https://learn.microsoft.com/en-us/sql/t-sql/functions/todatetimeoffset-transact-sql
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.support.tds_clients import fetch as query


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path_factory.mktemp("debezium_catalog") / "shop.db")
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20)", "amount": "decimal(18,2)"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new", "amount": 2.5})])
    with emu.serve() as srv:
        yield srv
    emu.close()


def columns_of(server: TdsServer, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        rows: list[tuple[Any, ...]] = cursor.fetchall()
        return [d[0] for d in cursor.description], rows
    finally:
        conn.close()


def error_number(server: TdsServer, sql: str) -> int:
    with pytest.raises(pymssql.Error) as caught:
        query(server, sql)
    number: int = caught.value.args[0]
    return number


def test_sys_databases_lists_the_served_database_as_cdc_enabled_beside_the_system_ones(
    server: TdsServer,
) -> None:
    db = server.database
    assert query(server, f"SELECT name FROM sys.databases WHERE name = N'{db}'") == [(db,)]
    assert query(
        server, f"SELECT is_cdc_enabled FROM sys.databases WHERE name = N'{db.upper()}'"
    ) == [(True,)]
    rows = query(server, "SELECT name, database_id FROM sys.databases ORDER BY database_id")
    assert rows[:4] == [("master", 1), ("tempdb", 2), ("model", 3), ("msdb", 4)]
    assert [name for name, _ in rows[4:]] == [db]
    assert query(
        server, f"SELECT database_id FROM master.sys.databases WHERE name = N'{db}'"
    ) == query(server, "SELECT DB_ID()")


def test_db_id_and_db_name_answer_each_other_and_null_for_an_unknown_database(
    server: TdsServer,
) -> None:
    db = server.database
    assert query(server, f"SELECT DB_NAME(DB_ID(N'{db}')), DB_NAME(), DB_ID(N'master')") == [
        (db, db, 1)
    ]
    assert query(server, "SELECT DB_ID(N'no_such_db'), DB_NAME(999)") == [(None, None)]


def test_object_name_and_schema_name_take_the_database_id_debezium_passes(
    server: TdsServer,
) -> None:
    db = server.database
    assert query(
        server,
        f"SELECT OBJECT_SCHEMA_NAME(OBJECT_ID(N'dbo.orders'), DB_ID(N'{db}')), "
        f"OBJECT_NAME(OBJECT_ID(N'dbo.orders'), DB_ID(N'{db}')), "
        "OBJECT_SCHEMA_NAME(OBJECT_ID(N'dbo.orders')), OBJECT_NAME(OBJECT_ID(N'dbo.orders'), 1)",
    ) == [("dbo", "orders", "dbo", None)]


def test_database_qualified_cdc_functions_answer_as_the_unqualified_ones(server: TdsServer) -> None:
    db = server.database
    (plain,) = query(server, "SELECT sys.fn_cdc_get_max_lsn()")
    assert plain[0] is not None
    assert query(server, f"SELECT [{db}].sys.fn_cdc_get_max_lsn()") == [plain]
    assert query(
        server, f"SELECT [{db}].sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn())"
    ) == query(server, "SELECT sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn())")
    changes = query(
        server,
        f"SELECT order_id FROM [{db}].cdc.[fn_cdc_get_all_changes_dbo_orders]"
        f"([{db}].sys.fn_cdc_get_min_lsn('dbo_orders'), [{db}].sys.fn_cdc_get_max_lsn(), "
        "N'all update old')",
    )
    assert changes == [(1,)]


@pytest.mark.parametrize(
    "hints", ["NOLOCK", "TABLOCKX", "UPDLOCK, HOLDLOCK", "READPAST", "tablockx, rowlock"]
)
def test_a_documented_table_hint_reads_the_same_rows(server: TdsServer, hints: str) -> None:
    db = server.database
    assert query(server, f"SELECT order_id FROM [{db}].[dbo].[orders] WITH ({hints})") == [(1,)]
    assert query(server, f"SELECT o.order_id FROM dbo.orders AS o WITH ({hints})") == [(1,)]


def test_an_unknown_table_hint_is_error_321(server: TdsServer) -> None:
    assert error_number(server, "SELECT * FROM dbo.orders WITH (FASTEST)") == 321


def test_sp_tables_lists_the_user_table_as_table_with_the_documented_columns(
    server: TdsServer,
) -> None:
    db = server.database
    names, rows = columns_of(
        server,
        f"EXEC sp_tables @table_name = N'%', @table_owner = N'dbo', @table_qualifier = N'{db}', "
        "@table_type = N'''TABLE'''",
    )
    assert names == ["TABLE_QUALIFIER", "TABLE_OWNER", "TABLE_NAME", "TABLE_TYPE", "REMARKS"]
    assert rows == [(db, "dbo", "orders", "TABLE", None)]
    assert error_number(server, "EXEC sp_tables @table_qualifier = N'other_db'") == 15250


def test_sp_columns_describes_each_column_with_odbc_codes(server: TdsServer) -> None:
    names, rows = columns_of(server, "EXEC sp_columns @table_name = N'orders'")
    assert names[:4] == ["TABLE_QUALIFIER", "TABLE_OWNER", "TABLE_NAME", "COLUMN_NAME"]
    assert names[-2:] == ["IS_NULLABLE", "SS_DATA_TYPE"]
    assert len(names) == 19
    got = [
        (
            r[names.index("COLUMN_NAME")],
            r[names.index("DATA_TYPE")],
            r[names.index("TYPE_NAME")],
            r[names.index("PRECISION")],
            r[names.index("SCALE")],
            r[names.index("NULLABLE")],
            r[names.index("ORDINAL_POSITION")],
        )
        for r in rows
    ]
    assert got == [
        ("order_id", 4, "int", 10, 0, 0, 1),
        ("status", -9, "nvarchar", 20, None, 1, 2),
        ("amount", 3, "decimal", 18, 2, 1, 3),
    ]


def test_the_jdbc_drivers_insert_exec_of_sp_columns_100_fills_a_table_variable(
    server: TdsServer,
) -> None:
    rows = query(
        server,
        "DECLARE @c TABLE(TABLE_QUALIFIER sysname, TABLE_OWNER sysname, TABLE_NAME sysname, "
        "COLUMN_NAME sysname, DATA_TYPE smallint, TYPE_NAME sysname, PRECISION int, LENGTH int, "
        "SCALE smallint, RADIX smallint, NULLABLE smallint, REMARKS varchar(254), "
        "COLUMN_DEF nvarchar(4000), SQL_DATA_TYPE smallint, SQL_DATETIME_SUB smallint, "
        "CHAR_OCTET_LENGTH int, ORDINAL_POSITION int, IS_NULLABLE varchar(254), "
        "SS_IS_SPARSE smallint, SS_IS_COLUMN_SET smallint, SS_IS_COMPUTED smallint, "
        "SS_IS_IDENTITY smallint, SS_UDT_CATALOG_NAME nvarchar(128), "
        "SS_UDT_SCHEMA_NAME nvarchar(128), SS_UDT_ASSEMBLY_TYPE_NAME nvarchar(max), "
        "SS_XML_SCHEMACOLLECTION_CATALOG_NAME nvarchar(128), "
        "SS_XML_SCHEMACOLLECTION_SCHEMA_NAME nvarchar(128), "
        "SS_XML_SCHEMACOLLECTION_NAME nvarchar(128), "
        "SS_DATA_TYPE tinyint); "
        "INSERT INTO @c EXEC sp_columns_100 N'orders', N'dbo', NULL, NULL, 2, 3; "
        "SELECT COLUMN_NAME, IS_NULLABLE, SS_IS_IDENTITY FROM @c ORDER BY ORDINAL_POSITION",
    )
    assert rows == [("order_id", "NO", 0), ("status", "YES", 0), ("amount", "YES", 0)]


def test_sp_pkeys_names_the_key_columns_in_key_order(server: TdsServer) -> None:
    names, rows = columns_of(server, "EXEC sp_pkeys @table_name = N'orders', @table_owner = N'dbo'")
    assert names == [
        "TABLE_QUALIFIER",
        "TABLE_OWNER",
        "TABLE_NAME",
        "COLUMN_NAME",
        "KEY_SEQ",
        "PK_NAME",
    ]
    assert [(r[3], r[4]) for r in rows] == [("order_id", 1)]


def test_todatetimeoffset_reads_the_time_as_local_at_the_offset(server: TdsServer) -> None:
    at = "CAST('2007-05-08 12:35:29.1234567' AS datetime2)"
    assert query(
        server,
        f"SELECT CAST(TODATETIMEOFFSET({at}, '-07:00') AS nvarchar(40)), "
        f"DATEPART(TZOFFSET, TODATETIMEOFFSET({at}, -120)), "
        f"CAST(SWITCHOFFSET(TODATETIMEOFFSET({at}, '-07:00'), '+00:00') AS nvarchar(40))",
    ) == [("2007-05-08 12:35:29.1234567 -07:00", -120, "2007-05-08 19:35:29.1234567 +00:00")]
