"""`reconcile()`: is the copy right? Silver, or bronze's latest images, against the source.

docs/reconcile.md is the guide; decisions 1100 and 1101 say why it works this way. Keys are
ordered by their SQL types and collations (decisions 1331, 1332); a time key of seven
fractional digits held as a Spark time is refused (decisions 1333, 1343); declared STRING it
compares as its text (decision 1344). `sampled=` checks a share of the keys chosen by a hash of
the key and states the bound it gives; `report_table=` appends each run's differences to a
Delta table (decision 1376)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime
from numbers import Integral
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import (
    SEVEN_DIGIT_TIMES,
    UnorderedKeyError,
    check_time_key,
    digestible,
    key_collation,
    text_key,
    with_collation,
)
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import FactsRow, append_facts, family_condition, json_key, now_naive, sink_id
from mssql_cdc.finalization import control_rows
from mssql_cdc.options import KeyBound, SourceConfig
from mssql_cdc.reconciliation.repair import (
    finish_pending_repair,
    finish_repair,
    open_repair,
    pending_repair,
)
from mssql_cdc.reconciliation.repair_job import check_repair_arguments, prepare_repair
from mssql_cdc.reconciliation.report import check_report_table, write_report
from mssql_cdc.reconciliation.result import AGAINST, Against, ReconcileResult, SampleVerdict
from mssql_cdc.reconciliation.sampling import (
    LEVEL,
    check_sampled,
    fraction_of,
    share_below,
    threshold,
)
from mssql_cdc.reconciliation.source_side import SourceAsOf, SourceTable
from mssql_cdc.reconciliation.target_side import TargetRows
from mssql_cdc.reconciliation.tile_narrowing import KeyRange, Narrowed, compare_tiles
from mssql_cdc.silver import DELETE_FLAG, bronze_shape, key_list, latest_images
from mssql_cdc.sqlserver import (
    Backend,
    ReadColumn,
    TableColumn,
    find_instance,
    key_bounds,
    open_backend,
)
from mssql_cdc.tables import (
    TableRef,
    check_session,
    ensure_table,
    kind_of,
    open_for_read,
    table_ref,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["reconcile"]

MAX_TILES = 100_000
LEAF_ROWS = 4096


def _check_arguments(
    against: object,
    tiles: object,
    sample: object,
    control_table: str | None,
    facts_table: str | None,
    app_id: str | None,
) -> None:
    if against not in AGAINST:
        raise ConfigError(f"reconcile: against must be 'silver' or 'bronze' (got {against!r})")
    for name, value in (("tiles", tiles), ("sample", sample)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TILES:
            raise ConfigError(
                f"reconcile: {name} must be an int from 1 to {MAX_TILES} (got {value!r})"
            )
    if against == "silver" and control_table is None:
        raise ConfigError(
            "reconcile: against='silver' needs control_table, where apply_changes records the "
            "LSN silver stands at; pass the control_table given to apply_changes"
        )
    if facts_table is not None and app_id is None:
        raise ConfigError(
            "reconcile: facts_table needs app_id, the stream's app_id its verdict is filed under"
        )


def _target_rows(
    spark: SparkSession,
    ref: TableRef,
    against: Against,
    keys: Sequence[str],
    control: str | None,
) -> tuple[DataFrame, str]:
    """The target's rows (one per key) and the LSN the source is compared at."""
    from pyspark.sql import functions as F

    if not ref.exists(spark):
        raise ConfigError(f"reconcile: target {ref} does not exist; check the table name or path")
    rows = spark.table(ref.sql)
    if against == "silver":
        assert control is not None  # _check_arguments
        (position,) = control_rows(spark, control, [ref.text])
        if position.applied_lsn is None:
            raise ConfigError(
                f"reconcile: silver {ref} has no applied position in {control}; run "
                "apply_changes first, with this control_table"
            )
        return rows, str(position.applied_lsn)
    shape = bronze_shape(rows, ref.text)
    newest = rows.agg(F.max("_start_lsn")).first()
    if newest is None or newest[0] is None:
        raise ConfigError(f"reconcile: bronze {ref} holds no rows yet; run the stream first")
    images = latest_images(rows, keys, shape, ref=ref.text)
    return images.where(~F.col(DELETE_FLAG)), str(newest[0])


