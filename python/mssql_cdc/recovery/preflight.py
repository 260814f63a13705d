"""The recovery pre-flight: gather what is observed, let the native decision choose, act on it.

docs/data-loss.md, 'What happens on a loss', is what it does. `gather` reads in a fixed order
(state, live paths, the checkpoint's last committed offset, the family's snapshot rows, the live
sink id's batches, the target's newest snapshots, then the source); `decide_now` calls
`resolve_start`'s answer into `decide`; `recover` raises on `blocked`, returns on `none` and
performs the re-snapshot step by step, each durable write followed by its failpoint. Every
state write is a compare-and-set against the state this round read: when another run changed
it meanwhile, the round ends and the pre-flight gathers and decides again (decision 0615).
What it reads and writes beyond the state file arrives through two narrow Protocols, so the
order of work is tested without Spark. A re-snapshot first finishes the generation it leaves:
a batch bronze holds without its facts row gets that row from bronze (decision 1423).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from mssql_cdc.core import (
    CompletionRow,
    DecideInputs,
    Decision,
    DurationGuard,
    Estimate,
    GenerationPaths,
    GenerationState,
    Mode,
    Observation,
    OpenRow,
    Progress,
    StartInputs,
    StartResult,
    StreamOffset,
    conclude,
    decide,
    error_from,
    estimate_snapshot,
    has_metadata,
    has_range,
    last_processed_offset,
    live_paths,
    loss_error,
    lsn,
    read_state,
    replace_state,
    report,
    resolve_start,
)
from mssql_cdc.core import clock as _clock
from mssql_cdc.errors import NativeStateError
from mssql_cdc.facts import BatchSample
from mssql_cdc.recovery.observer import SourceObserver
from mssql_cdc.testing import failpoint

__all__ = [
    "BatchSample",
    "DecisionBasis",
    "FamilyRows",
    "RecoveryReads",
    "RecoveryRequest",
    "RecoveryWrites",
    "StartingSnapshot",
    "decide_now",
    "gather",
    "now_text",
    "observe",
    "observed_retention_hours",
    "recover",
]

log = logging.getLogger("mssql_cdc.recovery.preflight")


@dataclass(frozen=True, slots=True)
class FamilyRows:
    """The stream family's snapshot rows in the facts table (one query)."""

    opens: tuple[OpenRow, ...] = ()
    completions: tuple[CompletionRow, ...] = ()
    full_timings: tuple[tuple[int, int], ...] = ()  # (rows, duration_ms), newest first


@dataclass(frozen=True, slots=True)
class StartingSnapshot:
    """The snapshot a new generation starts from; rows and times only for one read now."""

    offset: StreamOffset
    rows: int | None = None  # rows read; None for an open chunked or a reused snapshot
    started_at: datetime | None = None  # naive UTC; None unless read now
    duration_ms: int | None = None  # None unless read now
    read_now: bool = False  # False when an existing snapshot was found instead


class RecoveryReads(Protocol):
    """What the pre-flight reads of the facts table and the target (no table rows)."""

    def family(self) -> FamilyRows: ...
    def live_batches(self, sink_id: str) -> bool: ...
    def newest_whole(self) -> StreamOffset | None: ...
    def newest_known(self) -> StreamOffset | None: ...
    def batch_samples(self) -> tuple[BatchSample, ...]: ...


