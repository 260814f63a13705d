"""`backfill()`: read the newest open chunked snapshot of a stream family in waves, next to the
running stream, and complete it (docs/snapshots.md, 'Chunked snapshots and `backfill()`').

Every write is keyed (`A#snapplan.<S>`, `A#snap.<S>`, `A#snapchunks.<S>`, `A#events`), so a
call repeated after a crash, or a concurrent one, stores nothing twice. Under
`target_wave_seconds` two waves are in flight at once (decision 1430); a crash then leaves up to
two waves in bronze without facts rows, and the next call writes theirs wave by wave.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict

from mssql_cdc.core import Progress, Throughput, per_second, report
from mssql_cdc.errors import ConfigError, InternalError, SchemaChangedError
from mssql_cdc.facts import (
    ChunkFact,
    PlanFact,
    SnapshotCompletionDetail,
    SnapshotPlanDetail,
    append_facts,
    events_key,
    is_complete,
    json_key,
    newest_batch,
    now_naive,
    parse_time,
    plan_fact,
    snapplan_key,
    snapshot_completion_row,
    snapshot_facts,
    snapshot_plan_row,
)
from mssql_cdc.facts import chunk_facts as read_chunk_facts
from mssql_cdc.options import SourceConfig
from mssql_cdc.snapshot.backfill_arguments import check_arguments
from mssql_cdc.snapshot.backfill_wave import (
    Snapshot,
    WaveAppend,
    append_wave,
    discard_wave,
    facts_of_stored_wave,
    finish_wave,
    run_wave,
    stored_wave,
    wave_stamp,
)
from mssql_cdc.snapshot.chunk_plan import (
    DEFAULT_CHUNK_ROWS,
    int_chunks,
    keyset_chunks,
    usable_keys,
)
from mssql_cdc.snapshot.full import check_mode_lock
from mssql_cdc.snapshot.gap_deletes import write_gap_deletes
from mssql_cdc.snapshot.probe import SourceProbe, open_probe
from mssql_cdc.snapshot.wave_sizing import WaveTime, key_change, next_wave_chunks
from mssql_cdc.source import default_parallelism
from mssql_cdc.tables import table_ref, txn_version
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["BackfillState", "BackfillStatus", "backfill"]

log = logging.getLogger(__name__)

BackfillState = Literal["done", "running", "waiting_headroom", "waiting_metrics", "no_snapshot"]


class BackfillStatus(TypedDict):
    """Where one `backfill()` call left the family's newest chunked snapshot.

    Attributes:
        snapshot: its S, the canonical LSN it was opened at; None with `no_snapshot`.
        chunks_done: its chunks in bronze, earlier calls' included; 0 with `no_snapshot`.
        chunks_total: the chunks of its plan; None with `no_snapshot` or no plan row found.
        done: True once its completion row is written (`state` "done"): call no more.
        paused: True when `state` waits: for headroom, for a headroom figure, or for a snapshot.
        state: "done", "running" (call again), "waiting_headroom", "waiting_metrics", "no_snapshot".
        reason: one sentence saying why, such as the headroom against `min_headroom_hours`.
    """

    snapshot: str | None
    chunks_done: int
    chunks_total: int | None
    done: bool
    paused: bool
    state: BackfillState
    reason: str


def _status(
    state: BackfillState, snapshot: str | None, done: int, total: int | None, reason: str
) -> BackfillStatus:
    return {
        "snapshot": snapshot,
        "chunks_done": done,
        "chunks_total": total,
        "done": state == "done",
        "paused": state in ("waiting_headroom", "waiting_metrics", "no_snapshot"),
        "state": state,
        "reason": reason,
    }


def backfill(
    spark: SparkSession,
    config: SourceConfig,
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
    """Read waves of the family's newest open chunked snapshot; complete it after its last chunk.

    `target_wave_seconds`: a time budget per wave; the chunks per wave then follow the waves
    measured in this call, and the waves overlap: the next one is read and appended while the
    previous one's facts rows are written. Without it a wave reads
    `numPartitions` chunks, one wave at a time.

    Returns:
        A `BackfillStatus`; its `state` says whether to call again, and when.
    Raises:
        ValueError: a bad argument, the mode lock (a full snapshot of the family is open), the
            newest chunked snapshot belongs to another target, or a stamp below S.
        SchemaChangedError: the table's unique key is no longer the one the open recorded, so
            the planned chunks no longer tile it; take a new snapshot.
    """
    check_arguments(
        target,
        app_id,
        facts_table,
        chunk_rows,
        max_waves,
        max_seconds,
        min_headroom_hours,
        target_wave_seconds,
    )
    facts = snapshot_facts(spark, facts_table, app_id)
    check_mode_lock(
        spark, config, target, mode="chunked", app_id=app_id, facts_table=facts_table, facts=facts
    )
    opens = [o for o in facts.opens() if o.mode == "chunked"]
    if not opens:
        return _status(
            "no_snapshot",
            None,
            0,
            None,
            f"no chunked snapshot is open for app_id {app_id!r} in {facts_table}",
        )
    newest = max(opens, key=lambda o: o.s.lsn)
    if newest.target is not None and not table_ref(target).names(newest.target):
        raise ConfigError(
            f"the newest chunked snapshot of app_id {app_id!r} (at {newest.s.lsn}) belongs to "
            f"target {newest.target!r}, not {target!r}; call backfill with that target"
        )
    snap = Snapshot(newest, app_id, target, facts_table)
    if is_complete(newest, facts.completions()):
        stored = facts.plan(snap.s)
        done = len(facts.chunks(snap.s))
        total = None if stored is None else len(stored.detail["chunks"])
        return _status("done", snap.s, done, total, f"the snapshot at {snap.s} is complete")
    with closing(open_probe(config)) as probe:
        _check_keys(snap, probe)
        plan = _plan(spark, snap, probe, chunk_rows, facts.plan(snap.s))
        return _waves(
            spark,
            config,
            snap,
            probe,
            plan,
            facts.chunks(snap.s),
            (max_waves, max_seconds, min_headroom_hours, target_wave_seconds),
        )


def _check_keys(snap: Snapshot, probe: SourceProbe) -> None:
    """Refuse to read on when the key the open recorded no longer keys the table."""
    keys, kind = usable_keys(probe)
    why = key_change(snap.open.detail.get("keys", []), keys if kind is not None else [])
    if why is not None:
        raise SchemaChangedError(
            f"{snap.target}: the chunked snapshot at {snap.s} cannot go on: {why}, so its "
            "chunks no longer tile the table. Take a new snapshot: "
            "CdcStream.resnapshot(..., snapshot='chunked') or `mssql-cdc resnapshot "
            "--snapshot chunked` opens one (the open one is then never completed)",
            probe.resolved().capture_instance,
        )


def _plan(
    spark: SparkSession,
    snap: Snapshot,
    probe: SourceProbe,
    chunk_rows: int | None,
    stored: PlanFact | None,
) -> SnapshotPlanDetail:
    """The stored plan of S (`stored`, as read at the call's start), planning it first when
    there is none."""
    if stored is None:
        started = now_naive()
        clock_start = time.monotonic()
        rows = chunk_rows or DEFAULT_CHUNK_ROWS
        extent = snap.open.detail.get("plan")
        keys = list(snap.open.detail.get("keys", []))
        kind: Literal["int", "keyset"] = "keyset"
        chunks: list[list[object]]
        if extent is None:
            keys, chunks = [], [[None, None]]
        elif extent["kind"] == "int":
            kind = "int"
            key_type = probe.column_types().get(keys[0], "bigint").split("(")[0].lower()
            chunks = int_chunks(probe, keys[0], extent, rows, key_type)
        else:
            chunks = keyset_chunks(probe, keys, extent["max"], rows)
        detail: SnapshotPlanDetail = {
            "snapshot": snap.s,
            "kind": kind,
            "keys": keys,
            "chunk_rows": rows,
            "chunks": chunks,
        }
        row = snapshot_plan_row(
            app_id=snap.app_id,
            generation=snap.open.generation,
            target=snap.target,
            commit_ts=parse_time(snap.open.s.commit_ts),
            detail=detail,
            started_at=started,
            duration_ms=int((time.monotonic() - clock_start) * 1000),
            written_at=now_naive(),
        )
        append_facts(spark, snap.facts_table, [row], key=snapplan_key(snap.app_id, snap.s))
        stored = plan_fact(spark, snap.facts_table, snap.app_id, snap.s, checked=True)
        if stored is None:
            raise InternalError(
                f"{snap.facts_table}: the snapshot_plan row of {snap.s} was not found after "
                "writing it; check that nothing else deletes facts rows"
            )
    elif chunk_rows is not None and chunk_rows != stored.detail["chunk_rows"]:
        log.warning(
            "%s: the snapshot at %s is planned with chunk_rows=%d; chunk_rows=%d is ignored",
            snap.target,
            snap.s,
            stored.detail["chunk_rows"],
            chunk_rows,
        )
    return stored.detail


def _throttle(
    spark: SparkSession, snap: Snapshot, minimum: float | None
) -> tuple[BackfillState, str] | None:
    if minimum is None:
        return None
    newest = newest_batch(spark, snap.facts_table, snap.app_id)
    if newest is None or newest[0] is None or newest[1] is None:
        return "waiting_metrics", "no facts row with retention_headroom_hours yet"
    now = now_naive()
    assert now is not None
    effective = newest[0] - (now - newest[1]).total_seconds() / 3600
    if effective < minimum:
        return (
            "waiting_headroom",
            f"headroom {effective:.2f} h is below min_headroom_hours={minimum:g}",
        )
    return None


def _partitions(spark: SparkSession, config: SourceConfig) -> int:
    return config.partitions(default_parallelism(spark))


@dataclass
class _Call:
    """What one `backfill()` call has done so far, for its limits, pacing and reports."""

    total: int
    began: float = field(default_factory=time.monotonic)
    ran: int = 0
    chunks_read: int = 0
    rows_read: int = 0
    measured: list[WaveTime] = field(default_factory=list)
    pace: Throughput = field(default_factory=Throughput)

    def out_of_budget(self, max_waves: int | None, max_seconds: float | None) -> bool:
        return self.ran >= 1 and (
            (max_waves is not None and self.ran >= max_waves)
            or (max_seconds is not None and time.monotonic() - self.began >= max_seconds)
        )


def _waves(
    spark: SparkSession,
    config: SourceConfig,
    snap: Snapshot,
    probe: SourceProbe,
    plan: SnapshotPlanDetail,
    read_first: list[ChunkFact],
    limits: tuple[int | None, float | None, float | None, float | None],
) -> BackfillStatus:
    """Run waves until done or a limit. `read_first`: the chunk rows read at the call's start.

    With `target_wave_seconds` the waves overlap: while one wave's facts rows
    are written, the next wave is read and appended on a second thread. Appends stay in wave
    order (a wave's key is its transaction version, so a later wave stored first would make
    Delta skip an earlier one), and facts rows follow them in the same order.
    """
    max_waves, max_seconds, min_headroom_hours, target_wave_seconds = limits
    total = len(plan["chunks"])
    call = _Call(total)
    width = _partitions(spark, config)
    # Bronze's recorded wave is read once: later waves of this call are its own appends (a
    # concurrent call's wave is found by run_wave, whose append Delta then skips).
    recorded = txn_version(spark, snap.target, snap.backfill_id)
    appended = -1 if recorded is None else recorded
    # Chunk rows follow a wave's append, so with no wave in bronze when its record was read the
    # rows read at the call's start are still all there are (a wave stored since is found by
    # its key when this call appends the same wave).
    known: list[ChunkFact] | None = read_first if recorded is None else None
    while True:
        if known is None:
            known = read_chunk_facts(spark, snap.facts_table, snap.app_id, snap.s, checked=True)
        chunk_facts, known = known, None
        written = max((c.wave for c in chunk_facts), default=-1)
        if appended > written:
            # Waves in bronze without facts rows: one after a crash between a wave's append and
            # its facts, two after a crash with overlapped waves in flight.
            done_before = {c.chunk for c in chunk_facts}
            for stored in range(written + 1, appended + 1):
                facts_of_stored_wave(spark, snap, probe, stored, plan["chunks"], done_before)
                chunk_facts = read_chunk_facts(
                    spark, snap.facts_table, snap.app_id, snap.s, checked=True
                )
                done_before = {c.chunk for c in chunk_facts}
        done = {c.chunk for c in chunk_facts}
        if len(done) >= total:
            _complete(spark, snap, chunk_facts)
            return _status(
                "done", snap.s, len(done), total, f"the snapshot at {snap.s} is complete"
            )
        if call.out_of_budget(max_waves, max_seconds):
            return _status(
                "running",
                snap.s,
                len(done),
                total,
                f"{len(done)} of {total} chunks are in; call backfill() again",
            )
        paused = _throttle(spark, snap, min_headroom_hours)
        if paused is not None:
            return _status(paused[0], snap.s, len(done), total, paused[1])
        wave = max(appended, written) + 1
        left = [i for i in range(total) if i not in done]
        if target_wave_seconds is None:
            n = next_wave_chunks(
                call.measured, target_seconds=None, default=width, remaining=len(left)
            )
            chunks = [_bounds(probe, snap, plan, i) for i in left[:n]]
            wave_start = time.monotonic()
            call.rows_read += run_wave(
                spark, config, snap, probe, wave, chunks, open_target=call.ran == 0
            )
            call.measured.append(WaveTime(len(chunks), time.monotonic() - wave_start))
            appended = wave
            _waved(snap, call, wave, len(done), len(chunks))
            continue
        appended = _overlapped(
            spark, config, snap, probe, plan, (wave, left, len(done)), call, limits, width
        )


def _overlapped(
    spark: SparkSession,
    config: SourceConfig,
    snap: Snapshot,
    probe: SourceProbe,
    plan: SnapshotPlanDetail,
    start: tuple[int, list[int], int],
    call: _Call,
    limits: tuple[int | None, float | None, float | None, float | None],
    width: int,
) -> int:
    """Waves `start[0]`, ... over the chunks `start[1]` (`start[2]` done before), each read and
    appended while the previous one's facts rows are written, until the chunks, a limit or the
    headroom stops the next; returns the last wave appended, its facts rows written.

    Source queries (stamps, bounds, commit times) stay on this thread: the probe holds one
    connection. The second thread does Spark work only.
    """
    max_waves, max_seconds, min_headroom_hours, target_wave_seconds = limits
    wave, left, done = start

    def take(wave: int, left: list[int]) -> tuple[int, list[tuple[int, object, object, bool]], str]:
        n = next_wave_chunks(
            call.measured, target_seconds=target_wave_seconds, default=width, remaining=len(left)
        )
        return wave, [_bounds(probe, snap, plan, i) for i in left[:n]], wave_stamp(snap, probe)

    def append(wave: int, chunks: list[tuple[int, object, object, bool]], at: str) -> WaveAppend:
        appended = append_wave(spark, config, snap, wave, at, chunks, open_target=call.ran == 0)
        call.measured.append(WaveTime(len(chunks), appended.seconds))
        return appended

    current = append(*take(wave, left))
    left = left[len(current.listed) :]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mssql-cdc-wave") as pool:
        while True:
            call.ran += 1
            ahead: Future[WaveAppend] | None = None
            try:
                stored = stored_wave(spark, snap, current)
                # The next wave's chunks follow this one's only when this attempt stored it: a
                # concurrent call that stored it first may have read other chunks, and the
                # caller then reads the facts again before choosing.
                mine = stored is not None and stored.metadata.get("attempt") == current.attempt
                if (
                    mine
                    and left
                    and not call.out_of_budget(max_waves, max_seconds)
                    and _throttle(spark, snap, min_headroom_hours) is None
                ):
                    ahead = pool.submit(append, *take(current.wave + 1, left))
                    failpoint("backfill.waves_in_flight")
                rows = finish_wave(spark, config, snap, probe, current, stored)
            except BaseException:
                discard_wave(current)
                if ahead is not None:  # never leave an append running behind the caller
                    with suppress(BaseException):
                        discard_wave(ahead.result())
                raise
            call.rows_read += rows
            _waved(snap, call, current.wave, done, len(current.listed), counted=False)
            done += len(current.listed)
            if ahead is None:
                return current.wave
            current = ahead.result()
            left = left[len(current.listed) :]


def _waved(
    snap: Snapshot, call: _Call, wave: int, done: int, chunks: int, *, counted: bool = True
) -> None:
    """Count one finished wave into the call and report it."""
    if counted:
        call.ran += 1
    call.chunks_read += chunks
    _report_wave(snap, wave, done + chunks, call.total, call.chunks_read, call.rows_read, call.pace)


def _report_wave(
    snap: Snapshot, wave: int, done: int, total: int, read: int, rows: int, pace: Throughput
) -> None:
    """One record per wave: chunks done of total; the rate and ETA from this call's waves."""
    rate = pace.rate(read)
    eta = None if rate is None else (total - done) / rate
    row_rate = pace.rate(rows)
    report(
        log,
        Progress(
            "backfill", snap.target, "advanced", done, total, "chunks", rate=rate, eta_seconds=eta
        ),
        "%s: backfill wave %d of the snapshot at %s: %d of %d chunks done, %s rows read in "
        "this call%s%s",
        snap.target,
        wave,
        snap.s,
        done,
        total,
        f"{rows:,}",
        "" if row_rate is None else f" ({per_second(row_rate, 'rows')})",
        "" if eta is None else f", about {eta:,.0f} s left",
    )


def _bounds(
    probe: SourceProbe, snap: Snapshot, plan: SnapshotPlanDetail, i: int
) -> tuple[int, object, object, bool]:
    lo, hi = plan["chunks"][i]
    last = i == len(plan["chunks"]) - 1
    extent = snap.open.detail.get("plan")
    if last and hi is None and plan["kind"] == "keyset" and extent and extent["kind"] == "keyset":
        maximum = extent["max"]
        if maximum is not None:
            # Keys above MAX were written after S: the stream has them; bound the read there.
            upto = tuple(maximum) if isinstance(maximum, list) else maximum
            hi = json_key(probe.first_key_above(plan["keys"], upto))
    return i, lo, hi, last


def _complete(spark: SparkSession, snap: Snapshot, chunk_facts: Sequence[ChunkFact]) -> None:
    """Write the snapshot's completion row (stored once under `A#events`, the open's generation)
    from the `snapshot_chunk` rows of every chunk; first the gap's derived deletes when the
    open asked for them (a crash in between repeats them, stored once)."""
    if snap.open.kind == "resnapshot" and snap.open.detail.get("gap_deletes"):
        write_gap_deletes(
            spark,
            snap.target,
            app_id=snap.app_id,
            facts_table=snap.facts_table,
            snapshot=snap.open.s,
            keys=snap.open.detail.get("keys", []),
        )
    rows = sum(c.rows for c in chunk_facts)
    highs = [c.high_lsn for c in chunk_facts if c.high_lsn is not None]
    detail: SnapshotCompletionDetail = {
        "snapshot": snap.s,
        "chunks": len(chunk_facts),
        "rows": rows,
        "last_lsn": max(highs) if highs else None,
    }
    carried = sum(1 for c in chunk_facts if c.carried)
    if carried:  # a repair's snapshot: the chunks SQL Server was asked for
        detail["read"] = len(chunk_facts) - carried
        detail["carried"] = carried
    event: Literal["bootstrap", "resnapshot"] = (
        "bootstrap" if snap.open.kind == "bootstrap" else "resnapshot"
    )
    row = snapshot_completion_row(
        event,
        app_id=snap.app_id,
        generation=snap.open.generation,
        target=snap.target,
        snapshot_lsn=snap.s,
        commit_ts=parse_time(snap.open.s.commit_ts),
        rows=rows,
        started_at=snap.open.written_at,
        duration_ms=None,
        written_at=now_naive(),
        lost_from_ts=snap.open.lost_from_ts,
        lost_to_ts=snap.open.lost_to_ts,
        detail=detail,
    )
    append_facts(spark, snap.facts_table, [row], key=events_key(snap.app_id, snap.open.generation))
