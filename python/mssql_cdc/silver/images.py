"""Bronze rows as silver sees them, and the latest image per key.

docs/silver.md, 'How silver follows bronze', gives the rules.

Apply order is (_start_lsn, _command_id, _seqval, _operation), NULLs first; the last row of a
key wins. Operation 1 deletes the key, 0/2/4 upsert it, and 3 (an update's before-image) deletes
its own key: the same update's 4 sorts after it, so 3 wins only when the update moved the row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.core import Operation
from mssql_cdc.errors import ConfigError
from mssql_cdc.tables import library_columns, quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructField

__all__ = [
    "DELETE_FLAG",
    "HIGH",
    "LIBRARY_COLUMNS",
    "BronzeShape",
    "bronze_shape",
    "col",
    "latest_images",
    "snapshot_of",
]

LIBRARY_COLUMNS = frozenset(c.name for c in library_columns("bronze"))
DELETE_FLAG = "__mssql_cdc_delete"
HIGH = "__mssql_cdc_high"
_RANK = "__mssql_cdc_rank"
_REQUIRED = ("_start_lsn", "_seqval", "_operation", "_commit_ts")
_log = logging.getLogger("mssql_cdc.silver")


def col(name: str) -> Column:
    """A column by its exact name, whatever characters it holds."""
    from pyspark.sql import functions as F

    return F.col(quote_identifier(name))


@dataclass(frozen=True, slots=True)
class BronzeShape:
    """The columns of one bronze: its captured columns and which library columns it has."""

    captured: tuple[StructField, ...]
    commit_ts: StructField
    has_command_id: bool
    has_snapshot: bool
    has_chunk: bool

    @property
    def captured_names(self) -> list[str]:
        return [f.name for f in self.captured]


def bronze_shape(bronze: DataFrame, ref: str) -> BronzeShape:
    """Classify bronze's columns.

    Raises:
        ConfigError: a library column every bronze has is missing (not a bronze table).
    """
    names = set(bronze.columns)
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        raise ConfigError(
            f"bronze {ref}: column {missing[0]} is missing, so this is not a bronze table written "
            f"by mssql_cdc; pass the bronze table of the source table"
        )
    fields = bronze.schema.fields
    return BronzeShape(
        captured=tuple(f for f in fields if f.name not in LIBRARY_COLUMNS),
        commit_ts=next(f for f in fields if f.name == "_commit_ts"),
        has_command_id="_command_id" in names,
        has_snapshot="_snapshot" in names,
        has_chunk="_chunk" in names,
    )


def snapshot_of(shape: BronzeShape) -> Column:
    """The snapshot LSN of an _operation = 0 row: coalesce(_snapshot, _start_lsn)."""
    from pyspark.sql import functions as F

    if not shape.has_snapshot:
        return col("_start_lsn")
    return F.coalesce(col("_snapshot"), col("_start_lsn"))


def latest_images(
    rows: DataFrame, keys: Sequence[str], shape: BronzeShape, *, ref: str
) -> DataFrame:
    """One row per key (matched null-safely): the last row in apply order, as a silver image.

    The result holds the captured columns, _start_lsn, _commit_ts, DELETE_FLAG (true when the
    winning row removes the key) and HIGH (the winning row's _start_lsn when it is a change row,
    else NULL). The winner's LSN is its key's highest, so the largest HIGH of a source is its
    highest change LSN whenever no change of a key sorts below a snapshot row of that key (a
    rebuild's and an incremental apply's sources). A row_number window rather than an
    aggregation: Spark keeps only each task's top row per key before the
    shuffle and sorts plain columns, where max_by over a struct holding strings must run a
    sort-based aggregation that copies the image of every row it passes.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = ["_start_lsn", "_command_id", "_seqval", "_operation"]
    if not shape.has_command_id:
        order.remove("_command_id")
        _log.warning(
            "bronze %s has no _command_id column (the stream ran with includeCommandId=false): "
            "rows of one commit are ordered by _seqval and _operation only",
            ref,
        )
    # Descending with NULLs last is the apply order (NULLs first) reversed: row 1 is the last.
    window = Window.partitionBy(*[col(k) for k in keys]).orderBy(
        *[col(n).desc_nulls_last() for n in order]
    )
    needed = dict.fromkeys([*keys, *shape.captured_names, *order, "_commit_ts"])
    winners = (
        rows.select(*[col(n) for n in needed])
        .withColumn(_RANK, F.row_number().over(window))
        .where(F.col(_RANK) == 1)
    )
    return winners.select(
        *[col(n) for n in shape.captured_names],
        col("_start_lsn"),
        col("_commit_ts"),
        col("_operation").isin(Operation.DELETE, Operation.UPDATE_BEFORE).alias(DELETE_FLAG),
        F.when(col("_operation") != Operation.SNAPSHOT, col("_start_lsn")).alias(HIGH),
    )
