"""Collations, uniqueidentifier order and datetimeoffset comparison in the emulator, in process
and over TDS (decision 1325).

Oracles are Microsoft's documentation and plain Python written here, never the emulator:
- String comparison and assignment, https://learn.microsoft.com/en-us/sql/t-sql/language-elements/string-comparison-assignment
  ("the strings 'abc' and 'abc ' are equivalent for most comparison operations"; LIKE aside)
- Collation and Unicode support, https://learn.microsoft.com/en-us/sql/relational-databases/collations/collation-and-unicode-support
  (_CI/_CS, _AS, _BIN2 by code point; under _CS "lowercase letters sort ahead of their
  uppercase versions"; the server default SQL_Latin1_General_CP1_CI_AS)
- Comparing GUID and uniqueidentifier values, https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/sql/comparing-guid-and-uniqueidentifier-values
  (the last six bytes are the most significant; its example sorts 2AAAAAAA-...-1EEEEEEEEEEE,
  3AAAAAAA-...-2EEEEEEEEEEE, 1AAAAAAA-...-3EEEEEEEEEEE), and SqlGuid.CompareTo,
  https://learn.microsoft.com/en-us/dotnet/api/system.data.sqltypes.sqlguid.compareto
  (byte groups 10-15, 8-9, 6-7, 4-5, 0-3 of the binary form)
- datetimeoffset, https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetimeoffset-transact-sql
  (values are compared, sorted and indexed as UTC)
- UPDATE statements replicated as DELETE/INSERT pairs, https://learn.microsoft.com/en-us/troubleshoot/sql/database-engine/replication/update-statements-replicated-as-delete-insert
  (an update of a column in a unique constraint is a DELETE/INSERT pair in the log; a key
  respelled under its collation is captured so, decision 1346), and the change table's
  operations 1 delete and 2 insert, https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pymssql
import pytest

from mssql_cdc.emulator import ConstraintError, Emulator, SchemaError, TdsServer
from tests.unit.support.tds_clients import fetch as query

AT = "2026-09-28T14:00:00"
# The documentation's example GUIDs and one more of the same pattern, in insertion order.
DOC_GUIDS = [
    "3AAAAAAA-BBBB-CCCC-DDDD-2EEEEEEEEEEE",
    "2AAAAAAA-BBBB-CCCC-DDDD-1EEEEEEEEEEE",
    "1AAAAAAA-BBBB-CCCC-DDDD-3EEEEEEEEEEE",
    "0AAAAAAA-BBBB-CCCC-DDDD-4EEEEEEEEEEE",
]
DOC_GUID_ORDER = [DOC_GUIDS[1], DOC_GUIDS[0], DOC_GUIDS[2], DOC_GUIDS[3]]
CI = "SQL_Latin1_General_CP1_CI_AS"


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[Emulator]:
    e = Emulator.create(tmp_path / "c.db", start="2026-09-28T13:50:00")
    yield e
    e.close()


def keyed(emu: Emulator, type_text: str, keys: list[str]) -> None:
    emu.create_table("dbo.t", {"k": type_text, "v": "int"}, primary_key="k")
    emu.commit([("insert", "dbo.t", {"k": k, "v": i}) for i, k in enumerate(keys)], at=AT)


def stored_keys(emu: Emulator) -> list[object]:
    return [r["k"] for r in emu.rows("dbo.t")]


# --- in process -----------------------------------------------------------------------------


def test_keys_differing_only_in_case_are_one_key_under_the_default_collation(
    emu: Emulator,
) -> None:
    emu.create_table("dbo.t", {"k": "nvarchar(10)"}, primary_key="k")
    emu.commit([("insert", "dbo.t", {"k": "n"})], at=AT)
    with pytest.raises(ConstraintError) as caught:
        emu.commit([("insert", "dbo.t", {"k": "N"})])
    assert caught.value.number == 2627


@pytest.mark.parametrize(
    "collation", [CI, "Latin1_General_CS_AS", "Latin1_General_BIN2", "Greek_CI_AS"]
)
@pytest.mark.parametrize("base", ["varchar(10)", "nvarchar(10)", "char(10)", "nchar(10)"])
def test_keys_differing_only_in_trailing_spaces_are_one_key_under_every_collation(
    emu: Emulator, collation: str, base: str
) -> None:
    emu.create_table("dbo.t", {"k": f"{base} COLLATE {collation}"}, primary_key="k")
    emu.commit([("insert", "dbo.t", {"k": "abc"})], at=AT)
    with pytest.raises(ConstraintError):
        emu.commit([("insert", "dbo.t", {"k": "abc  "})])


def test_an_open_transaction_holds_the_row_of_every_spelling_its_collation_equates(
    emu: Emulator,
) -> None:
    keyed(emu, "nvarchar(10)", ["a"])
    first = emu.begin()
    first.execute([("update", "dbo.t", {"k": "a", "v": 10})])
    second = emu.begin()
    with pytest.raises(ConstraintError, match="another open Transaction"):
        second.execute([("update", "dbo.t", {"k": "A ", "v": 20})])
    first.rollback()
    second.rollback()


def change_ops(emu: Emulator) -> list[tuple[object, ...]]:
    """(commit LSN, operation, k, v) of each change row."""
    return [
        (r["__$start_lsn"], r["__$operation"], r["k"], r["v"]) for r in emu.change_rows("dbo_t")
    ]


def test_an_update_respelling_a_case_insensitive_key_stores_it_as_a_delete_and_an_insert(
    emu: Emulator,
) -> None:
    keyed(emu, "nvarchar(10)", ["n", "a "])
    emu.enable_cdc("dbo.t")
    emu.commit([("update", "dbo.t", {"k": "N", "v": 7}, {"k": "n"})], at=AT)
    emu.commit([("update", "dbo.t", {"k": "a"}, {"k": "a "})], at=AT)
    assert sorted(stored_keys(emu)) == ["N", "a"]  # type: ignore[type-var]
    ops = change_ops(emu)
    assert [r[1:] for r in ops] == [(1, "n", 0), (2, "N", 7), (1, "a ", 1), (2, "a", 1)]
    assert ops[0][0] == ops[1][0]  # one __$start_lsn per UPDATE
    assert ops[2][0] == ops[3][0]


def test_over_tds_an_update_respelling_a_key_changes_one_row_captured_as_a_delete_and_an_insert(
    emu: Emulator,
) -> None:
    keyed(emu, "nvarchar(10)", ["n", "a "])
    emu.enable_cdc("dbo.t")
    with emu.serve() as srv:
        conn = pymssql.connect(**srv.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
        try:
            cursor = conn.cursor()
            cursor.execute("UPDATE dbo.t SET k = N'N' WHERE k = N'n'")
            assert cursor.rowcount == 1
            cursor.execute("UPDATE dbo.t SET k = N'a', v = 5 WHERE k = N'A'")
            assert cursor.rowcount == 1
            conn.commit()
        finally:
            conn.close()
    assert sorted(stored_keys(emu)) == ["N", "a"]  # type: ignore[type-var]
    assert [r[1:] for r in change_ops(emu)] == [(1, "n", 0), (2, "N", 0), (1, "a ", 1), (2, "a", 5)]


def test_a_case_sensitive_key_keeps_case_apart_and_sorts_lower_case_first(emu: Emulator) -> None:
    keyed(emu, "nvarchar(10) COLLATE Latin1_General_CS_AS", ["B", "b", "A", "a", "N", "n"])
    assert stored_keys(emu) == ["a", "A", "b", "B", "n", "N"]


def test_a_bin2_key_sorts_by_code_point(emu: Emulator) -> None:
    keys = ["b", "a", "B", "A", "é", "z", "_"]
    keyed(emu, "nvarchar(10) COLLATE Latin1_General_BIN2", keys)
    assert stored_keys(emu) == sorted(keys, key=lambda s: [ord(c) for c in s])


def test_greek_ci_as_makes_capital_and_small_greek_letters_one_key(emu: Emulator) -> None:
    keyed(emu, "nvarchar(10) COLLATE Greek_CI_AS", ["αβγ"])
    with pytest.raises(ConstraintError):
        emu.commit([("insert", "dbo.t", {"k": "ΑΒΓ"})])


def test_range_reads_and_tiles_follow_the_key_collation(emu: Emulator) -> None:
    keyed(emu, "nvarchar(10)", ["a", "B", "c", "D"])  # case-insensitive: a < B < c < D
    reader = emu.reader()
    rows = reader.read_table("dbo.t", "b", "d").read_all().to_pylist()
    assert [r["k"] for r in rows] == ["B", "c"]
    assert reader.key_extent("dbo.t") == {"min": "a", "max": "D", "rows": 4}
    assert reader.next_key("dbo.t", "C") == "D"
    reader.close()


def test_table_info_and_captured_columns_report_each_column_collation(emu: Emulator) -> None:
    emu.create_table(
        "dbo.t",
        {"k": "int", "a": "nvarchar(5)", "b": "varchar(5) collate latin1_general_cs_as"},
        primary_key="k",
    )
    emu.enable_cdc("dbo.t")
    reader = emu.reader()
    info = {c["name"]: c for c in reader.table_info("dbo.t")["columns"]}
    assert [info[n]["collation"] for n in ("k", "a", "b")] == [None, CI, "Latin1_General_CS_AS"]
    assert info["b"]["sql_type"] == "varchar(5)"  # the canonical type stays without it
    captured = {c["name"]: c["collation"] for c in reader.captured_columns("dbo_t")}
    assert captured == {"k": None, "a": CI, "b": "Latin1_General_CS_AS"}
    reader.close()


def test_an_unknown_collation_is_a_schema_error_naming_column_collation_and_the_known_ones(
    emu: Emulator,
) -> None:
    with pytest.raises(SchemaError, match=r"dbo\.t\.k: .*Klingon_CI_AS.*Latin1_General_BIN2"):
        emu.create_table("dbo.t", {"k": "nvarchar(5) COLLATE Klingon_CI_AS"})


def test_collate_on_a_non_character_type_is_a_schema_error(emu: Emulator) -> None:
    with pytest.raises(SchemaError, match=r"dbo\.t\.k: COLLATE Latin1_General_CS_AS .* int"):
        emu.create_table("dbo.t", {"k": "int COLLATE Latin1_General_CS_AS"})


def test_alter_column_to_a_case_sensitive_collation_changes_how_rows_compare(
    emu: Emulator,
) -> None:
    emu.create_table("dbo.t", {"k": "int", "v": "nvarchar(5)"})
    emu.commit([("insert", "dbo.t", {"k": i, "v": v}) for i, v in enumerate("bBaA")], at=AT)
    emu.alter_column("dbo.t", "v", "nvarchar(5) COLLATE Latin1_General_CS_AS")
    reader = emu.reader()
    rows = reader.read_table("dbo.t", key_columns=["v"]).read_all().to_pylist()
    assert [r["v"] for r in rows] == ["a", "A", "b", "B"]
    assert {r["k"] for r in rows} == {0, 1, 2, 3}  # every row kept through the rebuild
    reader.close()


def test_uniqueidentifier_keys_sort_in_sql_server_byte_group_order(emu: Emulator) -> None:
    step = 0x9E3779B97F4A7C15_F39CC0605CEDC834
    guids = [uuid.UUID(int=(i * step) % (1 << 128)) for i in range(40)]
    emu.create_table("dbo.t", {"k": "uniqueidentifier"}, primary_key="k")
    emu.commit([("insert", "dbo.t", {"k": g}) for g in guids], at=AT)
    order = [10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3]
    want = sorted(guids, key=lambda g: [g.bytes_le[i] for i in order])
    assert [uuid.UUID(str(k)) for k in stored_keys(emu)] == want


def test_uniqueidentifier_keys_sort_as_the_documentation_example(emu: Emulator) -> None:
    emu.create_table("dbo.t", {"k": "uniqueidentifier"}, primary_key="k")
    emu.commit([("insert", "dbo.t", {"k": g}) for g in DOC_GUIDS], at=AT)
    assert [str(k).upper() for k in stored_keys(emu)] == DOC_GUID_ORDER


def test_datetimeoffset_keys_at_the_same_instant_in_two_offsets_are_one_key(emu: Emulator) -> None:
    emu.create_table("dbo.t", {"k": "datetimeoffset"}, primary_key="k")
    noon_plus2 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    emu.commit([("insert", "dbo.t", {"k": noon_plus2})], at=AT)
    with pytest.raises(ConstraintError):
        emu.commit([("insert", "dbo.t", {"k": datetime(2026, 1, 1, 10, 0, tzinfo=UTC)})])


# --- over TDS -------------------------------------------------------------------------------


@pytest.fixture
def served(emu: Emulator) -> Iterator[TdsServer]:
    emu.create_table(
        "dbo.t",
        {
            "k": "int",
            "ci": "nvarchar(10)",
            "cs": "nvarchar(10) COLLATE Latin1_General_CS_AS",
            "bin": "varchar(10) COLLATE Latin1_General_BIN2",
            "g": "uniqueidentifier",
            "d": "datetimeoffset",
        },
        primary_key="k",
    )
    rows = ["B", "b", "A", "a"]
    base = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    emu.commit(
        [
            (
                "insert",
                "dbo.t",
                {
                    "k": i,
                    "ci": v,
                    "cs": v,
                    "bin": v + " ",
                    "g": uuid.UUID(DOC_GUIDS[i]),
                    "d": base + timedelta(hours=i),
                },
            )
            for i, v in enumerate(rows)
        ],
        at=AT,
    )
    with emu.serve() as srv:
        yield srv


def test_over_tds_equality_ignores_case_and_trailing_spaces_under_the_default(
    served: TdsServer,
) -> None:
    assert query(served, "SELECT k FROM dbo.t WHERE ci = N'a   ' ORDER BY k") == [(2,), (3,)]


def test_over_tds_order_by_a_case_sensitive_column_sorts_lower_case_first(
    served: TdsServer,
) -> None:
    got = query(served, "SELECT cs FROM dbo.t ORDER BY cs")
    assert [r[0] for r in got] == ["a", "A", "b", "B"]


def test_over_tds_order_by_a_bin2_column_sorts_by_code_point_and_equality_pads(
    served: TdsServer,
) -> None:
    got = query(served, "SELECT bin FROM dbo.t ORDER BY bin")
    assert [r[0].rstrip() for r in got] == ["A", "B", "a", "b"]
    assert query(served, "SELECT k FROM dbo.t WHERE bin = 'a'") == [(3,)]


def test_over_tds_an_explicit_collate_wins_over_the_column_collation(served: TdsServer) -> None:
    sql = "SELECT k FROM dbo.t WHERE ci = N'a' COLLATE Latin1_General_CS_AS"
    assert query(served, sql) == [(3,)]


def test_over_tds_like_is_case_sensitive_exactly_under_a_case_sensitive_collation(
    served: TdsServer,
) -> None:
    """LIKE matches under the collation of its operands:
    https://learn.microsoft.com/en-us/sql/t-sql/language-elements/like-transact-sql"""
    assert query(served, "SELECT k FROM dbo.t WHERE cs LIKE 'a%'") == [(3,)]
    assert query(served, "SELECT k FROM dbo.t WHERE ci LIKE 'a%' ORDER BY k") == [(2,), (3,)]


