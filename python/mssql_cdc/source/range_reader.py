"""Reading one LSN range on an executor (docs/source.md, 'Guards' and 'Events and metrics files').

Stateless: the task opens its own backend from the pickled config, yields the range's Arrow
batches, runs the executor guard once the rows are read, writes the range's metrics file and
closes the backend in `finally`, on error too. Never retried here: Spark reruns the task, which
rewrites the same metrics file. With the batch figures on (decision 1391) every batch carries
the NULL column `FIGURES_COLUMN`, and the task ends with one row holding its figures.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import (
    FIGURES_COLUMN,
    FIGURES_FIELDS,
    EventJson,
    LsnRange,
    RangeMetrics,
    format_commit_ts,
    lsn,
    range_file_name,
    write_json_atomic,
)
from mssql_cdc.errors import EmulatorError
from mssql_cdc.options import SourceConfig, open_folder
from mssql_cdc.source.loss_guards import (
    ERROR_BELOW_MIN_LSN,
    ERROR_OBJECT_VANISHED,
    data_skipped_event,
    executor_guard,
    is_established,
    resume_after_refusal,
    task_loss_error,
    task_skip_warning,
)
from mssql_cdc.source.range_counter import RangeCounter
from mssql_cdc.sqlserver import ChangeRangeReader, ReadColumn, error_number, open_backend

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["read_range"]

_log = logging.getLogger("mssql_cdc.source.formats")
_RANGE_ERRORS = (ERROR_OBJECT_VANISHED, ERROR_BELOW_MIN_LSN)  # the executor guard decides


def _number(exc: BaseException) -> int | None:
    if isinstance(exc, EmulatorError):
        return exc.number
    return error_number(exc)


def range_refusal(exc: BaseException) -> int | None:
    """208 or 313 when `exc` is the server refusing a change range (vanished or purged), else
    None: the refusals a concurrent cleanup or disable causes, which the executor guard judges."""
    number = _number(exc)
    return number if number in _RANGE_ERRORS else None


def read_range(
    config: SourceConfig,
    columns: Sequence[ReadColumn],
    part: LsnRange,
    *,
    figures: pa.Schema | None = None,
    planned_events: Sequence[str] = (),
) -> Iterator[pa.RecordBatch]:
    """Yield the change rows of `part` cast to the declared schema, then guard and record.

    With `figures` (the output's Arrow schema, `FIGURES_COLUMN` last) each batch gains that
    column as NULL, and a last row holds the range's figures and the names of the events of
    `planned_events` (planning's, on the batch's last range) and of the task's own.

    Raises:
        DataLossError: with failOnDataLoss=true, CDC cleanup ran during the read, the instance
            vanished, or the server refused the range as purged (`possible` is True).
    """
    with closing(open_backend(config)) as backend:
        yield from _read(config, columns, part, backend.changes, figures, tuple(planned_events))


def _read(
    config: SourceConfig,
    columns: Sequence[ReadColumn],
    part: LsnRange,
    reader: ChangeRangeReader,
    figures: pa.Schema | None = None,
    planned_events: tuple[str, ...] = (),
) -> Iterator[pa.RecordBatch]:
    started = time.perf_counter()
    stats = reader.session_stats()
    rows = size = 0
    counter: RangeCounter | None = RangeCounter() if config.metrics_path is not None else None
    failure: int | None = None  # the first refusal: it names the guard's reason
    ci = part.capture_instance
    reads_from, to = lsn.Lsn(part.from_lsn), lsn.Lsn(part.to_lsn)
    while True:
        refused: int | None = None
        before = rows
        try:
            for batch in reader.read_changes(
                ci,
                reads_from,
                to,
                columns=columns,
                include_command_id=config.include_command_id,
                time_zone=part.time_zone,
                batch_rows=config.arrow_batch_size,
                null_columns=part.null_columns,
            ):
                rows += batch.num_rows
                size += batch.nbytes
                counter = _count(counter, batch)
                yield batch if figures is None else _with_null_figures(batch, figures)
        except Exception as exc:  # re-raised unless the server refused a purged or vanished range
            refused = _number(exc)
            if refused not in _RANGE_ERRORS:
                raise
            failure = refused if failure is None else failure
        min_after = reader.min_lsn(ci)
        # Only a refusal that yielded nothing reads on, so no row is handed to Spark twice.
        resume = (
            None
            if config.fail_on_data_loss or rows > before
            else resume_after_refusal(reads_from, to, min_after, refused)
        )
        if resume is None:
            break
        reads_from = resume
    seconds = time.perf_counter() - started
    reason = executor_guard(lsn.Lsn(part.from_lsn), min_after, failure)
    warnings: list[str] = []
    events: list[EventJson] = []
    if reason is not None:
        min_ts = (
            format_commit_ts(reader.commit_time(min_after, part.time_zone))
            if min_after is not None and is_established(min_after)
            else ""
        ) or None
        if config.fail_on_data_loss:
            raise task_loss_error(
                ci,
                lsn.Lsn(part.from_lsn),
                lsn.Lsn(part.to_lsn),
                min_after,
                reason,
                min_commit_ts=min_ts,
                lost_from_ts=part.start_ts,
            )
        text = task_skip_warning(ci, part.from_lsn, part.to_lsn, min_after, reason)
        _log.warning("%s", text)
        warnings.append(text)
        record = data_skipped_event(
            ci,
            part.from_lsn,
            min_after or lsn.ZERO,
            min_commit_ts=min_ts,
            lost_from_ts=part.start_ts,
            batch_start_lsn=part.batch_start_lsn,
            batch_end_lsn=part.batch_end_lsn,
            reason=reason,
        )
        events.append(record.to_json())
    if config.metrics_path is None and figures is None:
        return
    metrics: RangeMetrics = {
        "kind": "range",
        "capture_instance": ci,
        "from_lsn": part.from_lsn,
        "to_lsn": part.to_lsn,
        "last": part.last,
        "batch_start_lsn": part.batch_start_lsn,
        "batch_end_lsn": part.batch_end_lsn,
        "rows": rows,
        "bytes": size,
        "seconds": round(seconds, 6),
        "to_commit_ts": format_commit_ts(reader.commit_time(lsn.Lsn(part.to_lsn), part.time_zone))
        or None,
        "rtt_ms": stats.rtt_ms,
        "network_wait_ms": stats.network_wait_ms,
        "retention_watermark_ts": None,
        "source_max_lsn": None,
        "source_max_commit_ts": None,
        "capture_lag_seconds": None,
        "warnings": warnings,
        "events": events,
    }
    if counter is not None and failure is None:
        metrics["counts"] = counter.result()
    if part.last:
        _last_range_metrics(metrics, reader, ci, part.time_zone)
    if config.metrics_path is not None:
        name = range_file_name(part.from_lsn, part.to_lsn)
        folder = open_folder(config.metrics_path, config.store)
        write_json_atomic(config.metrics_path, name, metrics, folder)
    if figures is not None:
        found = [*planned_events, *(str(e["event"]) for e in events)]
        yield _figures_row(figures, metrics, found)


def _with_null_figures(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` with `FIGURES_COLUMN` added, NULL on every change row."""
    import pyarrow as pa

    kind = schema.field(FIGURES_COLUMN).type
    return pa.RecordBatch.from_arrays(
        [*batch.columns, pa.nulls(batch.num_rows, kind)], schema=schema
    )


def _figures_row(schema: pa.Schema, metrics: RangeMetrics, events: Sequence[str]) -> pa.RecordBatch:
    """The task's last row: every column NULL but `FIGURES_COLUMN`, which holds the range's
    figures as its metrics file does, and the events' names joined by commas (NULL if none)."""
    import pyarrow as pa

    written: dict[str, Any] = dict(metrics)
    values = {name: written.get(name) for name, _ in FIGURES_FIELDS}
    values["batch_start_lsn"] = metrics["batch_start_lsn"]
    values["events"] = ",".join(dict.fromkeys(events)) or None
    arrays = [
        pa.array([values], type=f.type) if f.name == FIGURES_COLUMN else pa.nulls(1, f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _count(counter: RangeCounter | None, batch: pa.RecordBatch) -> RangeCounter | None:
    """Count `batch`; a batch that cannot be counted drops the range's counts, not the read."""
    if counter is None:
        return None
    try:
        counter.add(batch)
    except (KeyError, TypeError, ValueError) as exc:
        _log.warning("the range's counts are not recorded (%s); the sink counts the batch", exc)
        return None
    return counter


def _last_range_metrics(
    metrics: RangeMetrics, reader: ChangeRangeReader, ci: str, time_zone: str
) -> None:
    """Source max, its commit time, capture lag and the retention watermark (last range only)."""
    max_lsn = reader.max_lsn()
    max_time = None if max_lsn is None else reader.commit_time(max_lsn, time_zone)
    now = datetime.now(UTC).replace(tzinfo=None)
    watermark = reader.min_lsn(ci)
    if watermark is not None and is_established(watermark):
        metrics["retention_watermark_ts"] = (
            format_commit_ts(reader.commit_time(watermark, time_zone)) or None
        )
    metrics["source_max_lsn"] = max_lsn
    metrics["source_max_commit_ts"] = format_commit_ts(max_time) or None
    if max_time is not None:
        metrics["capture_lag_seconds"] = round((now - max_time).total_seconds(), 3)
