"""Capture-instance resolution: exact then case-insensitive names, following, the cut at S."""

from __future__ import annotations

import logging
from datetime import datetime

import pytest

from mssql_cdc.core.lsn import Lsn
from mssql_cdc.core.ranges import Piece
from mssql_cdc.errors import ConfigError
from mssql_cdc.sqlserver.instances import (
    pieces,
    resolve_instance,
    serving_instance,
    table_instances,
)
from mssql_cdc.sqlserver.metadata import CaptureInstance


def L(n: int) -> Lsn:
    return Lsn(f"0x{n:020X}")


def ci(name: str, start: int | None, day: int, table: str = "orders") -> CaptureInstance:
    return CaptureInstance(
        name, "dbo", table, None if start is None else L(start), datetime(2026, 9, day), ("id",), ()
    )


V1, V2, NEW = ci("dbo_orders", 10, 1), ci("orders_v2", 50, 2), ci("orders_v3", None, 3)
OTHER = ci("dbo_items", 5, 1, table="items")


def test_the_configured_name_matches_exactly_then_ignoring_case() -> None:
    assert resolve_instance("orders_v2", [V1, V2, OTHER]).instance is V2
    assert resolve_instance("ORDERS_V2", [V1, V2, OTHER]).instance is V2
    twin = ci("Orders_V2", 60, 3)
    assert resolve_instance("Orders_V2", [V2, twin]).instance is twin


def test_two_case_insensitive_matches_and_none_exact_list_both() -> None:
    with pytest.raises(ConfigError, match="matches 'orders_v2', 'Orders_V2' ignoring case"):
        resolve_instance("ORDERS_V2", [V2, ci("Orders_V2", 60, 3)])


def test_an_unknown_name_lists_the_instances_found() -> None:
    with pytest.raises(ConfigError, match=r"'nope' does not exist .*found: dbo_items, orders_v2"):
        resolve_instance("nope", [V2, OTHER])


def test_a_disabled_default_named_instance_is_followed_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sqlserver"):
        resolved = resolve_instance("DBO_ORDERS", [V2, OTHER])
    assert (resolved.instance, resolved.followed_from) == (V2, "DBO_ORDERS")
    assert "'DBO_ORDERS' is disabled; following its table's remaining instance 'orders_v2'" in (
        caplog.text
    )


def test_a_disabled_custom_named_instance_is_followed_within_a_run_and_refused_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sqlserver"):
        resolved = resolve_instance("orders_custom", [V2, OTHER], remembered=("dbo", "orders"))
    assert (resolved.instance, resolved.followed_from) == (V2, "orders_custom")
    assert "'orders_custom' is disabled; following its table's remaining instance 'orders_v2'" in (
        caplog.text
    )
    with pytest.raises(ConfigError, match="set captureInstance to the table's remaining instance"):
        resolve_instance("orders_custom", [V2, OTHER])  # a new run cannot know its table
    with pytest.raises(ConfigError, match="'orders_custom' does not exist"):
        resolve_instance("orders_custom", [OTHER], remembered=("dbo", "orders"))  # none left


def test_instances_order_by_create_date_and_ignore_unestablished_ones() -> None:
    assert table_instances([NEW, V2, V1]) == [V1, V2]
    same_day = ci("orders_b", 70, 2)
    assert table_instances([same_day, V2]) == [V2, same_day]  # ties by start LSN


def test_the_serving_instance_is_the_newest_started_at_or_below_the_lsn() -> None:
    assert serving_instance([V1, V2], L(49)) is V1
    assert serving_instance([V1, V2], L(50)) is V2
    assert serving_instance([V1, V2], L(3)) is V1  # below every start: the oldest


def test_pieces_cut_at_the_newer_instances_start() -> None:
    assert pieces(L(20), L(80), [V2, V1, NEW]) == [
        Piece("dbo_orders", L(20), L(49)),
        Piece("orders_v2", L(50), L(80)),
    ]
    assert pieces(L(60), L(80), [V1, V2]) == [Piece("orders_v2", L(60), L(80))]
    assert pieces(L(20), L(30), [V1]) == [Piece("dbo_orders", L(20), L(30))]
    with pytest.raises(ValueError, match="found 0"):
        pieces(L(1), L(2), [NEW])
