"""The T-SQL backends over a fake DB-API connection: results decoded into values and Arrow."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from mssql_cdc.core.ranges import Tile
from mssql_cdc.errors import ConfigError
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.sqlserver import (
    ReadColumn,
    TsqlCaptureCatalog,
    TsqlChangeReader,
    TsqlStreamPlanner,
    find_instance,
)
from mssql_cdc.sqlserver.tsql.drivers import Session, error_number, import_driver, pymssql_arguments
from tests.unit.support.fake_dbapi import FakeConnection

A = "0x0000002A000001000001"
B = "0x0000002A000001F00003"


def session(answers: dict[str, Any], *, paramstyle: str = "qmark", arrow: bool = False) -> Session:
    return Session(FakeConnection(answers), paramstyle, arrow=arrow)  # type: ignore[arg-type]


def conn_of(s: Session) -> FakeConnection:
    assert isinstance(s.connection, FakeConnection)
    return s.connection


class ServerError(Exception):
    """Shaped like mssql-python's errors: the server's number only in the message text."""

    def __init__(self, number: int) -> None:
        super().__init__("Driver Error: x; DDBC Error: oops")
        self.ddbc_error = f"[Microsoft][ODBC Driver 18][SQL Server]Something failed. ({number})"


def test_a_null_max_lsn_reads_as_none_and_a_value_as_canonical_text() -> None:
    planner = TsqlStreamPlanner(session({"fn_cdc_get_max_lsn": (["max_lsn"], [(None,)])}))
    assert planner.max_lsn() is None
    planner = TsqlStreamPlanner(session({"fn_cdc_get_max_lsn": (["max_lsn"], [(B.lower(),)])}))
    assert planner.max_lsn() == B


def test_min_lsn_passes_the_instance_as_a_parameter_and_keeps_zero_apart_from_null() -> None:
    s = session({"fn_cdc_get_min_lsn": (["min_lsn"], [("0x00000000000000000000",)])})
    planner = TsqlStreamPlanner(s)
    assert planner.min_lsn("dbo_orders") == "0x" + "0" * 20
    assert conn_of(s).executed[-1][1] == ("dbo_orders",)
    empty = TsqlStreamPlanner(session({"fn_cdc_get_min_lsn": (["min_lsn"], [(None,)])}))
    assert empty.min_lsn("dbo_orders") is None


def test_commit_time_and_the_nth_entry_are_decoded() -> None:
    at = datetime(2026, 9, 28, 14, 3, 12, 117000)
    s = session(
        {
            "lsn_time_mapping AS m WHERE m.start_lsn <=": (["lsn", "commit_ts"], [(A, at)]),
            "OFFSET 3 ROWS": (["lsn"], [(B,)]),
        }
    )
    planner = TsqlStreamPlanner(s)
    assert planner.commit_time(A, "+02:00") == at
    assert conn_of(s).executed[-1][1] == (120, A)
    assert planner.nth_commit_after(A, 4) == B
    none = TsqlStreamPlanner(session({"lsn_time_mapping": (["commit_ts"], [])}))
    assert none.commit_time(A, "UTC") is None


def test_split_points_become_tiles_in_order() -> None:
    rows = [(1, "0x0000002A000001000009", 50), (2, B, 50)]
    s = session({"NTILE(2)": (["tile", "last_lsn", "row_count"], rows)})
    tiles = TsqlStreamPlanner(s).split_points("dbo_orders", A, B, 2)
    assert tiles == [Tile("0x0000002A000001000009", 50), Tile(B, 50)]  # type: ignore[arg-type]


HELP_COLUMNS = [
    "source_schema",
    "source_table",
    "capture_instance",
    "start_lsn",
    "create_date",
    "index_column_list",
    "captured_column_list",
]


def test_capture_instances_decode_binary_lsns_and_bracketed_lists_oldest_first() -> None:
    rows = [
        (
            "dbo",
            "orders",
            "dbo_orders_v2",
            bytes.fromhex("0000002A000001F00003"),
            datetime(2026, 9, 2),
            "[id]",
            "[id], [a]]b], [note]",
        ),
        (
            "dbo",
            "orders",
            "dbo_orders",
            bytes.fromhex("00000010000000100001"),
            datetime(2026, 9, 1),
            "[id]",
            "[id], [a]]b]",
        ),
        ("dbo", "orders", "dbo_orders_v3", None, datetime(2026, 9, 3), None, "[id]"),
    ]
    catalog = TsqlCaptureCatalog(session({"sp_cdc_help_change_data_capture": (HELP_COLUMNS, rows)}))
    found = catalog.capture_instances("dbo", "orders")
    assert [ci.name for ci in found] == ["dbo_orders", "dbo_orders_v2", "dbo_orders_v3"]
    assert found[0].start_lsn == "0x00000010000000100001"
    assert found[1].captured_columns == ("id", "a]b", "note")
    assert found[2].start_lsn is None
    assert found[2].index_columns == ()


def test_captured_columns_carry_full_types_and_the_computed_flag_of_the_source() -> None:
    help_rows = [("dbo", "orders", "dbo_orders", bytes(10), datetime(2026, 9, 1), "[id]", "")]
    captured = (
        [
            "column_name",
            "column_ordinal",
            "data_type",
            "character_maximum_length",
            "numeric_precision",
            "numeric_scale",
            "datetime_precision",
        ],
        [
            ("total", 3, "decimal", None, 12, 2, None),
            ("id", 1, "int", None, 10, 0, None),
            ("name", 2, "nvarchar", -1, None, None, None),
            ("gone", 4, "datetime2", None, None, None, 7),
        ],
    )
    source = (
        ["name", "column_id", "base_type", "is_computed", "collation_name"],
        [
            ("id", 1, "int", False, None),
            ("name", 2, "nvarchar", False, "Latin1_General_CI_AS"),
            ("total", 5, "decimal", True, None),
        ],
    )
    s = session(
        {
            "cdc.change_tables": (TABLE_OF, [("dbo", "orders")]),
            "sp_cdc_help_change_data_capture": (HELP_COLUMNS, help_rows),
            "sp_cdc_get_captured_columns": captured,
            "FROM sys.columns": source,
        }
    )
    columns = TsqlCaptureCatalog(s).captured_columns("dbo_orders")
    assert [(c.name, c.ordinal, c.column_id, c.type_text, c.is_computed) for c in columns] == [
        ("id", 1, 1, "int", False),
        ("name", 2, 2, "nvarchar(max)", False),
        ("total", 3, 5, "decimal(12,2)", True),
        ("gone", 4, None, "datetime2(7)", False),
    ]
    assert conn_of(s).executed[-1][1] == ("[dbo].[orders]",)


def test_captured_columns_of_an_unknown_instance_say_it_is_not_listed() -> None:
    catalog = TsqlCaptureCatalog(
        session(
            {
                "cdc.change_tables": (TABLE_OF, []),
                "sp_cdc_help_change_data_capture": (HELP_COLUMNS, []),
            }
        )
    )
    with pytest.raises(ConfigError, match="'nope' does not exist or this login cannot read it"):
        catalog.captured_columns("nope")


# Microsoft Learn, "cdc.change_tables (Transact-SQL)": one row per capture instance, with
# `capture_instance` and the source table's `source_object_id`; "sys.sp_cdc_help_change_data_capture
# (Transact-SQL)": with @source_schema and @source_name it lists that table's instances only.
TABLE_OF = ["source_schema", "source_table"]
ORDERS = ("dbo", "orders", "dbo_orders", bytes.fromhex("0000002A000001000001"), None, "[id]", "")
OTHER = ("dbo", "lines", "dbo_lines", bytes.fromhex("0000002A000001000001"), None, "[id]", "")


def _help(params: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The procedure's rows: one table's when it is named, else every instance."""
    if params:
        return HELP_COLUMNS, [r for r in (ORDERS, OTHER) if (r[0], r[1]) == tuple(params)]
    return HELP_COLUMNS, [ORDERS, OTHER]


