"""The catalog a generic SQL Server client reads, over TDS: SERVERPROPERTY and the session
functions, INFORMATION_SCHEMA, sys.indexes, sys.index_columns, sys.objects' CDC objects, CDC's
monitoring views, and sp_help, sp_helpindex, sp_statistics and sp_cdc_disable_db
(decisions 1439 and 1440).

The oracle is Microsoft's documentation of each function, view and procedure (cited per test):
its column names and order, and the values it documents for the table this file builds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.support.tds_clients import connect

DOCS = "https://learn.microsoft.com/en-us/sql/"
DRIVERS = ["pymssql", "mssql-python"]


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "line": "smallint", "status": "nvarchar(20)", "total": "decimal(9,2)"},
        primary_key=["order_id", "line"],
    )
    emu.create_table("dbo.audit", {"note": "varchar(30)"})
    emu.enable_cdc("dbo.orders")
    emu.commit(
        [("insert", "dbo.orders", {"order_id": i, "line": 1, "status": "new"}) for i in range(1, 4)]
    )
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def query(server: TdsServer, sql: str, driver: str = "pymssql") -> list[dict[str, Any]]:
    """The rows of the statement's first result set by column name."""
    conn = connect(server, driver)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        conn.close()


def columns_of(server: TdsServer, sql: str, driver: str = "pymssql") -> list[str]:
    conn = connect(server, driver)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        return [d[0] for d in cursor.description]
    finally:
        conn.close()


def result_sets(server: TdsServer, sql: str) -> list[tuple[list[str], list[tuple[Any, ...]]]]:
    """Every result set of the batch: its column names and rows (pymssql)."""
    conn = connect(server, "pymssql")
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        out = []
        while True:
            if cursor.description is not None:
                out.append(([d[0] for d in cursor.description], list(cursor.fetchall())))
            if not cursor.nextset():
                return out
    finally:
        conn.close()


def refusal(server: TdsServer, sql: str) -> tuple[int, str]:
    with pytest.raises(pymssql.Error) as caught:
        query(server, sql)
    number, raw = caught.value.args[0], caught.value.args[1]
    return int(number), (raw.decode() if isinstance(raw, bytes) else str(raw))


@pytest.mark.parametrize("driver", DRIVERS)
def test_serverproperty_answers_as_sql_server_2022_developer_edition(
    server: TdsServer, driver: str
) -> None:
    """t-sql/functions/serverproperty-transact-sql: EngineEdition 3 for Developer, EditionID
    -2117995310, 64-bit editions end in "(64-bit)", IsHadrEnabled 0 when disabled, NULL for a
    name the function does not know; ProductMajorVersion 16 is SQL Server 2022."""
    row = query(
        server,
        "SELECT SERVERPROPERTY('ProductVersion') AS v,"
        " SERVERPROPERTY('ProductMajorVersion') AS major,"
        " SERVERPROPERTY('Edition') AS edition, SERVERPROPERTY('EngineEdition') AS engine,"
        " SERVERPROPERTY('EditionID') AS edition_id, SERVERPROPERTY('IsHadrEnabled') AS hadr,"
        " SERVERPROPERTY('Collation') AS collation, SERVERPROPERTY('ServerName') AS name,"
        " @@SERVERNAME AS at_name, SERVERPROPERTY('NoSuchProperty') AS unknown",
        driver,
    )[0]
    assert str(row["v"]).startswith("16.0.")
    assert row["major"] == "16"
    assert row["edition"] == "Developer Edition (64-bit)"
    assert row["engine"] == 3
    assert row["edition_id"] == -2117995310
    assert row["hadr"] == 0
    assert row["collation"] == "SQL_Latin1_General_CP1_CI_AS"
    assert row["name"] == row["at_name"]
    assert row["unknown"] is None


def test_schema_id_and_schema_name_agree_with_sys_schemas(server: TdsServer) -> None:
    """t-sql/functions/schema-id-transact-sql and schema-name-transact-sql: without an argument
    both name the caller's default schema (dbo); an unknown name gives NULL."""
    schemas = {
        r["name"]: r["schema_id"] for r in query(server, "SELECT name, schema_id FROM sys.schemas")
    }
    row = query(
        server,
        "SELECT SCHEMA_ID('cdc') AS cdc, SCHEMA_ID() AS mine, SCHEMA_NAME() AS mine_name,"
        f" SCHEMA_NAME({schemas['cdc']}) AS cdc_name, SCHEMA_ID('no_such_schema') AS unknown",
    )[0]
    assert row["cdc"] == schemas["cdc"]
    assert row["mine"] == schemas["dbo"]
    assert row["mine_name"] == "dbo"
    assert row["cdc_name"] == "cdc"
    assert row["unknown"] is None


