"""Opening the library's tables: creation on first write, kind checks and migrations.

Tables are created only by writers, in the newest shape, stamped with `mssql_cdc.kind` and
`mssql_cdc.schema_version`; opening one for write runs the migrations it lacks, in order,
stamping the version after each. The table references themselves (`TableRef`, `table_ref`,
`require_distinct`) are defined in `tables.reference` and offered here too, with
`table_properties`, for the callers that open tables. A new bronze records its captured
columns' SQL types in `mssql_cdc.sql_types` (decision 1343).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from mssql_cdc.errors import ConfigError, InternalError
from mssql_cdc.tables import definitions as schemas
from mssql_cdc.tables.creation import create_statement
from mssql_cdc.tables.definitions import KIND_PROPERTY, TableKind
from mssql_cdc.tables.delta_read import table_properties
from mssql_cdc.tables.migrations import Migration, sql_string
from mssql_cdc.tables.migrations import bronze as bronze_migrations
from mssql_cdc.tables.migrations import control as control_migrations
from mssql_cdc.tables.migrations import facts as facts_migrations
from mssql_cdc.tables.migrations import silver as silver_migrations
from mssql_cdc.tables.reference import TableRef, require_distinct, table_ref
from mssql_cdc.tables.retry import is_concurrent_commit_error, retry_on_conflict
from mssql_cdc.tables.shapes import ShapeColumn, needs_column_mapping, shape_of
from mssql_cdc.tables.shared_tables import exists_here

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "KIND_PROPERTY",
    "MIN_VERSION_PROPERTY",
    "SQL_TYPES_PROPERTY",
    "VERSION_PROPERTY",
    "TableHandle",
    "TableRef",
    "create_table_sql",
    "ensure_table",
    "migrations_for",
    "open_for_read",
    "open_for_write",
    "recorded_sql_types",
    "require_distinct",
    "table_properties",
    "table_ref",
]

log = logging.getLogger(__name__)

VERSION_PROPERTY = "mssql_cdc.schema_version"
MIN_VERSION_PROPERTY = "mssql_cdc.min_version"
SQL_TYPES_PROPERTY = "mssql_cdc.sql_types"
"""A bronze table's captured columns' SQL types, a JSON object `{"k": "datetime2(7)"}`: Delta
keeps field metadata only on a table's first write, and bronze is created by CREATE TABLE,
which cannot state it."""
_TXN_RETENTION = "delta.setTransactionRetentionDuration"

_MIGRATIONS: dict[TableKind, list[Migration]] = {
    "bronze": bronze_migrations.MIGRATIONS,
    "facts": facts_migrations.MIGRATIONS,
    "control": control_migrations.MIGRATIONS,
    "silver": silver_migrations.MIGRATIONS,
}
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def migrations_for(kind: TableKind) -> list[Migration]:
    """Return the migration list of `kind`; its length is the newest schema version."""
    return _MIGRATIONS[kind]


@dataclass(frozen=True, slots=True)
class TableHandle:
    """An opened library table: its reference, kind and schema version after opening."""

    ref: TableRef
    kind: TableKind
    version: int
    created: bool = False


def ensure_table(
    spark: SparkSession,
    ref: TableRef | str,
    kind: TableKind,
    *,
    source_schema: StructType | None = None,
) -> TableHandle:
    """Open a table for write, creating it in the newest shape when it is missing.

    Bronze and silver need `source_schema` (the stream's schema for bronze, bronze's captured
    columns for silver) to be created; it is ignored when the table exists.

    Raises:
        ConfigError: the table is another kind or needs a newer library.
        InternalError: bronze/silver is missing and no `source_schema` was given.
    """
    ref = table_ref(ref)
    handle = open_for_write(spark, ref, kind)
    if handle is not None:
        return handle
    if kind in ("bronze", "silver") and source_schema is None:
        raise InternalError(
            f"{ref}: the {kind} table is missing and was to be created without a source schema"
        )
    columns = shape_of(kind, source_schema)
    try:
        _create(spark, ref, kind, columns)
    except Exception as exc:  # a lost creation race is used; the rest re-raise
        if not _created_by_another_writer(spark, ref, exc):
            if ref.is_path and any(code in str(exc) for code in _NOT_A_DELTA_LOCATION):
                raise ConfigError(
                    f"{ref}: the location holds files but no Delta table; pass an empty or new "
                    "location, or move the files away"
                ) from exc
            raise
        log.info("%s: another writer created the table first; using it", ref)
        handle = open_for_write(spark, ref, kind)
        if handle is None:
            raise
        return handle
    # The kind and version are read back, as a table that already existed would be.
    return TableHandle(ref, kind, _checked_version(spark, ref, kind), created=True)


def open_for_write(spark: SparkSession, ref: TableRef | str, kind: TableKind) -> TableHandle | None:
    """Open an existing table for write: check its kind, run the migrations it lacks.

    Returns:
        The handle, or None when the table does not exist (nothing is created).
    Raises:
        ConfigError: the table is another kind or needs a newer library.
    """
    ref = table_ref(ref)
    if not exists_here(spark, ref):
        return None
    version = _checked_version(spark, ref, kind)
    migrations = migrations_for(kind)
    while version < len(migrations):
        step = migrations[version]
        log.info("%s: migrating %s table to version %d (%s)", ref, kind, version + 1, step.name)
        retry_on_conflict(partial(step.apply, spark, ref.sql), what=f"{ref}: {step.name}")
        version = retry_on_conflict(
            partial(_stamp, spark, ref, kind, version + 1), what=f"{ref}: version stamp"
        )
    return TableHandle(ref, kind, version)


def open_for_read(spark: SparkSession, ref: TableRef | str, kind: TableKind) -> TableHandle | None:
    """Open an existing table for reading: kind checked, never migrated; None when missing."""
    ref = table_ref(ref)
    if not exists_here(spark, ref):
        return None
    return TableHandle(ref, kind, _checked_version(spark, ref, kind, writing=False))


def create_table_sql(ref: TableRef, kind: TableKind, columns: Sequence[ShapeColumn]) -> str:
    """Return the CREATE TABLE statement of a new `kind` table: its columns with
    their comments, the kind's table comment, the kind and newest schema version stamped, and
    Delta column mapping for a bronze or silver column name that needs it; a bronze's captured
    columns' SQL types, where the source schema records them, in `SQL_TYPES_PROPERTY`."""
    properties = {KIND_PROPERTY: kind, VERSION_PROPERTY: str(len(migrations_for(kind)))}
    sql_types = {c.name: c.sql_type for c in columns if c.sql_type}
    if kind == "bronze" and sql_types:
        properties[SQL_TYPES_PROPERTY] = json.dumps(sql_types, separators=(",", ":"))
    if kind in ("bronze", "silver") and needs_column_mapping(c.name for c in columns):
        properties["delta.columnMapping.mode"] = "name"
    return create_statement(ref.sql, columns, comment=_TABLE_COMMENTS[kind], properties=properties)


