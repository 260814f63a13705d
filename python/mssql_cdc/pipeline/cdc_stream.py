"""`stream(spark, options) -> CdcStream`: the one call that streams a table into Delta.

`CdcStream` holds the parsed options and calls the steps of the stages in their order: check
the arguments, check the snapshot mode lock, settle the live generation (the recovery), find
or take its start (the bootstrap snapshot), start the query. It decides nothing itself.
`to_delta` returns the running StreamingQuery at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Offset, check_space, check_writable, is_store_uri
from mssql_cdc.errors import ConfigError
from mssql_cdc.options import OnDataLoss, SnapshotMode, SourceConfig
from mssql_cdc.pipeline.arguments import check_to_delta
from mssql_cdc.pipeline.query_start import start_query
from mssql_cdc.recovery import (
    RecoveryPlan,
    ResnapshotResult,
    StreamArguments,
    check_recovery,
    check_started_stream,
    check_stream_owner,
    live_generation,
    plan_on_spark,
    request_resnapshot,
)
from mssql_cdc.tables import check_session, kind_of

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from mssql_cdc.facts import SnapshotFacts
    from mssql_cdc.snapshot import BackfillStatus

__all__ = ["CdcStream", "stream"]


def stream(spark: SparkSession, options: Mapping[str, object]) -> CdcStream:
    """Parse the source options once and return the stream they describe.

    Unknown option names are warned about once per process and otherwise ignored.

    Raises:
        ConfigError (a ValueError): `spark` is not a SparkSession, `options` not a mapping, or
            an option is missing or invalid; the message names it.
    """
    session = check_session(spark)
    if not isinstance(options, Mapping):
        raise ConfigError(
            f"options must be a mapping of option names to values (got {kind_of(options)}), "
            "such as {'captureInstance': 'dbo_orders', 'connectionString': ...}"
        )
    return CdcStream(session, SourceConfig.from_options(options), dict(options))


class CdcStream:
    """A configured CDC stream of one capture instance; build it with `stream()`."""

    def __init__(
        self, spark: SparkSession, config: SourceConfig, options: Mapping[str, object]
    ) -> None:
        self._spark = spark
        self.config = config
        self._options = dict(options)

    def __repr__(self) -> str:
        return f"CdcStream(capture_instance={self.config.capture_instance!r})"

    def _checked_room(self, args: StreamArguments) -> None:
        """Refuse a checkpoint or metrics folder this process cannot write, or whose disk is
        full, before anything is written there."""
        folders = [] if args.checkpoint_is_spark_only else [(args.checkpoint, "the checkpoint")]
        metrics = self.config.metrics_path
        if metrics and not is_store_uri(metrics):
            folders.append((metrics, "the metrics folder (option metricsPath)"))
        for path, what in folders:
            check_writable(path, what=what)
            check_space(path, what=what)

    @staticmethod
    def _checked_owner(args: StreamArguments) -> None:
        """Refuse another stream's checkpoint, from its files alone: before Spark is used."""
        if not args.checkpoint_is_spark_only:
            check_stream_owner(args.checkpoint, args.app_id, args.facts_table)

    def _checked_family(self, args: StreamArguments) -> SnapshotFacts | None:
        """Register the formats and check the snapshot mode lock; the family's facts read."""
        from mssql_cdc.snapshot import checked_family
        from mssql_cdc.source import register

        register(self._spark)
        return checked_family(
            self._spark,
            self.config,
            args.target,
            app_id=args.app_id,
            facts_table=args.facts_table,
            checkpoint=None if args.checkpoint_is_spark_only else args.checkpoint,
            mode=args.mode,
            bootstrap=args.bootstrap,
            resnapshot=args.on_data_loss == "resnapshot",
        )

    def to_delta(
        self,
        target: str,
        app_id: str,
        checkpoint: str,
        facts_table: str | None = None,
        *,
        trigger: Mapping[str, Any] | None = None,
        query_name: str | None = None,
        bootstrap: bool = False,
        on_data_loss: OnDataLoss = "fail",
        resnapshot_interval_days: float = 7.0,
        snapshot: SnapshotMode = "full",
        gap_deletes: bool = False,
    ) -> StreamingQuery:
        """Start streaming the capture instance into the Delta table `target`.

        Every argument is checked before anything is read, written or started. With
        on_data_loss="resnapshot", a purged range found before the query starts is
        re-snapshotted into a new checkpoint generation first (docs/data-loss.md).

        Args:
            target: the bronze Delta table, a catalog name or a path (holding `/` or `:`).
            app_id: names the stream: the Delta transaction id of its batches and the key of
                its facts rows; keep it for the life of the checkpoint.
            checkpoint: Spark's checkpoint folder. A URI is accepted only with
                on_data_loss="fail" (Python cannot open it); "resnapshot" needs a local path or a
                Volume, which holds the generations and their state file.
            facts_table: the Delta table of facts and event rows (docs/tables.md); None
                writes none. Needed by on_data_loss="resnapshot" and snapshot="chunked".
            trigger: one keyword argument of `DataStreamWriter.trigger`:
                {"processingTime": "10 seconds"}, {"availableNow": True} or {"once": True};
                None keeps Spark's default. `continuous` runs no foreachBatch sink: refused.
                A processingTime Spark's parser would refuse is refused before anything runs.
            query_name: the query's name; None names it after the sink id (`app_id`, or
                `app_id.g<n>` in generation n).
            bootstrap: in generation 0, start from a snapshot of the table, taken now unless
                the target or the facts hold one already (docs/snapshots.md); excludes the
                startingLsn option.
            on_data_loss: "fail" stops the query with DataLossError when CDC cleanup purged
                changes it had not read; "resnapshot" checks before the query starts and
                re-snapshots into a new generation (docs/data-loss.md).
            resnapshot_interval_days: the anti-loop guard: at most one automatic re-snapshot
                within this many days (0 to 36,500; 0 re-snapshots now).
            snapshot: how a bootstrap or re-snapshot reads the table: "full" in one read
                before the query starts, "chunked" by `backfill()` beside the running stream.
            gap_deletes: with on_data_loss="resnapshot", when a re-snapshot completes (full:
                at once; chunked: in the `backfill()` that completes it), append a delete row
                at its LSN for each key bronze held that the snapshot lacks, marked by
                `_snapshot` (docs/data-loss.md, 'Deletes across a gap').
        Returns:
            The running StreamingQuery, at once. Errors of the running query fail it rather
            than this call: DataLossError when changes are purged before it reads them (with
            on_data_loss="fail"), SchemaChangedError when the captured columns change in a way
            the source or bronze refuses (docs/source.md, docs/sink.md).
        Raises:
            ConfigError (a ValueError): an invalid argument (a wrong on_data_loss or snapshot
                among them), checkpoint, state file or offset log, or a snapshot of the other
                mode still open (docs/snapshots.md); raised before anything is written or
                started.
            ValueError: a snapshot is due but the capture instance has no LSN to stamp it
                with yet; retry once the capture job has run.
            DataLossError: with on_data_loss="resnapshot", the anti-loop or duration guard
                refused a re-snapshot, or the new snapshot was purged during its own read.
            SchemaChangedError: with the option snapshotOnSwitch, a capture-instance switch
                ahead retypes a bronze column to a type its values do not fit.
        """
        args = check_to_delta(
            self.config,
            self._options,
            target=target,
            app_id=app_id,
            checkpoint=checkpoint,
            facts_table=facts_table,
            bootstrap=bootstrap,
            on_data_loss=on_data_loss,
            interval_days=resnapshot_interval_days,
            mode=snapshot,
            trigger=trigger,
            query_name=query_name,
            gap_deletes=gap_deletes,
        )
        from mssql_cdc.snapshot import generation_start

        self._checked_room(args)
        self._checked_owner(args)
        facts_rows = self._checked_family(args)
        state, paths = live_generation(
            self._spark,
            self.config,
            args.recovery_request(self.config),
            on_data_loss=args.on_data_loss,
            facts_table=args.facts_table,
            snapshot_facts=facts_rows,
        )
        start = generation_start(
            self._spark,
            self.config,
            args.target,
            state=state,
            app_id=args.app_id,
            facts_table=args.facts_table,
            bootstrap=args.bootstrap,
            mode=args.mode,
        )
        return start_query(self._spark, self.config, args, paths, start)

    def snapshot(
        self,
        target: str,
        *,
        resnapshot: bool = False,
        app_id: str | None = None,
        facts_table: str | None = None,
    ) -> Offset:
        """Take a full snapshot of the table into `target`, or find the newest one.

        The rows are appended to `target` in one Delta commit, stamped with the LSN recorded
        before the read (docs/snapshots.md). No facts row is written.

        Args:
            target: the bronze Delta table, a catalog name or a path.
            resnapshot: take a new snapshot even when `target` holds one; False returns the
                newest known snapshot and reads nothing when there is one.
            app_id: with `facts_table`, the stream whose snapshot mode lock is checked first;
                pass both or neither.
            facts_table: with `app_id`, the facts table that holds the stream's snapshots.
        Returns:
            The snapshot's offset: its LSN and its commit time ("" when unknown).
        Raises:
            ConfigError (a ValueError): an invalid argument, app_id without facts_table or
                the reverse, or a chunked snapshot of the stream still open (the mode lock).
            ValueError: the capture instance has no LSN to stamp the snapshot with yet; retry
                once the capture job has run.
        """
        from mssql_cdc.snapshot import take_full

        result = take_full(
            self._spark,
            self.config,
            target,
            kind="manual",
            generation=0,
            new=resnapshot,
            app_id=app_id,
            facts_table=facts_table,
        )
        return result.offset.to_json()

    def seed(
        self,
        source_table: str | DataFrame,
        target: str,
        app_id: str,
        checkpoint: str,
        facts_table: str,
        *,
        at_lsn: str | None = None,
        as_of: str | datetime | None = None,
        allow_missing_columns: bool = False,
        reseed: bool = False,
    ) -> Offset:
        """Start a new stream from a copy another tool loaded at `at_lsn`: its rows become
        the bootstrap snapshot in `target`, which `to_delta(..., bootstrap=True)` with the same
        arguments then streams on from (docs/snapshots.md, 'Starting from an existing copy').

        Args:
            source_table: the copy, a Delta table (name or path) or a DataFrame, with exactly
                the instance's columns.
            at_lsn: the LSN the copy holds every change up to, and none after.
            as_of: instead of `at_lsn`: that LSN, or the copy's commit time (a datetime, naive
                UTC), mapped to the newest source commit at or before it.
            allow_missing_columns: let the copy lack nullable columns that are not keys; they
                are NULL in bronze.
            reseed: seed this new stream into a bronze that holds rows already; the copy
                becomes its newest whole snapshot.
        Returns:
            The snapshot's offset: the copy's LSN and its commit time ("" when unknown).
        Raises:
            ConfigError (a ValueError): a bad LSN or time, a missing or non-Delta copy, other
                columns, an LSN above the newest, or a stream already started; nothing written.
            DataLossError: cleanup deleted changes after the LSN (names it and min_lsn).
        """
        from mssql_cdc.snapshot import seed

        return seed(
            self._spark,
            self.config,
            source_table,
            target,
            app_id,
            checkpoint,
            facts_table,
            at_lsn,
            as_of=as_of,
            allow_missing_columns=allow_missing_columns,
            reseed=reseed,
        ).offset.to_json()

    def backfill(
        self,
        target: str,
        *,
        app_id: str,
        facts_table: str,
        chunk_rows: int | None = None,
        max_waves: int | None = None,
        max_seconds: float | None = None,
        min_headroom_hours: float | None = None,
        target_wave_seconds: float | None = None,
    ) -> BackfillStatus:
        """Read waves of the stream's newest open chunked snapshot into `target`, and complete
        it after its last chunk (docs/snapshots.md).

        Each wave reads the next chunks at a new stamp and appends them in one commit; call
        again while the state is "running", beside the running stream.

        Args:
            target: the bronze Delta table the chunked snapshot belongs to.
            app_id: the stream whose snapshot is read (the to_delta `app_id`).
            facts_table: the stream's facts table, which holds the open, the plan and the
                chunks.
            chunk_rows: the rows of a chunk when the first call plans them (None: 1,000,000;
                at most 2,147,483,647); later calls keep the stored plan and warn about another
                value.
            max_waves: stop after this many waves (1 to 2,147,483,647); None for no limit.
            max_seconds: start no further wave once this many seconds have passed (above 0,
                at most a year: 31,536,000); None for no limit. At least one wave runs.
            min_headroom_hours: pause while the stream's retention headroom is below this
                many hours (0 to 874,913, SQL Server's longest retention); None never pauses.
            target_wave_seconds: a time budget per wave (above 0, at most 31,536,000): each
                wave after the first reads as many chunks as the waves measured in this call
                say fit in it (at most twice, at least half the previous wave's), and the next
                wave is read and appended while the previous one's facts rows are written (two
                waves in flight); None reads `numPartitions` chunks per wave, one wave at a
                time.
        Returns:
            The status: `state` "done", "running" (call again), "waiting_headroom",
            "waiting_metrics" or "no_snapshot", with the chunks done and in all.
        Raises:
            ConfigError (a ValueError): an invalid argument, a full snapshot of the stream
                still open (the mode lock), the newest chunked snapshot belongs to another
                target, or a stamp below the snapshot's LSN (a secondary behind the primary).
            SchemaChangedError: the table's unique key is no longer the one the snapshot was
                opened on; take a new snapshot (`resnapshot`).
        """
        from mssql_cdc.snapshot import backfill

        return backfill(
            self._spark,
            self.config,
            target,
            app_id=app_id,
            facts_table=facts_table,
            chunk_rows=chunk_rows,
            max_waves=max_waves,
            max_seconds=max_seconds,
            min_headroom_hours=min_headroom_hours,
            target_wave_seconds=target_wave_seconds,
        )

    def resnapshot(
        self,
        target: str,
        app_id: str,
        checkpoint: str,
        facts_table: str,
        *,
        resnapshot_interval_days: float = 7.0,
        snapshot: SnapshotMode = "full",
    ) -> ResnapshotResult:
        """Re-snapshot the stream on purpose: open its next generation from a new snapshot
        although CDC lost nothing, through the automatic recovery's crash-safe steps.

        Stop the stream's query first; the next `to_delta` with the same arguments starts the
        new generation. The `snapshot_open` row (and a full snapshot's `resnapshot` row) carry
        `"requested": true` in `detail` and no lost interval (docs/data-loss.md, 'A requested
        re-snapshot'). A rerun after a crash finishes the same attempt without a second read.

        Args:
            target: the stream's bronze table, as to_delta takes it.
            app_id: the stream's app_id, as to_delta takes it.
            checkpoint: the stream's checkpoint, as to_delta takes it.
            facts_table: the stream's facts table, as to_delta takes it.
            resnapshot_interval_days: the anti-loop guard: refused within this many days of
                the stream's last re-snapshot or failed attempt; 0 re-snapshots now.
            snapshot: "full" reads the table now; "chunked" opens a chunked snapshot for
                backfill() beside the running stream.
        Returns:
            The generation now live, its sink app_id, its checkpoint and its snapshot offset.
        Raises:
            ConfigError (a ValueError): an invalid argument, the anti-loop guard, the mode
                lock, or a stream that has not started (nothing to re-snapshot).
            DataLossError: the new snapshot was purged during its own read (the state then
                records failed_at), or changes after the stream's position are already lost.
        """
        args = check_recovery(
            self.config,
            self._options,
            target,
            app_id,
            checkpoint,
            facts_table,
            resnapshot_interval_days,
            snapshot,
            False,
        )
        check_started_stream(args.checkpoint, args.app_id)
        self._checked_owner(args)
        facts_rows = self._checked_family(args)
        request = replace(args.recovery_request(self.config), requested=True)
        return request_resnapshot(
            self._spark,
            self.config,
            request,
            facts_table=args.facts_table or "",
            snapshot_facts=facts_rows,
        )

    def plan_recovery(
        self,
        target: str,
        app_id: str,
        checkpoint: str,
        facts_table: str,
        *,
        resnapshot_interval_days: float = 7.0,
        snapshot: SnapshotMode = "full",
        bootstrap: bool = False,
    ) -> RecoveryPlan:
        """What to_delta(..., on_data_loss="resnapshot") with these arguments would do now.

        Writes nothing, reads no table rows and starts no query (docs/data-loss.md).

        Raises:
            ConfigError (a ValueError): what to_delta would raise before deciding (a wrong
                snapshot mode among them).
        """
        args = check_recovery(
            self.config,
            self._options,
            target,
            app_id,
            checkpoint,
            facts_table,
            resnapshot_interval_days,
            snapshot,
            bootstrap,
        )
        self._checked_owner(args)
        return plan_on_spark(
            self._spark,
            self.config,
            args.recovery_request(self.config),
            facts_table=args.facts_table,
        )