def _columns(
    target: DataFrame,
    source_names: Sequence[str],
    keys: Sequence[str],
    chosen: Sequence[str] | None,
    ref: str,
) -> tuple[list[Any], list[str]]:
    """The target fields compared (source order) and the target columns left out."""
    fields = {f.name: f for f in target.schema.fields}
    if chosen is not None:
        for name in chosen:
            if name not in fields or name not in source_names:
                raise ConfigError(
                    f"reconcile: column {name!r} is not in both the source table and {ref}; "
                    "fix columns"
                )
            if not digestible(fields[name].dataType.simpleString().upper()):
                raise ConfigError(
                    f"reconcile: column {name!r} of type {fields[name].dataType.simpleString()} "
                    "has no canonical text to digest (docs/reconcile.md); leave it out of columns"
                )
    names = [n for n in source_names if n in fields and (chosen is None or n in chosen)]
    compared = [fields[n] for n in names if digestible(fields[n].dataType.simpleString().upper())]
    compared_names = {f.name for f in compared}
    for key in keys:
        if key not in compared_names:
            raise ConfigError(
                f"reconcile: key column {key!r} is not a compared column of {ref} and the "
                "source table; fix keys or columns"
            )
    skipped = [n for n in names if n not in compared_names]
    return compared, skipped


def _tiles_between(bounds: Sequence[KeyBound]) -> list[KeyRange]:
    """The key tiles the bounds cut: open below the first bound and above the last."""
    edges: list[KeyBound] = [None, *bounds, None]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def reconcile(
    spark: SparkSession,
    options: Mapping[str, object],
    target: str,
    *,
    against: Against = "silver",
    keys: Sequence[str] | None = None,
    control_table: str | None = None,
    facts_table: str | None = None,
    app_id: str | None = None,
    columns: Sequence[str] | None = None,
    tiles: int = 64,
    sample: int = 20,
    repair: bool = False,
    checkpoint: str | None = None,
    resnapshot_interval_days: float = 7.0,
    sampled: float | int | None = None,
    report_table: str | None = None,
) -> ReconcileResult:
    """Compare `target` with the source table of `options` as of the target's own LSN.

    Both sides count and digest their rows per key tile; only tiles that
    differ are split and compared again, down to a sample of keys. Changes committed to the
    source after the target's LSN are taken back out of the source's side, so
    a running workload is no difference. With `facts_table`, the verdict is also a facts row
    (event `reconcile`, the counts in `detail`) under `app_id`.

    Args:
        spark: the session.
        options: the stream's source options (as given to `stream()`).
        target: the silver table (`against="silver"`) or bronze (`against="bronze"`, its
            latest image per key), name or path.
        against: which kind of table `target` is.
        keys: the columns identifying a row; default the capture instance's unique index.
        control_table: silver's control table (where its LSN is); required for silver.
        facts_table: where the verdict row goes; None writes none.
        app_id: the stream's app_id, under which the row is filed (its live generation's).
        columns: the columns compared (keys included); default every column of both sides
            with a canonical text (others are listed in `skipped_columns`).
        tiles: how many key tiles the table is cut into first.
        sample: at most this many keys of each kind are named.
        repair: bronze only: when it differs, re-snapshot the differing tiles into the
            stream's next generation and read them before returning; equal tiles are
            carried from bronze (docs/reconcile.md 'Repairing on purpose'). Stop the stream
            first; it needs `app_id`, `checkpoint` and `facts_table` as to_delta takes them.
        checkpoint: the stream's checkpoint (with `repair`).
        resnapshot_interval_days: the anti-loop guard of the repair's re-snapshot, as
            `CdcStream.resnapshot()` takes it.
        sampled: check a sample of the keys instead of every row: a fraction above 0 and at
            most 1, or a number of rows (a share of the source's row count). The same keys
            are checked on both sides (chosen by a hash of the key); the result's `sampled`
            states the bound the sample gives at 95% confidence. None checks every row.
        report_table: a Delta table (name or path) this run's differences are appended to,
            one row per named key (docs/tables.md 'Reconcile report'); None writes none.

    Returns:
        A `ReconcileResult`. A call that finds a repair a crash interrupted finishes it
        instead of comparing: its result counts that repair's tiles and names no keys.

    Raises:
        ConfigError: a bad argument or option, a missing target or position, before anything
            is read or written; with `repair`, also a silver target, a running stream, the
            anti-loop guard or the mode lock.
        DataLossError: CDC cleanup deleted the changes after the target's LSN, so the source
            cannot be read as of it.
    """
    _check_arguments(against, tiles, sample, control_table, facts_table, app_id)
    if not isinstance(repair, bool):
        raise ConfigError(f"reconcile: repair must be True or False (got {repair!r})")
    check_sampled(sampled)
    if repair and sampled is not None:
        raise ConfigError(
            "reconcile: repair=True compares every row to know which tiles to read again; "
            "drop sampled, or reconcile sampled first and repair after"
        )
    report = check_report_table(
        report_table, target=target, facts_table=facts_table, control_table=control_table
    )
    if repair:
        check_repair_arguments(
            against, app_id=app_id, checkpoint=checkpoint, facts_table=facts_table
        )
    if keys is not None:
        keys = key_list(keys, caller="reconcile")
    check_session(spark)
    if not isinstance(options, Mapping):
        raise ConfigError(
            f"reconcile: options must be a mapping of source options (got {kind_of(options)}), "
            "the options given to stream()"
        )
    config = SourceConfig.from_options(options)
    ref = table_ref(target, argument="target")
    job = None
    if repair:
        assert app_id is not None
        assert checkpoint is not None
        assert facts_table is not None
        job = prepare_repair(
            spark, config, options, target, app_id=app_id, checkpoint=checkpoint,
            facts_table=facts_table, interval_days=resnapshot_interval_days, keys=keys,
        )  # fmt: skip
        pending = pending_repair(spark, job)
        if pending is not None:
            return finish_pending_repair(spark, config, job, pending, ref.text)
    started = time.perf_counter()
    started_at = datetime.now(UTC).replace(tzinfo=None)
    with closing(open_backend(config)) as backend:
        instance = find_instance(backend.catalog, config.capture_instance).instance
        key_columns = list(keys) if keys is not None else list(instance.index_columns)
        if not key_columns:
            raise ConfigError(
                f"reconcile: capture instance {instance.name!r} has no unique index; pass keys"
            )
        rows, at = _target_rows(spark, ref, against, key_columns, control_table)
        table_columns = backend.snapshots.table_columns(
            instance.source_schema, instance.source_table
        )
        compared, skipped = _columns(
            rows, [c.name for c in table_columns], key_columns, columns, ref.text
        )
        sql_types = {c.name: c.sql_type for c in table_columns}
        read = tuple(
            ReadColumn(f.name, f.dataType.simpleString().upper(), sql_types.get(f.name))
            for f in compared
        )
        table = SourceTable(
            instance.name, instance.source_schema, instance.source_table, read,
            tuple(key_columns), key_types_of(instance.name, key_columns, table_columns, rows),
        )  # fmt: skip
        fraction = 1.0
        if sampled is not None:
            counted = None
            if isinstance(sampled, Integral):
                counted = backend.chunks.row_count(table.schema, table.table)
            fraction = fraction_of(sampled, counted)
        narrowed, ranges = _compare_sides(
            spark, backend, table, at, rows, compared, tiles, sample, fraction
        )
    result = _verdict_of(
        narrowed, at, against, ref.text, compared, skipped, time.perf_counter() - started
    )
    if sampled is not None:
        result = replace(result, sampled=_sample_verdict(narrowed, fraction))
    if report is not None:
        run_id = uuid.uuid4().hex
        write_report(spark, report, result, key_columns, run_id, started_at)
        result = replace(result, report_run=run_id)
    if facts_table is not None and app_id is not None:
        _file_verdict(spark, facts_table, app_id, result, started_at)
    if job is not None and not result.equal:
        opened = open_repair(
            spark, config, job, at=at, capture_instance=table.capture_instance, tiles=ranges,
            differing=narrowed.differing, key_types=table.key_types,
        )  # fmt: skip
        result = replace(result, repaired_tiles=finish_repair(spark, config, job, opened))
    return result


