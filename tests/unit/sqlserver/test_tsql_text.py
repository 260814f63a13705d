"""The T-SQL text the real backends send: valid T-SQL, values as parameters, names quoted."""

from __future__ import annotations

import re

import pytest
import sqlglot
from sqlglot import exp

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.identifiers import change_table, check_collation, quote_name, two_part_name
from mssql_cdc.sqlserver.metadata import ReadColumn
from mssql_cdc.sqlserver.tsql import statements as tsql

A = "0x0000002A000001000001"
B = "0x0000002A000001F00003"
COLUMNS = [
    ReadColumn("id", "INT", "int"),
    ReadColumn("x y", "STRING", "nvarchar"),
    ReadColumn("at", "STRING", "time"),
    ReadColumn("guid", "STRING", "uniqueidentifier"),
    ReadColumn("seen", "TIMESTAMP", "datetimeoffset"),
    ReadColumn("blob", "BINARY", "timestamp"),
    ReadColumn("v", "STRING", None),
]


def every_statement(ci: str = "dbo_orders") -> list[tsql.Statement]:
    return [
        tsql.max_lsn(),
        tsql.min_lsn(ci),
        tsql.commit_time(A, "UTC"),
        tsql.commit_time(A, "W. Europe Standard Time"),
        tsql.commit_time(A, "-03:00"),
        tsql.nth_commit_after(A, 4),
        tsql.split_points(ci, A, B, 8),
        tsql.change_rows(ci, A, B, COLUMNS, include_command_id=True, time_zone="UTC"),
        tsql.change_rows(ci, A, B, COLUMNS, include_command_id=False, time_zone="Europe/Berlin"),
        tsql.change_rows(ci, A, B, [], include_command_id=True, time_zone="+05:30"),
        tsql.help_capture_instances(),
        tsql.help_capture_instances("dbo", "orders"),
        tsql.captured_columns(ci),
        tsql.ddl_history(ci),
        tsql.table_columns("dbo", "orders"),
        tsql.change_table_access(ci),
        tsql.current_time_zone(),
        tsql.current_utc_offset(),
        tsql.time_zone_exists("UTC"),
        tsql.ping(),
        tsql.network_wait(),
        tsql.set_lock_timeout(250),
    ]


@pytest.mark.parametrize("statement", every_statement(), ids=lambda s: s.text[:60])
def test_every_statement_parses_as_one_tsql_statement(statement: tsql.Statement) -> None:
    parsed = sqlglot.parse(statement.text, read="tsql", error_level=sqlglot.ErrorLevel.RAISE)
    assert len([p for p in parsed if p is not None]) == 1
    assert statement.text.count("?") == len(statement.params)


def test_the_isolation_statements_are_exactly_the_two_allowed_levels() -> None:
    # sqlglot 30 cannot parse SET TRANSACTION ISOLATION LEVEL SNAPSHOT, so the text is pinned.
    assert tsql.set_isolation("readCommitted").text == (
        "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"
    )
    assert tsql.set_isolation("snapshot").text == "SET TRANSACTION ISOLATION LEVEL SNAPSHOT;"


def test_no_statement_reads_uncommitted_rows_or_writes_anything() -> None:
    for statement in every_statement():
        upper = statement.text.upper()
        assert "NOLOCK" not in upper
        assert "UNCOMMITTED" not in upper
        parsed = sqlglot.parse_one(statement.text, read="tsql")
        assert not list(parsed.find_all(exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop))


def test_every_lsn_is_a_parameter_never_a_literal() -> None:
    for statement in every_statement():
        assert not re.search(r"0x[0-9A-Fa-f]{4,}", statement.text), statement.text
        lsn_params = [p for p in statement.params if p in (A, B)]
        assert statement.text.count("CONVERT(binary(10), ?, 1)") == len(lsn_params)


