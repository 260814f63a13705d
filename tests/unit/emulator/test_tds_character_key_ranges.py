"""Over TDS a range on a character key's first column is read as an index range under the
column's collation (decision 1449): the rows it steps over are the rows it returns, and a
bound under another collation narrows nothing but still answers right.

The oracle is plain Python: the keys the test inserted, compared case-insensitively as
Latin1_General_CI_AS compares these ASCII keys (letters, then digits; no accents or symbols),
and SQL Server's rule that an explicit COLLATE decides the comparison
(https://learn.microsoft.com/en-us/sql/t-sql/statements/collations).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.emulator import Emulator, TdsServer, io_statistics, reset_io_statistics
from tests.unit.support.tds_clients import fetch

KEYS = [*(f"{c}{i:04d}" for i in range(500) for c in ("a", "B")), "b0001zzzzz"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, TdsServer]]:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table(
        "dbo.t",
        {"k": "varchar(10) COLLATE Latin1_General_CI_AS", "v": "int"},
        primary_key="k",
    )
    emu.commit([("insert", "dbo.t", {"k": k, "v": 1}) for k in KEYS])
    with emu.serve() as server:
        yield emu.path, server
    emu.close()


def keys(server: TdsServer, sql: str) -> list[Any]:
    return [row[0] for row in fetch(server, sql)]


def test_a_text_bound_on_a_character_key_reads_only_its_range(
    served: tuple[Path, TdsServer],
) -> None:
    path, server = served
    reset_io_statistics(path)
    got = keys(server, "SELECT k FROM dbo.t WHERE k >= 'B0400' AND k < 'b0410'")
    expected = [k for k in KEYS if "b0400" <= k.lower() < "b0410"]
    assert sorted(got) == sorted(expected)
    assert len(expected) == 10
    cost = io_statistics(path)["dbo.t"]
    assert (cost.seeks, cost.scans) == (1, 0)
    assert cost.rows_read <= len(expected) + 1  # at most the row past the upper bound


def test_a_bound_under_another_collation_reads_every_row_and_answers_by_it(
    served: tuple[Path, TdsServer],
) -> None:
    path, server = served
    reset_io_statistics(path)
    got = keys(server, "SELECT k FROM dbo.t WHERE k >= 'a' COLLATE Latin1_General_BIN2")
    assert sorted(got) == sorted(k for k in KEYS if k >= "a")  # binary: 'B...' < 'a'
    assert io_statistics(path)["dbo.t"].rows_read == len(KEYS)


def test_a_bound_longer_than_the_column_is_compared_whole(
    served: tuple[Path, TdsServer],
) -> None:
    """Comparing with a longer literal compares the whole literal: cut to the column's ten
    characters it would equal 'b0001zzzzz' and leave that row out."""
    _, server = served
    got = keys(server, "SELECT k FROM dbo.t WHERE k < 'B0001zzzzzz'")
    assert sorted(got) == sorted(k for k in KEYS if k.lower() < "b0001zzzzzz")
    assert "b0001zzzzz" in got