def _listed_every_instance(s: Session) -> bool:
    return any(
        "sp_cdc_help_change_data_capture" in text and not params
        for text, params in conn_of(s).executed
    )


def test_an_exact_instance_name_is_resolved_from_its_tables_instances_alone() -> None:
    s = session({"cdc.change_tables": (TABLE_OF, [("dbo", "orders")]), "sp_cdc_help": _help})
    found = find_instance(TsqlCaptureCatalog(s), "dbo_orders")
    assert (found.instance.name, found.followed_from) == ("dbo_orders", None)
    assert not _listed_every_instance(s)
    assert conn_of(s).executed[0][1] == ("dbo_orders",)


def test_a_name_in_another_case_lists_every_instance_and_matches_ignoring_case() -> None:
    s = session({"cdc.change_tables": (TABLE_OF, [("dbo", "orders")]), "sp_cdc_help": _help})
    found = find_instance(TsqlCaptureCatalog(s), "DBO_Orders")
    assert found.instance.name == "dbo_orders"
    assert _listed_every_instance(s)


@pytest.mark.parametrize("number", [229, 208])
def test_a_login_that_cannot_read_change_tables_lists_every_instance(number: int) -> None:
    s = session({"cdc.change_tables": ServerError(number), "sp_cdc_help": _help})
    assert find_instance(TsqlCaptureCatalog(s), "dbo_lines").instance.name == "dbo_lines"
    assert _listed_every_instance(s)


