"""Schema rules of the change source: SQL Server types to Spark types, safe widenings, the
union across capture instances and the checks of DDL inside a batch (docs/source.md,
'Capture instances' and 'Events and metrics files'). Pure functions; a refusal is a
`SchemaChangedError` raised before anything is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mssql_cdc.core import EventRecord
from mssql_cdc.errors import ConfigError, SchemaChangedError

__all__ = [
    "TypeCheck",
    "check_captured_types",
    "policy_fail_error",
    "schema_change_event",
    "schema_changed_error",
    "spark_type_of",
    "switch_event",
    "switch_type_error",
    "union_columns",
    "widens_to",
]

_SIMPLE = {
    "bit": "BOOLEAN",
    "tinyint": "SMALLINT",  # 0-255 does not fit Spark's signed TINYINT
    "smallint": "SMALLINT",
    "int": "INT",
    "bigint": "BIGINT",
    "real": "FLOAT",
    "float": "DOUBLE",
    "money": "DECIMAL(19,4)",
    "smallmoney": "DECIMAL(10,4)",
    "date": "DATE",
    "datetime": "TIMESTAMP_NTZ",
    "datetime2": "TIMESTAMP_NTZ",
    "smalldatetime": "TIMESTAMP_NTZ",
    "datetimeoffset": "TIMESTAMP",
    "time": "STRING",
    "char": "STRING",
    "varchar": "STRING",
    "nchar": "STRING",
    "nvarchar": "STRING",
    "text": "STRING",
    "ntext": "STRING",
    "xml": "STRING",
    "uniqueidentifier": "STRING",
    "binary": "BINARY",
    "varbinary": "BINARY",
    "image": "BINARY",
    "timestamp": "BINARY",
    "rowversion": "BINARY",
}
_UNSUPPORTED = frozenset({"sql_variant", "geography", "geometry", "hierarchyid"})
_TYPE = re.compile(r"^\s*([a-z0-9_]+)\s*(?:\(\s*([^)]*)\))?\s*$", re.IGNORECASE)
_DECIMAL = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")
_INTEGER_DIGITS = {"SMALLINT": 5, "INT": 10, "BIGINT": 20}


def spark_type_of(column: str, sql_type: str) -> str:
    """The Spark type of a captured column's SQL Server type (`decimal(12,2)`, `nvarchar(max)`).

    Raises:
        ConfigError: a type the source cannot carry (sql_variant, CLR types); the message
            names the column and says how to declare it.
    """
    match = _TYPE.match(sql_type)
    if not match:
        raise ConfigError(f"column {column!r}: cannot read the SQL type {sql_type!r}")
    base, args = match.group(1).lower(), match.group(2)
    if base in ("decimal", "numeric"):
        precision, _, scale = (args or "18,0").partition(",")
        return f"DECIMAL({int(precision)},{int(scale or 0)})"
    if base in _SIMPLE:
        return _SIMPLE[base]
    if base in _UNSUPPORTED:
        raise ConfigError(
            f"column {column!r} has type {base}, which has no Spark type; declare it in the "
            "columns option as STRING (read as CAST(... AS nvarchar(max))) or BINARY "
            "(varbinary(max))"
        )
    raise ConfigError(f"column {column!r} has SQL type {sql_type!r}, which is not supported")


def widens_to(old: str, new: str) -> bool:
    """Whether every value of Spark type `old` fits `new` unchanged (equal types do)."""
    if old == new:
        return True
    if (old, new) in {
        ("SMALLINT", "INT"),
        ("SMALLINT", "BIGINT"),
        ("INT", "BIGINT"),
        ("SMALLINT", "DOUBLE"),
        ("INT", "DOUBLE"),
        ("FLOAT", "DOUBLE"),
        ("DATE", "TIMESTAMP_NTZ"),
    }:
        return True
    target = _DECIMAL.match(new)
    if target is None:
        return False
    p2, s2 = int(target.group(1)), int(target.group(2))
    if old in _INTEGER_DIGITS:
        return p2 - s2 >= _INTEGER_DIGITS[old]
    source = _DECIMAL.match(old)
    if source is None:
        return False
    p1, s1 = int(source.group(1)), int(source.group(2))
    return p2 - s2 >= p1 - s1 and s2 >= s1


def union_columns(
    capture_instance: str, instances: Sequence[Sequence[tuple[str, str]]]
) -> list[tuple[str, str]]:
    """The union by name of the instances' `(column, Spark type)` lists, older instance first.

    A column typed differently takes the newer type when it holds the older's values.

    Raises:
        SchemaChangedError: the newer type cannot hold the older one's values.
    """
    merged: dict[str, tuple[str, str]] = {}
    for columns in instances:
        for name, spark_type in columns:
            key = name.lower()
            if key not in merged:
                merged[key] = (name, spark_type)
                continue
            _, old = merged[key]
            if not widens_to(old, spark_type):
                raise SchemaChangedError(
                    f"capture instance '{capture_instance}': column '{name}' is {old} in the "
                    f"older capture instance and {spark_type} in the newer one, which cannot "
                    "hold the older values; declare a type that holds both in the columns "
                    "option",
                    capture_instance,
                )
            merged[key] = (merged[key][0], spark_type)
    return list(merged.values())


@dataclass(frozen=True, slots=True)
class TypeCheck:
    """A captured column whose current type differs from what the query declared."""

    column: str
    sql_type: str  # the current SQL type text
    new_spark_type: str
    declared_spark_type: str
    fits: bool  # the declared type holds every value of the new one


def check_captured_types(
    declared: Mapping[str, str], captured: Sequence[tuple[str, str]]
) -> list[TypeCheck]:
    """Compare the captured `(column, SQL type)` pairs re-read after DDL with the declared
    Spark types; returns the columns whose type no longer maps to the declared one."""
    by_name = {name.lower(): spark for name, spark in declared.items()}
    changed = []
    for name, sql_type in captured:
        want = by_name.get(name.lower())
        if want is None:
            continue  # not read by this query
        try:
            new = spark_type_of(name, sql_type)
        except ConfigError:
            changed.append(TypeCheck(name, sql_type, "(none)", want, False))
            continue
        if new != want:
            changed.append(TypeCheck(name, sql_type, new, want, widens_to(new, want)))
    return changed


def schema_changed_error(
    capture_instance: str, check: TypeCheck, old_sql_type: str | None, ddl_lsn: str
) -> SchemaChangedError:
    """The error for a type change the declared type cannot hold."""
    old = old_sql_type or "its previous type"
    return SchemaChangedError(
        f"capture instance '{capture_instance}': column '{check.column}' changed from {old} to "
        f"{check.sql_type} at DDL LSN {ddl_lsn}, and the declared Spark type "
        f"{check.declared_spark_type} cannot hold its values; restart the query so the schema "
        "is inferred again (a wider target column needs Delta type widening or a new target)",
        capture_instance,
    )


def switch_type_error(
    older: str, newer: str, switch_lsn: str, check: TypeCheck, *, declared_by_option: bool
) -> SchemaChangedError:
    """The error for a newer instance whose column type the query's schema cannot hold, at the
    in-place switch to it (raised before anything of the batch is read)."""
    if declared_by_option:
        fix = (
            f"declare '{check.column}' in the columns option with a type that holds both "
            "instances' values and restart the query (the restart replays this batch)"
        )
    else:
        fix = (
            "restart the query so the schema is inferred again (the restart replays this "
            "batch); a target column of the old type needs Delta type widening or a new target"
        )
    return SchemaChangedError(
        f"capture instance '{newer}', which replaces '{older}' from {switch_lsn}, captures "
        f"column '{check.column}' as {check.sql_type} (Spark {check.new_spark_type}), which "
        f"this query's declared type {check.declared_spark_type} cannot hold; nothing of this "
        f"batch was read. To continue, {fix}",
        newer,
    )


def policy_fail_error(capture_instance: str, ddl_lsn: str, ddl_command: str) -> SchemaChangedError:
    """The error of `schemaChangePolicy=fail` for any DDL inside a batch."""
    return SchemaChangedError(
        f"capture instance '{capture_instance}': DDL at LSN {ddl_lsn} ({ddl_command[:200]}) is "
        "inside this batch and schemaChangePolicy=fail stops before reading it; check the "
        "change, then run once with schemaChangePolicy=classify to pass it",
        capture_instance,
    )


def schema_change_event(
    capture_instance: str,
    ddl_lsn: str,
    ddl_commit_ts: str | None,
    ddl_command: str,
    *,
    batch_start_lsn: str,
    batch_end_lsn: str,
) -> EventRecord:
    """The 'schema_change' event."""
    return EventRecord(
        event="schema_change",
        capture_instance=capture_instance,
        lsn=ddl_lsn,
        commit_ts=ddl_commit_ts,
        detail={"capture_instance": capture_instance, "ddl": ddl_command},
        lost_from_ts=None,
        lost_to_ts=None,
        batch_start_lsn=batch_start_lsn,
        batch_end_lsn=batch_end_lsn,
    )


def switch_event(
    older: str,
    newer: str,
    switch_lsn: str,
    switch_commit_ts: str | None,
    uncaptured: Sequence[str],
    *,
    batch_start_lsn: str,
    batch_end_lsn: str,
) -> EventRecord:
    """The 'capture_instance_switched' event of the batch with start < S <= end."""
    return EventRecord(
        event="capture_instance_switched",
        capture_instance=newer,
        lsn=switch_lsn,
        commit_ts=switch_commit_ts,
        detail={"old": older, "new": newer, "uncaptured": list(uncaptured)},
        lost_from_ts=None,
        lost_to_ts=None,
        batch_start_lsn=batch_start_lsn,
        batch_end_lsn=batch_end_lsn,
    )
