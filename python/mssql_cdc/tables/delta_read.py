"""Delta tables at a path read in this process by `deltalake` (delta-rs), without Spark.

The library's bookkeeping (the facts family, transaction records, the newest commits) is a
few small files; reading them through Spark costs a job or a JVM round trip each, and on Spark
Connect the JVM is not there at all. A path table is read here instead, opened as
`tables.reference` opens it; a table out of reach there, or that deltalake cannot read
(`TableOutOfReach`), is read by the caller through Spark.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.tables.kept_rows import kept_rows
from mssql_cdc.tables.reference import (
    TableOutOfReach,
    TableRef,
    deltalake_errors,
    is_local,
    table_ref,
)
from mssql_cdc.tables.shared_tables import using_table
from mssql_cdc.tables.store_conf import store_settings

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import SparkSession

__all__ = [
    "NewestVersion",
    "history",
    "newest_version",
    "path_of",
    "properties",
    "read_rows",
    "table_properties",
    "transaction_version",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NewestVersion:
    """The newest version of a table, its Delta metadata id and its data file count."""

    version: int
    table_id: str
    files: int


def newest_version(ref: TableRef) -> NewestVersion:
    """The newest version of the table at `ref`'s path, its id and data file count.

    Raises:
        TableOutOfReach: as `open_table`, or deltalake cannot read the log.
    """
    try:
        with using_table(ref) as table:
            return NewestVersion(
                int(table.version()), str(table.metadata().id), len(table.file_uris())
            )
    except deltalake_errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot read the log: {exc}") from exc


def history(ref: TableRef, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The commit infos of the table at `ref`'s path, newest first (`limit`: only that many),
    each with its `version` and the fields its writer stored (`userMetadata`, ...).

    Raises:
        TableOutOfReach: as `open_table`, or deltalake cannot read the log.
    """
    try:
        with using_table(ref) as table:
            return list(table.history(limit))
    except deltalake_errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot read the history: {exc}") from exc


def properties(ref: TableRef) -> dict[str, str]:
    """The table properties (Delta's `configuration`) of the table at `ref`'s path, newest
    version: what `SHOW TBLPROPERTIES` lists of them, without Spark. Spark needs a job to read
    a version whose commit another client wrote (no checksum file), deltalake never does.

    Raises:
        TableOutOfReach: as `open_table`, or deltalake cannot read the log.
    """
    try:
        with using_table(ref) as table:
            return {str(k): str(v) for k, v in table.metadata().configuration.items()}
    except deltalake_errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot read the metadata: {exc}") from exc


def table_properties(spark: SparkSession, ref: TableRef | str) -> dict[str, str]:
    """Return the Delta table properties of an existing table: a local path's read here (no
    job: Spark needs one for a version deltalake committed), else through Spark."""
    ref = table_ref(ref)
    if is_local(ref):
        try:
            return properties(ref)
        except TableOutOfReach as exc:
            log.debug("%s", exc)
    # SHOW TBLPROPERTIES reads the table's metadata only; DESCRIBE DETAIL runs jobs to size it.
    rows = spark.sql(f"SHOW TBLPROPERTIES {ref.sql}").collect()
    return {str(row["key"]): str(row["value"]) for row in rows}


def transaction_version(ref: TableRef, app_id: str) -> int | None:
    """The last `txnVersion` recorded for `app_id` in the table at `ref`'s path; None: none.

    Raises:
        TableOutOfReach: as `open_table`, or deltalake cannot read the log.
    """
    try:
        with using_table(ref) as table:
            recorded = table.transaction_version(app_id)
    except deltalake_errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot read the log: {exc}") from exc
    return None if recorded is None else int(recorded)


def read_rows(
    ref: TableRef,
    *,
    columns: Sequence[str] | None = None,
    where: pc.Expression | None = None,
) -> pa.Table:
    """The rows of the Delta table at `ref`'s path, newest version, read by deltalake.

    `columns` selects and orders the columns (None: all of them); `where` keeps the rows it
    holds true for, as the equal SQL condition would (a NULL comparison keeps nothing).

    Timestamps arrive as Spark's `collect()` gives them to the library: naive. A TIMESTAMP_NTZ
    column (every time the library stores, naive UTC) is `timestamp[us]` as stored; a TIMESTAMP
    column is converted to naive UTC `timestamp[us]`, what `collect()` gives on a UTC driver.

    Raises:
        TableOutOfReach: a catalog name, no Delta table at the path, a column the table lacks,
            or a table deltalake cannot read (e.g. a reader feature it does not support).
    """
    names = list(columns) if columns is not None else None
    try:
        with using_table(ref) as table:
            kept = None if ref.location is None else kept_rows(ref.location, table)
            if kept is None:
                dataset = table.to_pyarrow_dataset()
        if kept is not None:
            _require_columns(ref, names, kept.schema.names)
            data = kept if where is None else kept.filter(where)
            data = data if names is None else data.select(names)
        else:
            _require_columns(ref, names, dataset.schema.names)
            # One thread: a threaded scan through deltalake's file system (pyarrow 26, deltalake
            # 1.6) leaves a thread that aborts the interpreter at exit.
            data = dataset.to_table(columns=names, filter=where, use_threads=False)
    except deltalake_errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot read the table: {exc}") from exc
    return _naive_times(data)


def _require_columns(ref: TableRef, names: list[str] | None, have: list[str]) -> None:
    missing = [c for c in names or () if c not in have]
    if missing:
        raise TableOutOfReach(f"{ref}: the table has no columns {missing}")


def _naive_times(data: pa.Table) -> pa.Table:
    import pyarrow as pa

    for index, field in enumerate(data.schema):
        kind = field.type
        if pa.types.is_timestamp(kind) and (kind.tz is not None or kind.unit != "us"):
            column = data.column(index)
            if kind.tz is not None:
                column = column.cast(pa.timestamp(kind.unit, tz="UTC"))
            data = data.set_column(index, field.name, column.cast(pa.timestamp("us")))
    return data


def path_of(spark: SparkSession, ref: TableRef) -> TableRef:
    """`ref` itself for a path; for a catalog name, the path of its location as
    `DESCRIBE TABLE EXTENDED` tells it (`file:` dropped, so a local location reads here).

    Raises:
        TableOutOfReach: the catalog table is missing or shows no location (a view).
    """
    if ref.location is not None:
        store_settings(spark, ref.location)  # deltalake opens an S3 table with them
        return ref
    from pyspark.errors import PySparkException

    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {ref.sql}").collect()
    except PySparkException as exc:
        raise TableOutOfReach(f"{ref}: no location: {exc}") from exc
    for row in rows:
        if row[0] == "Location" and row[1]:
            text = str(row[1])
            if text.startswith("file:"):
                text = "/" + text[len("file:") :].lstrip("/")
            return table_ref(text)
    raise TableOutOfReach(f"{ref}: DESCRIBE TABLE EXTENDED shows no location")
