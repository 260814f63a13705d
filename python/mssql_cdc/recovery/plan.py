"""plan_recovery(): the pre-flight as a dry run, and the headroom forecast.

docs/data-loss.md, 'The anti-loop guard, and how to override it', shows both in use.

The plan gathers exactly what `recovery.recover` gathers and calls the same decision, then
reports it instead of acting: nothing is written, no table row is read, no query starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal, TypedDict

from mssql_cdc.core import Estimate, Mode, Offset, StreamOffset
from mssql_cdc.core import clock as _clock
from mssql_cdc.recovery.observer import SourceObserver
from mssql_cdc.recovery.preflight import (
    BatchSample,
    RecoveryReads,
    RecoveryRequest,
    decide_now,
    gather,
    now_text,
)

__all__ = [
    "EstimateDict",
    "Forecast",
    "RecoveryPlan",
    "ReusePlan",
    "forecast",
    "plan_recovery",
]


class ReusePlan(TypedDict):
    """An existing snapshot the next generation would start from instead of reading one.

    Attributes:
        kind: where it was found: "completion" (a completed snapshot of an earlier attempt at
            this generation), "open" (an open chunked one of it) or "target" (the newest
            whole snapshot bronze holds).
        lsn: its LSN, canonical text.
        commit_ts: its commit time, UTC text; "" when unknown.
        generation: the generation its facts rows belong to.
    """

    kind: Literal["completion", "open", "target"]
    lsn: str
    commit_ts: str
    generation: int


class EstimateDict(TypedDict):
    """The duration guard's estimate of a full read; each field None when unknown.

    Attributes:
        rows: the source table's row count from its metadata.
        rows_per_second: the read rate of earlier full snapshots of at least 1,000 rows.
        seconds: `rows / rows_per_second`, the expected read time.
        retention_hours: the smallest retention observed over the last 7 days, in hours.
        fits: whether `seconds` is at most half the retention.
    """

    rows: int | None
    rows_per_second: float | None
    seconds: float | None
    retention_hours: float | None
    fits: bool | None


class Forecast(TypedDict):
    """The retention headroom of the last 7 days of micro-batches (`forecast`).

    Attributes:
        headroom_hours: the newest sample's headroom minus the hours since it was written;
            None without a sample.
        trend_hours_per_day: the least-squares slope of the headroom, in hours per day;
            None with fewer than 3 samples or samples spanning under an hour.
        loss_by_trend_at: when the fitted line reaches 0, UTC ISO-8601 with +00:00; None
            unless the trend falls.
        loss_if_stopped_at: the newest sample's time plus its headroom, UTC ISO-8601 with
            +00:00: when a loss comes if the stream stops now; None without a sample.
        samples: how many samples the forecast used.
    """

    headroom_hours: float | None
    trend_hours_per_day: float | None
    loss_by_trend_at: str | None
    loss_if_stopped_at: str | None
    samples: int


class RecoveryPlan(TypedDict):
    """What to_delta(..., on_data_loss="resnapshot") with the same arguments would do now.

    Attributes:
        action: "none" (start where the stream is), "resnapshot" (re-snapshot into
            `next_generation` first) or "blocked" (to_delta would raise; `reason` is its text).
        generation: the live generation now (0 before any re-snapshot).
        next_generation: the generation the run would open; equal to `generation` unless
            `action` is "resnapshot".
        start: where the stream would start, the last offset it processed; None for a stream
            that has not started.
        lost_from_ts: the commit time (UTC) of `start`, where the gap begins; None without a
            loss or when unknown.
        lost_to_ts: the commit time (UTC) of the instance's oldest LSN, where the gap ends;
            None without a loss or when unknown.
        reuse: a snapshot the re-snapshot would start from instead of reading the table, with
            `kind` "completion" (a completed snapshot of that generation), "open" (a chunked
            snapshot already opened for it) or "target" (the target's newest whole snapshot),
            its `lsn`, `commit_ts` ("" when unknown) and `generation`; None when none is reused.
        mode: "full" or "chunked", the snapshot mode of the run.
        interval_ok: False when the last re-snapshot is within `resnapshot_interval_days` (the
            anti-loop guard would refuse another).
        reason: one sentence saying why `action`; for "blocked", the error's text.
        estimate: a full read's expected `rows`, `rows_per_second`, `seconds`, the observed
            `retention_hours` and whether it `fits` in the retention, each None when unknown;
            None when no full read is planned.
        forecast: the retention headroom of the last 7 days of micro-batches:
            `headroom_hours` now, `trend_hours_per_day`, `loss_by_trend_at` and
            `loss_if_stopped_at` (UTC text), each None without enough samples, and `samples`.
    """

    action: Literal["none", "resnapshot", "blocked"]
    generation: int
    next_generation: int
    start: Offset | None
    lost_from_ts: str | None
    lost_to_ts: str | None
    reuse: ReusePlan | None
    mode: Mode
    interval_ok: bool
    reason: str
    estimate: EstimateDict | None
    forecast: Forecast


def _utc_text(moment: datetime) -> str:
    return moment.replace(microsecond=0).isoformat() + "+00:00"


def forecast(samples: Sequence[BatchSample], *, now: datetime, days: float = 7.0) -> Forecast:
    """The headroom trend of the last `days` of micro-batches.

    `headroom_hours` is the newest sample's headroom minus the hours since it was written;
    the trend is the least-squares slope per day (None with fewer than 3 samples or a span
    under an hour); `loss_by_trend_at` is where the fitted line reaches 0 when it falls;
    `loss_if_stopped_at` is the newest sample's time plus its headroom.
    """
    now_naive = now.astimezone(UTC).replace(tzinfo=None)
    since = now_naive - timedelta(days=days)
    points = sorted(
        (s.written_at, s.headroom_hours)
        for s in samples
        if s.written_at >= since and s.headroom_hours is not None
    )
    result: Forecast = {
        "headroom_hours": None,
        "trend_hours_per_day": None,
        "loss_by_trend_at": None,
        "loss_if_stopped_at": None,
        "samples": len(points),
    }
    if not points:
        return result
    newest_at, newest_headroom = points[-1]
    result["headroom_hours"] = newest_headroom - (now_naive - newest_at).total_seconds() / 3600.0
    result["loss_if_stopped_at"] = _utc_text(newest_at + timedelta(hours=newest_headroom))
    span_hours = (newest_at - points[0][0]).total_seconds() / 3600.0
    if len(points) < 3 or span_hours < 1.0:
        return result
    origin = points[0][0]
    xs = [(at - origin).total_seconds() / 86400.0 for at, _ in points]
    ys = [h for _, h in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    result["trend_hours_per_day"] = slope
    if slope < 0:
        zero_days = mean_x - mean_y / slope
        result["loss_by_trend_at"] = _utc_text(origin + timedelta(days=zero_days))
    return result


def _estimate_dict(e: Estimate | None) -> EstimateDict | None:
    if e is None:
        return None
    return {
        "rows": e.rows,
        "rows_per_second": e.rows_per_second,
        "seconds": e.seconds,
        "retention_hours": e.retention_hours,
        "fits": e.fits,
    }


def _offset_json(o: StreamOffset | None) -> Offset | None:
    return None if o is None else o.to_json()


def plan_recovery(
    request: RecoveryRequest, reads: RecoveryReads, source: SourceObserver
) -> RecoveryPlan:
    """The pre-flight's answer without acting on it.

    Raises:
        ValueError: what to_delta would raise before deciding (state file, offset log,
            path-sanity guard); refusals are reported as action 'blocked' with their text.
    """
    gathered = gather(request, reads, source)
    decision, estimate = decide_now(request, gathered, reads, source, now=now_text())
    reuse = decision.reuse
    reuse_plan: ReusePlan | None = None
    if reuse.kind != "none" and reuse.offset is not None:
        reuse_plan = {
            "kind": reuse.kind,
            "lsn": reuse.offset.lsn,
            "commit_ts": reuse.offset.commit_ts or "",
            "generation": reuse.generation,
        }
    return {
        "action": decision.action,
        "generation": decision.generation,
        "next_generation": decision.next_generation,
        "start": _offset_json(decision.start),
        "lost_from_ts": decision.lost_from_ts,
        "lost_to_ts": decision.lost_to_ts,
        "reuse": reuse_plan,
        "mode": decision.mode,
        "interval_ok": decision.interval_ok,
        "reason": decision.error_message if decision.action == "blocked" else decision.reason,
        "estimate": _estimate_dict(estimate),
        "forecast": forecast(reads.batch_samples(), now=_clock.now()),
    }