def test_suser_sname_is_the_login_and_user_name_its_database_user(server: TdsServer) -> None:
    """t-sql/functions/suser-sname-transact-sql (the login of the session without an argument)
    and user-name-transact-sql (the database user; a sysadmin login is dbo)."""
    login = server.connect_kwargs("pymssql")["user"]
    row = query(server, "SELECT SUSER_SNAME() AS login, USER_NAME() AS usr, DB_NAME() AS db")[0]
    assert row["login"] == login
    assert row["usr"] == "dbo"


INFORMATION_SCHEMA = DOCS + "relational-databases/system-information-schema-views/"


@pytest.mark.parametrize("driver", DRIVERS)
def test_information_schema_columns_describes_each_column_as_documented(
    server: TdsServer, driver: str
) -> None:
    """system-information-schema-views/columns-transact-sql: the view's columns in order, and
    for nvarchar(20) 20 characters of 40 bytes, for int precision 10 radix 10 scale 0."""
    names = columns_of(server, "SELECT * FROM INFORMATION_SCHEMA.COLUMNS", driver)
    assert names == [
        "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "ORDINAL_POSITION",
        "COLUMN_DEFAULT", "IS_NULLABLE", "DATA_TYPE", "CHARACTER_MAXIMUM_LENGTH",
        "CHARACTER_OCTET_LENGTH", "NUMERIC_PRECISION", "NUMERIC_PRECISION_RADIX", "NUMERIC_SCALE",
        "DATETIME_PRECISION", "CHARACTER_SET_CATALOG", "CHARACTER_SET_SCHEMA",
        "CHARACTER_SET_NAME", "COLLATION_CATALOG", "COLLATION_SCHEMA", "COLLATION_NAME",
        "DOMAIN_CATALOG", "DOMAIN_SCHEMA", "DOMAIN_NAME",
    ]  # fmt: skip
    rows = query(
        server,
        "SELECT * FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'dbo'"
        " AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION",
        driver,
    )
    by_name = {r["COLUMN_NAME"]: r for r in rows}
    assert [r["COLUMN_NAME"] for r in rows] == ["order_id", "line", "status", "total"]
    assert by_name["order_id"]["IS_NULLABLE"] == "NO"
    assert by_name["order_id"]["DATA_TYPE"] == "int"
    assert (
        by_name["order_id"]["NUMERIC_PRECISION"],
        by_name["order_id"]["NUMERIC_PRECISION_RADIX"],
    ) == (10, 10)
    assert by_name["status"]["IS_NULLABLE"] == "YES"
    assert by_name["status"]["DATA_TYPE"] == "nvarchar"
    assert (
        by_name["status"]["CHARACTER_MAXIMUM_LENGTH"],
        by_name["status"]["CHARACTER_OCTET_LENGTH"],
    ) == (20, 40)
    assert by_name["status"]["CHARACTER_SET_NAME"] == "UNICODE"
    assert by_name["status"]["COLLATION_NAME"] == "SQL_Latin1_General_CP1_CI_AS"
    assert (by_name["total"]["NUMERIC_PRECISION"], by_name["total"]["NUMERIC_SCALE"]) == (9, 2)
    assert rows[0]["TABLE_CATALOG"] == query(server, "SELECT DB_NAME() AS d", driver)[0]["d"]


def test_information_schema_tables_lists_base_tables_with_their_schema(server: TdsServer) -> None:
    """system-information-schema-views/tables-transact-sql: TABLE_CATALOG, TABLE_SCHEMA,
    TABLE_NAME, TABLE_TYPE ('BASE TABLE' for a table)."""
    assert columns_of(server, "SELECT * FROM INFORMATION_SCHEMA.TABLES") == [
        "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE",
    ]  # fmt: skip
    rows = query(
        server, "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM INFORMATION_SCHEMA.TABLES"
    )
    found = {(r["TABLE_SCHEMA"], r["TABLE_NAME"]): r["TABLE_TYPE"] for r in rows}
    assert found[("dbo", "orders")] == "BASE TABLE"
    assert found[("dbo", "audit")] == "BASE TABLE"


