"""A stream's starting snapshot from a copy another tool loaded at a known LSN (docs/snapshots.md,
'Starting from an existing copy').

The copy's rows are appended to bronze in one commit shaped exactly as a full snapshot's (the
`_snapshot` column, `_operation = 0`, the snapshot `userMetadata`), and the generation-0
`bootstrap` row is offered for them, so the recovery, silver and the mode lock see a bootstrap.
Everything is checked before anything is written; a rerun after a crash finishes the same seed.
The copy is a table or a DataFrame; either way a seed is known by its stream, target and LSN,
never by the copy's name (decision 1374).
"""

from __future__ import annotations

import logging
import os
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.core import (
    Operation,
    StreamOffset,
    check_checkpoint_path,
    has_metadata,
    loss_after,
    read_state,
)
from mssql_cdc.core import lsn as lsns
from mssql_cdc.errors import ConfigError, DataLossError
from mssql_cdc.facts import SnapshotFacts, sink_has_batches, snapshot_facts, validate_app_id
from mssql_cdc.options import METADATA_COLUMNS, SourceConfig
from mssql_cdc.snapshot import full
from mssql_cdc.snapshot.probe import SourceProbe, open_probe
from mssql_cdc.snapshot.read import read_whole
from mssql_cdc.snapshot.seed_point import copy_point, lsn_at_time
from mssql_cdc.snapshot.targets import newest_whole, whole_snapshot_rows
from mssql_cdc.source import widens_to
from mssql_cdc.tables import (
    TableRef,
    append,
    ensure_table,
    open_for_read,
    require_distinct,
    table_ref,
)
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructField, StructType

