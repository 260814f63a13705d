"""The MERGEs of one `apply_changes` call, over bronze pinned at one version (docs/silver.md).

Nothing is cached, so a session that refuses persist and cache (serverless) runs every write
(decision 1375).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mssql_cdc.core import Operation
from mssql_cdc.silver.facts_view import BronzeSnapshotFacts
from mssql_cdc.silver.images import (
    DELETE_FLAG,
    HIGH,
    BronzeShape,
    col,
    latest_images,
    snapshot_of,
)
from mssql_cdc.silver.merge import merge_images
from mssql_cdc.tables import TableRef, append, observe_aggregates

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Position", "SilverWriter"]

_SKIP_EMPTY_COMMITS = "spark.databricks.delta.skipRecordingEmptyCommits"


@dataclass(frozen=True, slots=True)
class Position:
    """Where silver stands in bronze: the columns apply_changes owns in its control row."""

    applied_lsn: str | None
    snapshot_lsn: str | None
    open_snapshot_lsn: str | None
    snapshot_wave: int | None


class SilverWriter:
    """Rebuild, incremental apply and open waves, each one write into silver at most.

    Into a silver that holds rows, a write is a MERGE. Nothing is cached (a serverless session
    refuses persist and cache): the MERGE's own job observes the highest change LSN among the
    images it takes, after one row of the source was looked at to skip a MERGE of nothing.
    Into a silver that holds no rows (`empty`), the MERGE would insert every image that keeps
    its key and do nothing else, so the write is one append of those images;
    the first write leaves silver with rows, and any later write of the call MERGEs.
    """

    def __init__(
        self,
        spark: SparkSession,
        target: TableRef,
        rows: DataFrame,
        shape: BronzeShape,
        keys: list[str],
        bronze: str,
        *,
        empty: bool,
    ) -> None:
        self.spark, self.target, self.rows, self.shape = spark, target, rows, shape
        self.keys, self.bronze = keys, bronze
        self.names = [*shape.captured_names, "_start_lsn", "_commit_ts"]
        self.changes = rows.where(col("_operation") != Operation.SNAPSHOT)
        self.empty = empty  # silver held no data file when this call looked at it
        self.written = False

    def rebuild(self, snapshot: str) -> Position:
        """Make silver the rows of `snapshot` and every change after it; no other key stays."""
        op0 = self.rows.where(
            (col("_operation") == Operation.SNAPSHOT) & (snapshot_of(self.shape) == snapshot)
        )
        after = self.changes.where(col("_start_lsn") > snapshot)
        high = self._merge(op0.unionByName(after), rebuild=True)
        return Position(max(snapshot, high or snapshot), snapshot, None, None)

    def incremental(self, before: Position) -> Position:
        """Apply the changes after `before`; with none, nothing is written."""
        pending = self.changes
        if before.applied_lsn is not None:
            pending = pending.where(col("_start_lsn") > before.applied_lsn)
        high = self._merge(pending, rebuild=False)
        if high is None:
            return before
        return replace(before, applied_lsn=max(high, before.applied_lsn or high))

    def waves(self, snapshot: str, facts: BronzeSnapshotFacts, position: Position) -> Position:
        """Apply the recorded waves of the open chunked snapshot not applied yet, in one MERGE.

        A chunk row is ranked with every later change of its key, so a key deleted after the
        chunk's stamp stays deleted; the newer-image rule keeps silver's newer rows.
        """
        from pyspark.sql import functions as F

        done = position.snapshot_wave if position.open_snapshot_lsn == snapshot else None
        waves = {w: c for w, c in facts.waves(snapshot).items() if done is None or w > done}
        if not waves:
            return replace(position, open_snapshot_lsn=snapshot, snapshot_wave=done)
        chunks = sorted({c for numbers in waves.values() for c in numbers})
        chunk_rows = self.rows.where(
            (col("_operation") == Operation.SNAPSHOT)
            & (col("_snapshot") == snapshot)
            & col("_chunk").isin(chunks)
        )
        chunk_keys = chunk_rows.select(*[col(k).alias(f"__k{i}") for i, k in enumerate(self.keys)])
        on = [col(k).eqNullSafe(F.col(f"__k{i}")) for i, k in enumerate(self.keys)]
        later = self.changes.where(col("_start_lsn") >= snapshot).join(
            chunk_keys.distinct(), on=on, how="left_semi"
        )
        self._merge(chunk_rows.unionByName(later), rebuild=False)
        return replace(position, open_snapshot_lsn=snapshot, snapshot_wave=max(waves))

    def _merge(self, source: DataFrame, *, rebuild: bool) -> str | None:
        """MERGE the latest images of `source`; return the highest change LSN among them.

        A rebuild MERGEs even no images (it empties silver); otherwise an empty `source` (one
        row looked at) means no MERGE. The images are not cached (a serverless session refuses
        persist): the MERGE's own job observes their highest change LSN.
        """
        from pyspark.sql import functions as F

        if self.empty:
            return self._append(source)
        if not rebuild and not source.select(col("_operation")).limit(1).collect():
            return None
        images = latest_images(source, self.keys, self.shape, ref=self.bronze)
        observed = observe_aggregates(images, "mssql_cdc_silver", F.max(HIGH).alias("high"))
        merge_images(
            self.spark, self.target, observed.frame, self.keys, self.names, rebuild=rebuild
        )
        self.written = True
        found = observed.values()
        if found is None:
            # Spark Connect reports no observation for a MERGE's source (a SQL command, not a
            # query whose response carries it): read the images' highest LSN once more.
            found = {"high": images.agg(F.max(HIGH)).collect()[0][0]}
        high = found["high"]
        return str(high) if high is not None else None

    def _append(self, source: DataFrame) -> str | None:
        """Append the latest images of `source` that keep their key to the empty silver; return
        the highest change LSN of `source`.

        The images are ranked inside the append's own job, not cached, and that job also
        observes the highest change LSN of `source` and its row count. Delta records no commit
        for an append of no rows (its default, skipRecordingEmptyCommits), so an empty `source`
        leaves silver as it is without a look first; a session that turned that
        off gets the look at one row first, as a rebuild from no rows must commit nothing. Only
        an empty silver takes this path, so a rerun after a crash that followed the append finds
        rows and MERGEs under the newer-image rule instead of appending them twice.
        """
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        skips_empty = str(self.spark.conf.get(_SKIP_EMPTY_COMMITS, "true")).strip().lower()
        if skips_empty != "true" and not source.select(col("_operation")).limit(1).collect():
            return None
        seen = Observation()
        change = F.when(col("_operation") != Operation.SNAPSHOT, col("_start_lsn"))
        observed = source.observe(seen, F.max(change).alias("high"), F.count(F.lit(1)).alias("n"))
        images = latest_images(observed, self.keys, self.shape, ref=self.bronze)
        kept = images.where(~F.col(DELETE_FLAG)).select(*[col(n) for n in self.names])
        append(kept, self.target)
        if not seen.get["n"]:
            return None  # no rows: nothing was committed
        self.written, self.empty = True, False
        high = seen.get["high"]
        return str(high) if high is not None else None
