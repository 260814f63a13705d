"""The source's own snapshots in tests: a table of orders, and a merge of the stream's rows
written here independently of the library (the oracle of tests/spark/source/test_stream_snapshot.py
and of the crash matrix's `source.inside_snapshot` row)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mssql_cdc.emulator import Emulator
from tests.support import emulator_profile

START = "2026-09-28T13:50:00"


def at_second(seconds: int) -> str:
    m, s = divmod(seconds, 60)
    return f"2026-09-28T14:{m:02d}:{s:02d}"


def orders(path: Path, n: int) -> Emulator:
    """dbo.orders with keys 0..n-1 inserted one commit each (status "new")."""
    emu = emulator_profile.create(path, start=START)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    for k in range(n):
        emu.commit([("insert", "dbo.orders", {"order_id": k, "status": "new"})], at=at_second(k))
    emulator_profile.wait_for_capture(emu, at_second(n - 1))
    return emu


def merged(rows: list[dict[str, Any]]) -> dict[int, str | None]:
    """The test's own merge of the stream's rows: applied in (`_start_lsn`, `_seqval`,
    `_operation`) order, a delete removes the key, a snapshot row or an insert or update
    after-image sets it; then, for each snapshot S, keys it lacks whose last row is from before
    S are gone (deleted while the stream could not read: docs/source.md)."""
    table: dict[int, tuple[str, str | None]] = {}  # key -> (LSN of its last row, status)
    snapshots: dict[str, set[int]] = {}
    order = sorted(rows, key=lambda r: (r["_start_lsn"], r["_seqval"] or "", r["_operation"]))
    for r in order:
        key, op = r["order_id"], r["_operation"]
        if op == 0:
            snapshots.setdefault(r["_snapshot"], set()).add(key)
        if op == 1:
            table.pop(key, None)
        elif op in (0, 2, 4):
            table[key] = (r["_start_lsn"], r["status"])
    for stamp, keys in snapshots.items():
        for key in [k for k, (seen, _) in table.items() if seen < stamp and k not in keys]:
            del table[key]
    return {k: status for k, (_, status) in table.items()}


def source_table(emu: Emulator) -> dict[int, str | None]:
    return {int(str(r["order_id"])): r["status"] for r in emu.rows("dbo.orders")}  # type: ignore[misc]
