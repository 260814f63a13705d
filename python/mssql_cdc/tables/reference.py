"""What a table argument names, and whether this process reaches the table there.

A table argument holding `/` or `:` is a path (``delta.`<path>` `` in SQL); any other string
is a catalog name. Both are normalized once, by `table_ref`, before they are compared or used:
a path resolved, a name parsed and then always backquoted.

A path table is opened here by `deltalake` (delta-rs), without Spark, when it can be. A local
path, as the checkpoint is (decision 0502), is this driver's file system, so what deltalake
finds there is the answer; a URI is opened when deltalake can, an S3 one (`s3a://`, `s3://`)
with the endpoint and keys this process last read from a Spark session (`tables.store_conf`,
decision 1352), else the environment's. Anything else is out of reach
(`TableOutOfReach`): a catalog name, `/dbfs/...` (Spark reads it as `dbfs:/dbfs/...`), a table
deltalake cannot open; the caller then asks Spark.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mssql_cdc.core import (
    Place,
    check_apart,
    deltalake_options,
    place,
    remembered_settings,
    spark_only,
)
from mssql_cdc.errors import ConfigError
from mssql_cdc.tables.ref_syntax import normalize_path, parse_name, quote_parts

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import SparkSession

__all__ = [
    "TableOutOfReach",
    "TableRef",
    "deltalake_errors",
    "find_table",
    "is_local",
    "open_table",
    "require_distinct",
    "table_ref",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table argument, normalized: a resolved path, or a catalog name's parts.

    Two references are equal when they name the same table: the same resolved path, or the
    same parts ignoring case (Spark's default). `text` is kept as the caller wrote it, for
    messages and the facts rows' `target` column.
    """

    text: str = field(compare=False)
    location: str | None  # the resolved path; None for a catalog name
    parts: tuple[str, ...] = field(compare=False)  # a catalog name's parts; () for a path
    folded: tuple[str, ...] = field(repr=False)  # the parts compared ignoring case

    @property
    def is_path(self) -> bool:
        return self.location is not None

    @property
    def name(self) -> str:
        """What Spark's table APIs take: the resolved path, or the backquoted name."""
        return self.location if self.location is not None else quote_parts(self.parts)

    @property
    def sql(self) -> str:
        """The table in Spark SQL: ``delta.`<path>` `` or the backquoted name."""
        if self.location is not None:
            return "delta.`" + self.location.replace("`", "``") + "`"
        return quote_parts(self.parts)

    def exists(self, spark: SparkSession) -> bool:
        """Whether a Delta table is there: a catalog name in Spark's catalog; a path as deltalake
        finds it (a folder of files without a Delta log is none), or, where this process
        cannot tell (`/dbfs/...`, a URI deltalake cannot open), as Spark resolves it."""
        if self.location is None:
            return bool(spark.catalog.tableExists(self.name))
        found = find_table(self)
        if found is not None:
            return found
        from pyspark.errors import AnalysisException

        try:  # the schema makes Spark Connect resolve the path too
            spark.read.format("delta").load(self.location).schema  # noqa: B018
        except AnalysisException:
            return False
        return True

    def names(self, recorded: str | None) -> bool:
        """Tell whether a recorded table text (a facts row's `target`) names this table:
        written the same, or equal once normalized (a relative path resolved here)."""
        if recorded is None:
            return False
        if recorded == self.text:
            return True
        try:
            return table_ref(recorded) == self
        except ConfigError:
            return False  # a text no valid argument could have been

    def __str__(self) -> str:
        return self.text