__all__ = ["SeedResult", "checked_lsn", "seed"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SeedResult:
    """What `seed` recorded: the snapshot's offset and the rows copied into bronze."""

    offset: StreamOffset
    rows: int | None  # None when a rerun found the rows and the history lost their count
    written: bool  # False when a rerun found the copy recorded and wrote nothing


def seed(
    spark: SparkSession,
    config: SourceConfig,
    source_table: str | DataFrame,
    target: str,
    app_id: str,
    checkpoint: str,
    facts_table: str,
    at_lsn: str | None = None,
    *,
    as_of: str | datetime | None = None,
    allow_missing_columns: bool = False,
    reseed: bool = False,
) -> SeedResult:
    """Record `source_table`, a copy of the source taken at `at_lsn` (or `as_of`), as the
    stream's bootstrap (`CdcStream.seed`, whose arguments these are, in its order).

    Args:
        source_table: the copy: a Delta table's name or path, or a DataFrame.
        at_lsn: the LSN the copy holds every change up to, and none after.
        as_of: instead of `at_lsn`: that LSN, or the copy's commit time (a datetime, naive
            UTC), mapped to the newest source commit at or before it.
        allow_missing_columns: let the copy lack captured columns that are neither keys nor
            NOT NULL; they are NULL in bronze. Otherwise a missing column is refused.
        reseed: seed a new stream into a bronze that holds rows already (an earlier seed or
            stream); the copy becomes its newest whole snapshot. Its LSN must be at or above
            every row bronze holds.

    Raises:
        ConfigError (a ValueError): a bad LSN or time, a missing or non-Delta copy, columns
            that differ from the capture instance's, a stream that has started already, or
            a bronze holding rows without `reseed`.
        DataLossError: CDC cleanup already deleted changes after the copy's LSN.
    """
    validate_app_id(app_id)
    for name, flag in (("allow_missing_columns", allow_missing_columns), ("reseed", reseed)):
        if not isinstance(flag, bool):
            raise ConfigError(f"seed: {name}={flag!r} must be True or False")
    point = copy_point(at_lsn, as_of)
    if isinstance(source_table, str):
        require_distinct(source_table=source_table, target=target, facts_table=facts_table)
        named = table_ref(source_table, argument="source_table")
        copy: TableRef | None = named
        given: DataFrame | None = None
        copy_name = named.text
    else:
        _require_frame(source_table)
        require_distinct(target=target, facts_table=facts_table)
        copy, given, copy_name = None, source_table, "a DataFrame"
    ref = table_ref(target, argument="target")
    checkpoint = check_checkpoint_path(checkpoint)
    facts = snapshot_facts(spark, facts_table, app_id)
    if isinstance(point, str):
        done = _seeded_already(facts, point, target)
        if done is not None:
            return done
    with closing(open_probe(config)) as probe:
        at = point if isinstance(point, str) else lsn_at_time(probe, point)
        if not isinstance(point, str):
            done = _seeded_already(facts, at, target)
            if done is not None:
                return done
        _require_unstarted(spark, facts, checkpoint, facts_table, app_id, target)
        frame = given if given is not None else _copy_frame(spark, copy)  # type: ignore[arg-type]
        offset = checked_lsn(probe, at)
        shaped = _shaped(spark, config, frame, copy_name, offset, probe, allow_missing_columns)
        rows = _append_once(spark, probe, config, ref, shaped, offset, reseed=reseed)
    result = full.SnapshotResult(offset, rows, None, None, taken=True)
    full.write_bootstrap(
        spark, facts_table, app_id=app_id, target=target, snapshot=result, seeded_from=copy_name
    )
    log.info("%s: seeded from %s at %s (%s rows)", target, copy_name, offset.lsn, rows)
    return SeedResult(offset, rows, written=True)


def _require_frame(value: object) -> None:
    """A DataFrame, classic or Spark Connect (every one derives from pyspark.sql.DataFrame)."""
    from pyspark.sql import DataFrame

    if isinstance(value, DataFrame):
        return
    raise ConfigError(
        f"seed: source_table={value!r} must be a table name or path, or a DataFrame of the copy"
    )


def _seeded_already(facts: SnapshotFacts, at: str, target: str) -> SeedResult | None:
    """The finished seed a rerun finds: a generation-0 bootstrap at `at` for `target`."""
    for done in facts.completions():
        if done.generation == 0 and done.lsn.lsn == at and table_ref(target).names(done.target):
            return SeedResult(done.lsn, done.rows, written=False)
    return None


def _require_unstarted(
    spark: SparkSession,
    facts: SnapshotFacts,
    checkpoint: str,
    facts_table: str,
    app_id: str,
    target: str,
) -> None:
    started = (
        read_state(checkpoint) is not None
        or has_metadata(checkpoint)
        or bool(facts.rows)
        or sink_has_batches(spark, facts_table, app_id)
    )
    if started:
        raise ConfigError(
            f"{target}: the stream {app_id!r} has started already (its checkpoint {checkpoint} "
            f"or the facts in {facts_table} hold its batches or snapshots); a copy can only "
            "seed a new stream: pass a new app_id, checkpoint and target"
        )


def _copy_frame(spark: SparkSession, copy: TableRef) -> DataFrame:
    from pyspark.errors import AnalysisException

    if not copy.exists(spark):
        if copy.is_path and copy.location is not None and os.path.exists(copy.location):
            raise ConfigError(
                f"source_table={copy.text!r}: the folder holds no Delta table; convert the copy "
                "to Delta first (CONVERT TO DELTA) and seed from it"
            )
        raise ConfigError(
            f"source_table={copy.text!r}: no such table; pass the Delta table the copy was "
            "loaded into"
        )
    if not copy.is_path:
        try:
            detail = spark.sql(f"DESCRIBE DETAIL {copy.sql}").select("format").collect()
        except AnalysisException as exc:
            raise ConfigError(
                f"source_table={copy.text!r} is not a Delta table ({exc}); convert the copy "
                "to Delta first (CONVERT TO DELTA) and seed from it"
            ) from exc
        if not detail or str(detail[0]["format"]).lower() != "delta":
            found = detail[0]["format"] if detail else "unknown"
            raise ConfigError(
                f"source_table={copy.text!r} is a {found} table, not Delta; convert the copy "
                "to Delta first (CONVERT TO DELTA) and seed from it"
            )
    return spark.table(copy.sql)


def checked_lsn(probe: SourceProbe, at: str) -> StreamOffset:
    """`at` with its commit time, once the source shows changes after it are still held.

    Raises:
        ConfigError: `at` is above the source's newest LSN.
        DataLossError: CDC cleanup deleted changes after `at` (names `at` and `min_lsn`).
    """
    observation = probe.observe()
    instance = probe.resolved().capture_instance
    if observation.max_lsn is None or at > observation.max_lsn:
        raise ConfigError(
            f"{instance}: at_lsn {at} is above the source's newest LSN "
            f"({observation.max_lsn or 'none yet'}); a copy cannot be taken after the source's "
            "newest change: check the LSN the other tool recorded"
        )
    loss = loss_after(at, observation)
    if loss is not None:
        raise DataLossError(
            f"{loss.instance}: CDC cleanup already deleted changes after the copy's LSN {at} "
            f"(min_lsn {loss.low}), so the stream cannot continue from the copy. Take a new "
            "copy at an LSN at or above min_lsn, or start with to_delta(..., bootstrap=True)",
            loss.instance,
            first_lsn=lsns.increment(at),
            min_lsn=loss.low,
        )
    return StreamOffset(lsns.normalize(at), probe.commit_ts(at))


def _shaped(
    spark: SparkSession,
    config: SourceConfig,
    frame: DataFrame,
    copy: str,
    offset: StreamOffset,
    probe: SourceProbe,
    allow_missing: bool = False,
) -> DataFrame:
    """The copy's rows in the columns and order of a full snapshot's rows at `offset`; with
    `allow_missing`, a missing nullable non-key column is NULL."""
    from pyspark.sql import functions as F

    # The snapshot format's schema (no row read) is exactly what a full snapshot appends.
    snapshot: StructType = read_whole(spark, config, offset.lsn).schema
    captured = [f for f in snapshot.fields if f.name not in METADATA_COLUMNS]
    resolved = probe.resolved()
    _check_columns(
        copy,
        frame.schema,
        captured,
        resolved.capture_instance,
        allowed=_fillable(captured, resolved.index_columns) if allow_missing else frozenset(),
    )
    by_name = {f.name.lower(): f.name for f in frame.schema.fields}
    fixed = {
        "_capture_instance": F.lit(probe.resolved().capture_instance),
        "_start_lsn": F.lit(offset.lsn),
        "_operation": F.lit(int(Operation.SNAPSHOT)),
        "_commit_ts": F.lit(offset.commit_ts).cast("timestamp_ntz"),
        "_snapshot": F.lit(offset.lsn),
    }
    out = []
    for field in snapshot.fields:
        if field.name in fixed:
            value = fixed[field.name]
        elif field.name in METADATA_COLUMNS:
            value = F.lit(None)  # _seqval, _command_id: a snapshot row has none
        elif field.name.lower() not in by_name:
            value = F.lit(None)  # allowed missing: checked nullable and not a key
        else:
            value = F.col(f"`{by_name[field.name.lower()]}`")
        out.append(value.cast(field.dataType).alias(field.name))
    return frame.select(*out)


def _fillable(captured: list[StructField], keys: tuple[str, ...]) -> frozenset[str]:
    """The lower-case names of the captured columns a copy may lack: nullable, not a key."""
    key_names = {k.lower() for k in keys}
    return frozenset(
        f.name.lower() for f in captured if f.nullable and f.name.lower() not in key_names
    )


def _check_columns(
    copy: str,
    found: StructType,
    captured: list[StructField],
    instance: str,
    *,
    allowed: frozenset[str] = frozenset(),
) -> None:
    have = {f.name.lower(): f for f in found.fields}
    want = {f.name.lower(): f for f in captured}
    lacking = [w.name for k, w in want.items() if k not in have]
    missing = [name for name in lacking if name.lower() not in allowed]
    extra = [h.name for k, h in have.items() if k not in want]
    if missing or extra:
        hint = (
            "; allow_missing_columns=True fills only nullable columns that are not keys"
            if allowed or (lacking and not extra)
            else ""
        )
        raise ConfigError(
            f"source_table={copy!r}: its columns differ from capture instance {instance!r}'s"
            f" (missing {', '.join(missing) or 'none'}; not captured {', '.join(extra) or 'none'})"
            "; select the captured columns into the copy, or seed the instance that captures them"
            + hint
        )
    for key, wanted in want.items():
        if key not in have:
            continue  # an allowed missing column: NULL in bronze
        got: DataType = have[key].dataType
        target_type: DataType = wanted.dataType
        # Every value of a narrower number casts to the instance's type unchanged.
        if not widens_to(got.simpleString().upper(), target_type.simpleString().upper()):
            raise ConfigError(
                f"source_table={copy!r}: column {have[key].name} is "
                f"{got.simpleString()} in the copy but {target_type.simpleString()} in capture "
                f"instance {instance!r}; cast the copy's column to that type first"
            )


def _append_once(
    spark: SparkSession,
    probe: SourceProbe,
    config: SourceConfig,
    ref: TableRef,
    shaped: DataFrame,
    offset: StreamOffset,
    *,
    reseed: bool = False,
) -> int | None:
    """Append the copy's rows unless a crashed run appended them already; their count.

    With `reseed`, a bronze holding rows takes them as its newest whole snapshot, when none
    of its rows is above the copy's LSN.
    """
    from pyspark.sql import functions as F

    existing = open_for_read(spark, ref, "bronze")
    if existing is not None:
        found = newest_whole(spark, probe, config, ref.text)
        if found is not None and found.lsn == offset.lsn:
            return whole_snapshot_rows(spark, ref.text, offset.lsn)
        if spark.table(ref.sql).take(1):
            if not reseed:
                raise ConfigError(
                    f"{ref}: the bronze table holds rows already; a copy can only seed a new or "
                    "empty bronze table: pass another target, or reseed=True to seed over it"
                )
            high = spark.table(ref.sql).agg(F.max("_start_lsn")).first()
            newest = high[0] if high is not None else None
            if newest is not None and newest > offset.lsn:
                raise ConfigError(
                    f"{ref}: reseed at {offset.lsn} is below the newest row bronze holds "
                    f"({newest}); a reseeded copy must be at least as new as bronze: take a "
                    "newer copy"
                )
    # A seed is a full snapshot's append, so a crash test arms the same two points.
    failpoint("snapshot.before_append")
    ensure_table(spark, ref, "bronze", source_schema=shaped.schema)
    capture_instance = probe.resolved().capture_instance
    append(
        shaped,
        ref,
        user_metadata=full.snapshot_metadata(capture_instance, offset),
        merge_schema=True,
    )
    failpoint("snapshot.after_append")
    return whole_snapshot_rows(spark, ref.text, offset.lsn, just_written=True)