def _compare_sides(
    spark: SparkSession,
    backend: Backend,
    table: SourceTable,
    at: str,
    rows: DataFrame,
    compared: Sequence[Any],
    tiles: int,
    sample: int,
    fraction: float = 1.0,
) -> tuple[Narrowed, list[KeyRange]]:
    first_type = next((c.sql_type for c in table.columns if c.name == table.keys[0]), None)
    bounds = key_bounds(
        backend.snapshots, table.schema, table.table, table.keys, tiles, first_type=first_type
    )
    ranges = _tiles_between(bounds)
    below = threshold(fraction)
    source = SourceAsOf(
        table, at, tiles=backend.tiles, chunks=backend.chunks, changes=backend.changes,
        sample_below=below, fraction=fraction,
    )  # fmt: skip
    time_zone = str(spark.conf.get("spark.sql.session.timeZone") or "UTC")
    key_types = table.key_types
    target = TargetRows(
        rows, keys=table.keys, fields=compared, time_zone=time_zone, key_types=key_types,
        sample_below=below,
    )  # fmt: skip
    try:
        found = compare_tiles(
            source, target, ranges, sample=sample, leaf_rows=LEAF_ROWS, key_types=key_types
        )
        return found, ranges
    except UnorderedKeyError as e:  # a source key holding a character only the server orders
        raise ConfigError(
            f"reconcile {table.schema}.{table.table}: {e}; reconcile a table whose character "
            "keys hold only letters, digits and spaces, or give the key a _BIN2 collation"
        ) from e
    finally:
        target.release()