def _create(
    spark: SparkSession, ref: TableRef, kind: TableKind, columns: list[ShapeColumn]
) -> None:
    spark.sql(create_table_sql(ref, kind, columns))


_TABLE_COMMENTS: dict[TableKind, str] = {
    "bronze": schemas.BRONZE_COMMENT,
    "facts": schemas.FACTS_COMMENT,
    "control": schemas.CONTROL_COMMENT,
    "silver": schemas.SILVER_COMMENT,
}


# What creating a table by path says about a location that exists but holds no table yet:
# another writer may be between making its log folder and committing, a creator died there, or
# the folder holds someone's files. CREATE TABLE says "already exists" for all three (decision
# 0810); the DeltaTable builder said these.
_MID_CREATION = (
    "ALREADY_EXISTS",
    "already exists",
    "FileAlreadyExistsException",
    "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION",
    "DELTA_TABLE_NOT_FOUND",
)
_NOT_A_DELTA_LOCATION = (*_MID_CREATION, "DELTA_MISSING_DELTA_TABLE")
# How long a location another writer is creating a table in may show files without a commit.
_CREATION_WAIT_SECONDS = 15.0


def _created_by_another_writer(spark: SparkSession, ref: TableRef, exc: BaseException) -> bool:
    """Tell whether `exc` lost a creation race to a writer whose table now exists.

    Delta reports the race as a conflict once the other commit landed; a catalog name says it
    already exists. A path that exists without a table may be another writer's log folder
    before its first commit: those wait a little for the commit to appear.
    """
    text = str(exc)
    if is_concurrent_commit_error(exc) or (not ref.is_path and "ALREADY_EXISTS" in text):
        return ref.exists(spark)
    if not ref.is_path or not any(code in text for code in _MID_CREATION):
        return False
    if _local_without_log(ref):  # nobody is creating a table here: answer at once
        return False
    deadline = time.monotonic() + _CREATION_WAIT_SECONDS
    while not ref.exists(spark):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _local_without_log(ref: TableRef) -> bool:
    """True when `ref` is a local folder with no `_delta_log` in it."""
    location = ref.location or ""
    if location.startswith("file:"):
        location = location[len("file:") :]
    if ":" in location or not location.startswith("/"):
        return False  # a remote store: its listing may lag, so the caller waits
    return not os.path.isdir(os.path.join(location, "_delta_log"))


