"""The verdicts themselves: `advance`, `finalized_until`, `is_final`, and the control rows
silver reads and writes through the same MERGE. `candidate` is `advance` without its write
(decision 1371)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from mssql_cdc.core import Offset
from mssql_cdc.core import clock as _clock
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import format_time, parse_time
from mssql_cdc.tables import (
    CONTROL,
    TableRef,
    append,
    ensure_table,
    merge_into,
    open_for_read,
    quote_identifier,
    retry_on_conflict,
    table_ref,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ControlRow",
    "Granularity",
    "Offset",
    "advance",
    "candidate",
    "control_rows",
    "end_offset_from_progress",
    "finalized_until",
    "is_final",
    "record_position",
    "truncate",
]

Granularity = Literal["minute", "hour", "day"]
"""The period a verdict is truncated to: the period holding a batch's end is not complete."""
_VERDICT = ("finalized_until", "end_lsn", "end_commit_ts")
_POSITION = ("applied_lsn", "snapshot_lsn", "open_snapshot_lsn", "snapshot_wave")


@dataclass(frozen=True, slots=True)
class ControlRow:
    """One table's control row as stored; every field None when the row is missing.

    Attributes:
        finalized_until: the verdict, naive UTC: no row committed before it will arrive.
        end_lsn: the end offset's LSN the verdict was taken from.
        end_commit_ts: that offset's commit time, naive UTC; None when unknown.
        applied_lsn: silver's position, the highest bronze LSN applied; NULL on a bronze row.
        snapshot_lsn: the snapshot silver was last rebuilt from; None on a bronze row, or
            before the first rebuild.
        open_snapshot_lsn: the chunked snapshot whose waves silver is applying; None when none
            is open.
        snapshot_wave: the last wave of that snapshot applied; None when none is open.
        found: True when the row exists (then the None fields are NULL columns).
    """

    finalized_until: datetime | None = None
    end_lsn: str | None = None
    end_commit_ts: datetime | None = None
    applied_lsn: str | None = None  # the silver columns: NULL on a bronze row
    snapshot_lsn: str | None = None
    open_snapshot_lsn: str | None = None
    snapshot_wave: int | None = None
    found: bool = False  # not a column: the row exists (as `control_rows` read it)


def truncate(moment: datetime, granularity: Granularity) -> datetime:
    """Return the start of the minute, hour or day holding `moment` (14:37:05 -> 14:00).

    Raises:
        ConfigError: `granularity` is not "minute", "hour" or "day".
    """
    if granularity == "minute":
        return moment.replace(second=0, microsecond=0)
    if granularity == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    if granularity == "day":
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    raise ConfigError(
        f"granularity={granularity!r}: choose one of {', '.join(map(repr, get_args(Granularity)))}"
    )


def advance(
    spark: SparkSession,
    control_table: str,
    table_name: str,
    end_offset: Offset | Mapping[str, Any] | str | None,
    *,
    granularity: Granularity = "hour",
) -> datetime | None:
    """Move the verdict of `table_name` forward to the period before `end_offset`'s commit time.

    Creates or migrates the control table when it writes. Nothing is written when the offset
    is None or has no `commit_ts`; an older offset never moves the verdict back. Retried on
    Delta concurrent-commit conflicts for up to 60 seconds. `candidate` tells what this would
    return without writing.

    Returns:
        The verdict stored after the call (naive UTC), None when there is none.
    Raises:
        ConfigError: a bad control table, table name, offset or granularity.
    """
    ref, name, moved = _proposal(control_table, table_name, end_offset, granularity)
    if moved is None:
        return finalized_until(spark, control_table, name)
    ensure_table(spark, ref, "control")
    stored = finalized_until(spark, control_table, name)
    if stored is not None and moved.finalized_until is not None and stored >= moved.finalized_until:
        return stored  # nothing to move: no MERGE, no commit
    retry_on_conflict(lambda: _merge(spark, ref, name, moved, None), what=f"{ref}: advance {name}")
    return finalized_until(spark, control_table, name)


