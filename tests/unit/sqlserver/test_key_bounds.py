"""How `key_bounds` cuts a key order: which of the reader's plans it asks for, and what it
returns. The reader is a fake that records its calls, so the oracle is the plan each key
type must get: one-row seeks for an integer-led key, the statistics histogram for another,
NTILE (a whole-table sort on the server) only when the server shows no histogram."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from mssql_cdc.sqlserver import integer_bounds, key_bounds


class Reader:
    """A SnapshotReader's planning half over fixed answers, recording what was asked."""

    def __init__(self, *, extent: tuple[int, int] | None = (1, 100), histogram: Any = None):
        self.extent = extent
        self.histogram = histogram
        self.calls: list[str] = []

    def key_extent(self, schema: str, table: str, key: str) -> tuple[int, int] | None:
        self.calls.append("key_extent")
        return self.extent

    def first_keys(
        self, schema: str, table: str, keys: Sequence[str], firsts: Sequence[int]
    ) -> list[tuple[int, int]]:
        self.calls.append("first_keys")
        return [(f, 0) for f in firsts]

    def histogram_bounds(
        self, schema: str, table: str, keys: Sequence[str], n: int
    ) -> list[str] | None:
        self.calls.append("histogram_bounds")
        return self.histogram

    def key_tiles(self, schema: str, table: str, keys: Sequence[str], n: int) -> list[str]:
        self.calls.append("key_tiles")
        return ["m"]


def bounds(reader: Reader, keys: Sequence[str], n: int, first_type: str | None) -> list[Any]:
    return key_bounds(reader, "dbo", "t", keys, n, first_type=first_type)  # type: ignore[arg-type]


def test_an_integer_key_is_cut_by_seeks_into_equal_widths_without_ntile() -> None:
    reader = Reader(extent=(1, 100))
    assert bounds(reader, ["id"], 4, "int") == integer_bounds(1, 100, 4) == [26, 51, 76]
    assert reader.calls == ["key_extent"]


def test_an_integer_led_composite_key_takes_the_first_whole_key_at_each_cut() -> None:
    reader = Reader(extent=(0, 9))
    assert bounds(reader, ["id", "line"], 2, "bigint") == [(5, 0)]
    assert reader.calls == ["key_extent", "first_keys"]


def test_an_empty_integer_keyed_table_is_one_range() -> None:
    reader = Reader(extent=None)
    assert bounds(reader, ["id"], 8, "int") == []


def test_a_character_key_is_cut_at_histogram_steps_and_never_asks_for_ntile() -> None:
    reader = Reader(histogram=["f", "p"])
    assert bounds(reader, ["code"], 3, "nvarchar") == ["f", "p"]
    assert reader.calls == ["histogram_bounds"]


def test_without_a_histogram_the_key_order_is_cut_by_ntile_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = Reader(histogram=None)
    with caplog.at_level("INFO", logger="mssql_cdc"):
        assert bounds(reader, ["code"], 3, "uniqueidentifier") == ["m"]
    assert reader.calls == ["histogram_bounds", "key_tiles"]
    assert "NTILE" in caplog.text
    assert "[dbo].[t]" in caplog.text


@pytest.mark.parametrize(("keys", "n"), [([], 4), (["id"], 1), (["id"], 0)])
def test_no_key_or_fewer_than_two_ranges_asks_the_server_nothing(keys: list[str], n: int) -> None:
    reader = Reader()
    assert bounds(reader, keys, n, "int") == []
    assert reader.calls == []
