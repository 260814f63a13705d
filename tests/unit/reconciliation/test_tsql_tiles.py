"""The T-SQL tile queries' text and how their answers are read (no server: a recording session).

This pins what they ask and that a signed SUM reads as the unsigned digest mod 2**64; the same
queries over the wire are test_tiles_over_tds.py.
"""

from __future__ import annotations

from typing import Any

from mssql_cdc.core.row_digest import MODULUS, TileDigest
from mssql_cdc.sqlserver.metadata import ReadColumn
from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader
from mssql_cdc.sqlserver.tsql.statements import Statement
from mssql_cdc.sqlserver.tsql.tiles import TsqlTileHasher

COLUMNS = (ReadColumn("id", "BIGINT", "bigint"), ReadColumn("paid", "BOOLEAN", "bit"))


class Recording:
    """A session that answers the columns query and records every other statement."""

    def __init__(self, answer: list[dict[str, Any]]) -> None:
        self.answer = answer
        self.asked: list[Statement] = []

    def rows(self, statement: Statement) -> list[dict[str, Any]]:
        if "sys.columns" in statement.template:
            return [
                {"name": "id", "column_id": 1, "base_type": "bigint", "is_computed": False},
                {"name": "paid", "column_id": 2, "base_type": "bit", "is_computed": False},
            ]
        self.asked.append(statement)
        return self.answer


def _hasher(session: Recording) -> TsqlTileHasher:
    reader = TsqlSnapshotReader(session, isolation="readCommitted", lock_timeout_ms=None)  # type: ignore[arg-type]
    return TsqlTileHasher(session, reader)  # type: ignore[arg-type]


def test_a_range_is_counted_and_its_hashbytes_summed_by_the_server() -> None:
    session = Recording([{"n": 3, "d": -5}])
    found = _hasher(session).range_digests(
        "dbo", "orders", columns=COLUMNS, keys=["id"], ranges=[(10, 20)]
    )
    assert found == [TileDigest(3, MODULUS - 5)]
    [asked] = session.asked
    assert "COUNT_BIG(*)" in asked.template
    assert "HASHBYTES('SHA2_256'" in asked.template
    assert "AS decimal(38, 0)" in asked.template
    assert "NCHAR(31)" in asked.template
    assert "CASE WHEN r.[paid] = 1 THEN N'1' ELSE N'0' END" in asked.template
    assert set(asked.params) == {"10", "20"}  # bounds travel as text, as the snapshot sends them


def test_each_key_of_a_small_range_comes_with_its_digest() -> None:
    session = Recording([{"id": 1, "__d": -1}, {"id": 2, "__d": 7}])
    found = _hasher(session).key_digests(
        "dbo", "orders", columns=COLUMNS, keys=["id"], lo=None, hi=None
    )
    assert found == {(1,): MODULUS - 1, (2,): 7}
