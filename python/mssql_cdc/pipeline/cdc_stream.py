"""`stream(spark, options) -> CdcStream`: the one call that streams a table into Delta.

`CdcStream` holds the parsed options and calls plain functions in a fixed order (decision 0503):
check the arguments, register the formats, check the mode lock, read the state file, recover
(with `on_data_loss="resnapshot"`), find or take the generation's start, start the query. It
has no logic of its own beyond that order. `to_delta` returns the running StreamingQuery at
once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import lsn
from mssql_cdc.core.checkpoint import GenerationPaths, GenerationState, live_paths, read_state
from mssql_cdc.core.offsets import Offset
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts.family import SnapshotFacts
from mssql_cdc.facts.keys import sink_id
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.pipeline.arguments import ToDeltaArgs, check_to_delta
from mssql_cdc.recovery.observer import open_observer
from mssql_cdc.recovery.plan import RecoveryPlan, plan_recovery
from mssql_cdc.recovery.preflight import RecoveryRequest, recover
from mssql_cdc.recovery.spark_steps import SparkRecoveryReads, SparkRecoveryWrites

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from mssql_cdc.snapshot.backfill import BackfillStatus

__all__ = ["CdcStream", "stream"]

log = logging.getLogger("mssql_cdc.pipeline.cdc_stream")
recovery_log = logging.getLogger("mssql_cdc.recovery.preflight")


def stream(spark: SparkSession, options: Mapping[str, object]) -> CdcStream:
    """Parse the source options once and return the stream they describe.

    Unknown option names are warned about once per process and otherwise ignored.

    Raises:
        ConfigError (a ValueError): an option is missing or invalid; the message names it.
    """
    return CdcStream(spark, SourceConfig.from_options(options), dict(options))


def _uri_paths(args: ToDeltaArgs, config: SourceConfig) -> GenerationPaths:
    """A URI checkpoint (on_data_loss='fail' only) is generation 0 with no state file."""
    metrics = None if config.metrics_path is None else f"{config.metrics_path}/{args.app_id}"
    if metrics is None:
        log.warning(
            "%s: checkpoint %s is a URI, so there is no default metrics folder; the stream runs "
            "without metrics and event files (set metricsPath to a local or Volume path)",
            args.target,
            args.checkpoint,
        )
    return GenerationPaths(0, args.checkpoint, args.app_id, metrics or "", "")


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

    def _world(
        self, args: ToDeltaArgs, facts_rows: SnapshotFacts | None = None
    ) -> tuple[RecoveryRequest, SparkRecoveryReads, SparkRecoveryWrites]:
        request = RecoveryRequest(
            target=args.target,
            app_id=args.app_id,
            checkpoint=args.checkpoint,
            mode=args.mode,
            bootstrap=args.bootstrap,
            starting_lsn=self._explicit_start(),
            interval_days=args.interval_days,
            duration_guard=self.config.snapshot_duration_guard,
            metrics_path=self.config.metrics_path,
        )
        facts = args.facts_table or ""
        reads = SparkRecoveryReads(
            self._spark, self.config, args.target, args.app_id, facts, snapshot_facts=facts_rows
        )
        writes = SparkRecoveryWrites(self._spark, self.config, args.target, args.app_id, facts)
        return request, reads, writes

    def _explicit_start(self) -> str | None:
        start = self.config.starting_lsn
        return None if start in ("earliest", "latest") else str(start)

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
        on_data_loss: str = "fail",
        resnapshot_interval_days: float = 7.0,
        snapshot: str = "full",
    ) -> StreamingQuery:
        """Start streaming the capture instance into the Delta table `target`.

        With on_data_loss="resnapshot", a purged range found before the query starts is
        re-snapshotted into a new checkpoint generation first (docs/data-loss.md).

        Returns:
            The running StreamingQuery, at once.
        Raises:
            ConfigError (a ValueError): invalid arguments, checkpoint, state file or offset
                log, or a snapshot of the other mode still open; nothing written or started.
            DataLossError: the anti-loop guard refused a second re-snapshot, or the snapshot
                was purged during its own read.
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
        )
        from mssql_cdc.facts import family_cache
        from mssql_cdc.snapshot import full as snapshots
        from mssql_cdc.source.formats import register

        register(self._spark)
        facts_rows = None
        if args.facts_table is not None and (args.bootstrap or args.on_data_loss == "resnapshot"):
            # One read of the family's snapshot rows serves the lock and the pre-flight; while
            # only micro-batches committed facts since the last call, it needs no Spark job.
            facts_rows = family_cache.preflight_facts(
                self._spark,
                args.facts_table,
                args.app_id,
                checkpoint=None if args.checkpoint_is_uri else args.checkpoint,
            )
            snapshots.check_mode_lock(
                self._spark,
                self.config,
                args.target,
                mode=args.mode,
                app_id=args.app_id,
                facts_table=args.facts_table,
                facts=facts_rows,
            )
        state = None if args.checkpoint_is_uri else read_state(args.checkpoint)
        if args.on_data_loss == "fail" and state and (state.recovering or state.failed_at):
            recovery_log.warning(
                "a recovery of %s is pending; run with on_data_loss='resnapshot' to finish it",
                args.target,
            )
        if args.on_data_loss == "resnapshot":
            request, reads, writes = self._world(args, facts_rows)
            observer = open_observer(self.config)
            try:
                state = recover(request, reads, writes, observer)
            finally:
                observer.close()
        paths = (
            _uri_paths(args, self.config)
            if args.checkpoint_is_uri
            else live_paths(
                args.checkpoint, args.app_id, state, metrics_path=self.config.metrics_path
            )
        )
        start = self._start(args, state or GenerationState())
        return self._start_query(args, paths, start)

    def _start(self, args: ToDeltaArgs, state: GenerationState) -> str | None:
        """The generation's start, taking the bootstrap snapshot in generation 0."""
        if state.generation > 0:
            if state.snapshot is None:  # read_state refuses such a file
                raise RuntimeError(f"{args.target}: generation {state.generation} has no snapshot")
            return str(state.snapshot.lsn)
        if not args.bootstrap:
            return None
        from mssql_cdc.snapshot import chunked_open as chunked
        from mssql_cdc.snapshot import full as snapshots

        if args.mode == "chunked":
            if args.facts_table is None:  # check_to_delta refused this already
                raise ConfigError("snapshot='chunked' needs a facts_table")
            # Start from the newest known snapshot (a full bootstrap's included), or a second
            # bootstrap would open and lock out full runs again (docs/snapshots.md).
            known = snapshots.newest_known_snapshot(
                self._spark,
                self.config,
                args.target,
                app_id=args.app_id,
                facts_table=args.facts_table,
            )
            if known is not None:
                return str(known.lsn)
            opened = chunked.open_chunked(
                self._spark,
                self.config,
                args.target,
                kind="bootstrap",
                generation=0,
                app_id=args.app_id,
                facts_table=args.facts_table,
            )
            return str(opened.lsn)
        taken = snapshots.take_full(
            self._spark,
            self.config,
            args.target,
            kind="bootstrap",
            generation=0,
            new=False,
            app_id=args.app_id,
            facts_table=args.facts_table,
        )
        if args.facts_table is not None:
            snapshots.write_completion(
                self._spark,
                args.facts_table,
                app_id=args.app_id,
                generation=0,
                kind="bootstrap",
                target=args.target,
                snapshot=taken,
            )
        return str(taken.offset.lsn)

    def _start_query(
        self, args: ToDeltaArgs, paths: GenerationPaths, start: str | None
    ) -> StreamingQuery:
        from mssql_cdc.sink.writer import delta_sink

        metrics = paths.metrics_path or None
        sink = delta_sink(
            args.target,
            args.app_id,
            args.facts_table,
            metrics_path=metrics,
            generation=paths.generation,
            counted_by_reader=True,
        )
        # The generation's start and metrics folder replace any the caller gave.
        reader = replace(
            self.config,
            starting_lsn=self.config.starting_lsn if start is None else lsn.normalize(start),
            metrics_path=metrics,
        )
        writer = (
            self._spark.readStream.format("mssql_cdc")
            .options(**reader.to_options())
            .load()
            .writeStream.foreachBatch(_answerable(sink))
            .option("checkpointLocation", paths.checkpoint)
            .queryName(args.query_name or sink_id(args.app_id, paths.generation))
        )
        if args.trigger:
            writer = writer.trigger(**args.trigger)
        return writer.start()

    def snapshot(
        self,
        target: str,
        *,
        resnapshot: bool = False,
        app_id: str | None = None,
        facts_table: str | None = None,
    ) -> Offset:
        """Take a full snapshot of the table into `target`, or find the newest one.

        Without `resnapshot`, an existing snapshot of `target` is returned and nothing is
        read. With `app_id` and `facts_table` the mode lock is checked first.

        Returns:
            The snapshot's offset: its LSN and commit time.
        Raises:
            ConfigError (a ValueError): invalid arguments, or a chunked snapshot still open.
        """
        from mssql_cdc.snapshot import full as snapshots

        result = snapshots.take_full(
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
    ) -> BackfillStatus:
        """Read the waves of the newest open chunked snapshot (see mssql_cdc.snapshot.backfill)."""
        from mssql_cdc.snapshot.backfill import backfill

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
        )

    def plan_recovery(
        self,
        target: str,
        app_id: str,
        checkpoint: str,
        facts_table: str,
        *,
        resnapshot_interval_days: float = 7.0,
        snapshot: str = "full",
        bootstrap: bool = False,
    ) -> RecoveryPlan:
        """What to_delta(..., on_data_loss="resnapshot") with these arguments would do now.

        Writes nothing, reads no table rows and starts no query.

        Raises:
            ConfigError (a ValueError): what to_delta would raise before deciding.
        """
        args = check_to_delta(
            self.config,
            self._options,
            target=target,
            app_id=app_id,
            checkpoint=checkpoint,
            facts_table=facts_table,
            bootstrap=bootstrap,
            on_data_loss="resnapshot",
            interval_days=resnapshot_interval_days,
            mode=snapshot,
        )
        request, reads, _ = self._world(args)
        observer = open_observer(self.config)
        try:
            return plan_recovery(request, reads, observer)
        finally:
            observer.close()


def _answerable(sink: Callable[[DataFrame, int], None]) -> Callable[[DataFrame, int], None]:
    """`sink` as Spark calls it through Py4J, which answers only an `Exception`: any other
    BaseException (a failpoint's InjectedFault, KeyboardInterrupt) would end Py4J's callback
    thread unanswered and leave the query waiting forever, so it fails the batch instead."""

    def call(df: DataFrame, batch_id: int) -> None:
        try:
            sink(df, batch_id)
        except Exception:
            raise
        except BaseException as exc:
            raise RuntimeError(
                f"batch {batch_id} was interrupted by {type(exc).__name__}: {exc}"
            ) from exc

    return call
