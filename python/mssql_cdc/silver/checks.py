"""Argument checks of `apply_changes`: each names what is wrong. A time key of seven fractional
digits held as a Spark time is refused (decision 1343); the granularity and the bronze reader's
options are checked before any Spark call (decision 1373)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mssql_cdc.core import check_time_keys
from mssql_cdc.errors import ConfigError, quoted
from mssql_cdc.silver.facts_view import BronzeSnapshotFacts
from mssql_cdc.silver.images import LIBRARY_COLUMNS, BronzeShape, col
from mssql_cdc.tables import require_distinct

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "BRONZE_READ_OPTIONS",
    "GRANULARITIES",
    "check_arguments",
    "check_capture_instance",
    "check_keys",
    "check_read_options",
    "key_list",
]

GRANULARITIES = ("key", "commit")
# The options apply_changes hands to its bronze reader, by their Delta spelling.
BRONZE_READ_OPTIONS = ("versionAsOf",)


def check_arguments(
    bronze: object,
    target: object,
    keys: object,
    control_table: object,
    facts_table: object,
    capture_instance: object,
    granularity: object = "key",
) -> list[str]:
    """Check every argument that needs no table; return the keys as a list.

    Raises:
        ConfigError: the first bad argument, named.
    """
    tables = {"bronze": bronze, "target": target, "control_table": control_table}
    if facts_table is not None:
        tables["facts_table"] = facts_table
    for name, value in tables.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(
                f"apply_changes: {name}={value!r} must be a non-empty table name or path"
            )
    try:
        require_distinct(**tables)  # compares the references normalized; refuses a bad name
    except ConfigError as exc:
        raise ConfigError(f"apply_changes: {exc}") from None
    if capture_instance is not None and (
        not isinstance(capture_instance, str) or not capture_instance.strip()
    ):
        raise ConfigError(
            f"apply_changes: capture_instance={quoted(capture_instance)} must be a non-empty "
            "string or None"
        )
    if not isinstance(granularity, str) or granularity not in GRANULARITIES:
        raise ConfigError(
            f"apply_changes: granularity={quoted(granularity)} is not one of "
            f"{', '.join(repr(g) for g in GRANULARITIES)}; pass 'key' for one row per key "
            "(the latest image) or 'commit' for one row per key and source commit"
        )
    return key_list(keys, caller="apply_changes")


def check_read_options(options: object) -> dict[str, int]:
    """The bronze reader's options, by their Delta spelling (matched case-insensitively).

    Raises:
        ConfigError: not a mapping, an option apply_changes does not know, or a value of the
            wrong type or range, naming the option.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ConfigError(
            f"apply_changes: options={quoted(options)} must be a dict of bronze reader options, "
            f"e.g. {{'versionAsOf': 12}}, or None"
        )
    known = {name.lower(): name for name in BRONZE_READ_OPTIONS}
    found: dict[str, int] = {}
    for name, value in options.items():
        canonical = known.get(name.lower()) if isinstance(name, str) else None
        if canonical is None:
            raise ConfigError(
                f"apply_changes: option {quoted(name)} is not a bronze reader option "
                f"apply_changes knows (known: {', '.join(BRONZE_READ_OPTIONS)}); remove it"
            )
        if canonical in found:
            raise ConfigError(
                f"apply_changes: option {canonical} is given twice in options (option names "
                "are matched ignoring case); give it once"
            )
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(
                f"apply_changes: option {canonical}={quoted(value)} must be a whole number of "
                "0 or more: the bronze Delta table version to apply"
            )
        found[canonical] = value
    return found


def key_list(keys: object, *, caller: str) -> list[str]:
    """`keys` as a list: a non-empty list of distinct, non-empty column names.

    Raises:
        ConfigError: a string, an empty list, a non-name or a duplicate, naming `keys`.
    """
    if isinstance(keys, str) or not isinstance(keys, Sequence) or not keys:
        raise ConfigError(
            f"{caller}: keys={quoted(keys)} must be a non-empty list of column names, "
            f"e.g. keys=['id']"
        )
    found = list(keys)
    for key in found:
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{caller}: key {quoted(key)} must be a non-empty column name")
    duplicates = sorted({k for k in found if found.count(k) > 1})
    if duplicates:
        raise ConfigError(
            f"{caller}: key column {quoted(duplicates[0])} is listed twice in "
            f"keys={quoted(found)}; list each column once"
        )
    return found


def check_keys(
    keys: Sequence[str],
    shape: BronzeShape,
    bronze: str,
    sql_types: Mapping[str, str] | None = None,
) -> None:
    """Every key must be a captured column of bronze, of a type Spark keeps apart: a time key
    of seven fractional digits held as a Spark time is refused (`core.check_time_keys`, from
    the SQL types bronze records, `sql_types`, or its schema's field metadata).

    Raises:
        ConfigError: names the first key bronze lacks, and the columns it has; or a
            seven-digit time key, naming the column, its SQL type and the remedies.
    """
    captured = shape.captured_names
    for key in keys:
        if key in LIBRARY_COLUMNS:
            raise ConfigError(
                f"apply_changes: key {key!r} is a column mssql_cdc adds to bronze, not a column "
                f"of the source table; use the source table's key columns"
            )
        if key not in captured:
            raise ConfigError(
                f"apply_changes: key column {key!r} is not in bronze {bronze} (its captured "
                f"columns: {', '.join(captured)}); pass keys that bronze holds"
            )
    check_time_keys(f"apply_changes: bronze {bronze}", keys, shape.captured, sql_types)


def check_capture_instance(
    rows: DataFrame, facts: BronzeSnapshotFacts, capture_instance: str, bronze: str
) -> None:
    """Every row must come from `capture_instance` or one recorded as following it.

    Raises:
        ConfigError: a row of another capture instance (one bronze per source table).
    """
    allowed = {capture_instance.lower()}
    grown = True
    while grown:
        grown = False
        for old, new in facts.switches:
            if old.lower() in allowed and new.lower() not in allowed:
                allowed.add(new.lower())
                grown = True
    found = [r[0] for r in rows.select(col("_capture_instance")).distinct().collect()]
    for instance in sorted(found, key=lambda v: (v is None, v or "")):
        if instance is None or instance.lower() not in allowed:
            raise ConfigError(
                f"apply_changes: bronze {bronze} holds rows of capture instance "
                f"{quoted(instance)}, "
                f"but capture_instance={quoted(capture_instance)} (instances allowed: "
                f"{', '.join(sorted(allowed))}); one bronze holds one source table, so pass "
                f"that table's bronze or its capture instance"
            )