def _checked_version(
    spark: SparkSession, ref: TableRef, kind: TableKind, *, writing: bool = True
) -> int:
    properties = table_properties(spark, ref)
    found = properties.get(KIND_PROPERTY)
    if found != kind:
        what = f"kind {found!r}" if found else f"no {KIND_PROPERTY} property"
        raise ConfigError(
            f"{ref}: expected a {kind} table created by mssql_cdc, found a table with {what}; "
            "check that the table arguments are not swapped, or pass a table the library owns"
        )
    version = _version_of(ref, properties)
    count = len(migrations_for(kind))
    minimum = properties.get(MIN_VERSION_PROPERTY)
    if minimum is not None and minimum.isdigit() and int(minimum) > count:
        raise ConfigError(
            f"{ref}: the {kind} table needs mssql_cdc schema version {minimum} or newer, this "
            f"library knows {count}; upgrade mssql-cdc"
        )
    if version > count:
        _warn_once(
            ref,
            "newer",
            f"{ref}: the {kind} table is at schema version {version}, newer than this "
            f"library's {count}; its newer columns are left NULL. Upgrade mssql-cdc.",
        )
    if writing and kind in ("bronze", "facts") and _TXN_RETENTION in properties:
        _warn_once(
            ref,
            "txn-retention",
            f"{ref}: {_TXN_RETENTION} is set; expired transaction records let a late replay "
            "write twice. Remove the property.",
        )
    return version


def _version_of(ref: TableRef, properties: Mapping[str, str]) -> int:
    text = properties.get(VERSION_PROPERTY, "0")
    if not text.isdigit():
        raise ConfigError(
            f"{ref}: {VERSION_PROPERTY}={text!r} is not a number; set it to the number of "
            "migrations the table has"
        )
    return int(text)


def _stamp(spark: SparkSession, ref: TableRef, kind: TableKind, version: int) -> int:
    """Record `version` unless a concurrent writer already went further; return the version."""
    stored = _version_of(ref, table_properties(spark, ref))
    if stored >= version:
        return stored
    spark.sql(
        f"ALTER TABLE {ref.sql} SET TBLPROPERTIES "
        f"({sql_string(VERSION_PROPERTY)} = {sql_string(str(version))})"
    )
    return version


def _warn_once(ref: TableRef, topic: str, message: str) -> None:
    with _warned_lock:
        if (ref.name, topic) in _warned:
            return
        _warned.add((ref.name, topic))
    log.warning(message)


def recorded_sql_types(spark: SparkSession, ref: TableRef | str) -> dict[str, str]:
    """The captured columns' SQL types a bronze records (`SQL_TYPES_PROPERTY`), read without a
    Spark job; empty for a bronze created before the source recorded them."""
    raw = table_properties(spark, ref).get(SQL_TYPES_PROPERTY)
    try:
        found = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): str(v) for k, v in found.items() if isinstance(v, str)}
