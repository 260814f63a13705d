"""The data-loss guards as pure decisions, their errors and the skip's audit trail.

docs/source.md, 'Guards', gives the rules; docs/data-loss.md, 'What happens on a loss', the
recovery's use of the same test. Nothing here reads a server or a file: callers pass what they
observed and act on what comes back. An in-stream re-snapshot's loss is recorded as a certain
skip whose detail names the snapshot (decision 1445).
"""

from __future__ import annotations

from dataclasses import dataclass

from mssql_cdc.core import EventRecord, Piece, lsn
from mssql_cdc.errors import DataLossError

__all__ = [
    "ERROR_BELOW_MIN_LSN",
    "ERROR_OBJECT_VANISHED",
    "Skip",
    "data_skipped_event",
    "driver_loss_error",
    "executor_guard",
    "is_established",
    "piece_is_purged",
    "range_after_is_purged",
    "resnapshot_event",
    "resume_after_refusal",
    "skip_end",
    "skip_piece",
    "skip_warning",
    "task_loss_error",
    "task_skip_warning",
]

ERROR_OBJECT_VANISHED = 208  # the change table was dropped during the read
ERROR_BELOW_MIN_LSN = 313  # the server refused a range below min_lsn

_WAYS_FORWARD = (
    'A re-snapshot is required: run to_delta(..., on_data_loss="resnapshot") to take one '
    "and continue automatically, or set failOnDataLoss=false to skip ahead to min_lsn and "
    "accept the gap."
)


def is_established(min_lsn: lsn.Lsn | None) -> bool:
    """A min_lsn is established when it is neither NULL nor all zeros (unknown instance)."""
    return min_lsn is not None and min_lsn != lsn.ZERO


def piece_is_purged(first: lsn.Lsn, min_lsn: lsn.Lsn | None) -> bool:
    """Driver guard: the piece's changes are purged when min_lsn is established and
    above the piece's first LSN."""
    return is_established(min_lsn) and first < (min_lsn or lsn.ZERO)


def range_after_is_purged(start: lsn.Lsn, max_lsn: lsn.Lsn | None, min_lsn: lsn.Lsn | None) -> bool:
    """The recovery pre-flight's test: increment(start) < min_lsn, under the guard's precondition
    that there is a range to read (max_lsn > start; a NULL max_lsn reads as zero)."""
    if (max_lsn or lsn.ZERO) <= start:
        return False  # nothing captured after start, so nothing can be purged
    return piece_is_purged(lsn.increment(start), min_lsn)


def executor_guard(
    from_lsn: lsn.Lsn, min_lsn_after: lsn.Lsn | None, error_number: int | None = None
) -> str | None:
    """Executor guard, run after the read: why rows may be missing, or None.

    `min_lsn_after` is min_lsn read once the rows were read; `error_number` is the server error
    that ended the read, if any (208: the change table vanished; 313: range below min_lsn).
    """
    if error_number == ERROR_OBJECT_VANISHED:
        return "the change table vanished during the read (error 208)"
    if error_number == ERROR_BELOW_MIN_LSN:
        return "the server refused the range as below min_lsn (error 313)"
    if min_lsn_after == lsn.ZERO:
        return "the capture instance was disabled during the read (min_lsn is all zeros)"
    if min_lsn_after is not None and min_lsn_after > from_lsn:
        return "CDC cleanup raised min_lsn past the range start during the read"
    return None


def resume_after_refusal(
    reads_from: lsn.Lsn, to_lsn: lsn.Lsn, min_lsn_after: lsn.Lsn | None, error_number: int | None
) -> lsn.Lsn | None:
    """failOnDataLoss=false in a task: where a read the server refused as purged (313) goes on.

    Cleanup deletes only below min_lsn, so the range's rows from min_lsn to its end are still
    held: the task reads them, as the driver's skip would. None: no refusal, or nothing of the
    range is left above min_lsn.
    """
    if error_number != ERROR_BELOW_MIN_LSN or not is_established(min_lsn_after):
        return None
    m = min_lsn_after or lsn.ZERO
    if m <= reads_from or m > to_lsn:
        return None  # min_lsn did not pass the read's start, so there is no later start
    return m


def _held_by_disabled(disabled_instance: str | None) -> str:
    """The clause a loss message adds when a disabled capture instance alone held the rows."""
    if not disabled_instance:
        return ""
    return (
        f", or they were held only by capture instance '{disabled_instance}', disabled before "
        "this stream read them"
    )


def driver_loss_error(
    capture_instance: str,
    first_lsn: lsn.Lsn,
    min_lsn: lsn.Lsn,
    *,
    min_commit_ts: str | None,
    lost_from_ts: str | None,
    disabled_instance: str | None = None,
) -> DataLossError:
    """The DataLossError of the driver guard: a certain loss found while planning."""
    also = _held_by_disabled(disabled_instance)
    when = f"committed {min_commit_ts}" if min_commit_ts else "commit time unknown"
    message = (
        f"capture instance '{capture_instance}': changes from {first_lsn} on were purged by CDC "
        f"cleanup before this stream read them{also}; the oldest change still held is {min_lsn} "
        f"(min_lsn, {when}). {_WAYS_FORWARD}"
    )
    return DataLossError(
        message, capture_instance, lost_from_ts, min_commit_ts, first_lsn, min_lsn, False
    )