def candidate(
    spark: SparkSession,
    control_table: str,
    table_name: str,
    end_offset: Offset | Mapping[str, Any] | str | None,
    *,
    granularity: Granularity = "hour",
) -> datetime | None:
    """Return the verdict `advance` with these arguments would leave stored, writing nothing.

    The later of the stored verdict and the period before `end_offset`'s commit time (the
    stored one alone when the offset is None or has no `commit_ts`). Reads the control table
    only; a missing table is not created, and reads as no verdict.

    Returns:
        The verdict (naive UTC) a stream at `end_offset` could advance to now; None when there
        would be none.
    Raises:
        ConfigError: a bad control table, table name, offset or granularity.
    """
    _, name, moved = _proposal(control_table, table_name, end_offset, granularity)
    stored = finalized_until(spark, control_table, name)
    proposed = moved.finalized_until if moved is not None else None
    if proposed is None or (stored is not None and stored >= proposed):
        return stored
    return proposed


def _proposal(
    control_table: str,
    table_name: str,
    end_offset: Offset | Mapping[str, Any] | str | None,
    granularity: Granularity,
) -> tuple[TableRef, str, ControlRow | None]:
    """Check the arguments of `advance` and `candidate` before anything is read, and return
    the verdict `end_offset` proposes: None when it has no commit time."""
    truncate(datetime(2000, 1, 1), granularity)
    ref = table_ref(control_table, argument="control_table")
    name = _table_name(table_name)
    offset = _parse_offset(end_offset)
    commit_ts = parse_time(offset["commit_ts"]) if offset is not None else None
    if offset is None or commit_ts is None:
        return ref, name, None
    verdict = ControlRow(
        finalized_until=truncate(commit_ts, granularity),
        end_lsn=offset["lsn"],
        end_commit_ts=commit_ts,
    )
    return ref, name, verdict


def finalized_until(spark: SparkSession, control_table: str, table_name: str) -> datetime | None:
    """Return the verdict of `table_name` (naive UTC); None when the table or row is missing."""
    from pyspark.sql import functions as F

    handle = open_for_read(spark, table_ref(control_table, argument="control_table"), "control")
    if handle is None:
        return None
    rows = (
        spark.table(handle.ref.sql)
        .where(F.col("table_name") == F.lit(_table_name(table_name)))
        .agg(F.max("finalized_until").alias("verdict"))
        .collect()
    )
    verdict = rows[0]["verdict"] if rows else None
    return verdict if isinstance(verdict, datetime) else None


def is_final(
    spark: SparkSession, control_table: str, table_name: str, period_end: datetime
) -> bool:
    """Tell whether the period ending at `period_end` is complete (an aware time is converted
    to UTC; a naive one is UTC)."""
    if not isinstance(period_end, datetime):
        raise ConfigError(f"period_end={period_end!r}: pass a datetime")
    end = period_end.astimezone(UTC).replace(tzinfo=None) if period_end.tzinfo else period_end
    verdict = finalized_until(spark, control_table, table_name)
    return verdict is not None and end <= verdict


def end_offset_from_progress(progress: Any, *, source_index: int = 0) -> Offset | None:
    """Return the end offset of one source in a streaming progress report.

    `progress` is a StreamingQueryProgress, its dict (`query.lastProgress`) or its JSON text.

    Returns:
        The offset, or None while that source has no end offset yet.
    Raises:
        ValueError: source_index is out of range, or the report is not a progress report.
    """
    report = _progress_dict(progress)
    sources = report.get("sources")
    if not isinstance(sources, list):
        raise ConfigError("the progress report has no 'sources' list; pass a query's progress")
    if isinstance(source_index, bool) or not 0 <= source_index < len(sources):
        raise ConfigError(
            f"source_index={source_index!r} is out of range: the query has {len(sources)} source(s)"
        )
    return _parse_offset(sources[source_index].get("endOffset"))


def _progress_dict(progress: Any) -> Mapping[str, Any]:
    if isinstance(progress, str):
        loaded = json.loads(progress)
    elif isinstance(progress, Mapping):
        loaded = progress
    elif hasattr(progress, "json"):  # pyspark's StreamingQueryProgress
        text = progress.json
        loaded = json.loads(text() if callable(text) else text)
    else:
        raise ConfigError(
            f"progress of type {type(progress).__name__} is not a StreamingQueryProgress, its "
            "dict or its JSON"
        )
    if not isinstance(loaded, Mapping):
        raise ConfigError("the progress report is not a JSON object")
    return loaded


def _parse_offset(value: Offset | Mapping[str, Any] | str | None) -> Offset | None:
    if value is None:
        return None
    raw: Any = value
    if isinstance(value, str):
        try:
            raw = json.loads(value)
        except json.JSONDecodeError:
            raise ConfigError(
                f'offset {value!r} is not JSON; expected {{"lsn": ..., "commit_ts": ...}}'
            ) from None
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("lsn"), str):
        raise ConfigError(f'offset {value!r} has no \'lsn\'; expected {{"lsn", "commit_ts"}}')
    stamp = raw.get("commit_ts") or ""
    commit_ts = (format_time(stamp) or "") if isinstance(stamp, datetime) else str(stamp)
    return Offset(lsn=raw["lsn"], commit_ts=commit_ts)


