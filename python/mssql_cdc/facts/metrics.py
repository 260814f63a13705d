"""Folding the reader's metrics files into facts columns, and the headroom and lag formulas.

Pure functions (docs/tables.md, 'Metrics fold, headroom and lags'): the sink reads the files,
these compute.
Rounding is half-up on exact microseconds, as Spark SQL's `round` does, so a value computed
here equals one a consumer computes in SQL from the stored times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from mssql_cdc.facts.detail_payloads import parse_time

__all__ = [
    "FoldedMetrics",
    "effective_end",
    "fold_metrics",
    "ingestion_lag_seconds",
    "retention_headroom_hours",
]

_MICROS_PER_HOUR = Decimal(3_600_000_000)
_MICROS_PER_SECOND = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class FoldedMetrics:
    """The metric columns of one batch, folded from its partitions' metrics files."""

    end_lsn: str | None = None
    end_commit_ts: datetime | None = None
    read_seconds: float | None = None
    read_mb: float | None = None
    retention_watermark_ts: datetime | None = None
    source_max_commit_ts: datetime | None = None
    capture_lag_seconds: float | None = None
    warnings: tuple[str, ...] = ()


def fold_metrics(files: Iterable[Mapping[str, Any]]) -> FoldedMetrics:
    """Fold parsed partition metrics files into one batch's metric columns.

    Their `events` are not folded here: `core.batch_files` reads them as event records.

    Returns:
        All None (and no warnings) when there are no files.
    """
    parsed = list(files)
    if not parsed:
        return FoldedMetrics()
    ends = [f for f in parsed if f.get("to_lsn")]
    last = max(ends, key=lambda f: str(f["to_lsn"])) if ends else None
    warnings: list[str] = []
    for f in parsed:
        for warning in f.get("warnings") or ():
            if warning not in warnings:
                warnings.append(str(warning))
    return FoldedMetrics(
        end_lsn=str(last["to_lsn"]) if last else None,
        end_commit_ts=parse_time(last.get("to_commit_ts")) if last else None,
        read_seconds=float(sum(float(f.get("seconds") or 0) for f in parsed)),
        read_mb=float(sum(int(f.get("bytes") or 0) for f in parsed)) / 1_000_000,
        retention_watermark_ts=_largest_time(parsed, "retention_watermark_ts"),
        source_max_commit_ts=_largest_time(parsed, "source_max_commit_ts"),
        capture_lag_seconds=_largest_number(parsed, "capture_lag_seconds"),
        warnings=tuple(warnings),
    )


def effective_end(
    end_commit_ts: datetime | None, max_commit_ts: datetime | None
) -> datetime | None:
    """E of the headroom and lag formulas: the end offset's commit time, else the newest row's."""
    return end_commit_ts if end_commit_ts is not None else max_commit_ts


def retention_headroom_hours(end: datetime | None, watermark: datetime | None) -> float | None:
    """Hours from the cleanup watermark to the stream's end, rounded to 0.01; None if unknown."""
    if end is None or watermark is None:
        return None
    return _rounded(end - watermark, _MICROS_PER_HOUR, "0.01")


def ingestion_lag_seconds(source_max: datetime | None, end: datetime | None) -> float | None:
    """Seconds from the stream's end to the source head, rounded to 0.001; None if unknown."""
    if source_max is None or end is None:
        return None
    return _rounded(source_max - end, _MICROS_PER_SECOND, "0.001")


def _rounded(delta: timedelta, unit: Decimal, step: str) -> float:
    micros = Decimal(delta // timedelta(microseconds=1))
    return float((micros / unit).quantize(Decimal(step), rounding=ROUND_HALF_UP))


def _largest_time(files: list[Mapping[str, Any]], key: str) -> datetime | None:
    values = [t for t in (parse_time(f.get(key)) for f in files) if t is not None]
    return max(values) if values else None


def _largest_number(files: list[Mapping[str, Any]], key: str) -> float | None:
    values = [float(f[key]) for f in files if f.get(key) is not None]
    return max(values) if values else None