def test_the_ntile_query_is_the_one_the_spec_gives() -> None:
    statement = tsql.split_points("dbo_orders", A, B, 8)
    assert statement.text == (
        "SELECT x.t AS tile, CONVERT(varchar(22), MAX(x.l), 1) AS last_lsn, "
        "COUNT_BIG(*) AS row_count FROM (SELECT [__$start_lsn] AS l, "
        "NTILE(8) OVER (ORDER BY [__$start_lsn]) AS t FROM cdc.[dbo_orders_CT] "
        "WHERE [__$start_lsn] BETWEEN CONVERT(binary(10), ?, 1) AND CONVERT(binary(10), ?, 1)) "
        "AS x GROUP BY x.t ORDER BY x.t;"
    )
    assert statement.params == (A, B)


def test_the_change_query_reads_the_change_table_in_the_spec_order() -> None:
    statement = tsql.change_rows(
        "dbo_orders", A, B, COLUMNS[:2], include_command_id=True, time_zone="UTC"
    )
    assert statement.text == (
        "SELECT CONVERT(varchar(22), ct.[__$start_lsn], 1) AS [_start_lsn], "
        "CONVERT(varchar(22), ct.[__$seqval], 1) AS [_seqval], "
        "ct.[__$operation] AS [_operation], ct.[__$command_id] AS [_command_id], "
        "CONVERT(datetime2(3), m.tran_end_time) AS [_commit_ts], ct.[id] AS [id], "
        "ct.[x y] AS [x y] FROM cdc.[dbo_orders_CT] AS ct "
        "LEFT JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = ct.[__$start_lsn] "
        "WHERE ct.[__$start_lsn] BETWEEN CONVERT(binary(10), ?, 1) AND CONVERT(binary(10), ?, 1) "
        "ORDER BY ct.[__$start_lsn], ct.[__$command_id], ct.[__$seqval], ct.[__$operation];"
    )
    assert statement.params == (A, B)
    assert "fn_cdc_get_all_changes" not in statement.text


def test_without_command_id_the_column_and_its_sort_key_are_left_out() -> None:
    text = tsql.change_rows("ci", A, B, [], include_command_id=False, time_zone="UTC").text
    assert "__$command_id" not in text
    assert text.endswith("ORDER BY ct.[__$start_lsn], ct.[__$seqval], ct.[__$operation];")


def test_commit_times_convert_to_utc_by_zone_name_or_fixed_offset() -> None:
    named = tsql.commit_time(A, "W. Europe Standard Time")
    assert "(m.tran_end_time AT TIME ZONE ?) AT TIME ZONE 'UTC'" in named.text
    # in the order of the markers: the earliest instant, then the later candidate (decision 1320)
    assert named.params == ("W. Europe Standard Time",) * 6 + (A,)
    fixed = tsql.commit_time(A, "-03:00")
    assert "DATEADD(minute, -?, CONVERT(datetime2(3), m.tran_end_time))" in fixed.text
    assert fixed.params == (-180, A)
    assert tsql.commit_time(A, "+05:30").params == (330, A)


def test_types_without_a_native_spark_form_are_converted_on_the_server() -> None:
    text = tsql.change_rows("ci", A, B, COLUMNS, include_command_id=True, time_zone="UTC").text
    assert "CONVERT(nvarchar(max), CAST(ct.[at] AS time(7))) AS [at]" in text  # seven digits
    assert "CONVERT(nvarchar(max), ct.[guid]) AS [guid]" in text
    assert "CONVERT(datetime2(6), SWITCHOFFSET(ct.[seen], '+00:00')) AS [seen]" in text
    assert "CONVERT(varbinary(max), ct.[blob]) AS [blob]" in text
    assert "ct.[x y] AS [x y]" in text  # a native text type is read as it is


