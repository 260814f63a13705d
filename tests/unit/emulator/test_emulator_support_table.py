"""docs/emulator.md's table "What a client can send" is kept true: each row's statement runs
through pymssql (a client nobody here wrote) against `serve`, and the answer must be the one
the row states. What SQL Server itself does is each row's Microsoft Learn page; this test keeps
the page's claim about the emulator honest, row by row, in the table's order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer

DOC = Path(__file__).resolve().parents[3] / "docs" / "emulator.md"
HEADING = "## What a client can send"
ROW = re.compile(r"^\| `(?P<sql>[^`]+)` \| (?P<answer>[^|]+) \| (?P<page>[^|]+) \|$")
ANSWER = re.compile(
    r"^(?:(?P<ok>supported)|supported: error (?P<same>\d+)|(?P<differs>differs): .+"
    r"|refused: (?P<refused>\d+)(?:, .+)?)$"
)


@dataclass(frozen=True)
class Row:
    sql: str
    error: int | None  # the error number the row says comes back; None: no error


def table_rows() -> list[Row]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split(HEADING + "\n", 1)[1].split("\n## ", 1)[0]
    rows: list[Row] = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        match = ROW.match(line)
        assert match, f"a row of {HEADING!r} does not parse: {line}"
        answer = ANSWER.match(match["answer"].strip())
        assert answer, f"an answer must be supported/differs/refused: {match['answer']!r}"
        number = answer["same"] or answer["refused"]
        rows.append(Row(match["sql"], int(number) if number else None))
    return rows


ROWS = table_rows()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path_factory.mktemp("support") / "shop.db")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})])
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "paid"})])
    with emu.serve() as srv:
        yield srv
    emu.close()


def run(server: TdsServer, sql: str) -> None:
    """Runs one batch on its own connection and reads every result set it sends."""
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        while True:
            if cursor.description is not None:
                cursor.fetchall()
            if not cursor.nextset():
                break
    finally:
        conn.close()


def test_the_table_lists_enough_statements_to_mean_something() -> None:
    assert len(ROWS) >= 50
    assert any(r.error is None for r in ROWS)
    assert any(r.error is not None for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r.sql[:60] for r in ROWS])
def test_each_row_of_the_support_table_answers_as_it_says(server: TdsServer, row: Row) -> None:
    if row.error is None:
        run(server, row.sql)
        return
    with pytest.raises(pymssql.Error) as raised:
        run(server, row.sql)
    assert raised.value.args[0] == row.error, raised.value.args
