"""Key parts ordered as SQL Server orders their types (decision 1331).

The oracle for uniqueidentifier is Microsoft's documented SqlGuid order, which sorts
3AAAAAAA-...-2EEEEEEEEEEE, 2AAAAAAA-...-1EEEEEEEEEEE and 1AAAAAAA-...-3EEEEEEEEEEE by their
last group: https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/sql/comparing-guid-and-uniqueidentifier-values
and for datetimeoffset that it compares in UTC:
https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetimeoffset-transact-sql
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from mssql_cdc.core import key_collation, sort_part, typed_part


def test_guids_sort_by_their_last_group_first_as_sqlguid_documents() -> None:
    guids = [
        "3AAAAAAA-BBBB-CCCC-DDDD-2EEEEEEEEEEE",
        "2AAAAAAA-BBBB-CCCC-DDDD-1EEEEEEEEEEE",
        "1aaaaaaa-bbbb-cccc-dddd-3eeeeeeeeeee",
    ]
    ordered = sorted(guids, key=lambda g: sort_part(g, "uniqueidentifier"))
    assert [g[0] for g in ordered] == ["2", "3", "1"]


def test_guid_groups_one_to_three_weigh_their_last_byte_first() -> None:
    # Bytes 0-3 are stored little-endian: 00000001 is byte 0 = 0x01, above 00000100's 0x00.
    low, high = "00000100-0000-0000-0000-000000000000", "00000001-0000-0000-0000-000000000000"
    assert sort_part(low, "uniqueidentifier") < sort_part(high, "uniqueidentifier")  # type: ignore[operator]


def test_datetimeoffset_text_orders_as_its_utc_instant() -> None:
    later_local = typed_part("2026-01-01 10:00:00.0000000 +05:00", "datetimeoffset")
    earlier_local = typed_part("2026-01-01 06:00:00.0000000 +00:00", "datetimeoffset")
    assert later_local < earlier_local  # type: ignore[operator]
    assert later_local == datetime(2026, 1, 1, 5, tzinfo=UTC)
    aware = datetime(2026, 1, 1, 10, tzinfo=timezone(timedelta(hours=5)))
    assert typed_part(aware, "datetimeoffset(7)") == later_local


def test_dates_before_1970_and_at_9999_12_31_order_as_dates() -> None:
    texts = ["9999-12-31", "1969-12-31", "0001-01-01", "1970-01-01"]
    assert sorted(texts, key=lambda t: sort_part(t, "date")) == [
        "0001-01-01", "1969-12-31", "1970-01-01", "9999-12-31",
    ]  # fmt: skip
    assert typed_part("9999-12-31", "date") == date(9999, 12, 31)


# Character keys: https://learn.microsoft.com/en-us/sql/relational-databases/collations/collation-and-unicode-support
# (_CI case-insensitive, _CS case-sensitive with lower case first, _AS accent-sensitive, _BIN2
# code points) and trailing spaces ignored by = and < under every collation:
# https://learn.microsoft.com/en-us/troubleshoot/sql/database-design/sql-server-trailing-spaces
CI = "nvarchar(20) COLLATE SQL_Latin1_General_CP1_CI_AS"
CS = "nvarchar(20) COLLATE Latin1_General_CS_AS"
BIN2 = "varchar(20) COLLATE Latin1_General_BIN2"


def test_a_case_insensitive_key_is_one_key_whatever_its_case_or_trailing_spaces() -> None:
    assert sort_part("n", CI) == sort_part("N  ", CI)
    assert sort_part("a", CI) < sort_part("B", CI) < sort_part("c", CI)


def test_a_case_sensitive_key_orders_letters_first_then_lower_case_before_upper() -> None:
    written = ["B", "b", "A", "aB", "ab", "a", "Ab", "AB"]
    ordered = ["a", "A", "ab", "aB", "Ab", "AB", "b", "B"]
    assert sorted(written, key=lambda k: sort_part(k, CS)) == ordered
    assert sort_part("a ", CS) == sort_part("a", CS) != sort_part("A", CS)


def test_a_binary_key_orders_by_code_point_and_ignores_only_trailing_spaces() -> None:
    assert sorted(["n", "N", "a", "Z"], key=lambda k: sort_part(k, BIN2)) == ["N", "Z", "a", "n"]
    assert sort_part("N ", BIN2) == sort_part("N", BIN2) != sort_part(" N", BIN2)


def test_a_character_only_the_server_orders_under_a_linguistic_collation_is_refused() -> None:
    with pytest.raises(ValueError, match="Latin1_General_CS_AS"):
        sort_part("a-b", CS)
    assert sort_part("a-b", BIN2) == "a-b"


def test_a_collation_the_library_cannot_repeat_is_refused_by_name() -> None:
    assert key_collation("nvarchar(20)") is None
    assert key_collation("int") is None
    with pytest.raises(ValueError, match="Latin1_General_CI_AI"):
        key_collation("nvarchar(20) COLLATE Latin1_General_CI_AI")