def test_another_server_error_on_change_tables_is_raised() -> None:
    s = session({"cdc.change_tables": ServerError(1205), "sp_cdc_help": _help})
    with pytest.raises(ServerError):
        find_instance(TsqlCaptureCatalog(s), "dbo_lines")


def test_a_disabled_default_named_instance_is_followed_as_before() -> None:
    renamed = (
        "dbo",
        "orders",
        "dbo_orders_v2",
        bytes.fromhex("0000002A000001000001"),
        None,
        "",
        "",
    )
    s = session(
        {"cdc.change_tables": (TABLE_OF, []), "sp_cdc_help": (HELP_COLUMNS, [renamed, OTHER])}
    )
    found = find_instance(TsqlCaptureCatalog(s), "dbo_orders")
    assert (found.instance.name, found.followed_from) == ("dbo_orders_v2", "dbo_orders")


def test_ddl_history_keeps_entries_inside_the_interval_in_lsn_order() -> None:
    names = ["ddl_lsn", "ddl_time", "ddl_command", "required_column_update"]
    rows = [
        (bytes.fromhex("0000002A000001F00003"), datetime(2026, 9, 2), "ALTER TABLE b", 0),
        (bytes.fromhex("0000002A000001000001"), datetime(2026, 9, 1), "ALTER TABLE a", 1),
        (bytes.fromhex("0000002A000001000000"), datetime(2026, 8, 1), "too old", 0),
    ]
    catalog = TsqlCaptureCatalog(session({"sp_cdc_get_ddl_history": (names, rows)}))
    entries = catalog.ddl_history("ci", "0x0000002A000001000000", B)  # type: ignore[arg-type]
    assert [(e.ddl_lsn, e.ddl_command, e.required_column_update) for e in entries] == [
        (A, "ALTER TABLE a", True),
        (B, "ALTER TABLE b", False),
    ]


def test_change_table_access_reads_the_grant_and_the_command_id_column() -> None:
    s = session({"HAS_PERMS_BY_NAME": (["can_select", "command_id_length"], [(1, None)])})
    access = TsqlCaptureCatalog(s).change_table_access("a]b")
    assert (access.can_select, access.has_command_id) == (True, False)
    assert conn_of(s).executed[-1][1] == ("cdc.[a]]b_CT]", "cdc.[a]]b_CT]")