def test_table_constraints_and_key_column_usage_show_the_primary_key_in_key_order(
    server: TdsServer,
) -> None:
    """system-information-schema-views/table-constraints-transact-sql and
    key-column-usage-transact-sql: one PRIMARY KEY constraint, its columns by ORDINAL_POSITION."""
    assert columns_of(server, "SELECT * FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS") == [
        "CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "TABLE_CATALOG",
        "TABLE_SCHEMA", "TABLE_NAME", "CONSTRAINT_TYPE", "IS_DEFERRABLE", "INITIALLY_DEFERRED",
    ]  # fmt: skip
    assert columns_of(server, "SELECT * FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE") == [
        "CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "TABLE_CATALOG",
        "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "ORDINAL_POSITION",
    ]  # fmt: skip
    constraints = query(server, "SELECT * FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS")
    assert [(c["TABLE_NAME"], c["CONSTRAINT_TYPE"]) for c in constraints] == [
        ("orders", "PRIMARY KEY")
    ]
    keys = query(
        server,
        "SELECT k.COLUMN_NAME, k.ORDINAL_POSITION FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE k"
        " WHERE k.TABLE_NAME = 'orders' ORDER BY k.ORDINAL_POSITION",
    )
    assert [(k["COLUMN_NAME"], k["ORDINAL_POSITION"]) for k in keys] == [
        ("order_id", 1),
        ("line", 2),
    ]


def test_information_schema_schemata_lists_dbo_and_cdc(server: TdsServer) -> None:
    """system-information-schema-views/schemata-transact-sql: CATALOG_NAME, SCHEMA_NAME,
    SCHEMA_OWNER, then the default character set's catalog, schema and name."""
    assert columns_of(server, "SELECT * FROM INFORMATION_SCHEMA.SCHEMATA") == [
        "CATALOG_NAME", "SCHEMA_NAME", "SCHEMA_OWNER", "DEFAULT_CHARACTER_SET_CATALOG",
        "DEFAULT_CHARACTER_SET_SCHEMA", "DEFAULT_CHARACTER_SET_NAME",
    ]  # fmt: skip
    names = {
        r["SCHEMA_NAME"]
        for r in query(server, "SELECT SCHEMA_NAME FROM INFORMATION_SCHEMA.SCHEMATA")
    }
    assert {"dbo", "cdc", "sys", "INFORMATION_SCHEMA"} <= names


def test_an_unknown_information_schema_view_is_error_208(server: TdsServer) -> None:
    """Error 208, "Invalid object name '%.*ls'." (relational-databases/errors-events/
    database-engine-events-and-errors-0-to-999)."""
    number, text = refusal(server, "SELECT * FROM INFORMATION_SCHEMA.NO_SUCH_VIEW")
    assert number == 208
    assert "Invalid object name 'INFORMATION_SCHEMA.NO_SUCH_VIEW'." in text


def test_sys_indexes_shows_a_clustered_primary_key_and_a_heap(server: TdsServer) -> None:
    """relational-databases/system-catalog-views/sys-indexes-transact-sql: a heap is index_id 0,
    type 0 HEAP with a NULL name; a clustered index is index_id 1, type 1 CLUSTERED."""
    names = columns_of(server, "SELECT * FROM sys.indexes")
    assert names[:10] == [
        "object_id", "name", "index_id", "type", "type_desc", "is_unique", "data_space_id",
        "ignore_dup_key", "is_primary_key", "is_unique_constraint",
    ]  # fmt: skip
    rows = query(
        server,
        "SELECT i.name, i.index_id, i.type, i.type_desc, i.is_unique, i.is_primary_key"
        " FROM sys.indexes i WHERE i.object_id IN (OBJECT_ID('dbo.orders'), OBJECT_ID('dbo.audit'))"
        " ORDER BY i.index_id",
    )
    assert [(r["index_id"], r["type"], r["type_desc"]) for r in rows] == [
        (0, 0, "HEAP"),
        (1, 1, "CLUSTERED"),
    ]
    assert rows[0]["name"] is None
    assert rows[1]["is_primary_key"]
    assert rows[1]["is_unique"]


