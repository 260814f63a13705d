"""`apply_changes`: keep a current-state silver table from bronze (docs/silver.md).

Each call reads bronze's verdict, then the facts rows of this bronze, then pins bronze at one
version; it rebuilds from a newer snapshot or applies the changes after its position, applies
the waves of an open chunked snapshot, and only then records its position and verdict. A crash
between the MERGE and the position repeats the MERGE, which the newer-image rule makes harmless;
a crash after the append that writes an empty silver (decision 0460) finds rows on the rerun,
which then MERGEs. At granularity 'commit' silver is a history instead (`history`); `options`
go to the bronze reader (decision 1373).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypedDict

from mssql_cdc.core import Operation
from mssql_cdc.errors import ConfigError
from mssql_cdc.finalization import ControlRow, control_rows, record_position
from mssql_cdc.silver.checks import (
    check_arguments,
    check_capture_instance,
    check_keys,
    check_read_options,
)
from mssql_cdc.silver.facts_view import BronzeSnapshotFacts, read_snapshot_facts
from mssql_cdc.silver.history import (
    check_granularity_of,
    chunk_waves,
    history_shape,
    write_history,
)
from mssql_cdc.silver.images import BronzeShape, bronze_shape, col, snapshot_of
from mssql_cdc.silver.merge import ensure_silver
from mssql_cdc.silver.silver_writer import Position, SilverWriter
from mssql_cdc.silver.table_state import table_state
from mssql_cdc.tables import (
    TableRef,
    check_session,
    open_for_read,
    recorded_sql_types,
    table_ref,
)
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ApplyResult", "SilverGranularity", "apply_changes"]

SilverGranularity = Literal["key", "commit"]
"""apply_changes' `granularity`: 'key' keeps one row per key (its latest image), 'commit' one
row per key and source commit (a history, `_deleted` marking removals)."""

_log = logging.getLogger("mssql_cdc.silver")
_warned_no_facts: set[str] = set()


class ApplyResult(TypedDict):
    """What one `apply_changes` call left behind.

    Attributes:
        rebuilt: True when silver was rebuilt from a newer snapshot in bronze this call (keys
            deleted during a loss gap are gone), False when changes were applied on top.
        applied_lsn: silver's position after the call, the highest bronze LSN applied (after a
            rebuild, the snapshot's); None while silver has no position (nothing applied yet).
        finalized_until: silver's completeness verdict after the call, naive UTC: no rows with
            an earlier commit time will arrive; None while bronze has no verdict.
        bronze_found: False when bronze does not exist yet; nothing was read or written.
    """

    rebuilt: bool  # silver was rebuilt from a newer snapshot
    applied_lsn: str | None  # highest bronze LSN applied (a snapshot's, after a rebuild)
    finalized_until: datetime | None  # silver's completeness verdict (naive UTC)
    bronze_found: bool  # False when bronze does not exist yet: nothing was done


def apply_changes(
    spark: SparkSession,
    bronze: str,
    target: str,
    *,
    keys: Sequence[str],
    control_table: str,
    facts_table: str | None = None,
    capture_instance: str | None = None,
    granularity: SilverGranularity = "key",
    options: Mapping[str, object] | None = None,
) -> ApplyResult:
    """Bring the silver table `target` up to date with `bronze`: one row per key, latest image
    (or, at granularity 'commit', one row per key and commit).

    Silver is rebuilt from the newest snapshot when there is a newer one than it was last built
    from (keys deleted in a loss gap disappear); otherwise the changes after its position are
    applied. Its position and verdict live in `control_table`, under the row named `target`.
    One call per silver table at a time.

    Args:
        spark: the session.
        bronze: bronze table name or path, as passed to `to_delta`.
        target: the silver table name or path; created on the first apply.
        keys: the columns that identify a row (matched null-safely).
        control_table: where bronze's verdict is read and silver's position and verdict go.
        facts_table: the stream's facts table. Without it the verdict never advances and an
            emptied table's re-snapshot (which exists only as an event row) is not seen.
        capture_instance: when given, every bronze row must come from this instance or one
            recorded as following it.
        granularity: 'key' (one row per key, its latest image) or 'commit' (one row per key
            and bronze `_start_lsn`: the key's image as of that commit, `_deleted` true when
            the commit removed it; rows are only added, never rebuilt). A target keeps the
            granularity it was created with.
        options: bronze reader options. `versionAsOf` (a whole number) applies bronze as it
            was at that Delta version; the facts table and the verdict are then not used.

    Returns:
        An `ApplyResult`; `bronze_found` is False (and nothing was created) when bronze is
        missing.

    Raises:
        ValueError: a bad argument (a ConfigError; `spark` not a SparkSession among them), a
            key column bronze lacks, a row of another capture instance, or chunk rows in
            bronze without a facts table.
        SchemaChangedError: a column's type differs between bronze and silver.
    """
    key_list = check_arguments(
        bronze, target, keys, control_table, facts_table, capture_instance, granularity
    )
    read_options = check_read_options(options)
    version_as_of = read_options.get("versionAsOf")
    check_session(spark)
    if facts_table is None and target not in _warned_no_facts:
        _warned_no_facts.add(target)
        _log.warning(
            "silver %s: apply_changes without facts_table never advances the verdict and cannot "
            "see an emptied table's re-snapshot; pass the stream's facts_table",
            target,
        )
    bronze_ref = table_ref(bronze, argument="bronze")
    if open_for_read(spark, bronze_ref, "bronze") is None:
        _log.warning("silver %s: bronze %s does not exist yet; nothing applied", target, bronze)
        (row,) = _control_rows(spark, control_table, [target])
        return ApplyResult(
            rebuilt=False,
            applied_lsn=row.applied_lsn,
            finalized_until=row.finalized_until,
            bronze_found=False,
        )
    # The verdict and the events are read before bronze is pinned, so the pinned version holds
    # every row they point to (bronze commits rows before the verdict and the events).
    bronze_verdict, current = _control_rows(spark, control_table, [bronze, target])
    # An older bronze version may lack rows the facts and the verdict point to: neither is used.
    facts_table = facts_table if version_as_of is None else None
    facts = (
        read_snapshot_facts(spark, facts_table, bronze) if facts_table else BronzeSnapshotFacts()
    )
    rows = _pinned(spark, bronze_ref, version_as_of)
    shape = bronze_shape(rows, bronze)
    check_keys(key_list, shape, bronze, recorded_sql_types(spark, bronze_ref))
    rows = _with_optional_columns(rows, shape)
    if capture_instance is not None:
        check_capture_instance(rows, facts, capture_instance, bronze)
    before = Position(
        current.applied_lsn, current.snapshot_lsn, current.open_snapshot_lsn, current.snapshot_wave
    )
    silver_ref = table_ref(target, argument="target")
    check_granularity_of(spark, silver_ref, shape, history=granularity == "commit")
    if granularity == "commit":
        return _apply_history(
            spark,
            target,
            silver_ref,
            rows,
            shape,
            key_list,
            bronze,
            control_table,
            facts,
            current,
            verdict_from=bronze_verdict if facts_table else None,
            with_facts=facts_table is not None,
        )
    wholes, chunked = _survey(rows, shape, after=before.snapshot_lsn, chunks=facts_table is None)
    if facts_table is None and chunked:
        raise ConfigError(
            f"silver {target}: bronze {bronze} holds chunked snapshot rows, whose waves and "
            f"completion only the facts table records; pass facts_table"
            + (" and no versionAsOf option" if version_as_of is not None else "")
        )
    ensure_silver(spark, silver_ref, shape)
    empty = table_state(spark, silver_ref).files == 0
    writer = SilverWriter(spark, silver_ref, rows, shape, key_list, bronze, empty=empty)
    newest = _newest_snapshot(wholes, facts, with_facts=facts_table is not None)
    rebuilt = newest is not None and (before.snapshot_lsn is None or newest > before.snapshot_lsn)
    position = (
        writer.rebuild(newest) if newest is not None and rebuilt else writer.incremental(before)
    )
    open_lsn = facts.open_chunked()
    if open_lsn is not None and (position.snapshot_lsn is None or open_lsn > position.snapshot_lsn):
        position = writer.waves(open_lsn, facts, position)
    if writer.written:
        failpoint("silver.after_merge")
    verdict = _verdict(bronze_verdict, current) if facts_table and open_lsn is None else None
    if position != before or verdict is not None:
        stored = ControlRow(
            applied_lsn=position.applied_lsn,
            snapshot_lsn=position.snapshot_lsn,
            open_snapshot_lsn=position.open_snapshot_lsn,
            snapshot_wave=position.snapshot_wave,
        )
        record_position(spark, control_table, target, stored, verdict, new=not current.found)
    return ApplyResult(
        rebuilt=rebuilt,
        applied_lsn=position.applied_lsn,
        finalized_until=verdict.finalized_until if verdict else current.finalized_until,
        bronze_found=True,
    )


def _control_rows(spark: SparkSession, control_table: str, names: list[str]) -> list[ControlRow]:
    """The control rows of `names`; an existing control table without data files holds none.

    Delta's log tells that without a Spark job, where reading the rows runs two:
    the control table of a first apply is often empty (no stream verdict yet).
    """
    ref = table_ref(control_table, argument="control_table")
    if ref.exists(spark) and table_state(spark, ref).files == 0:
        return [ControlRow() for _ in names]
    return control_rows(spark, control_table, names)


def _pinned(spark: SparkSession, ref: TableRef, version_as_of: int | None) -> DataFrame:
    """Bronze's rows at its current version (or at `version_as_of`, the versionAsOf option):
    every later read of this call sees the same.

    Raises:
        ConfigError: versionAsOf is above bronze's newest version.
    """
    newest = table_state(spark, ref).version
    if version_as_of is not None and version_as_of > newest:
        raise ConfigError(
            f"apply_changes: option versionAsOf={version_as_of} is above bronze {ref}'s newest "
            f"version {newest}; pass a version from 0 to {newest}, or no versionAsOf"
        )
    version = newest if version_as_of is None else version_as_of
    return spark.sql(f"SELECT * FROM {ref.sql} VERSION AS OF {version}")


def _apply_history(
    spark: SparkSession,
    target: str,
    silver_ref: TableRef,
    rows: DataFrame,
    shape: BronzeShape,
    keys: list[str],
    bronze: str,
    control_table: str,
    facts: BronzeSnapshotFacts,
    current: ControlRow,
    *,
    verdict_from: ControlRow | None,
    with_facts: bool,
) -> ApplyResult:
    """Granularity 'commit': add the history rows of bronze's rows above silver's position,
    and of the chunk waves not added yet (`history`).

    The position is the highest change or whole-snapshot LSN added; the verdict follows
    bronze's as at 'key', held while a chunked snapshot is open.
    """
    ensure_silver(spark, silver_ref, history_shape(shape, bronze))
    empty = table_state(spark, silver_ref).files == 0
    waves = (
        chunk_waves(facts, current.open_snapshot_lsn, current.snapshot_wave) if with_facts else None
    )
    high, written = write_history(
        spark,
        silver_ref,
        rows,
        shape,
        keys,
        bronze,
        after=current.applied_lsn,
        empty=empty,
        waves=waves,
    )
    if written:
        failpoint("silver.after_merge")
    applied = current.applied_lsn if high is None else max(high, current.applied_lsn or high)
    open_lsn = facts.open_chunked()
    verdict = (
        _verdict(verdict_from, current) if verdict_from is not None and open_lsn is None else None
    )
    stored = ControlRow(
        applied_lsn=applied,
        open_snapshot_lsn=waves.snapshot if waves else current.open_snapshot_lsn,
        snapshot_wave=waves.wave if waves else current.snapshot_wave,
    )
    moved = (stored.applied_lsn, stored.open_snapshot_lsn, stored.snapshot_wave) != (
        current.applied_lsn,
        current.open_snapshot_lsn,
        current.snapshot_wave,
    )
    if moved or verdict is not None:
        record_position(spark, control_table, target, stored, verdict, new=not current.found)
    return ApplyResult(
        rebuilt=False,
        applied_lsn=applied,
        finalized_until=verdict.finalized_until if verdict else current.finalized_until,
        bronze_found=True,
    )


def _with_optional_columns(rows: DataFrame, shape: BronzeShape) -> DataFrame:
    """Give a bronze of an older shape the NULL columns a newer one has."""
    from pyspark.sql import functions as F

    if not shape.has_snapshot:
        rows = rows.withColumn("_snapshot", F.lit(None).cast("string"))
    if not shape.has_chunk:
        rows = rows.withColumn("_chunk", F.lit(None).cast("int"))
    return rows


def _survey(
    rows: DataFrame, shape: BronzeShape, *, after: str | None, chunks: bool
) -> tuple[list[str], bool]:
    """The LSNs of bronze's whole snapshots newer than `after`, and (when `chunks`) whether
    bronze holds any chunk row.

    Only snapshot rows are read, and of those only the ones above `after` (a whole row's
    _start_lsn is its snapshot LSN, a chunk row's stamp is at least its S): Delta skips every
    file whose statistics rule them out, so the stream's change files are never opened.
    """
    from pyspark.sql import functions as F

    newer = col("_start_lsn") > after if after is not None else F.lit(True)
    wanted = newer | col("_chunk").isNotNull() if chunks else newer
    whole = col("_chunk").isNull() & newer
    row = (
        rows.where((col("_operation") == Operation.SNAPSHOT) & wanted)
        .agg(
            F.collect_set(F.when(whole, snapshot_of(shape))).alias("wholes"),
            F.max(col("_chunk").isNotNull()).alias("chunked"),
        )
        .first()
    )
    if row is None:
        return [], False
    wholes = [str(v) for v in row["wholes"] or [] if v is not None]
    return wholes, bool(row["chunked"])


def _newest_snapshot(
    wholes: list[str], facts: BronzeSnapshotFacts, *, with_facts: bool
) -> str | None:
    """P: the newest completion row's LSN or the newest whole snapshot that counts, if any.

    With a facts table, a whole snapshot still covered by an open full open is the rows of a
    read in progress or of a failed recovery attempt, and does not count.
    """
    candidates = [lsn for lsn in wholes if not with_facts or facts.whole_snapshot_counts(lsn)]
    completion = facts.newest_completion()
    if completion is not None:
        candidates.append(completion)
    return max(candidates, default=None)


def _verdict(bronze: ControlRow, silver: ControlRow) -> ControlRow | None:
    """Bronze's verdict when it moves silver's forward (never back), else None."""
    if bronze.finalized_until is None:
        return None
    if silver.finalized_until is not None and bronze.finalized_until <= silver.finalized_until:
        return None
    return bronze