def task_loss_error(
    capture_instance: str,
    from_lsn: lsn.Lsn,
    to_lsn: lsn.Lsn,
    min_lsn_after: lsn.Lsn | None,
    reason: str,
    *,
    min_commit_ts: str | None,
    lost_from_ts: str | None,
    disabled_instance: str | None = None,
) -> DataLossError:
    """The DataLossError of the executor guard: rows of a range may be missing."""
    now = f"min_lsn is now {min_lsn_after}" if min_lsn_after else "min_lsn is now unknown"
    also = _held_by_disabled(disabled_instance)
    message = (
        f"capture instance '{capture_instance}': CDC cleanup ran while range {from_lsn}–{to_lsn} "
        f"was read ({reason}); {now}, past the range start, so rows of the range may be "
        f"missing{also}. {_WAYS_FORWARD}"
    )
    return DataLossError(
        message, capture_instance, lost_from_ts, min_commit_ts, from_lsn, min_lsn_after, True
    )


def skip_end(start: lsn.Lsn, end: lsn.Lsn, target: lsn.Lsn, min_lsn: lsn.Lsn | None) -> lsn.Lsn:
    """latestOffset with failOnDataLoss=false: a purged gap is skipped in one batch, so the end
    moves up to min_lsn M, never past the target."""
    if is_established(min_lsn) and lsn.increment(start) < (min_lsn or lsn.ZERO):
        return min(max(end, min_lsn or end), target)
    return end


@dataclass(frozen=True, slots=True)
class Skip:
    """A purged piece skipped ahead: what remains of it (None: dropped) and the gap."""

    piece: Piece | None
    from_lsn: lsn.Lsn  # the piece's first LSN before the skip: names the event file
    min_lsn: lsn.Lsn  # M, where the piece resumes


def skip_piece(piece: Piece, min_lsn: lsn.Lsn | None) -> Skip | None:
    """failOnDataLoss=false on the driver: a purged piece starts at M; if M is past the piece's
    end, the piece is dropped. None when the piece is not purged."""
    if not piece_is_purged(piece.from_lsn, min_lsn):
        return None
    m = min_lsn or lsn.ZERO
    remaining = None if m > piece.to_lsn else Piece(piece.capture_instance, m, piece.to_lsn)
    return Skip(remaining, piece.from_lsn, m)


def skip_warning(
    capture_instance: str, from_lsn: str, min_lsn: str, min_commit_ts: str | None
) -> str:
    """The WARNING of a skip, naming the instance, both LSNs and M's time."""
    when = min_commit_ts or "unknown"
    return (
        f"capture instance '{capture_instance}': failOnDataLoss=false skips ahead from {from_lsn} "
        f"to min_lsn {min_lsn} (committed {when}); the changes between were purged by CDC "
        "cleanup and are lost"
    )


def data_skipped_event(
    capture_instance: str,
    from_lsn: str,
    min_lsn: str,
    *,
    min_commit_ts: str | None,
    lost_from_ts: str | None,
    batch_start_lsn: str,
    batch_end_lsn: str,
    reason: str | None = None,
) -> EventRecord:
    """The 'data_skipped' record (docs/source.md, 'Guards'); its `file_name` has `from_lsn`.

    Without `reason` it is the driver's certain skip; with one, a task's possible loss
    (`certain: false`), which goes into the task's metrics file instead of an event file.
    """
    detail: dict[str, object] = {"from": from_lsn, "to": min_lsn, "certain": reason is None}
    if reason is not None:
        detail["reason"] = reason
    detail["capture_instance"] = capture_instance
    return EventRecord(
        event="data_skipped",
        capture_instance=capture_instance,
        lsn=min_lsn,
        commit_ts=min_commit_ts,
        detail=detail,
        lost_from_ts=lost_from_ts,
        lost_to_ts=min_commit_ts,
        batch_start_lsn=batch_start_lsn,
        batch_end_lsn=batch_end_lsn,
    )


def resnapshot_event(
    capture_instance: str,
    from_lsn: str,
    min_lsn: str,
    stamp_lsn: str,
    *,
    min_commit_ts: str | None,
    lost_from_ts: str | None,
    batch_start_lsn: str,
    batch_end_lsn: str,
) -> EventRecord:
    """The certain 'data_skipped' record of an in-stream re-snapshot (snapshotMode=when_needed):
    the changes from `from_lsn` (the first lost LSN, also the record's `lsn` and its file's
    name) to `min_lsn` were purged, and the snapshot stamped `stamp_lsn` replaces them. The
    lost bounds are a skip's: the batch's start time and M's."""
    detail: dict[str, object] = {
        "from": from_lsn,
        "to": min_lsn,
        "certain": True,
        "capture_instance": capture_instance,
        "resnapshot_lsn": stamp_lsn,
        "snapshot_mode": "when_needed",
    }
    return EventRecord(
        event="data_skipped",
        capture_instance=capture_instance,
        lsn=from_lsn,
        commit_ts=min_commit_ts,
        detail=detail,
        lost_from_ts=lost_from_ts,
        lost_to_ts=min_commit_ts,
        batch_start_lsn=batch_start_lsn,
        batch_end_lsn=batch_end_lsn,
    )


def task_skip_warning(
    capture_instance: str, from_lsn: str, to_lsn: str, min_lsn_after: str | None, reason: str
) -> str:
    """The executor's WARNING when its guard fires under failOnDataLoss=false: the task
    keeps the rows it read and succeeds."""
    return (
        f"capture instance '{capture_instance}': range {from_lsn}–{to_lsn}: {reason}; min_lsn "
        f"is now {min_lsn_after or 'unknown'} and rows below it may be missing "
        "(failOnDataLoss=false: the rows read are kept)"
    )