def test_sys_index_columns_gives_the_key_columns_in_key_order(server: TdsServer) -> None:
    """relational-databases/system-catalog-views/sys-index-columns-transact-sql: key_ordinal is
    the 1-based position in the key; column_id is sys.columns'."""
    rows = query(
        server,
        "SELECT c.name, ic.key_ordinal FROM sys.index_columns ic JOIN sys.columns c"
        " ON c.object_id = ic.object_id AND c.column_id = ic.column_id"
        " WHERE ic.object_id = OBJECT_ID('dbo.orders') AND ic.index_id = 1 ORDER BY ic.key_ordinal",
    )
    assert [(r["name"], r["key_ordinal"]) for r in rows] == [("order_id", 1), ("line", 2)]


def test_sys_objects_lists_the_cdc_functions_change_table_and_primary_key(
    server: TdsServer,
) -> None:
    """relational-databases/system-catalog-views/sys-objects-transact-sql: IF is an inline
    table-valued function, PK a primary key constraint whose parent_object_id is its table's;
    the change table cdc.<instance>_CT is a user table (system-tables/cdc-capture-instance-ct-
    transact-sql). sys.tables lists only tables."""
    rows = query(
        server,
        "SELECT o.name, o.type, o.type_desc, o.parent_object_id, s.name AS schema_name"
        " FROM sys.objects o JOIN sys.schemas s ON s.schema_id = o.schema_id",
    )
    found = {(r["schema_name"], r["name"]): r for r in rows}
    all_changes = found[("cdc", "fn_cdc_get_all_changes_dbo_orders")]
    assert (all_changes["type"], all_changes["type_desc"]) == (
        "IF",
        "SQL_INLINE_TABLE_VALUED_FUNCTION",
    )
    assert found[("cdc", "fn_cdc_get_net_changes_dbo_orders")]["type"] == "IF"
    assert found[("cdc", "dbo_orders_CT")]["type_desc"] == "USER_TABLE"
    orders_id = query(server, "SELECT OBJECT_ID('dbo.orders') AS id")[0]["id"]
    pk = [r for r in rows if r["type"] == "PK"]
    assert [(r["type_desc"], r["parent_object_id"]) for r in pk] == [
        ("PRIMARY_KEY_CONSTRAINT", orders_id)
    ]
    tables = {r["name"] for r in query(server, "SELECT name FROM sys.tables")}
    assert "fn_cdc_get_all_changes_dbo_orders" not in tables
    assert {"orders", "audit", "dbo_orders_CT"} <= tables


def test_cdc_monitoring_views_answer_with_their_documented_columns(server: TdsServer) -> None:
    """relational-databases/system-dynamic-management-views/
    change-data-capture-sys-dm-cdc-log-scan-sessions and
    change-data-capture-sys-dm-cdc-errors: the columns in order."""
    assert columns_of(server, "SELECT * FROM sys.dm_cdc_log_scan_sessions") == [
        "session_id", "start_time", "end_time", "duration", "scan_phase", "error_count",
        "start_lsn", "current_lsn", "end_lsn", "tran_count", "last_commit_lsn",
        "last_commit_time", "log_record_count", "schema_change_count", "command_count",
        "first_begin_cdc_lsn", "last_commit_cdc_lsn", "last_commit_cdc_time", "latency",
        "empty_scan_count", "failed_sessions_count",
    ]  # fmt: skip
    assert columns_of(server, "SELECT * FROM sys.dm_cdc_errors") == [
        "session_id", "phase_number", "entry_time", "error_number", "error_severity",
        "error_state", "error_message", "start_lsn", "begin_lsn", "sequence_value",
    ]  # fmt: skip
    assert query(server, "SELECT * FROM sys.dm_cdc_errors") == []


PROCEDURES = DOCS + "relational-databases/system-stored-procedures/"


