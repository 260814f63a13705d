"""The recovery on Spark: the live generation a `to_delta` run continues, the one operation
that opens the next generation from a snapshot now, and the plan of `plan_recovery()`.

`open_next_generation` is what the automatic recovery, `CdcStream.resnapshot` and
`reconcile(repair=True)` all run: the pre-flight's steps over the facts table, the target and
the source, which open the next generation when the decision calls for it.

With on_data_loss="fail" the state file is only read, and a pending recovery is warned about;
with "resnapshot" the pre-flight runs first (docs/data-loss.md). A URI checkpoint has neither a
state file nor generations, and neither has a `/dbfs/...` one (decision 0502).
"""

from __future__ import annotations

import logging
from contextlib import closing
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from mssql_cdc.core import (
    GenerationPaths,
    GenerationState,
    Offset,
    StreamOffset,
    live_paths,
    read_state,
    spark_only,
)
from mssql_cdc.facts import RepairDetail, SnapshotFacts
from mssql_cdc.options import OnDataLoss, SourceConfig
from mssql_cdc.recovery.observer import open_observer
from mssql_cdc.recovery.plan import RecoveryPlan, plan_recovery
from mssql_cdc.recovery.preflight import RecoveryRequest, recover
from mssql_cdc.recovery.spark_steps import SparkRecoveryReads, SparkRecoveryWrites
from mssql_cdc.recovery.switch import switch_snapshot_due

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "ResnapshotResult",
    "live_generation",
    "open_next_generation",
    "plan_on_spark",
    "request_resnapshot",
]


class ResnapshotResult(TypedDict):
    """The generation a requested re-snapshot opened (`CdcStream.resnapshot`).

    Attributes:
        generation: the generation live now, the one just opened (1 or more).
        sink_app_id: the app_id its batches' facts rows carry, `<app_id>.g<generation>`.
        snapshot: where it starts: the snapshot's LSN and its commit time (`commit_ts` is ""
            when the source no longer knows it).
        checkpoint: its Spark checkpoint folder, `<checkpoint>/_generations/<generation>`
            under the one passed.
    """

    generation: int
    sink_app_id: str
    snapshot: Offset
    checkpoint: str


# The pre-flight's warnings share its logger, whichever module gives them.
log = logging.getLogger("mssql_cdc.recovery.preflight")
# The URI warning keeps the logger it had when CdcStream gave it, which log filters may name.
stream_log = logging.getLogger("mssql_cdc.pipeline.cdc_stream")


def live_generation(
    spark: SparkSession,
    config: SourceConfig,
    request: RecoveryRequest,
    *,
    on_data_loss: OnDataLoss,
    facts_table: str | None,
    snapshot_facts: SnapshotFacts | None,
) -> tuple[GenerationState, GenerationPaths]:
    """The generation a to_delta run continues: after the pre-flight with "resnapshot".

    `snapshot_facts`, when given, are the family's snapshot rows the mode lock has just read.

    Returns:
        Its state (generation 0 with no fields without a state file) and its paths.
    With "resnapshot" and the option snapshotOnSwitch, a switch ahead that adds, drops or
    retypes a column or changes the key opens the next generation from a snapshot first
    (recovery/switch.py).

    Raises:
        DataLossError: ("resnapshot") the anti-loop or duration guard refused, or the new
            snapshot was purged during its own read (the state then records failed_at).
        SchemaChangedError: (snapshotOnSwitch) a switch ahead retypes a bronze column to a type
            its values do not fit.
        ValueError: an invalid state file or offset log (StateFileError, ConfigError), or
            the path-sanity guard.
    """
    uri = spark_only(request.checkpoint)
    state = None if uri else read_state(request.checkpoint)
    if on_data_loss == "fail" and state and (state.recovering or state.failed_at):
        log.warning(
            "a recovery of %s is pending; run with on_data_loss='resnapshot' to finish it",
            request.target,
        )
    if on_data_loss == "resnapshot":
        if config.snapshot_on_switch and switch_snapshot_due(spark, config, request):
            # A switch is crossed once: the anti-loop interval of loss re-snapshots is not
            # for it.
            switched = replace(request, requested=True, interval_days=0.0)
            request_resnapshot(
                spark,
                config,
                switched,
                facts_table=facts_table or "",
                snapshot_facts=snapshot_facts,
            )
            snapshot_facts = None  # the snapshot wrote facts rows: read them again
        state = open_next_generation(
            spark, config, request, facts_table=facts_table or "", snapshot_facts=snapshot_facts
        )
    if uri:
        paths = _uri_paths(request, config)
    else:
        paths = live_paths(
            request.checkpoint, request.app_id, state, metrics_path=config.metrics_path
        )
    return state or GenerationState(), paths