def test_over_tds_group_by_follows_the_column_collation(served: TdsServer) -> None:
    assert len(query(served, "SELECT cs, COUNT(*) FROM dbo.t GROUP BY cs")) == 4
    groups = query(served, "SELECT ci, COUNT(*) FROM dbo.t GROUP BY ci")
    assert sorted(r[1] for r in groups) == [2, 2]
    sql = "SELECT MIN(cs), MAX(cs), MIN(bin) FROM dbo.t"
    assert [(a, b, c.rstrip()) for a, b, c in query(served, sql)] == [("a", "B", "A")]


def test_over_tds_sys_columns_reports_each_column_collation(served: TdsServer) -> None:
    got = query(
        served,
        "SELECT name, collation_name FROM sys.columns "
        "WHERE object_id = OBJECT_ID('dbo.t') ORDER BY column_id",
    )
    assert got == [
        ("k", None),
        ("ci", CI),
        ("cs", "Latin1_General_CS_AS"),
        ("bin", "Latin1_General_BIN2"),
        ("g", None),
        ("d", None),
    ]


def test_over_tds_uniqueidentifier_orders_by_byte_groups_not_by_text(served: TdsServer) -> None:
    got = [str(r[0]).upper() for r in query(served, "SELECT g FROM dbo.t ORDER BY g")]
    assert got == DOC_GUID_ORDER
    assert query(served, "SELECT MIN(g) FROM dbo.t")[0][0] == uuid.UUID(DOC_GUIDS[1])


def test_over_tds_datetimeoffset_compares_the_utc_instant(served: TdsServer) -> None:
    sql = "SELECT k FROM dbo.t WHERE d = CAST('2026-01-01 13:00:00 +02:00' AS datetimeoffset)"
    assert query(served, sql) == [(1,)]  # 11:00 UTC, stored as 10:00 UTC + 1 hour


def test_over_tds_a_text_key_streams_in_its_collation_order_and_tiles_by_it(emu: Emulator) -> None:
    keyed(emu, "nvarchar(10) COLLATE Latin1_General_CS_AS", ["B", "b", "A", "a"])
    with emu.serve() as srv:
        assert [r[0] for r in query(srv, "SELECT k FROM dbo.t ORDER BY k")] == ["a", "A", "b", "B"]
        tiles = query(srv, "SELECT k, NTILE(2) OVER (ORDER BY k) FROM dbo.t ORDER BY k")
        assert tiles == [("a", 1), ("A", 1), ("b", 2), ("B", 2)]