def table_ref(value: object, *, argument: str = "table") -> TableRef:
    """Return the normalized reference of a table argument.

    A string holding `/` or `:` is a path: made absolute against the driver's working
    directory (as the checkpoint is), `.` and `..` resolved, a trailing `/` dropped; a URI
    keeps its scheme and authority and has its path normalized. Any other string is a catalog
    name, parsed by Spark's identifier rules (`mssql_cdc.tables.ref_syntax`).

    Raises:
        ConfigError: `value` is not a non-empty string, or not a valid catalog name; the
            message names `argument`.
    """
    if isinstance(value, TableRef):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"{argument}={value!r}: a table must be a non-empty string, a catalog name "
            "(catalog.schema.table) or a path"
        )
    if "/" in value or ":" in value:
        return TableRef(value, normalize_path(value), (), ())
    parts = parse_name(value, argument=argument)
    return TableRef(value, None, parts, tuple(part.casefold() for part in parts))


def require_distinct(**tables: object) -> None:
    """Raise ConfigError when two table arguments of one call name the same table.

    The references are compared normalized (`table_ref`): `out/t`, `./out/t/` and the same
    folder's absolute path are one table, and so are `Ops.T` and `ops.t`. Paths are then
    compared resolved (`core.place`: symbolic links followed, case ignored where the file
    system ignores it), and one table's folder may not lie inside another's: its VACUUM
    would delete the inner table's files.

    Raises:
        ConfigError: two arguments name one table or one table lies inside another (both are
            named), or one is invalid.
    """
    seen: dict[TableRef, str] = {}
    places: list[Place] = []
    for argument, value in tables.items():
        if value is None:
            continue
        ref = table_ref(value, argument=argument)
        if ref in seen:
            first = seen[ref]
            written = str(tables[first])
            spelled = "" if written == ref.text else f" ({argument} {ref.text!r})"
            raise ConfigError(
                f"{first} and {argument} are the same table {written!r}{spelled}: both resolve "
                f"to {ref.name!r}; each needs its own table"
            )
        seen[ref] = argument
        if ref.is_path:
            places.append(place(ref.text, what=argument))
    check_apart(places)


class TableOutOfReach(Exception):
    """The table cannot be read in this process; the caller reads it through Spark."""


def is_local(ref: TableRef) -> bool:
    """Whether `ref` is a path on this driver's own file system (so deltalake's answer is the
    answer): a local path, but not `/dbfs/...`, which Spark reads elsewhere."""
    return ref.location is not None and not spark_only(ref.location)


def deltalake_errors() -> tuple[type[BaseException], ...]:
    """What deltalake and pyarrow raise for a table they cannot open or read."""
    import pyarrow as pa
    from deltalake.exceptions import DeltaError, DeltaProtocolError

    return (DeltaError, DeltaProtocolError, OSError, ValueError, pa.ArrowException)


def open_table(ref: TableRef) -> DeltaTable:
    """The newest version of the Delta table at `ref`'s path, opened by deltalake.

    Raises:
        TableOutOfReach: `ref` is a catalog name or `/dbfs/...`, no Delta table is there, or
            deltalake cannot open it (an unsupported URI, missing credentials).
    """
    if ref.location is None:
        raise TableOutOfReach(f"{ref}: a catalog name is read through Spark")
    if ref.location == "/dbfs" or ref.location.startswith("/dbfs/"):
        raise TableOutOfReach(f"{ref}: /dbfs/ is read through Spark")
    if is_local(ref) and not os.path.isdir(os.path.join(ref.location, "_delta_log")):
        raise TableOutOfReach(f"{ref}: no Delta log at this path")
    from deltalake import DeltaTable

    options = deltalake_options(ref.location, remembered_settings(ref.location))
    try:
        return DeltaTable(ref.location, storage_options=options or None)
    except deltalake_errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot open the table: {exc}") from exc


def find_table(ref: TableRef) -> bool | None:
    """Whether a Delta table is at `ref`'s path: True when deltalake opens one there, False
    when this driver's file system has none there (a missing path, an empty folder, files
    without a Delta log), None when this process cannot tell (a catalog name, `/dbfs/...`, a
    URI deltalake cannot open)."""
    try:
        open_table(ref)
    except TableOutOfReach as exc:
        if not is_local(ref):
            return None
        log.debug("%s", exc)
        return False
    return True
