"""Silver at commit granularity: one row per key and source commit (docs/silver.md, 'History:
one row per key and commit'; decision 1373).

A history row is a key's image as of one bronze `_start_lsn` (a source commit, or a snapshot's
LSN or a chunk's stamp): the last of the key's rows at that LSN in apply order. `_deleted` is
true when that row removed the key (operation 1, or an update's before-image whose after-image
moved to another key), and the row then holds the removed image. Rows are keyed by
(keys, `_start_lsn`): a write inserts only rows whose pair silver lacks, so a rerun or a replay
of the same bronze rows adds nothing.

The position (`applied_lsn`) moves over change and whole-snapshot rows only. A chunk row is
stamped when its wave read the source, beside the running stream, so bronze may hold changes
above its stamp before the wave lands: chunk rows are added by wave instead, from the facts
table's chunk rows, as silver's `open_snapshot_lsn` and `snapshot_wave` record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mssql_cdc.core import Operation
from mssql_cdc.errors import ConfigError
from mssql_cdc.silver.facts_view import BronzeSnapshotFacts
from mssql_cdc.silver.images import DELETE_FLAG, BronzeShape, col, latest_images
from mssql_cdc.tables import TableRef, append, merge_into, quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "DELETED",
    "ChunkWaves",
    "check_granularity_of",
    "chunk_waves",
    "history_shape",
    "write_history",
]

DELETED = "_deleted"
_SKIP_EMPTY_COMMITS = "spark.databricks.delta.skipRecordingEmptyCommits"


def history_shape(shape: BronzeShape, bronze: str) -> BronzeShape:
    """Bronze's shape with `_deleted` added to the columns silver keeps.

    Raises:
        ConfigError: the source table has a column named `_deleted` itself.
    """
    from pyspark.sql.types import BooleanType, StructField

    if any(f.name.lower() == DELETED for f in shape.captured):
        raise ConfigError(
            f"apply_changes: bronze {bronze} captures a column named {DELETED}, the column "
            f"granularity='commit' adds to mark deletes; use granularity='key' for this table"
        )
    deleted = StructField(DELETED, BooleanType(), nullable=False)
    return replace(shape, captured=(*shape.captured, deleted))


def check_granularity_of(
    spark: SparkSession, ref: TableRef, shape: BronzeShape, *, history: bool
) -> None:
    """An existing silver must have been written at the granularity asked for: a history
    silver has `_deleted`, a key silver has not (unless the source table captures it).

    Raises:
        ConfigError: the target was written at the other granularity; nothing was written.
    """
    if not ref.exists(spark):
        return
    names = {f.name.lower() for f in spark.table(ref.sql).schema.fields}
    captured = {f.name.lower() for f in shape.captured}
    if history and DELETED not in names:
        raise ConfigError(
            f"apply_changes: target {ref} holds one row per key (granularity='key'), not a "
            f"history; pass granularity='key' for it, or another target for the history"
        )
    if not history and DELETED in names and DELETED not in captured:
        raise ConfigError(
            f"apply_changes: target {ref} is a history (granularity='commit', it has the "
            f"{DELETED} column); pass granularity='commit' for it, or another target"
        )


@dataclass(frozen=True, slots=True)
class ChunkWaves:
    """The chunk rows a history call adds: per chunked snapshot, its chunks not added yet; and
    the (snapshot, wave) silver stands at once they are."""

    chunks: dict[str, list[int]]
    snapshot: str | None
    wave: int | None


def chunk_waves(facts: BronzeSnapshotFacts, snapshot: str | None, wave: int | None) -> ChunkWaves:
    """The recorded waves after (`snapshot`, `wave`): of `snapshot` the waves above `wave`, and
    every wave of each newer chunked snapshot."""
    chunks: dict[str, list[int]] = {}
    at, last = snapshot, wave
    for s in sorted({c.snapshot for c in facts.chunks}):
        if snapshot is not None and s < snapshot:
            continue
        done = wave if s == snapshot else None
        waves = {w: c for w, c in facts.waves(s).items() if done is None or w > done}
        if waves:
            chunks[s] = sorted({c for numbers in waves.values() for c in numbers})
            at, last = s, max(waves)
    return ChunkWaves(chunks, at, last)


def history_rows(
    source: DataFrame, keys: Sequence[str], shape: BronzeShape, *, ref: str
) -> DataFrame:
    """One row per key and `_start_lsn`: the last in apply order, `_deleted` set on removals."""
    from pyspark.sql import functions as F

    images = latest_images(source, [*keys, "_start_lsn"], shape, ref=ref)
    return images.select(
        *[col(n) for n in shape.captured_names],
        F.col(DELETE_FLAG).alias(DELETED),
        col("_start_lsn"),
        col("_commit_ts"),
    )


def write_history(
    spark: SparkSession,
    target: TableRef,
    rows: DataFrame,
    shape: BronzeShape,
    keys: Sequence[str],
    bronze: str,
    *,
    after: str | None,
    empty: bool,
    waves: ChunkWaves | None,
) -> tuple[str | None, bool]:
    """Add the history rows of every change or whole-snapshot row above `after`, and of the
    chunk rows of `waves` (None: every chunk row above `after`, for a bronze without facts);
    return the highest LSN of the former and whether anything was written.

    `shape` is bronze's own (without `_deleted`).

    Into an empty silver the rows are appended in one write, else an insert-only MERGE adds the
    (key, `_start_lsn`) pairs silver lacks. No row above `after`: nothing is written and None is
    returned. The highest LSN is observed inside the write's own job (nothing is cached).
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    above = rows if after is None else rows.where(col("_start_lsn") > after)
    if waves is not None:
        above = above.where(col("_chunk").isNull())
    chunk_rows = [
        rows.where(
            (col("_operation") == Operation.SNAPSHOT)
            & (col("_snapshot") == snapshot)
            & col("_chunk").isin(numbers)
        )
        for snapshot, numbers in (waves.chunks if waves is not None else {}).items()
    ]
    skips_empty = str(spark.conf.get(_SKIP_EMPTY_COMMITS, "true")).strip().lower()
    if (not empty or skips_empty != "true") and not any(
        part.select(col("_operation")).limit(1).collect() for part in [above, *chunk_rows]
    ):
        return None, False
    # Observed only now: the look above must not be the job the observation reports.
    seen = Observation()
    source = above.observe(seen, F.max(col("_start_lsn")).alias("high"))
    for part in chunk_rows:
        source = source.unionByName(part)
    history = history_rows(source, keys, shape, ref=bronze)
    names = [*shape.captured_names, DELETED, "_start_lsn", "_commit_ts"]
    if empty:
        append(history.select(*[col(n) for n in names]), target)
    else:
        quoted = [quote_identifier(n) for n in names]
        on = " AND ".join(
            [f"t.{quote_identifier(k)} <=> s.{quote_identifier(k)}" for k in keys]
            + ["t._start_lsn = s._start_lsn"]
        )
        merge_into(
            target.sql,
            history,
            on=on,
            clauses=[
                f"WHEN NOT MATCHED THEN INSERT ({', '.join(quoted)}) "
                f"VALUES ({', '.join(f's.{n}' for n in quoted)})"
            ],
        )
    high = seen.get["high"]
    return (str(high) if high is not None else None), True
