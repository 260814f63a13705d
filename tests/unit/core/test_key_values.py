"""Key parts ordered as SQL Server orders their types (decision 1331).

The oracle for uniqueidentifier is Microsoft's documented SqlGuid order, which sorts
3AAAAAAA-...-2EEEEEEEEEEE, 2AAAAAAA-...-1EEEEEEEEEEE and 1AAAAAAA-...-3EEEEEEEEEEE by their
last group: https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/sql/comparing-guid-and-uniqueidentifier-values
and for datetimeoffset that it compares in UTC:
https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetimeoffset-transact-sql
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from mssql_cdc.core import sort_part, typed_part


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
