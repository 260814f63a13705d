"""Full snapshots at a recorded LSN, the newest snapshots of a target, the bootstrap/resnapshot
completion row, and the mode lock (docs/snapshots.md, 'Full snapshots' and 'The mode lock').

A full snapshot is stamped before anything of the table is read, appended in exactly one Delta
commit without a transaction key, and found again by that commit's `userMetadata`.
"""

from __future__ import annotations

import logging
import time
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from mssql_cdc.core import (
    Mode,
    Observation,
    Progress,
    StreamOffset,
    lock_violation,
    per_second,
    report,
)
from mssql_cdc.core import clock as _clock
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import (
    RequestedDetail,
    SeededDetail,
    SnapshotFacts,
    SnapshotOpenDetail,
    append_facts,
    events_key,
    format_time,
    is_complete,
    now_naive,
    parse_time,
    snapshot_completion_row,
    snapshot_facts,
    validate_app_id,
)
from mssql_cdc.options import SourceConfig
from mssql_cdc.snapshot.open_race import FactsSeen, chunked_opens, facts_seen
from mssql_cdc.snapshot.open_row import append_open
from mssql_cdc.snapshot.probe import open_probe, stamp
from mssql_cdc.snapshot.read import read_whole
from mssql_cdc.snapshot.slots import slot
from mssql_cdc.snapshot.targets import newest_known, newest_whole, whole_snapshot_rows
from mssql_cdc.snapshot.whole_progress import watch_whole_read
from mssql_cdc.tables import append, ensure_table, require_distinct, table_ref
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "SnapshotResult",
    "check_mode_lock",
    "newest_known_snapshot",
    "newest_whole_snapshot",
    "take_full",
    "write_bootstrap",
    "write_completion",
]