def _table_name(table_name: object) -> str:
    if not isinstance(table_name, str) or not table_name:
        raise ConfigError(f"table_name={table_name!r}: pass the table's name as a non-empty string")
    return table_name


def control_rows(spark: SparkSession, control_table: str, names: Sequence[str]) -> list[ControlRow]:
    """Return the control rows of `names` in one read, in order; an empty `ControlRow` where
    the table or a row is missing. A table older than the silver columns reads them as None."""
    from pyspark.sql import functions as F

    handle = open_for_read(spark, table_ref(control_table, argument="control_table"), "control")
    if handle is None:
        return [ControlRow() for _ in names]
    df = spark.table(handle.ref.sql)
    present = [f.name for f in fields(ControlRow) if f.name in df.columns]
    found = {
        row["table_name"]: ControlRow(**{n: row[n] for n in present}, found=True)
        for row in df.where(F.col("table_name").isin(*names))
        .select("table_name", *present)
        .collect()
    }
    return [found.get(_table_name(name), ControlRow()) for name in names]


def record_position(
    spark: SparkSession,
    control_table: str,
    table_name: str,
    position: ControlRow,
    verdict: ControlRow | None,
    *,
    new: bool = False,
) -> None:
    """Store the silver columns of `position` in the row of `table_name`, in one commit with
    `verdict`'s verdict columns when that verdict is newer than the stored one (never back).

    `new` says the caller read no row of `table_name` and is its only writer (a silver row is
    written by one `apply_changes` call at a time): the row is then appended, one Spark job,
    where the MERGE that finds it first runs about ten.

    Creates or migrates the control table first; retried on Delta concurrent-commit conflicts
    for up to 60 seconds, as `advance` is.
    """
    ref = table_ref(control_table, argument="control_table")
    name = _table_name(table_name)
    ensure_table(spark, ref, "control")
    if new:
        append(_row(spark, name, verdict or ControlRow(), position), ref)
        return
    retry_on_conflict(
        lambda: _merge(spark, ref, name, verdict or ControlRow(), position),
        what=f"{ref}: position of {name}",
    )


def _merge(
    spark: SparkSession,
    ref: TableRef,
    name: str,
    verdict: ControlRow,
    position: ControlRow | None,
) -> None:
    """One MERGE on `name`: the verdict moves only forward; the position (if any) always lands.

    Without a position the row is left untouched unless the verdict moves, so `advance` writes
    no change when the verdict stays.
    """
    source = _row(spark, name, verdict, position)
    values = [quote_identifier(c) for c in source.columns]
    newer = (
        "s.finalized_until IS NOT NULL AND "
        "(t.finalized_until IS NULL OR s.finalized_until > t.finalized_until)"
    )
    moved = {c: f"s.{c}" for c in values if c != "`table_name`"}
    if position is None:
        matched = f"WHEN MATCHED AND {newer} THEN UPDATE SET "
    else:
        for c in map(quote_identifier, _VERDICT):
            moved[c] = f"CASE WHEN {newer} THEN s.{c} ELSE t.{c} END"
        matched = "WHEN MATCHED THEN UPDATE SET "
    clauses = [
        matched + ", ".join(f"t.{c} = {expr}" for c, expr in moved.items()),
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(values)}) "
        f"VALUES ({', '.join(f's.{c}' for c in values)})",
    ]
    merge_into(ref.sql, source, on="t.table_name = s.table_name", clauses=clauses)


def _row(
    spark: SparkSession, name: str, verdict: ControlRow, position: ControlRow | None
) -> DataFrame:
    """The control row of `name` as a one-row DataFrame: verdict, position (if any), now."""
    now = _clock.now().replace(tzinfo=None)
    values: dict[str, object] = {"table_name": name, "updated_at": now}
    values.update({c: getattr(verdict, c) for c in _VERDICT})
    if position is not None:
        values.update({c: getattr(position, c) for c in _POSITION})
    types = {c.name: c.type for c in CONTROL}
    return spark.createDataFrame(
        [tuple(values.values())], ", ".join(f"{c} {types[c]}" for c in values)
    )