@pytest.mark.parametrize("driver", DRIVERS)
def test_sp_statistics_gives_the_table_row_then_the_index_columns(
    server: TdsServer, driver: str
) -> None:
    """system-stored-procedures/sp-statistics-transact-sql: the thirteen columns in order; TYPE
    0 is the table's statistics row with CARDINALITY its row count, TYPE 1 a clustered index,
    INDEX_QUALIFIER the table's name, SEQ_IN_INDEX the column's position, COLLATION 'A'."""
    rows = query(server, "EXEC sp_statistics @table_name = 'orders', @table_owner = 'dbo'", driver)
    assert list(rows[0]) == [
        "TABLE_QUALIFIER", "TABLE_OWNER", "TABLE_NAME", "NON_UNIQUE", "INDEX_QUALIFIER",
        "INDEX_NAME", "TYPE", "SEQ_IN_INDEX", "COLUMN_NAME", "COLLATION", "CARDINALITY", "PAGES",
        "FILTER_CONDITION",
    ]  # fmt: skip
    assert (rows[0]["TYPE"], rows[0]["CARDINALITY"], rows[0]["INDEX_NAME"]) == (0, 3, None)
    keys = [(r["SEQ_IN_INDEX"], r["COLUMN_NAME"], r["TYPE"], r["NON_UNIQUE"]) for r in rows[1:]]
    assert keys == [(1, "order_id", 1, 0), (2, "line", 1, 0)]
    assert {r["INDEX_QUALIFIER"] for r in rows[1:]} == {"orders"}
    assert {r["COLLATION"] for r in rows[1:]} == {"A"}


def test_sp_statistics_of_an_unknown_table_returns_no_rows(server: TdsServer) -> None:
    """system-stored-procedures/sp-statistics-transact-sql: the procedure describes the table it
    finds; for none there is nothing to describe."""
    assert query(server, "EXEC sp_statistics 'no_such_table'") == []


def test_sp_helpindex_describes_the_clustered_primary_key(server: TdsServer) -> None:
    """system-stored-procedures/sp-helpindex-transact-sql: index_name, index_description,
    index_keys (the key columns, comma-separated)."""
    rows = query(server, "EXEC sp_helpindex 'dbo.orders'")
    assert list(rows[0]) == ["index_name", "index_description", "index_keys"]
    assert len(rows) == 1
    assert "clustered, unique, primary key" in rows[0]["index_description"]
    assert rows[0]["index_keys"] == "order_id, line"


def test_sp_help_on_a_table_returns_its_description_sets(server: TdsServer) -> None:
    """system-stored-procedures/sp-help-transact-sql: for a table, the object (Name, Owner,
    Type, Created_datetime), its columns (Column_name, Type, Computed, Length, Prec, Scale,
    Nullable, ...), identity, RowGuidCol, filegroup, indexes and constraints."""
    sets = result_sets(server, "EXEC sp_help 'dbo.orders'")
    heads = [names for names, _ in sets]
    assert heads[0] == ["Name", "Owner", "Type", "Created_datetime"]
    assert sets[0][1][0][:3] == ("orders", "dbo", "user table")
    assert heads[1][:7] == [
        "Column_name",
        "Type",
        "Computed",
        "Length",
        "Prec",
        "Scale",
        "Nullable",
    ]
    columns = {row[0]: row for row in sets[1][1]}
    assert columns["status"][1:4] == ("nvarchar", "no", 40)  # Length in bytes
    assert columns["order_id"][6] == "no"
    assert heads[2][0] == "Identity"
    assert heads[3] == ["RowGuidCol"]
    assert heads[4] == ["Data_located_on_filegroup"]
    assert heads[5] == ["index_name", "index_description", "index_keys"]
    assert heads[6][:2] == ["constraint_type", "constraint_name"]
    assert sets[6][1][0][0] == "PRIMARY KEY (clustered)"


def test_sp_help_of_an_unknown_object_is_error_15009(server: TdsServer) -> None:
    """system-stored-procedures/sp-help-transact-sql names the object; SQL Server's error 15009:
    "The object '%s' does not exist in database '%s' or is invalid for this operation."."""
    number, text = refusal(server, "EXEC sp_help 'dbo.no_such_table'")
    assert number == 15009
    assert "The object 'dbo.no_such_table' does not exist in database" in text


def test_sp_cdc_disable_db_disables_every_capture_instance(server: TdsServer) -> None:
    """system-stored-procedures/sys-sp-cdc-disable-db-transact-sql: disabling CDC for the
    database drops its change tables and functions."""
    assert len(query(server, "SELECT * FROM cdc.change_tables")) == 1
    conn = connect(server, "pymssql")
    try:
        conn.cursor().execute("EXEC sys.sp_cdc_disable_db")
    finally:
        conn.close()
    assert query(server, "SELECT * FROM cdc.change_tables") == []
    names = {r["name"] for r in query(server, "SELECT name FROM sys.objects")}
    assert "fn_cdc_get_all_changes_dbo_orders" not in names


