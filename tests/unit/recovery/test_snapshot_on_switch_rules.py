"""The pure rules of snapshotOnSwitch: which switch lies ahead of a stream, and which bronze
columns a newer instance retypes. The oracle is written out by hand."""

from __future__ import annotations

import pytest

from mssql_cdc.core.recovery_decision import Instance, Observation
from mssql_cdc.recovery.switch import switch_ahead, switch_change
from mssql_cdc.snapshot.retyped import Retyped, retyped_columns
from mssql_cdc.sqlserver import CaptureInstance

OLD = Instance("dbo_orders", "0x00000000000000000010", None)
NEW = Instance("dbo_orders_v2", "0x00000000000000000040", None)


@pytest.mark.parametrize(
    ("position", "max_lsn", "ahead"),
    [
        ("0x00000000000000000030", "0x00000000000000000050", NEW),
        ("0x00000000000000000040", "0x00000000000000000050", None),  # read past the switch
        ("0x00000000000000000030", "0x00000000000000000039", None),  # capture not there yet
    ],
    ids=["before-the-switch", "past-the-switch", "switch-not-captured-yet"],
)
def test_a_switch_is_ahead_only_between_the_streams_position_and_the_newest_change(
    position: str, max_lsn: str, ahead: Instance | None
) -> None:
    assert switch_ahead(Observation(max_lsn, (OLD, NEW)), position) == ahead


def test_one_instance_has_no_switch_ahead() -> None:
    assert switch_ahead(Observation("0x00000000000000000050", (OLD,)), "0x0") is None


def test_only_columns_both_schemas_hold_in_other_types_are_retyped() -> None:
    bronze = {"order_id": "INT", "qty": "INT", "note": "STRING", "_start_lsn": "STRING"}
    source = {"ORDER_ID": "INT", "Qty": "BIGINT", "added": "DATE", "_start_lsn": "STRING"}
    assert retyped_columns(bronze, source) == [Retyped("qty", "INT", "BIGINT")]


@pytest.mark.parametrize(
    ("old", "new", "widens"),
    [("INT", "BIGINT", True), ("SMALLINT", "INT", True), ("BIGINT", "INT", False)],
)
def test_a_retyped_column_widens_when_every_bronze_value_fits_the_new_type(
    old: str, new: str, widens: bool
) -> None:
    assert Retyped("qty", old, new).widens is widens


def _instance(name: str, key: tuple[str, ...], columns: tuple[str, ...]) -> CaptureInstance:
    return CaptureInstance(name, "dbo", "orders", None, None, key, columns)


@pytest.mark.parametrize(
    ("new_key", "new_columns", "reasons"),
    [
        (("order_id",), ("order_id", "status", "qty"), []),
        (("ORDER_ID",), ("Order_Id", "STATUS", "qty"), []),  # names ignore case
        (
            ("order_id",),
            ("order_id", "status", "qty", "note"),
            ["captures note the older instance did not"],
        ),
        (("order_id",), ("order_id", "status"), ["no longer captures qty"]),
        (
            ("order_id", "status"),
            ("order_id", "status", "qty"),
            ["keys the table by (order_id, status), not (order_id)"],
        ),
        (
            ("status",),
            ("order_id", "status", "note"),
            [
                "captures note the older instance did not",
                "no longer captures qty",
                "keys the table by (status), not (order_id)",
            ],
        ),
    ],
    ids=["nothing", "a change of case", "added", "dropped", "key widened", "all at once"],
)
def test_a_switch_needs_a_snapshot_for_an_added_or_dropped_column_or_another_key(
    new_key: tuple[str, ...], new_columns: tuple[str, ...], reasons: list[str]
) -> None:
    old = _instance("dbo_orders", ("order_id",), ("order_id", "status", "qty"))
    change = switch_change(old, _instance("dbo_orders_v2", new_key, new_columns))
    assert change.reasons() == reasons