def test_time_zones_resolve_by_name_by_server_zone_or_by_offset_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    known = TsqlCaptureCatalog(session({"sys.time_zone_info": (["found"], [(1,)])}))
    assert known.resolve_time_zone("Tokyo Standard Time") == "Tokyo Standard Time"
    assert known.resolve_time_zone("UTC") == "UTC"
    unknown = TsqlCaptureCatalog(session({"sys.time_zone_info": (["found"], [(0,)])}))
    with pytest.raises(ConfigError, match="does not know the zone 'Mars/Olympus'"):
        unknown.resolve_time_zone("Mars/Olympus")
    modern = TsqlCaptureCatalog(session({"CURRENT_TIMEZONE_ID": (["zone"], [("UTC",)])}))
    assert modern.resolve_time_zone("auto") == "UTC"
    old = {"CURRENT_TIMEZONE_ID": ServerError(195), "TZOFFSET": (["offset_minutes"], [(-210,)])}
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sqlserver"):
        assert TsqlCaptureCatalog(session(old)).resolve_time_zone("auto") == "-03:30"
        assert TsqlCaptureCatalog(session(old)).resolve_time_zone("auto") == "-03:30"
    assert len([r for r in caplog.records if "daylight-saving" in r.getMessage()]) == 1
    broken = {"CURRENT_TIMEZONE_ID": ServerError(18456)}
    with pytest.raises(ServerError):
        TsqlCaptureCatalog(session(broken)).resolve_time_zone("auto")


CHANGE_NAMES = ["_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id", "amount"]


def change_rows(n: int) -> list[tuple[Any, ...]]:
    at = datetime(2026, 9, 28, 14, 3, 12, 117000)
    return [(A, f"0x{i:020X}", 2, 1, at, i, Decimal("1.50")) for i in range(n)]


DECLARED = [
    ReadColumn("id", "INT", "int"),
    ReadColumn("amount", "DECIMAL(12,2)", "decimal"),
    ReadColumn("note", "STRING", "nvarchar"),
]


def expected_schema() -> pa.Schema:
    return pa.schema(
        [
            ("_capture_instance", pa.string()),
            ("_start_lsn", pa.string()),
            ("_seqval", pa.string()),
            ("_operation", pa.int32()),
            ("_command_id", pa.int32()),
            ("_commit_ts", pa.timestamp("us")),
            ("id", pa.int32()),
            ("amount", pa.decimal128(12, 2)),
            ("note", pa.string()),
        ]
    )


@pytest.mark.parametrize("arrow", [False, True], ids=["pymssql-tuples", "mssql-python-arrow"])
def test_change_rows_arrive_in_the_declared_schema_with_uncaptured_columns_null(
    arrow: bool,
) -> None:
    s = session({"FROM cdc.[dbo_orders_CT]": (CHANGE_NAMES, change_rows(150))}, arrow=arrow)
    reader = TsqlChangeReader(s)
    batches = list(
        reader.read_changes(
            "dbo_orders",
            A,
            B,
            columns=DECLARED,
            include_command_id=True,  # type: ignore[arg-type]
            time_zone="UTC",
            batch_rows=100,
            null_columns=("note",),
        )
    )
    table = pa.Table.from_batches(batches)
    assert table.schema == expected_schema()
    assert table.num_rows == 150
    assert table.column("id").to_pylist() == list(range(150))
    assert set(table.column("_capture_instance").to_pylist()) == {"dbo_orders"}
    assert table.column("note").null_count == 150
    assert table.column("amount")[0].as_py() == Decimal("1.50")
    assert "[note]" not in conn_of(s).executed[-1][0]  # an uncaptured column is not selected
    assert conn_of(s).cursors_closed == 1
    assert batches[0].num_rows == 64  # the first batch stays small, with either driver
    assert [b.num_rows for b in batches] == [64, 86]
    assert max(conn_of(s).fetch_sizes) <= 100


