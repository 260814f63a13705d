"""`delta_sink`: the `foreachBatch` writer, target append first, then one facts commit.

The per-batch protocol of docs/sink.md, 'What one micro-batch does, in order'. Both writes carry a
Delta transaction key whose version is the batch id, so a batch Spark replays after a crash at
any point writes nothing twice; the checks before them catch a checkpoint rewound under the
same app_id, which the keys would otherwise turn into silently skipped batches. The batch is
read once, by its append, which observes its aggregates; only a replay whose append Delta
skips reads it again, and nothing is cached (decision 1350); its facts row then counts bronze's
rows of the batch, which the source may have purged or skipped since (decision 1423).
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from mssql_cdc.core import EventRecord, StoreFiles, check_cleanable_folder, is_store_uri
from mssql_cdc.core import clock as _clock
from mssql_cdc.errors import ConfigError, is_data_loss
from mssql_cdc.facts import (
    BatchAggregates,
    FoldedMetrics,
    append_facts,
    batch_commit_metadata,
    batch_facts_metadata,
    batch_key,
    batch_row,
    bronze_batch_aggregates,
    facts_key,
    fold_metrics,
    last_batch,
    sink_id,
    source_event_rows,
    validate_app_id,
)
from mssql_cdc.options import is_uri, open_folder
from mssql_cdc.sink import metrics_dir as sink_files
from mssql_cdc.sink.bronze import append_batch
from mssql_cdc.sink.counts import aggregates_from_counts
from mssql_cdc.sink.micro_batch import aggregate, check_columns, read_partitions
from mssql_cdc.sink.observed import observe
from mssql_cdc.sink.state import LastBatch, already_recorded, rewound_error
from mssql_cdc.sink.state_warmer import StateWarmer
from mssql_cdc.tables import (
    TableRef,
    ensure_table,
    open_for_write,
    require_distinct,
    store_settings,
    table_ref,
    txn_version,
    writes_in_process,
)
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DeltaSink", "delta_sink"]

log = logging.getLogger("mssql_cdc.sink.writer")
# One DEBUG record as each step of a batch starts ("<batch id> <step>"), for profiling
# (bench/b1_jobs.py); while DEBUG is off each costs one level check.
phases = logging.getLogger("mssql_cdc.sink.phases")


def delta_sink(
    target: str,
    app_id: str,
    facts_table: str | None = None,
    *,
    metrics_path: str | os.PathLike[str] | None = None,
    generation: int = 0,
    counted_by_reader: bool = False,
) -> DeltaSink:
    """Return a `foreachBatch` function that appends each micro-batch to `target` exactly once.

    Args:
        target: the bronze table, a catalog name or a path (holding `/` or `:`).
        app_id: names the stream; with `generation` it gives the sink id (`A`, or `A.g<n>`),
            the Delta transaction id of every batch.
        facts_table: where each batch leaves its facts row and event rows; None writes none.
        metrics_path: the exact directory the stream's reader writes its metrics and event
            files to, which the driver and the executors reach: a local or FUSE path, or an
            object store's URI (`s3a://`, `s3://`, `gs://`, `abfss://`, `file:`) reached with
            the S3A settings of the batch's Spark session (docs/object-stores.md). The sink
            deletes the reader's files there, so it keeps a path resolved and refuses a file,
            the filesystem root, and the home or working folder or a parent.
        generation: the checkpoint generation (recovery builds the sink of generation n);
            a hand-wired sink keeps 0.
        counted_by_reader: each batch is the `mssql_cdc` source's output unchanged (no filter,
            no projection), so a replay whose append Delta skips may take its aggregates from
            the counts the reader's tasks write to `metrics_path` after a plain read, instead
            of an aggregate job; `to_delta` sets it. Where a task left no counts, the sink
            counts the batch itself. (A batch that is appended is counted by its append.)
    Returns:
        A callable `(df, batch_id) -> None` for `writeStream.foreachBatch`. Building it calls
        nothing in Spark. A batch interrupted by a BaseException that is no Exception (Ctrl-C)
        fails with a RuntimeError naming it, so the query ends instead of waiting.
    Raises:
        ConfigError (a ValueError): a bad app_id or generation, an empty or non-string table,
            facts_table equal to target, or a metrics_path that is a URI of another scheme,
            or a folder the sink may not clean (see metrics_path).
    """
    validate_app_id(app_id)
    sink = sink_id(app_id, generation)  # checks the generation too
    target_ref = table_ref(target, argument="target")
    facts_ref = None if facts_table is None else table_ref(facts_table, argument="facts_table")
    require_distinct(target=target, facts_table=facts_table)
    return DeltaSink(
        target=target_ref,
        app_id=app_id,
        generation=generation,
        sink_id=sink,
        facts_table=facts_ref,
        metrics_path=_metrics_dir(metrics_path),
        counted_by_reader=counted_by_reader is True,
    )


def _metrics_dir(value: str | os.PathLike[str] | None) -> Path | str | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise ConfigError(f"metrics_path={value!r}: pass a directory path as a string")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"metrics_path={value!r}: pass a non-empty directory path")
    if is_store_uri(text):
        return text.rstrip("/")
    if is_uri(text):
        raise ConfigError(
            f"metrics_path={text!r} is a URI the library cannot open; pass a local or FUSE path "
            "(such as /Volumes/<catalog>/<schema>/<volume>/...) or a URI of s3a, s3, gs, abfss "
            "or file, which the driver and every executor reach"
        )
    return check_cleanable_folder(text, what="metrics_path")


def _utc_now() -> datetime:
    return _clock.now().astimezone(UTC).replace(tzinfo=None)


class DeltaSink:
    """The `foreachBatch` function `delta_sink` returns; one object per running query.

    It remembers, across calls, the newest batch id it committed (the rewind check) and
    whether it opened its tables already (migrations run once).
    """

    def __init__(
        self,
        *,
        target: TableRef,
        app_id: str,
        generation: int,
        sink_id: str,
        facts_table: TableRef | None,
        metrics_path: Path | str | None,
        counted_by_reader: bool = False,
    ) -> None:
        self.target = target
        self.app_id = app_id
        self.generation = generation
        self.sink_id = sink_id
        self.facts_table = facts_table
        self.metrics_path = metrics_path
        self.counted_by_reader = counted_by_reader
        self._entered = False
        self._bronze_exists = False
        # the highest txnVersion bronze holds for the sink id; known after the first call
        self._appended: int | None = None
        self._appended_known = False
        self._last: LastBatch | None = None
        self._committed_any = False
        self._warned: set[str] = set()
        self._warmer: StateWarmer | None = None
        self._folder: StoreFiles | None = None  # metrics_path on a store, opened once

    def __repr__(self) -> str:
        return f"delta_sink({str(self.target)!r}, sink id {self.sink_id!r})"

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        started_at = _utc_now()
        if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
            raise ConfigError(f"{self!r}: batch_id={batch_id!r} must be an integer >= 0")
        phases.debug("%d enter", batch_id)
        check_columns(df, self.target)
        spark = df.sparkSession
        self._enter(spark)
        self._check_rewind(batch_id)
        if self.metrics_path is not None:
            sink_files.clear_dead_attempts(self.metrics_path, self._folder)
        try:
            self._write(spark, df, batch_id, started_at)
        except Exception:
            raise
        except BaseException as exc:
            # Py4J answers a foreachBatch call with an Exception only: any other BaseException
            # (Ctrl-C's KeyboardInterrupt, a failpoint's InjectedFault) would end its callback
            # thread unanswered and leave the query waiting for ever, so the batch fails.
            raise RuntimeError(
                f"{self!r}: batch {batch_id} was interrupted by {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            phases.debug("%d end", batch_id)

    def _enter(self, spark: SparkSession) -> None:
        """Step 1 of the sink's batch, first call only: open the tables (migrating them) and
        read `last`."""
        if self._entered:
            return
        created = False
        if self.facts_table is not None:
            created = ensure_table(spark, self.facts_table, "facts").created
        if isinstance(self.metrics_path, str):
            settings = store_settings(spark, self.metrics_path)
            self._folder = open_folder(self.metrics_path, settings)
        self._bronze_exists = open_for_write(spark, self.target, "bronze") is not None
        self._warmer = StateWarmer(spark)
        if self._bronze_exists:
            self._warmer.warm(self.target)
        if self.facts_table is not None:
            self._warm_facts()
            # a facts table created just now holds no row to read
            found = None if created else last_batch(spark, self.facts_table, self.sink_id)
            self._last = None if found is None else LastBatch(*found)
        self._entered = True

    def _warm(self, ref: TableRef) -> None:
        """After a commit to `ref`: compute its next append's Delta state in the background."""
        if self._warmer is not None:
            self._warmer.warm(ref)

    def _warm_facts(self) -> None:
        """A facts table committed to in process needs no Delta state in Spark."""
        if self.facts_table is not None and not writes_in_process(self.facts_table):
            self._warm(self.facts_table)

    def _check_rewind(self, batch_id: int) -> None:
        """Step 2 of the sink's batch: a batch older than the newest one recorded means a
        rewound checkpoint."""
        if self.facts_table is None or self._last is None:
            return
        if batch_id < self._last.batch_id:
            raise rewound_error(self.sink_id, batch_id, self._last.batch_id, self.facts_table)

    def _write(
        self, spark: SparkSession, df: DataFrame, batch_id: int, started_at: datetime
    ) -> None:
        held = self._bronze_holds(spark, batch_id)
        phases.debug("%d bronze", batch_id)
        agg = self._append(spark, df, batch_id, held=held)
        failpoint("sink.after_target_write")
        phases.debug("%d files", batch_id)
        scan = (
            sink_files.scan(self.metrics_path, self._folder)
            if self.metrics_path is not None
            else None
        )
        folded = fold_metrics(scan.ranges) if scan is not None else None
        if scan is not None and agg.rows > 0 and not scan.ranges:
            self._warn_once(
                "no-metrics",
                f"{self!r}: batch {batch_id} read {agg.rows} rows but {self.metrics_path} holds "
                "no metrics file; the directory is not shared between the executors and the "
                "driver, so the metric columns stay NULL. Use a path both reach (a Volume).",
            )
        records = list(scan.events) if scan is not None else []
        if self.facts_table is None:
            if records:
                self._warn_once(
                    "events",
                    f"{self!r}: the reader recorded {len(records)} event(s) "
                    f"({', '.join(sorted({r.event for r in records}))}); events need a facts "
                    "table: pass facts_table to keep them",
                )
        else:
            phases.debug("%d facts", batch_id)
            self._commit_facts(spark, batch_id, agg, folded, records, started_at)
        phases.debug("%d cleanup", batch_id)
        if scan is not None:
            sink_files.remove_files(scan.paths, self._folder)

    def _append(
        self, spark: SparkSession, df: DataFrame, batch_id: int, *, held: bool
    ) -> BatchAggregates:
        """Steps 4 to 6 of the sink's batch: the append observes the aggregates (one read).
        A batch bronze already holds (`held`: a replay after a crash past step 6) is not
        appended: it is read once more for its aggregates instead."""
        from pyspark.sql import functions as F

        if held:
            phases.debug("%d replay", batch_id)
            return self._replayed(spark, df, batch_id)
        observed = observe(df)
        rows = observed.frame.withColumn("_batch_id", F.lit(batch_id).cast("bigint"))
        key = batch_key(self.app_id, self.generation, batch_id)
        metadata = batch_commit_metadata(
            app_id=self.app_id, generation=self.generation, batch_id=batch_id
        )
        append_batch(spark, rows, self.target, key, metadata, exists=self._bronze_exists)
        self._bronze_exists = True
        self._appended = batch_id if self._appended is None else max(self._appended, batch_id)
        self._warm(self.target)
        agg = observed.aggregates()
        if agg is None:  # Delta skipped the append after all: nothing ran, nothing observed
            log.warning(
                "%r: batch %d was already in %s; its aggregates are read from the batch again",
                self,
                batch_id,
                self.target,
            )
            return self._replayed(spark, df, batch_id)
        return agg

    def _replayed(self, spark: SparkSession, df: DataFrame, batch_id: int) -> BatchAggregates:
        """A replay's aggregates: those of bronze's rows of the batch, which its append
        committed. The batch is still read again, for its reader's metrics
        files; a read that fails because CDC cleanup purged the range meanwhile, or that reads
        other rows than the append did (the range skipped with failOnDataLoss=false), changes
        nothing. Where bronze's commit is out of reach, the read's aggregates are written."""
        failed: Exception | None = None
        read: BatchAggregates | None = None
        try:
            read = self._reread(df)
        except Exception as exc:
            if not is_data_loss(exc):
                raise
            failed = exc
        found = bronze_batch_aggregates(spark, self.target, self.sink_id, batch_id)
        if found is None:
            if read is None:
                raise failed or RuntimeError(f"{self!r}: batch {batch_id} was not read")
            return read
        if read != found:
            log.warning(
                "%r: batch %d, which bronze already holds, %s; its facts row counts bronze's "
                "%d rows of it",
                self,
                batch_id,
                "reads other rows now" if failed is None else "can no longer be read",
                found.rows,
            )
        return found

    def _bronze_holds(self, spark: SparkSession, batch_id: int) -> bool:
        """Bronze already recorded this batch's transaction version: Delta would skip its
        append. Asked of the Delta log once per sink object (a replay follows a restart);
        after that the object knows what it appended."""
        if not self._appended_known:
            self._appended_known = True
            if self._bronze_exists:
                self._appended = txn_version(spark, self.target, self.sink_id)
        return self._appended is not None and batch_id <= self._appended

    def _reread(self, df: DataFrame) -> BatchAggregates:
        """A replay's aggregates from one more read of the batch. With reader counts: a plain
        read (its tasks rewrite their files) and the files' counts folded; else, or when they
        do not cover the batch, the aggregate job."""
        if not self.counted_by_reader or self.metrics_path is None:
            return aggregate(df)
        partitions = read_partitions(df)
        found = sink_files.scan(self.metrics_path, self._folder)
        counted = aggregates_from_counts(found.ranges, partitions)
        if counted is None:
            self._warn_once(
                "counts",
                f"{self!r}: the reader's metrics files in {self.metrics_path} do not hold the "
                "counts of every partition; the sink counts the batches itself",
            )
            return aggregate(df)
        return counted

    def _commit_facts(
        self,
        spark: SparkSession,
        batch_id: int,
        agg: BatchAggregates,
        folded: FoldedMetrics | None,
        records: list[EventRecord],
        started_at: datetime,
    ) -> None:
        """Steps 9 to 11 of the sink's batch: event rows, the replay check, then one facts
        commit."""
        assert self.facts_table is not None
        # written_at is stamped just before the commit; the event query below comes first
        events = source_event_rows(
            records,
            app_id=self.app_id,
            generation=self.generation,
            batch_id=batch_id,
            target=self.target.text,
            started_at=started_at,
            written_at=started_at,
        )
        if events:
            seen = already_recorded(spark, self.facts_table, self.sink_id, batch_id, events)
            events = [e for e in events if (e.event, e.min_lsn, e.detail) not in seen]
        end_lsn = folded.end_lsn if folded is not None else None
        last = self._last
        if (
            not self._committed_any
            and last is not None
            and batch_id == last.batch_id
            and last.end_lsn is not None
            and end_lsn is not None
            and last.end_lsn != end_lsn
        ):
            raise rewound_error(self.sink_id, batch_id, last.batch_id, self.facts_table)
        written_at = _utc_now()
        row = batch_row(
            app_id=self.app_id,
            generation=self.generation,
            batch_id=batch_id,
            target=self.target.text,
            aggregates=agg,
            metrics=folded,
            started_at=started_at,
            duration_ms=_millis(written_at - started_at),
            written_at=written_at,
        )
        events = [replace(e, written_at=written_at) for e in events]
        key = facts_key(self.app_id, self.generation, batch_id)
        marker = batch_facts_metadata(
            app_id=self.app_id, generation=self.generation, batch_id=batch_id
        )
        append_facts(spark, self.facts_table, [row, *events], key=key, user_metadata=marker)
        self._warm_facts()
        self._committed_any = True
        if last is None or batch_id > last.batch_id:
            self._last = LastBatch(batch_id, end_lsn)
        failpoint("sink.after_facts_write")

    def _warn_once(self, topic: str, message: str) -> None:
        if topic not in self._warned:
            self._warned.add(topic)
            log.warning(message)


def _millis(delta: timedelta) -> int:
    return int(delta // timedelta(milliseconds=1))
