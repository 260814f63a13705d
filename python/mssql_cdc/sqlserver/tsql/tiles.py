"""TileHasher over T-SQL: the digests of `core.row_digest`, aggregated by SQL Server itself.

Each range is one query over the snapshot's keyset read (`table_rows`): COUNT_BIG and the SUM
of each row's first 8 bytes of HASHBYTES('SHA2_256', <the row's text as nvarchar>), nvarchar
being UTF-16LE as the digest's definition requires. The row's text is built per the column's
declared Spark type. The SUM is taken as decimal(38,0), which no table's row count can overflow; the
signed bigint of the 8 bytes and its unsigned reading agree modulo 2**64. It runs over TDS
against the emulator's front end (pymssql, python-tds, mssql-python), giving the in-process
digests; not yet against a live server. A sampled read adds a WHERE on the key digest
(`sample_sql`): the same digest over the key columns alone, its signed bigint compared so that
its unsigned reading is below the bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from mssql_cdc.core import MODULUS, TileDigest
from mssql_cdc.options import KeyBound, quote_name
from mssql_cdc.sqlserver.metadata import ReadColumn
from mssql_cdc.sqlserver.tsql.drivers import Session
from mssql_cdc.sqlserver.tsql.snapshot import table_rows
from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader
from mssql_cdc.sqlserver.tsql.statements import Statement

__all__ = ["TsqlTileHasher", "row_digest_sql", "sample_sql"]

_SIGNED = 2**63


def _text(column: ReadColumn, ref: str) -> str:
    base = column.spark_type.split("(", 1)[0]
    if base == "BOOLEAN":
        return f"CASE WHEN {ref} = 1 THEN N'1' ELSE N'0' END"
    if base == "DATE":
        return f"CONVERT(nvarchar(10), {ref}, 23)"
    if base in ("TIMESTAMP", "TIMESTAMP_NTZ"):
        return f"CONVERT(nvarchar(26), CAST({ref} AS datetime2(6)), 121)"
    return f"CONVERT(nvarchar(max), {ref})"  # integers, decimals (their scale kept), text


def row_digest_sql(columns: Sequence[ReadColumn], alias: str) -> str:
    """The signed bigint of the row digest's 8 bytes, over the columns of `alias`."""
    fields = []
    for c in columns:
        ref = f"{alias}.{quote_name(c.name, 'column name')}"
        fields.append(f"CASE WHEN {ref} IS NULL THEN NCHAR(1) ELSE NCHAR(2) + {_text(c, ref)} END")
    text = " + NCHAR(31) + ".join(fields)
    return f"CAST(SUBSTRING(HASHBYTES('SHA2_256', CAST({text} AS nvarchar(max))), 1, 8) AS bigint)"


def sample_sql(
    columns: Sequence[ReadColumn], keys: Sequence[str], alias: str, below: int | None
) -> str:
    """A WHERE clause keeping the rows of `alias` whose key digest, read unsigned, is below
    `below` ("" for no sample). The digest's signed bigint d reads as d when d >= 0 and as
    d + 2**64 otherwise, so d is kept when 0 <= d < below, or, for a bound above 2**63, also
    when d < below - 2**64."""
    if below is None:
        return ""
    by_name = {c.name: c for c in columns}
    digest = row_digest_sql([by_name[k] for k in keys], alias)
    if below <= _SIGNED:
        return f" WHERE {digest} >= 0 AND {digest} <= {below - 1}"
    return f" WHERE ({digest} >= 0 OR {digest} < {below - 2 * _SIGNED})"


class TsqlTileHasher:
    """TileHasher over one T-SQL session (the snapshot reader's, for the table's columns)."""

    def __init__(self, session: Session, table: TsqlSnapshotReader) -> None:
        self._session = session
        self._table = table

    def _inner(
        self,
        source_schema: str,
        source_table: str,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
    ) -> Statement:
        key_columns = self._table.key_columns(
            source_schema, source_table, keys, purpose="reconcile", setting="keys"
        )
        return table_rows(source_schema, source_table, columns, key_columns, lo, hi)

    def range_digests(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        ranges: Sequence[tuple[KeyBound, KeyBound]],
        sample_below: int | None = None,
    ) -> list[TileDigest]:
        out = []
        where = sample_sql(columns, keys, "r", sample_below)
        for lo, hi in ranges:
            inner = self._inner(source_schema, source_table, columns, keys, lo, hi)
            statement = Statement(
                "SELECT COUNT_BIG(*) AS n, SUM(CAST("
                f"{row_digest_sql(columns, 'r')} AS decimal(38, 0))) AS d "
                f"FROM ({inner.template.rstrip(';')}) AS r{where};",
                inner.params,
            )
            (row,) = self._session.rows(statement)
            out.append(TileDigest(int(row["n"]), int(row["d"] or 0) % MODULUS))
        return out

    def key_digests(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
        sample_below: int | None = None,
    ) -> dict[tuple[object, ...], int]:
        inner = self._inner(source_schema, source_table, columns, keys, lo, hi)
        names = ", ".join(f"r.{quote_name(k, 'key column')}" for k in keys)
        where = sample_sql(columns, keys, "r", sample_below)
        statement = Statement(
            f"SELECT {names}, {row_digest_sql(columns, 'r')} AS [__d] "
            f"FROM ({inner.template.rstrip(';')}) AS r{where};",
            inner.params,
        )
        return {
            tuple(row[k] for k in keys): int(row["__d"]) % MODULUS
            for row in self._session.rows(statement)
        }

    def close(self) -> None:
        pass  # the session is the backend's, closed with its other views
