"""Independent oracles for the emulator tests: plain Python and the stdlib sqlite3 module,
never the code under test."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mssql_cdc.emulator import Emulator

START = "2026-09-28T13:50:00"


def at(seconds: float) -> str:
    """An ISO time `seconds` after 2026-09-28 14:00:00 UTC."""
    whole = int(seconds)
    micros = round((seconds - whole) * 1_000_000)
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return f"2026-09-28T{14 + h:02d}:{m:02d}:{s:02d}.{micros:06d}"


def orders(path: Path, **create: Any) -> Emulator:
    """A new file with dbo.orders(order_id int PK, status nvarchar(20), amount decimal(18,2))
    and capture instance dbo_orders."""
    emu = Emulator.create(path, **create)
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20)", "amount": "decimal(18,2)"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    return emu


def dump(path: Path) -> list[str]:
    """Every table's schema and rows, read with the stdlib sqlite3 module."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def canonical(lsn_bytes: bytes) -> str:
    return "0x" + lsn_bytes.hex().upper()


def raw_change_rows(path: Path, capture_instance: str) -> list[dict[str, Any]]:
    """The change table as SQLite stores it, ordered by the spec's read order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        cur = con.execute(
            f'SELECT * FROM "cdc.{capture_instance}_CT" ORDER BY "__$start_lsn", '
            '"__$command_id", "__$seqval", "__$operation"'
        )
        return [dict(r) for r in cur]
    finally:
        con.close()


class Model:
    """The expected committed rows of keyed tables: table -> key -> row."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self.keys = dict(keys)
        self.tables: dict[str, dict[object, dict[str, object]]] = {t: {} for t in keys}

    def apply(self, changes: Iterable[tuple[Any, ...]]) -> None:
        """Applies one transaction, all or nothing; raises KeyError where the emulator must fail."""
        staged = {t: {k: dict(r) for k, r in rows.items()} for t, rows in self.tables.items()}
        for change in changes:
            kind, table, row = change[0], change[1], change[2]
            key_col = self.keys[table]
            rows = staged[table]
            if kind == "insert":
                if row[key_col] in rows:
                    raise KeyError("duplicate")
                rows[row[key_col]] = dict(row)
            elif kind == "delete":
                if row[key_col] not in rows:
                    raise KeyError("missing")
                del rows[row[key_col]]
            elif len(change) == 4:
                old = change[3][key_col]
                if old not in rows or row[key_col] in rows:
                    raise KeyError("key update")
                new = {**rows.pop(old), **row}
                rows[row[key_col]] = new
            else:
                if row[key_col] not in rows:
                    raise KeyError("missing")
                rows[row[key_col]].update(row)
        self.tables = staged

    def rows(self, table: str, columns: Iterable[str]) -> list[dict[str, object]]:
        cols = list(columns)
        return [
            {c: r.get(c) for c in cols}
            for _, r in sorted(self.tables[table].items(), key=lambda kv: kv[0])  # type: ignore[arg-type,return-value]
        ]


def replay(
    change_rows: Iterable[Mapping[str, Any]], key: str, columns: list[str]
) -> list[dict[str, object]]:
    """Rebuilds a table from its change rows: 1 deletes, 2 inserts, 4 replaces, 3 is ignored."""
    state: dict[object, dict[str, object]] = {}
    for r in change_rows:
        op = r["__$operation"] if "__$operation" in r else r["_operation"]
        image = {c: r[c] for c in columns}
        if op == 1:
            del state[r[key]]
        elif op in (2, 4):
            state[r[key]] = image
    return [state[k] for k in sorted(state)]  # type: ignore[type-var]