def test_a_value_that_does_not_fit_its_declared_type_names_the_column() -> None:
    rows = [(A, A, 2, 1, None, 2**40, Decimal("1"))]
    reader = TsqlChangeReader(session({"_CT]": (CHANGE_NAMES, rows)}))
    with pytest.raises(ValueError, match="column 'id': a value does not fit the declared type"):
        list(
            reader.read_changes(
                "ci",
                A,
                B,
                columns=DECLARED[:2],
                include_command_id=True,  # type: ignore[arg-type]
                time_zone="UTC",
                batch_rows=10,
            )
        )


def test_an_aware_datetimeoffset_becomes_the_utc_instant() -> None:
    names = ["_start_lsn", "_seqval", "_operation", "_commit_ts", "seen"]
    aware = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=-3)))
    reader = TsqlChangeReader(session({"_CT]": (names, [(A, A, 2, None, aware)])}))
    [batch] = reader.read_changes(
        "ci",
        A,
        B,
        columns=[ReadColumn("seen", "TIMESTAMP")],  # type: ignore[arg-type]
        include_command_id=False,
        time_zone="UTC",
        batch_rows=10,
    )
    assert batch.column("seen")[0].as_py() == datetime(2026, 1, 1, 15, 0, tzinfo=UTC)


def test_a_missing_grant_becomes_a_permission_error_with_the_grant_statement() -> None:
    reader = TsqlChangeReader(session({"_CT]": ServerError(229)}))
    with pytest.raises(PermissionError, match=r"GRANT SELECT ON cdc\.\[dbo_orders_CT\] TO"):
        list(
            reader.read_changes(
                "dbo_orders",
                A,
                B,
                columns=[],
                include_command_id=True,  # type: ignore[arg-type]
                time_zone="UTC",
                batch_rows=10,
            )
        )
    other = TsqlChangeReader(session({"_CT]": ServerError(208)}))
    with pytest.raises(ServerError):  # a vanished table is the guard's business, not hidden
        list(
            other.read_changes(
                "ci",
                A,
                B,
                columns=[],
                include_command_id=True,  # type: ignore[arg-type]
                time_zone="UTC",
                batch_rows=10,
            )
        )


def test_session_stats_tolerate_a_missing_view_server_state_only() -> None:
    ok = TsqlChangeReader(
        session({"SELECT 1": (["one"], [(1,)]), "wait_stats": (["wait_time_ms"], [(4,)])})
    )
    stats = ok.session_stats()
    assert stats.network_wait_ms == 4.0
    assert stats.rtt_ms >= 0
    denied = TsqlChangeReader(
        session({"SELECT 1": (["one"], [(1,)]), "wait_stats": ServerError(300)})
    )
    assert denied.session_stats().network_wait_ms is None
    broken = TsqlChangeReader(
        session({"SELECT 1": (["one"], [(1,)]), "wait_stats": ServerError(1222)})
    )
    with pytest.raises(ServerError):
        broken.session_stats()


def test_closing_a_backend_closes_its_connection_once() -> None:
    s = session({})
    planner = TsqlStreamPlanner(s)
    planner.close()
    planner.close()
    assert s.connection is None
    with pytest.raises(RuntimeError, match="session is closed"):
        planner.max_lsn()


def test_a_missing_driver_is_an_import_error_naming_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mssql_python", None)
    monkeypatch.setitem(sys.modules, "pymssql", None)
    with pytest.raises(ImportError, match=r"pip install 'mssql-python>=1\.5'"):
        import_driver("mssql-python")
    with pytest.raises(ImportError, match="pip install 'pymssql'"):
        import_driver("pymssql")


