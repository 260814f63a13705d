"""Debezium's SQL Server connector (3.6.1.Final, its embedded engine from Maven Central, with the
connector's default settings) streaming from the emulator's TDS server.

Oracles: the rows and changes this test makes itself, and the change table they are captured in.
Debezium's documented event shape (op r/c/u/d, before/after, source.change_lsn/commit_lsn) is
https://debezium.io/documentation/reference/stable/connectors/sqlserver.html; SQL Server's
change-table operations (1 delete, 2 insert, 3/4 update before/after) are
https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.debezium import harness

TABLE = "dbo.orders"
INSTANCE = "dbo_orders"
AMOUNT_SCALE = 2  # decimal(18,2)


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    harness.build()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Emulator, TdsServer]]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table(
        TABLE,
        {"order_id": "int", "status": "nvarchar(20)", "amount": "decimal(18,2)"},
        primary_key="order_id",
    )
    emu.enable_cdc(TABLE)
    with emu.serve(tls=True) as server:
        yield emu, server
    emu.close()


def debezium_lsn(lsn: str) -> str:
    """SQL Server's binary(10) LSN as Debezium writes it: 0000002a:00000010:0003."""
    digits = lsn.removeprefix("0x").lower()
    return f"{digits[:8]}:{digits[8:16]}:{digits[16:20]}"


def row_of(image: dict[str, Any] | None) -> tuple[Any, ...] | None:
    """(order_id, status, amount) of a before/after image; Debezium's precise decimals are the
    unscaled value's big-endian two's complement bytes, in base64 without a schema."""
    if image is None:
        return None
    unscaled = int.from_bytes(base64.b64decode(image["amount"]), "big", signed=True)
    return image["order_id"], image["status"], Decimal(unscaled).scaleb(-AMOUNT_SCALE)


def streamed(events: list[dict[str, Any]]) -> list[tuple[str, str, str, Any, Any]]:
    """(commit_lsn, change_lsn, op, before, after) of each event: Debezium's commit_lsn is the
    change row's __$start_lsn and its change_lsn the row's __$seqval."""
    return [
        (
            e["source"]["commit_lsn"],
            e["source"]["change_lsn"],
            e["op"],
            row_of(e["before"]),
            row_of(e["after"]),
        )
        for e in events
    ]


def change_table_events(
    emu: Emulator, after_lsn: str | None
) -> list[tuple[str, str, str, Any, Any]]:
    """The change table as the events Debezium should make of it: per (start_lsn, seqval) an
    update's 3 and 4 rows are one 'u', a 1 a 'd', a 2 a 'c', in change-table order."""
    out: list[tuple[str, str, str, Any, Any]] = []
    pending_before: tuple[Any, ...] | None = None
    for r in emu.change_rows(INSTANCE):
        lsn = str(r["__$start_lsn"])
        if after_lsn is not None and lsn <= after_lsn:
            continue
        at = (debezium_lsn(lsn), debezium_lsn(str(r["__$seqval"])))
        image = (r["order_id"], r["status"], r["amount"])
        op = r["__$operation"]
        if op == 3:
            pending_before = image
        elif op == 4:
            out.append((*at, "u", pending_before, image))
        elif op == 1:
            out.append((*at, "d", image, None))
        else:
            out.append((*at, "c", None, image))
    return out


def test_debezium_snapshots_then_streams_each_change_once_and_resumes_from_its_offsets(
    served: tuple[Emulator, TdsServer], tmp_path: Path
) -> None:
    emu, server = served
    state = tmp_path / "debezium"
    initial = [
        (1, "new", Decimal("10.50")),
        (2, "new", Decimal("20.00")),
        (3, "new", Decimal("3.25")),
    ]
    emu.commit(
        [("insert", TABLE, {"order_id": k, "status": s, "amount": a}) for k, s, a in initial]
    )
    snapshot_lsn = emu.max_lsn()
    assert snapshot_lsn is not None

    def change_while_streaming() -> None:
        emu.commit([("insert", TABLE, {"order_id": 4, "status": "new", "amount": Decimal("4.00")})])
        emu.commit([("update", TABLE, {"order_id": 1, "status": "paid"})])
        emu.commit([("update", TABLE, {"order_id": 20}, {"order_id": 2})])  # a key update
        emu.commit([("delete", TABLE, {"order_id": 3})])

    # 1. The snapshot: one read event per row, equal to the table at the snapshot's LSN; then,
    # changed while the engine streams, each change once, in LSN order, as the change table has it.
    first = harness.run(
        server, TABLE, state, events=len(initial) + 5, during=(len(initial), change_while_streaming)
    )
    snapshot, live = first.events[: len(initial)], first.events[len(initial) :]
    assert [e["op"] for e in snapshot] == ["r"] * len(initial), first.stderr[-3000:]
    assert sorted(row_of(e["after"]) for e in snapshot) == initial  # type: ignore[type-var]
    assert {e["source"]["commit_lsn"] for e in snapshot} == {debezium_lsn(snapshot_lsn)}
    got = streamed(live)
    assert [(op, before, after) for _, _, op, before, after in got] == [
        ("c", None, (4, "new", Decimal("4.00"))),
        ("u", (1, "new", Decimal("10.50")), (1, "paid", Decimal("10.50"))),
        ("d", (2, "new", Decimal("20.00")), None),
        ("c", None, (20, "new", Decimal("20.00"))),
        ("d", (3, "new", Decimal("3.25")), None),
    ], first.stderr[-3000:]
    assert got == change_table_events(emu, after_lsn=snapshot_lsn)
    assert [lsns for *lsns, _, _, _ in got] == sorted(lsns for *lsns, _, _, _ in got)

    # 2. Changes while the connector is stopped; a restart from its stored offsets streams only
    # them, none lost or repeated.
    last_lsn = emu.max_lsn()
    emu.commit([("insert", TABLE, {"order_id": 5, "status": "new", "amount": Decimal("5.00")})])
    emu.commit([("update", TABLE, {"order_id": 4, "amount": Decimal("4.40")})])
    emu.commit([("delete", TABLE, {"order_id": 1})])
    second = harness.run(server, TABLE, state, events=3)
    assert [(op, b, a) for _, _, op, b, a in streamed(second.events)] == [
        ("c", None, (5, "new", Decimal("5.00"))),
        ("u", (4, "new", Decimal("4.00")), (4, "new", Decimal("4.40"))),
        ("d", (1, "paid", Decimal("10.50")), None),
    ], second.stderr[-3000:]
    assert streamed(second.events) == change_table_events(emu, after_lsn=last_lsn)