def key_types_of(
    instance: str, keys: Sequence[str], columns: Sequence[TableColumn], rows: DataFrame
) -> tuple[str | None, ...]:
    """Each key column's SQL type, a character key's with its collation.

    Raises:
        ConfigError: a character key under a collation the library cannot compare by, or a
            time key of seven fractional digits Spark cannot keep apart or order
            (`core.check_time_key`).
    """
    by_name = {c.name: c for c in columns}
    spark_types = {f.name: f.dataType.typeName() for f in rows.schema.fields}
    out: list[str | None] = []
    for name in keys:
        column = by_name.get(name)
        sql_type = None if column is None else with_collation(column.sql_type, column.collation)
        out.append(sql_type)
        try:
            key_collation(sql_type)
        except ValueError as e:
            raise ConfigError(
                f"reconcile {instance}: key column {name}: {e}; reconcile cannot place target "
                "rows in the server's tiles, so it refuses the table"
            ) from e
        if column is not None and column.sql_type in SEVEN_DIGIT_TIMES:
            scaled = f"{column.sql_type}({column.scale})"
            check_time_key(f"reconcile {instance}", name, scaled, spark_types.get(name, ""))
            out[-1] = text_key(scaled, spark_types.get(name))
    return tuple(out)


def _sample_verdict(narrowed: Narrowed, fraction: float) -> SampleVerdict:
    """What a sampled comparison checked: the source's sampled rows and the target's sampled
    keys the source lacks, and the bound that gives when its counts are the whole difference."""
    missing, extra, different = narrowed.found
    keys = narrowed.source_rows + extra
    differing = missing + extra + different
    bound = share_below(keys, differing, LEVEL) if narrowed.complete else None
    return SampleVerdict(fraction, keys, differing, LEVEL, bound)


def _verdict_of(
    narrowed: Narrowed,
    at: str,
    against: Against,
    target: str,
    compared: Sequence[Any],
    skipped: Sequence[str],
    seconds: float,
) -> ReconcileResult:
    def keys(found: Sequence[tuple[object, ...]]) -> tuple[Any, ...]:
        return tuple(json_key(k[0] if len(k) == 1 else list(k)) for k in found)

    return ReconcileResult(
        equal=narrowed.equal,
        lsn=at,
        against=against,
        target=target,
        tiles=narrowed.tiles,
        differing_tiles=len(narrowed.differing),
        source_rows=narrowed.source_rows,
        target_rows=narrowed.target_rows,
        missing=keys(narrowed.missing),
        extra=keys(narrowed.extra),
        different=keys(narrowed.different),
        missing_count=narrowed.found[0],
        extra_count=narrowed.found[1],
        different_count=narrowed.found[2],
        complete=narrowed.complete,
        columns=tuple(f.name for f in compared),
        skipped_columns=tuple(skipped),
        seconds=round(seconds, 3),
    )


def _file_verdict(
    spark: SparkSession,
    facts_table: str,
    app_id: str,
    result: ReconcileResult,
    started_at: datetime,
) -> None:
    """The verdict as a facts row: event `reconcile` at the compared LSN, counts in `detail`."""
    from pyspark.sql import functions as F

    generation = 0  # the live generation's: the family's newest
    handle = open_for_read(spark, facts_table, "facts")
    if handle is not None:
        newest = (
            spark.table(handle.ref.sql)
            .where(family_condition(app_id))
            .agg(F.max("generation"))
            .first()
        )
        generation = int(newest[0]) if newest is not None and newest[0] is not None else 0
    detail = {
        k: v
        for k, v in result.as_dict().items()
        if k not in ("lsn", "target", "columns", "seconds")
    }
    row = FactsRow(
        app_id=sink_id(app_id, generation),
        generation=generation,
        rows=0,
        min_lsn=result.lsn,
        max_lsn=result.lsn,
        event="reconcile",
        end_lsn=result.lsn,
        detail=json.dumps(detail, sort_keys=True),
        target=result.target,
        started_at=started_at,
        duration_ms=int(result.seconds * 1000),
        written_at=now_naive(),
    )
    ensure_table(spark, facts_table, "facts")
    append_facts(spark, facts_table, [row], key=None)