class RecoveryWrites(Protocol):
    """The durable steps of a re-snapshot besides the state file (docs/data-loss.md step 4)."""

    def finish_last_batch(self, state: GenerationState) -> None: ...

    def take_full(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StartingSnapshot: ...
    def open_chunked(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StreamOffset: ...
    def write_event(
        self,
        generation: int,
        snapshot: StartingSnapshot,
        lost_from_ts: str | None,
        lost_to_ts: str | None,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class RecoveryRequest:
    """The arguments of the to_delta call or plan_recovery() that runs the pre-flight."""

    target: str
    app_id: str
    checkpoint: str  # absolute, checked by check_checkpoint_path
    mode: Mode = "full"
    bootstrap: bool = False
    starting_lsn: str | None = None  # an explicit startingLsn; None for earliest or latest
    interval_days: float = 7.0
    duration_guard: DurationGuard = "warn"
    metrics_path: str | None = None
    requested: bool = False  # CdcStream.resnapshot(): a re-snapshot without a loss
    gap_deletes: bool = False  # to_delta(gap_deletes=True): the completion derives deletes


@dataclass(frozen=True, slots=True)
class DecisionBasis:
    """Everything the decision looks at, in the order it was read.

    The target's snapshots are Spark queries that take seconds, so they are read only when
    the answer can matter: the newest known one when the start may be the bootstrap
    snapshot (`newest_known`, else None), the newest whole one by `decide_now` after a loss.
    """

    state: GenerationState
    paths: GenerationPaths
    start: StartResult
    family: FamilyRows
    newest_known: StreamOffset | None
    observation: Observation


def observed_retention_hours(
    samples: Sequence[BatchSample], *, now: datetime, days: float = 7.0
) -> float | None:
    """The smallest `source_max_commit_ts - retention_watermark_ts` of the last `days`, in
    hours; None without such a sample (docs/data-loss.md, 'Full or chunked re-snapshots')."""
    since = now.astimezone(UTC).replace(tzinfo=None) - timedelta(days=days)
    spans = [
        (s.source_max_commit_ts - s.retention_watermark_ts).total_seconds() / 3600.0
        for s in samples
        if s.written_at >= since
        and s.source_max_commit_ts is not None
        and s.retention_watermark_ts is not None
    ]
    return min(spans) if spans else None


def now_text() -> str:
    """The library clock as the decision takes it: ISO-8601 UTC seconds with +00:00."""
    return _clock.now().replace(microsecond=0).isoformat()


def observe(
    source: SourceObserver, start: StreamOffset | None, *, instances: bool = False
) -> Observation:
    """max_lsn, then the instances only when there is a range after `start` to test (or
    always with `instances`, for a requested re-snapshot that tests snapshots it may reuse)."""
    max_lsn = source.max_lsn()
    if not instances and (start is None or not has_range(start, max_lsn)):
        return Observation(max_lsn=max_lsn)
    return Observation(max_lsn=max_lsn, instances=source.instances())


def gather(request: RecoveryRequest, reads: RecoveryReads, source: SourceObserver) -> DecisionBasis:
    """Read what the decision needs, in the order the module docstring lists.

    Raises:
        StateFileError / ConfigError (ValueErrors): an invalid state file or offset log, or
            the path-sanity guard (facts show batches Spark's checkpoint does not).
    """
    state = read_state(request.checkpoint) or GenerationState()
    paths = live_paths(request.checkpoint, request.app_id, state, metrics_path=request.metrics_path)
    last = last_processed_offset(paths.checkpoint)
    committed = last.offset() if last is not None else None
    metadata = has_metadata(paths.checkpoint)
    family = reads.family()
    batches = committed is None and not metadata and reads.live_batches(paths.app_id)
    # resolve_start takes the newest known snapshot only after recovering, a committed batch
    # and a generation > 0 (docs/data-loss.md, 'What happens on a loss', step 1).
    bootstrap_start = (
        request.bootstrap
        and state.generation == 0
        and state.recovering is None
        and committed is None
    )
    newest_known = reads.newest_known() if bootstrap_start else None
    start = resolve_start(
        StartInputs(
            state=state,
            last_committed=committed,
            has_metadata=metadata,
            live_batches_in_facts=batches,
            bootstrap=request.bootstrap,
            starting_lsn=request.starting_lsn,
            newest_known=newest_known,
            live_checkpoint=paths.checkpoint,
        )
    )
    return DecisionBasis(
        state=state,
        paths=paths,
        start=start,
        family=family,
        newest_known=newest_known,
        observation=observe(source, start.start, instances=request.requested),
    )


def decide_now(
    request: RecoveryRequest,
    basis: DecisionBasis,
    reads: RecoveryReads,
    source: SourceObserver,
    *,
    now: str,
) -> tuple[Decision, Estimate | None]:
    """The decision, with the duration guard's estimate when a full read would be taken."""
    inputs = DecideInputs(
        target=request.target,
        app_id=request.app_id,
        state=basis.state,
        start=basis.start.start,
        mode=request.mode,
        observation=basis.observation,
        now=now,
        opens=basis.family.opens,
        completions=basis.family.completions,
        interval_days=request.interval_days,
        duration_guard=request.duration_guard,
        requested=request.requested,
    )
    decision = decide(inputs)
    if decision.low is not None:  # a loss: the target's newest snapshot may be reused
        inputs = dataclasses.replace(inputs, newest_whole=reads.newest_whole())
        decision = decide(inputs)
    if not ("take_snapshot" in decision.steps and request.duration_guard != "off"):
        return decision, None
    # The estimate costs a metadata read and a facts query: only for a full read to be taken.
    retention = observed_retention_hours(reads.batch_samples(), now=_clock.now())
    estimate = estimate_snapshot(source.row_count(), basis.family.full_timings, retention)
    return decide(dataclasses.replace(inputs, estimate=estimate)), estimate


# Each extra round follows another run's change of the state; generations only grow, so a
# run that keeps losing them meets a stream that another job recovers over and over.
_ROUNDS = 5


def recover(
    request: RecoveryRequest,
    reads: RecoveryReads,
    writes: RecoveryWrites,
    source: SourceObserver,
) -> GenerationState:
    """Run the pre-flight of to_delta(..., on_data_loss="resnapshot").

    Returns:
        The live generation's state after it (generation 0 and no fields without a state file).
    Raises:
        DataLossError: the anti-loop guard, the duration guard's refusal, or a snapshot purged
            during its own read (then the state records failed_at).
        ValueError: the mode lock, an invalid state file or offset log, the path-sanity guard.
        NativeStateError: other runs changed the state in every round.
    """
    for _ in range(_ROUNDS):
        state = _recover_once(request, reads, writes, source)
        if state is not None:
            return state
        log.info(
            "%s: another run changed the generation state of %s while this run recovered; "
            "reading it again",
            request.target,
            request.checkpoint,
        )
    raise NativeStateError(
        f"{request.target}: the generation state of {request.checkpoint} changed {_ROUNDS} "
        "times while this run recovered the stream; another job is recovering it too. Run "
        "one job per stream, then rerun"
    )


def _recover_once(
    request: RecoveryRequest,
    reads: RecoveryReads,
    writes: RecoveryWrites,
    source: SourceObserver,
) -> GenerationState | None:
    """One round of gather, decide, act; None when a state write found the state moved on."""
    basis = gather(request, reads, source)
    decision, _ = decide_now(request, basis, reads, source, now=now_text())
    if decision.action == "blocked":
        raise error_from(decision)
    state = basis.state
    if decision.action == "none":
        if "clear_recovering" in decision.steps:
            cleared = dataclasses.replace(state, recovering=None)
            return cleared if replace_state(request.checkpoint, state, cleared) else None
        return state
    return _resnapshot(request, decision, state, writes, source)


def _resnapshot(
    request: RecoveryRequest,
    decision: Decision,
    state: GenerationState,
    writes: RecoveryWrites,
    source: SourceObserver,
) -> GenerationState | None:
    g = decision.next_generation
    # The live generation is left for good: a batch of it in bronze without its facts row
    # (a run stopped between the two) gets that row from bronze first.
    writes.finish_last_batch(state)
    # Three steps a user waits through: the loss found, the snapshot, the generation switch.
    report(
        log,
        Progress("recovery", request.target, "started", 1, 3, "steps"),
        "%s",
        decision.warning,
        level=logging.INFO if decision.low is None else logging.WARNING,
    )
    recovering = dataclasses.replace(state, recovering=decision.start)
    if not replace_state(request.checkpoint, state, recovering):
        return None
    failpoint("recovery.after_recovering")  # a crash from here on resumes at this start
    # take_full writes the 'snapshot_open' row of write_full_open before it reads the table.
    if "take_snapshot" in decision.steps:
        snapshot = writes.take_full(g, decision.lost_from_ts, decision.lost_to_ts)
    elif "open_chunked" in decision.steps:
        snapshot = StartingSnapshot(
            writes.open_chunked(g, decision.lost_from_ts, decision.lost_to_ts)
        )
    else:
        reused = decision.reuse.offset
        if reused is None:  # decide() always names the offset of a reuse
            raise RuntimeError(f"{request.target}: a reuse decision without its snapshot")
        snapshot = StartingSnapshot(reused)
    report(
        log,
        Progress("recovery", request.target, "advanced", 2, 3, "steps"),
        "%s: the snapshot generation %d starts from is at %s",
        request.target,
        g,
        snapshot.offset.lsn,
    )
    verdict = conclude(
        decision,
        snapshot.offset,
        observe(source, snapshot.offset),
        recovering,
        now_text(),
        rows=snapshot.rows,
        duration_ms=snapshot.duration_ms,
    )
    if not verdict.ok:
        # Another run's generation makes this attempt's failure moot: decide again from it.
        if not replace_state(request.checkpoint, recovering, verdict.state_to_write):
            return None
        raise loss_error(decision, verdict.message, first_lsn=lsn.increment(snapshot.offset.lsn))
    if "write_event" in decision.steps:
        writes.write_event(g, snapshot, decision.lost_from_ts, decision.lost_to_ts)
        failpoint("recovery.after_event")
    # The commit point. A run that committed first keeps its generation; this snapshot is
    # then the wasted one, and the next round finds nothing left to do.
    if not replace_state(request.checkpoint, recovering, verdict.state_to_write):
        return None
    failpoint("recovery.after_state")
    report(
        log, Progress("recovery", request.target, "finished", 3, 3, "steps"), "%s", verdict.message
    )
    return verdict.state_to_write