def test_pymssql_arguments_come_from_the_five_keys() -> None:
    conn = ConnectionString.parse("Server=tcp:db.example,1444;Database=shop;UID=u;PWD=p;App=job")
    assert pymssql_arguments(conn, 15) == {
        "server": "db.example",
        "port": "1444",
        "database": "shop",
        "user": "u",
        "password": "p",
        "login_timeout": 15,
        "autocommit": True,
        "tds_version": "7.4",
        "appname": "job",
    }
    plain = pymssql_arguments(ConnectionString.parse("Server=db"), 30)
    assert (plain["server"], "port" in plain, plain["appname"]) == ("db", False, "mssql-cdc")
    with pytest.raises(ConfigError, match="needs a Server=host"):
        pymssql_arguments(ConnectionString.parse("Database=shop"), 30)


def test_error_numbers_are_read_from_pymssql_args_and_mssql_python_text() -> None:
    assert error_number(Exception(20009, b"DB-Lib error message 20009")) == 20009
    assert error_number(ServerError(1205)) == 1205
    assert error_number(Exception("no number here")) is None


def test_pyformat_sessions_send_percent_s_and_the_values() -> None:
    s = session({"fn_cdc_get_min_lsn": (["min_lsn"], [(None,)])}, paramstyle="pyformat")
    TsqlStreamPlanner(s).min_lsn("50%")
    text, params = conn_of(s).executed[-1]
    assert "fn_cdc_get_min_lsn(%s)" in text
    assert params == ("50%",)


def test_the_driver_grant_check_error_names_the_table_and_the_statement() -> None:
    from mssql_cdc.sqlserver.tsql.backend import permission_error

    error = permission_error("dbo_orders_v2", "etl]user")
    assert "GRANT SELECT ON cdc.[dbo_orders_v2_CT] TO [etl]]user]" in str(error)


def test_batches_shrink_to_stay_under_64_mib_by_the_bytes_per_row_so_far() -> None:
    from mssql_cdc.sqlserver.tsql.arrow import BatchSizer

    sizer = BatchSizer(10_000)
    assert sizer.next_size() == 64
    wide = pa.RecordBatch.from_arrays([pa.array([b"x" * 1_048_576] * 4)], names=["blob"])
    sizer.record(wide)  # about 1 MiB per row so far
    assert sizer.next_size() == 63
    narrow = BatchSizer(10_000)
    narrow.record(pa.RecordBatch.from_arrays([pa.array(list(range(64)))], names=["n"]))
    assert narrow.next_size() == 10_000  # capped by arrowBatchSize
    assert BatchSizer(10).next_size() == 10


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("[SQL Server]The SELECT permission was denied on the object 'x_CT', schema 'cdc'.", 229),
        ("[SQL Server]VIEW SERVER STATE permission was denied on object 'server'.", 300),
        ("[SQL Server]Invalid object name 'cdc.dbo_orders_CT'.", 208),
        ("[SQL Server]'CURRENT_TIMEZONE_ID' is not a recognized built-in function name.", 195),
        ("[SQL Server]Transaction (Process ID 52) was deadlocked on lock resources with", 1205),
        ("[SQL Server]Login failed for user 'etl'.", 18456),
        ("[SQL Server]Snapshot isolation transaction failed accessing database 'db'", 3952),
        ("[SQL Server]Something else entirely.", None),
    ],
)
def test_mssql_python_errors_are_numbered_from_their_server_text(
    text: str, number: int | None
) -> None:
    exc = Exception("Driver Error: x; DDBC Error: y")
    exc.ddbc_error = "[Microsoft][ODBC Driver 18 for SQL Server]" + text  # type: ignore[attr-defined]
    assert error_number(exc) == number


def test_a_backend_holding_a_live_session_refuses_to_be_pickled() -> None:
    import pickle

    with pytest.raises(TypeError, match="a SQL Server session cannot be pickled"):
        pickle.dumps(TsqlStreamPlanner(session({})))