Kind = Literal["bootstrap", "resnapshot", "manual"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SnapshotResult:
    """What a full snapshot did, or what was found instead of taking one."""

    offset: StreamOffset  # {lsn: L, commit_ts}
    rows: int | None  # rows appended; 0 for an empty table; None when found and history lost it
    started_at: datetime | None  # aware UTC; None when found rather than taken
    duration_ms: int | None
    taken: bool  # False when an existing snapshot was returned
    # The facts table this run opened for write (created or migrated), so the completion row
    # can be appended without opening it again; None when the run did not open one.
    facts_opened: str | None = None


def _naive(moment: datetime | None) -> datetime | None:
    return parse_time(moment)


def _json_time(text: str | None) -> str | None:
    return format_time(parse_time(text))


def snapshot_metadata(capture_instance: str, at: StreamOffset) -> dict[str, str]:
    """The `userMetadata` of a full snapshot's commit (docs/snapshots.md step 6)."""
    return {"snapshot": capture_instance, "lsn": at.lsn, "commit_ts": at.commit_ts or ""}


def _check_pair(app_id: str | None, facts_table: str | None) -> None:
    if (app_id is None) != (facts_table is None):
        given, missing = (
            ("app_id", "facts_table") if app_id is not None else ("facts_table", "app_id")
        )
        raise ConfigError(
            f"{given} was given without {missing}; pass both (to check the snapshot mode lock) "
            "or neither"
        )
    if app_id is not None:
        validate_app_id(app_id)


def take_full(
    spark: SparkSession,
    config: SourceConfig,
    target: str,
    *,
    kind: Kind,
    generation: int,
    new: bool,
    app_id: str | None,
    facts_table: str | None,
    lost_from_ts: str | None = None,
    lost_to_ts: str | None = None,
    requested: bool = False,
) -> SnapshotResult:
    """Take a full snapshot of the source into `target`, or return the newest known one.

    Unless `new`, an existing snapshot is returned without reading or writing anything. With
    `kind` bootstrap or resnapshot and a facts table, a `snapshot_open` row is written before
    the read. With `kind` manual (`snapshot()`), `app_id` and `facts_table` only serve the mode
    lock, checked first; no facts row is written.

    Raises:
        ValueError: one of app_id/facts_table without the other (manual), the mode lock, a
            chunked open of this generation written by another run first, or no stamp yet.
    """
    ref = table_ref(target, argument="target")
    if facts_table is not None:
        require_distinct(target=target, facts_table=facts_table)
    if kind == "manual":
        _check_pair(app_id, facts_table)
        if app_id is not None and facts_table is not None:
            check_mode_lock(
                spark, config, target, mode="full", app_id=app_id, facts_table=facts_table
            )
    with closing(open_probe(config)) as probe:
        seen = FactsSeen.nothing()  # the race re-check then reads the facts log from its start
        if not new:
            if app_id is not None and facts_table is not None:
                seen = facts_seen(spark, facts_table, app_id)
            known = newest_known(
                spark,
                probe,
                config,
                target,
                app_id=app_id,
                facts_table=facts_table,
                facts=None if app_id is None or facts_table is None else seen.facts,
            )
            if known is not None:
                return SnapshotResult(known.offset, known.rows, None, None, taken=False)
        # A fan-out job bounds the snapshots read at once (snapshot/slots.py); the stamp is
        # taken once the slot is held, so a waiting stream reads from where it starts.
        with slot():
            started = _clock.now()
            clock_start = time.monotonic()
            at = stamp(probe)
            capture_instance = probe.resolved().capture_instance
            opened: str | None = None
            if kind != "manual" and app_id is not None and facts_table is not None:
                opened = facts_table
                _open_full(
                    spark,
                    target,
                    facts_table,
                    app_id,
                    kind,
                    generation,
                    at,
                    started,
                    lost_from_ts,
                    lost_to_ts,
                    seen,
                    requested=requested,
                )
            expected = probe.row_count()
            report(
                log,
                Progress("snapshot", target, "started", 0, expected, "rows"),
                "%s: %s snapshot of %s at %s started, %s",
                target,
                kind,
                capture_instance,
                at.lsn,
                "rows unknown" if expected is None else f"about {expected:,} rows",
            )
            rows: int | None = 0
            with watch_whole_read(spark, log, target, expected=expected) as progress_folder:
                frame = read_whole(spark, config, at.lsn, progress_path=progress_folder)
                # A count from the source's metadata spares the Spark job of isEmpty(); only a
                # count of none is confirmed by the read itself.
                empty = not (expected or 0) and frame.isEmpty()
                failpoint("snapshot.before_append")
                if not empty:
                    ensure_table(spark, ref, "bronze", source_schema=frame.schema)
                    append(
                        frame,
                        ref,
                        user_metadata=snapshot_metadata(capture_instance, at),
                        merge_schema=True,
                    )
            if not empty:
                failpoint("snapshot.after_append")
                rows = whole_snapshot_rows(spark, target, at.lsn, just_written=True)
            seconds = time.monotonic() - clock_start
            _report_finished(target, rows or 0, seconds)
            return SnapshotResult(
                at, rows, started, int(seconds * 1000), taken=True, facts_opened=opened
            )


def _report_finished(target: str, rows: int, seconds: float) -> None:
    rate = rows / seconds if rows and seconds > 0 else None
    report(
        log,
        Progress("snapshot", target, "finished", rows, rows, "rows", rate=rate, eta_seconds=0.0),
        "%s: snapshot finished, %s rows read and written in %.1f s%s",
        target,
        f"{rows:,}",
        seconds,
        "" if rate is None else f" ({per_second(rate, 'rows')})",
    )


def _open_full(
    spark: SparkSession,
    target: str,
    facts_table: str,
    app_id: str,
    kind: Literal["bootstrap", "resnapshot"],
    generation: int,
    at: StreamOffset,
    started: datetime,
    lost_from_ts: str | None,
    lost_to_ts: str | None,
    seen: FactsSeen,
    *,
    requested: bool,
) -> None:
    """Step 3 of a full snapshot (docs/snapshots.md, 'Full snapshots'): one open row per
    attempt, then the race re-check (from `seen`, the family's facts read before, while the
    facts log shows no commit that can have changed its chunked opens)."""
    detail: SnapshotOpenDetail = {
        "mode": "full",
        "kind": kind,
        "generation": generation,
        "lost_from_ts": _json_time(lost_from_ts),
        "lost_to_ts": _json_time(lost_to_ts),
    }
    if requested:
        detail["requested"] = True
    append_open(
        spark,
        facts_table,
        app_id=validate_app_id(app_id),
        target=target,
        at=at,
        detail=detail,
        started=started,
        key=None,
    )
    for other in chunked_opens(spark, facts_table, app_id, seen):
        if other.generation == generation:
            raise ConfigError(
                f"{target}: another run opened a chunked snapshot of generation {generation} "
                f"at {other.s.lsn} first; rerun with snapshot='chunked' and call backfill()"
            )


def newest_whole_snapshot(
    spark: SparkSession, config: SourceConfig, target: str
) -> StreamOffset | None:
    """The newest whole (full) snapshot in `target`, or None (also when there is no target)."""
    with closing(open_probe(config)) as probe:
        return newest_whole(spark, probe, config, target)


def newest_known_snapshot(
    spark: SparkSession,
    config: SourceConfig,
    target: str,
    *,
    app_id: str | None,
    facts_table: str | None,
) -> StreamOffset | None:
    """The newest snapshot known for `target`: whole snapshots, chunk rows and, with a facts
    table and app_id, the family's completions and chunked opens; None when there is none."""
    with closing(open_probe(config)) as probe:
        known = newest_known(spark, probe, config, target, app_id=app_id, facts_table=facts_table)
        return None if known is None else known.offset


def write_completion(
    spark: SparkSession,
    facts_table: str,
    *,
    app_id: str,
    generation: int,
    kind: Literal["bootstrap", "resnapshot"],
    target: str,
    snapshot: SnapshotResult,
    lost_from_ts: str | None = None,
    lost_to_ts: str | None = None,
    requested: bool = False,
    seeded_from: str | None = None,
) -> None:
    """Offer the `bootstrap`/`resnapshot` row of a full snapshot (txnAppId `<app_id>#events`,
    txnVersion `generation`): stored once however often it is offered. `seeded_from` names
    the copy a seeded bootstrap came from (its `detail`)."""
    detail: RequestedDetail | SeededDetail | None = None
    if requested:
        detail = {"requested": True}
    elif seeded_from is not None:
        detail = {"seeded_from": seeded_from}
    row = snapshot_completion_row(
        kind,
        app_id=validate_app_id(app_id),
        generation=generation,
        target=target,
        snapshot_lsn=snapshot.offset.lsn,
        commit_ts=parse_time(snapshot.offset.commit_ts),
        rows=snapshot.rows,
        started_at=_naive(snapshot.started_at),
        duration_ms=snapshot.duration_ms,
        written_at=now_naive(),
        lost_from_ts=parse_time(lost_from_ts),
        lost_to_ts=parse_time(lost_to_ts),
        detail=detail,
    )
    if snapshot.facts_opened != facts_table:
        ensure_table(spark, facts_table, "facts")
    append_facts(spark, facts_table, [row], key=events_key(app_id, generation))


def write_bootstrap(
    spark: SparkSession,
    facts_table: str,
    *,
    app_id: str,
    target: str,
    snapshot: SnapshotResult,
    seeded_from: str | None = None,
) -> None:
    """Offer the `bootstrap` row of generation 0's full snapshot (`write_completion`), taken
    by the stream or, with `seeded_from`, copied by another tool."""
    write_completion(
        spark,
        facts_table,
        app_id=app_id,
        generation=0,
        kind="bootstrap",
        target=target,
        snapshot=snapshot,
        seeded_from=seeded_from,
    )


def check_mode_lock(
    spark: SparkSession,
    config: SourceConfig,
    target: str,
    *,
    mode: Mode,
    app_id: str,
    facts_table: str,
    facts: SnapshotFacts | None = None,
) -> None:
    """Refuse a run of `mode` while the family has an open snapshot of the other mode.

    The source is queried (for `loss_after(S)`) only when an incomplete full open exists. `facts`,
    when given, are the family's snapshot facts the caller has just read.

    Raises:
        ValueError: a message naming the newest blocking open and what to do.
    """
    validate_app_id(app_id)
    if facts is None:
        facts = snapshot_facts(spark, facts_table, app_id)
    opens, completions = facts.opens(), facts.completions()
    pending_full = any(o.mode == "full" and not is_complete(o, completions) for o in opens)
    observation = Observation(max_lsn=None)
    if mode == "chunked" and pending_full:
        with closing(open_probe(config)) as probe:
            observation = probe.observe()
    message = lock_violation(
        mode,
        [o.as_open_row() for o in opens],
        [c.as_completion_row() for c in completions],
        observation,
        target=target,
        app_id=app_id,
    )
    if message is not None:
        raise ConfigError(message)
