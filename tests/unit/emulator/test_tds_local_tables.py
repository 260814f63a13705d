"""Table variables, CTEs and ranking windows over the emulator's TDS front end, through pymssql.

The oracle is Microsoft's T-SQL reference and plain Python over the rows committed here:
- table variables: https://learn.microsoft.com/en-us/sql/t-sql/data-types/table-transact-sql
- INSERT ... EXECUTE: https://learn.microsoft.com/en-us/sql/t-sql/statements/insert-transact-sql
- sys.sp_cdc_get_captured_columns (one row per captured column, with its ordinal):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-get-captured-columns-transact-sql
- WITH common_table_expression: https://learn.microsoft.com/en-us/sql/t-sql/queries/with-common-table-expression-transact-sql
- ROW_NUMBER and RANK with PARTITION BY: https://learn.microsoft.com/en-us/sql/t-sql/functions/row-number-transact-sql,
  https://learn.microsoft.com/en-us/sql/t-sql/functions/rank-transact-sql
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.support.tds_clients import fetch

COLUMNS = {"order_id": "int", "region": "nvarchar(10)", "amount": "int"}
ROWS = [(1, "north", 30), (2, "north", 50), (3, "south", 50), (4, "north", 50), (5, "south", 10)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", COLUMNS, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    emu.commit(
        [("insert", "dbo.orders", {"order_id": k, "region": r, "amount": a}) for k, r, a in ROWS]
    )
    with emu.serve() as srv:
        yield srv
    emu.close()


def test_insert_exec_fills_a_table_variable_with_the_captured_columns(server: TdsServer) -> None:
    rows = fetch(
        server,
        """
        DECLARE @cols TABLE (
            source_schema sysname, source_table sysname, capture_instance sysname,
            column_name sysname, column_id int, column_ordinal int, data_type sysname,
            character_maximum_length int, numeric_precision tinyint,
            numeric_precision_radix smallint, numeric_scale int, datetime_precision smallint)
        INSERT INTO @cols EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_orders'
        SELECT column_name, column_ordinal FROM @cols ORDER BY column_ordinal
        """,
    )
    assert rows == [(name, k) for k, name in enumerate(COLUMNS, start=1)]


def test_a_cte_numbers_and_ranks_rows_by_partition(server: TdsServer) -> None:
    rows = fetch(
        server,
        """
        WITH ranked AS (
            SELECT order_id, region, amount,
                   ROW_NUMBER() OVER (PARTITION BY region ORDER BY amount DESC, order_id) AS rn,
                   RANK() OVER (PARTITION BY region ORDER BY amount DESC) AS rk
            FROM dbo.orders
        )
        SELECT order_id, rn, rk FROM ranked ORDER BY order_id
        """,
    )
    expected = []
    for key, region, amount in ROWS:
        peers = [(a, k) for k, r, a in ROWS if r == region]
        ordered = sorted(peers, key=lambda p: (-p[0], p[1]))
        rn = ordered.index((amount, key)) + 1
        rk = 1 + sum(1 for a, _ in peers if a > amount)
        expected.append((key, rn, rk))
    assert rows == expected


def test_a_table_variable_fed_by_a_loop_and_read_in_a_cte(server: TdsServer) -> None:
    rows = fetch(
        server,
        """
        DECLARE @t TABLE (n int NOT NULL, square int)
        DECLARE @i int = 1
        WHILE @i <= 5
        BEGIN
            INSERT INTO @t (n, square) VALUES (@i, @i * @i)
            SET @i = @i + 1
        END;
        WITH big AS (SELECT n, square FROM @t WHERE square > 4)
        SELECT SUM(square) FROM big
        """,
    )
    assert rows == [(sum(n * n for n in range(1, 6) if n * n > 4),)]