def test_msdb_cdc_jobs_shows_the_settings_sp_cdc_change_job_stored(server: TdsServer) -> None:
    """system-tables/dbo-cdc-jobs-transact-sql: database_id, job_type, job_id, maxtrans,
    maxscans, continuous, pollinginterval, retention, threshold; one row per job, the same
    settings sys.sp_cdc_help_jobs shows (system-stored-procedures/sys-sp-cdc-help-jobs-
    transact-sql)."""
    conn = connect(server, "pymssql")
    try:
        conn.cursor().execute(
            "EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = 2880"
        )
        conn.commit()
    finally:
        conn.close()
    assert columns_of(server, "SELECT * FROM msdb.dbo.cdc_jobs") == [
        "database_id", "job_type", "job_id", "maxtrans", "maxscans", "continuous",
        "pollinginterval", "retention", "threshold",
    ]  # fmt: skip
    rows = {r["job_type"]: r for r in query(server, "SELECT * FROM msdb.dbo.cdc_jobs")}
    assert set(rows) == {"capture", "cleanup"}
    assert rows["cleanup"]["retention"] == 2880
    helped = {r["job_type"]: r for r in query(server, "EXEC sys.sp_cdc_help_jobs")}
    for job in ("capture", "cleanup"):
        for column in ("maxtrans", "maxscans", "pollinginterval", "retention", "threshold"):
            assert rows[job][column] == helped[job][column]
        assert rows[job]["job_id"] == helped[job]["job_id"]


def test_mssql_pythons_cursor_statistics_reads_the_clustered_primary_key(
    server: TdsServer,
) -> None:
    """The ODBC driver answers SQLStatistics with the RPC [sys].sp_statistics_100
    (odbc/reference/syntax/sqlstatistics-function: TYPE SQL_TABLE_STAT 0 for the table's row,
    SQL_INDEX_CLUSTERED 1, ORDINAL_POSITION the column's place in the index)."""
    conn = connect(server, "mssql-python")
    try:
        cursor = conn.cursor()
        rows = cursor.statistics(table="orders", schema="dbo").fetchall()
        names = [d[0] for d in cursor.description]
    finally:
        conn.close()
    found = [dict(zip(names, row, strict=True)) for row in rows]
    assert [(r["TYPE"], r["COLUMN_NAME"]) for r in found] == [
        (0, None),
        (1, "order_id"),
        (1, "line"),
    ]
    assert found[0]["CARDINALITY"] == 3
    assert [r["ORDINAL_POSITION"] for r in found[1:]] == [1, 2]


def test_each_scan_the_capture_job_runs_is_a_log_scan_session(tmp_path: Path) -> None:
    """system-dynamic-management-views/change-data-capture-sys-dm-cdc-log-scan-sessions: one
    row per log scan session, and a session_id 0 row whose scan_phase is "Aggregate" summing
    them; tran_count counts the transactions the session processed. Two sp_cdc_scan calls
    (system-stored-procedures/sys-sp-cdc-scan-transact-sql) over two and zero pending commits."""
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00", capture="manual")
    try:
        emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
        emu.enable_cdc("dbo.orders")
        emu.capture()
        with emu.serve() as srv:
            assert query(srv, "SELECT * FROM sys.dm_cdc_log_scan_sessions") == []
            emu.commit([("insert", "dbo.orders", {"order_id": 1})])
            emu.commit([("insert", "dbo.orders", {"order_id": 2})])
            for _ in range(2):
                conn = connect(srv, "pymssql")
                try:
                    conn.cursor().execute("EXEC sys.sp_cdc_scan")
                    conn.commit()
                finally:
                    conn.close()
            rows = query(srv, "SELECT * FROM sys.dm_cdc_log_scan_sessions ORDER BY session_id")
            max_lsn = query(srv, "SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"]
    finally:
        emu.close()
    assert [(r["session_id"], r["scan_phase"], r["tran_count"]) for r in rows] == [
        (0, "Aggregate", 2),
        (1, "Done", 2),
        (2, "Done", 0),
    ]
    assert [r["empty_scan_count"] for r in rows] == [1, 0, 1]
    assert {r["error_count"] for r in rows} == {0}
    # The view writes LSNs as three hex fields, "00000027:00000090:0003".
    assert rows[1]["end_lsn"].replace(":", "") == max_lsn.hex().upper()
