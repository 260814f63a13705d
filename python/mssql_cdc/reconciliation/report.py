"""`reconcile(report_table=...)`: each run's differences as rows of a Delta table a person can
query (decision 1376).

One row per key the run named (at most `sample` of each kind): the run's id and time, the
target and LSN compared, the key as a JSON object of its columns, the kind of difference, and
the columns that differ when the comparison knows them (it compares row digests, so today it
never does and the column is NULL). A run that finds the copy equal writes one row of kind
`none` with no key, so every run is in the table. Rows are only ever appended.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import json_key
from mssql_cdc.reconciliation.result import ReconcileResult
from mssql_cdc.tables import TableRef, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = ["KINDS", "REPORT_COLUMNS", "check_report_table", "report_rows", "write_report"]

KINDS = ("missing", "extra", "different", "none")
"""A report row's `kind`: missing in the target, extra in the target, different, or none (the
run found the copy equal, or no key named)."""

REPORT_COLUMNS = (
    ("run_id", "string"),
    ("run_at", "timestamp_ntz"),
    ("target", "string"),
    ("against", "string"),
    ("lsn", "string"),
    ("key_columns", "array<string>"),
    ("key", "string"),
    ("kind", "string"),
    ("columns", "array<string>"),
    ("complete", "boolean"),
    ("sampled_fraction", "double"),
)
"""The report table's columns and their Spark types, in order (docs/tables.md)."""


def check_report_table(report_table: object, **others: object) -> TableRef | None:
    """The report table's reference, checked before anything is read or written.

    Raises:
        ConfigError: not a table name or path, a path that climbs with `..`, or the same table
            as another table argument of the call (`others`, by argument name).
    """
    if report_table is None:
        return None
    path = isinstance(report_table, str) and any(c in report_table for c in "/:\\")
    if path and ".." in str(report_table).replace("\\", "/").split("/"):
        raise ConfigError(
            f"reconcile: report_table={report_table!r} climbs with '..'; pass the report "
            "table's path without '..' segments, or a catalog name"
        )
    ref = table_ref(report_table, argument="report_table")
    for name, other in others.items():
        if other is not None and table_ref(other, argument=name) == ref:
            raise ConfigError(
                f"reconcile: report_table is the same table as {name} ({ref.text}); pass a "
                "table of its own for the report"
            )
    return ref


def _schema() -> StructType:
    from pyspark.sql import types as T

    kinds = {
        "string": T.StringType(),
        "timestamp_ntz": T.TimestampNTZType(),
        "array<string>": T.ArrayType(T.StringType()),
        "boolean": T.BooleanType(),
        "double": T.DoubleType(),
    }
    return T.StructType([T.StructField(name, kinds[kind]) for name, kind in REPORT_COLUMNS])


def report_rows(
    result: ReconcileResult,
    key_columns: Sequence[str],
    run_id: str,
    run_at: datetime,
) -> list[tuple[Any, ...]]:
    """The rows one run appends: one per named key, or one `none` row when it named none."""

    def key_text(key: Any) -> str:
        values = key if len(key_columns) > 1 else [key]
        return json.dumps(
            {c: json_key(v) for c, v in zip(key_columns, values, strict=True)}, sort_keys=False
        )

    fraction = result.sampled.fraction if result.sampled is not None else 1.0
    head = (run_id, run_at, result.target, result.against, result.lsn, list(key_columns))
    named = [
        (kind, key)
        for kind, keys in (
            ("missing", result.missing),
            ("extra", result.extra),
            ("different", result.different),
        )
        for key in keys
    ]
    if not named:
        return [(*head, None, "none", None, result.complete, fraction)]
    return [(*head, key_text(key), kind, None, result.complete, fraction) for kind, key in named]


def write_report(
    spark: SparkSession,
    ref: TableRef,
    result: ReconcileResult,
    key_columns: Sequence[str],
    run_id: str,
    run_at: datetime,
) -> None:
    """Append this run's rows to the report table, creating it on the first run.

    Raises:
        ConfigError: the table exists with other columns (it is not a reconcile report).
    """
    schema = _schema()
    if ref.exists(spark):
        found = [(f.name, f.dataType.simpleString()) for f in spark.table(ref.sql).schema.fields]
        wanted = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        if found != wanted:
            raise ConfigError(
                f"reconcile: report_table {ref.text} holds columns {[n for n, _ in found]}, "
                "not a reconcile report's; pass a new table, or one an earlier reconcile wrote"
            )
    frame = spark.createDataFrame(report_rows(result, key_columns, run_id, run_at), schema)
    writer = frame.write.format("delta").mode("append")
    if ref.is_path:
        writer.save(ref.name)
    else:
        writer.saveAsTable(ref.name)