def open_next_generation(
    spark: SparkSession,
    config: SourceConfig,
    request: RecoveryRequest,
    *,
    facts_table: str,
    snapshot_facts: SnapshotFacts | None = None,
    chunked_at: StreamOffset | None = None,
    repair: RepairDetail | None = None,
) -> GenerationState:
    """Run the recovery's steps now: open the next generation from a snapshot when the
    decision calls for it, which a requested one (`request.requested`) always does unless the
    stream has not started. A rerun after a crash finishes the same attempt.

    `snapshot_facts`, when given, are the family's snapshot rows the mode lock has just read.
    `chunked_at` opens a chunked snapshot at that offset instead of a new stamp, and `repair`
    is the plan its chunks are read in (`reconcile(repair=True)`).

    Returns:
        The live generation's state after the steps: the new one when one was opened,
        generation 0 with no fields when there is no state file.
    Raises:
        DataLossError: the anti-loop or duration guard refused, or the snapshot was purged
            during its own read (then the state records failed_at).
        ValueError: the mode lock, an invalid state file or offset log, the path-sanity guard.
    """
    reads = SparkRecoveryReads(
        spark, config, request.target, request.app_id, facts_table, snapshot_facts=snapshot_facts
    )
    writes = SparkRecoveryWrites(
        spark,
        config,
        request.target,
        request.app_id,
        facts_table,
        requested=request.requested,
        gap_deletes=request.gap_deletes,
        chunked_at=chunked_at,
        repair=repair,
        checkpoint=str(request.checkpoint),
    )
    with closing(open_observer(config)) as observer:
        return recover(request, reads, writes, observer)


def request_resnapshot(
    spark: SparkSession,
    config: SourceConfig,
    request: RecoveryRequest,
    *,
    facts_table: str,
    snapshot_facts: SnapshotFacts | None = None,
) -> ResnapshotResult:
    """Open the next generation from a new snapshot although nothing was lost, through the
    recovery's steps (`request.requested` must be set).

    Raises:
        ConfigError: the anti-loop guard (within the interval of the last re-snapshot), the
            mode lock, or a stream that has not started.
        DataLossError: the snapshot was purged during its own read, or the changes after the
            stream's start are lost after all (then this is the automatic recovery).
        ValueError: an invalid state file or offset log.
    """
    if not request.requested:
        raise ValueError("request_resnapshot needs a request with requested=True")
    state = open_next_generation(
        spark, config, request, facts_table=facts_table, snapshot_facts=snapshot_facts
    )
    paths = live_paths(request.checkpoint, request.app_id, state, metrics_path=config.metrics_path)
    if state.snapshot is None:  # decide() refuses a stream that has not started
        raise RuntimeError(f"{request.target}: a requested re-snapshot left generation 0 live")
    return {
        "generation": state.generation,
        "sink_app_id": paths.app_id,
        "snapshot": state.snapshot.to_json(),
        "checkpoint": paths.checkpoint,
    }


def _uri_paths(request: RecoveryRequest, config: SourceConfig) -> GenerationPaths:
    """A URI or /dbfs/ checkpoint (on_data_loss='fail' only) is generation 0 with no state
    file."""
    metrics = None if config.metrics_path is None else f"{config.metrics_path}/{request.app_id}"
    if metrics is None:
        stream_log.warning(
            "%s: only Spark reads checkpoint %s (a URI or /dbfs/...), so there is no default "
            "metrics folder; the stream runs "
            "without metrics and event files (set metricsPath to a local or Volume path)",
            request.target,
            request.checkpoint,
        )
    return GenerationPaths(0, request.checkpoint, request.app_id, metrics or "", "")


def plan_on_spark(
    spark: SparkSession, config: SourceConfig, request: RecoveryRequest, *, facts_table: str | None
) -> RecoveryPlan:
    """What the pre-flight would do now for `request`; writes nothing, reads no table rows.

    Raises:
        ValueError: what the pre-flight raises before deciding (state file, offset log,
            path-sanity guard).
    """
    reads = SparkRecoveryReads(spark, config, request.target, request.app_id, facts_table or "")
    with closing(open_observer(config)) as observer:
        return plan_recovery(request, reads, observer)
