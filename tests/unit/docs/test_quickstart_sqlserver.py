"""docs/quickstart-sqlserver.md: every T-SQL statement on the page runs against the emulator.

The page's ```sql blocks are split into statements (one per `;` at a line's end) and sent in
order over TDS through pymssql to the emulator's front end, on a database `shop` that holds
`dbo.orders`, as the page assumes, and `dbo.customers`, which the page grants nothing on. A
statement the emulator does not know yet is listed in REFUSED_TODAY with the exact error it
answers today: once the emulator accepts it, the test fails and the entry must go, so the
page's claim that it runs stays true. The login the page creates then connects with the
page's password (error 18456 with another) and reads what the page granted: a SELECT on
anything else is error 229, "The SELECT permission was denied on the object '%.*ls',
database '%.*ls', schema '%.*ls'."
(https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors-0-to-999).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import mssql_python
import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer

PAGE = Path(__file__).resolve().parents[3] / "docs" / "quickstart-sqlserver.md"
SQL_BLOCK = re.compile(r"```sql\n(.*?)```", re.DOTALL)

# statement -> (error number, the start of the message) the emulator answers with today
REFUSED_TODAY: dict[str, tuple[int, str]] = {}


def statements(page: str) -> list[str]:
    """The page's T-SQL statements in order, each without its `;` and comment lines."""
    found: list[str] = []
    for block in SQL_BLOCK.findall(page):
        lines = [line for line in block.splitlines() if not line.lstrip().startswith("--")]
        for part in re.split(r";\s*(?:\n|$)", "\n".join(lines)):
            if part.strip():
                found.append(" ".join(part.split()))
    return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "varchar(12)"}, primary_key="order_id"
    )
    emu.create_table("dbo.customers", {"customer_id": "int"}, primary_key="customer_id")
    with emu.serve() as srv:
        yield srv


def run(server: TdsServer, sql: str) -> tuple[int, str] | None:
    """None when the statement ran; else the server's error number and message."""
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        if cursor.description is not None:
            cursor.fetchall()
        return None
    except pymssql.Error as exc:
        number, raw = exc.args[0], exc.args[1]
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        return int(number), text.split("DB-Lib error message", 1)[0]
    finally:
        conn.close()


def test_the_page_holds_the_statements_a_newcomer_needs() -> None:
    found = statements(PAGE.read_text())
    for needed in ("sys.sp_cdc_enable_db", "sys.sp_cdc_enable_table", "@retention", "GRANT"):
        assert any(needed in statement for statement in found), needed


def test_every_statement_the_emulator_refuses_today_is_still_on_the_page() -> None:
    assert set(REFUSED_TODAY) <= set(statements(PAGE.read_text()))


def test_every_statement_on_the_page_runs_or_is_refused_as_recorded(server: TdsServer) -> None:
    outcomes = {sql: run(server, sql) for sql in statements(PAGE.read_text())}
    unexpected = {
        sql: outcome
        for sql, outcome in outcomes.items()
        if (outcome is None) != (sql not in REFUSED_TODAY)
        or (outcome is not None and outcome != REFUSED_TODAY[sql])
    }
    assert unexpected == {}


def test_the_page_leaves_the_table_captured_under_the_instance_it_names(
    server: TdsServer,
) -> None:
    for sql in statements(PAGE.read_text()):
        run(server, sql)
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute("EXEC sys.sp_cdc_help_change_data_capture")
        instances = [row[2] for row in cursor.fetchall()]
    finally:
        conn.close()
    assert instances == ["dbo_orders"]


def test_the_pages_login_reads_what_it_was_granted_and_nothing_else(server: TdsServer) -> None:
    found = statements(PAGE.read_text())
    for sql in found:
        run(server, sql)
    [create] = [sql for sql in found if sql.startswith("CREATE LOGIN")]
    match = re.fullmatch(r"CREATE LOGIN (\w+) WITH PASSWORD = '([^']*)'", create)
    assert match is not None
    login, password = match.groups()
    kwargs = server.connect_kwargs("pymssql") | {"user": login, "password": password}
    conn = pymssql.connect(**kwargs, login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute("SELECT order_id FROM dbo.orders")
        assert cursor.fetchall() == []
        cursor.execute("EXEC sys.sp_cdc_help_change_data_capture")
        assert [row[2] for row in cursor.fetchall()] == ["dbo_orders"]
        with pytest.raises(pymssql.Error) as denied:
            cursor.execute("SELECT customer_id FROM dbo.customers")
        assert denied.value.args[0] == 229
        assert (
            b"The SELECT permission was denied on the object 'customers', database 'shop', "
            b"schema 'dbo'." in denied.value.args[1]
        )
    finally:
        conn.close()
    odbc = (
        f"Server={server.host},{server.port};Database=shop;UID={login};PWD={password}-wrong;"
        "Encrypt=no;TrustServerCertificate=yes"
    )
    with pytest.raises(mssql_python.Error) as refused:  # pymssql's failed logins leak state
        mssql_python.connect(odbc, autocommit=True, timeout=10)
    assert f"Login failed for user '{login}'." in str(refused.value)


def refused_name(statement: str) -> str:
    """What the page calls a refused statement: the procedure, or its leading keywords."""
    words = statement.split()
    if words[0] == "EXEC":
        return words[1]
    return " ".join(words[:2]) if words[0] in ("CREATE", "ALTER") else words[0]


def test_the_page_says_which_statements_the_emulator_does_not_know_yet() -> None:
    prose = " ".join(SQL_BLOCK.sub("", PAGE.read_text()).split())
    sentences = [s for s in re.split(r"(?<=[.)])\s", prose) if "does not know" in s]
    named = {
        n
        for s in sentences
        for n in re.findall(r"`([^`]+)`", s)
        if not n.startswith("mssql-cdc")  # the emulator's own commands, named beside them
    }
    assert named == {refused_name(statement) for statement in REFUSED_TODAY}