def test_pyformat_rendering_keeps_percent_signs_and_quoted_names_intact() -> None:
    statement = tsql.min_lsn("50%_off?")
    text, params = statement.render("qmark")
    assert (text, params) == (
        "SELECT CONVERT(varchar(22), sys.fn_cdc_get_min_lsn(?), 1) AS min_lsn;",
        ("50%_off?",),
    )
    odd = tsql.split_points("50%_off?", A, B, 2)
    text, params = odd.render("pyformat")
    assert "FROM cdc.[50%_off?_CT]" in text  # pymssql sends a `%%` through as it is
    assert text.count("%s") == 2
    assert params == (A, B)
    qtext, _ = odd.render("qmark")
    assert "FROM cdc.[50%_off?_CT]" in qtext
    assert qtext.count("CONVERT(binary(10), ?, 1)") == 2


def test_a_statement_without_parameters_renders_without_them() -> None:
    assert tsql.max_lsn().render("pyformat") == (tsql.max_lsn().text, None)
    assert tsql.max_lsn().render("qmark")[1] is None


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_inlined_integers_must_be_positive_python_ints(bad: object) -> None:
    with pytest.raises(ValueError, match="must be a positive int"):
        tsql.split_points("ci", A, B, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be a positive int"):
        tsql.nth_commit_after(A, bad)  # type: ignore[arg-type]


def test_lock_timeout_takes_only_a_non_negative_int() -> None:
    assert tsql.set_lock_timeout(0).text == "SET LOCK_TIMEOUT 0;"
    with pytest.raises(ValueError, match="lock timeout must be an int >= 0"):
        tsql.set_lock_timeout("1; DROP TABLE x")  # type: ignore[arg-type]


INJECTIONS = [
    "a]; DROP TABLE dbo.orders; --",
    "x] AS ct; SELECT * FROM sys.sql_logins; --",
    "']'; EXEC xp_cmdshell 'dir'",
]


@pytest.mark.parametrize("name", INJECTIONS)
def test_an_injection_attempt_stays_inside_one_quoted_identifier(name: str) -> None:
    statement = tsql.split_points(name, A, B, 2)
    parsed = sqlglot.parse(statement.text, read="tsql")
    assert len(parsed) == 1
    tables = {t.name for t in parsed[0].find_all(exp.Table)}
    assert tables == {name + "_CT"}
    column = tsql.change_rows(
        "ci", A, B, [ReadColumn(name, "INT")], include_command_id=False, time_zone="UTC"
    )
    assert len(sqlglot.parse(column.text, read="tsql")) == 1
    assert quote_name(name) in column.text


def test_identifiers_are_bracket_quoted_with_closing_brackets_doubled() -> None:
    assert quote_name("a]b") == "[a]]b]"
    assert change_table("a]b") == "cdc.[a]]b_CT]"
    assert two_part_name("my schema", "x]y") == "[my schema].[x]]y]"
    assert tsql.table_columns("dbo", "a]b").params == ("[dbo].[a]]b]",)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must be a non-empty name"),
        ("x" * 129, "129 characters long; SQL Server allows at most 128"),
        ("a\x00b", "holds a control character"),
        ("a\nb", "holds a control character"),
        ("a\x7fb", "holds a control character"),
    ],
)
def test_a_name_that_cannot_be_an_identifier_is_refused(name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        quote_name(name)
    with pytest.raises(ConfigError, match=message):
        tsql.split_points(name, A, B, 2)


def test_a_128_character_name_is_accepted() -> None:
    assert quote_name("x" * 128) == "[" + "x" * 128 + "]"


def test_collation_names_must_be_plain() -> None:
    assert check_collation("SQL_Latin1_General_CP1_CI_AS") == "SQL_Latin1_General_CP1_CI_AS"
    with pytest.raises(ConfigError, match="not a plain collation name"):
        check_collation("Latin1_General_CI_AS; DROP TABLE x")


def test_a_statement_refuses_a_marker_count_that_differs_from_its_values() -> None:
    with pytest.raises(ValueError, match="1 markers for 0 values"):
        tsql.Statement("SELECT \x1f;")
