"""The snapshot steps of a `to_delta` run: the mode lock before the pre-flight, and the start
of the live generation, which in generation 0 may be the bootstrap snapshot.

A bootstrap is found before it is taken: a full one is taken only when the target holds no
snapshot yet, a chunked one starts from the newest known snapshot (a full bootstrap's
included) and opens one only when there is none. See docs/snapshots.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.core import GenerationState
from mssql_cdc.errors import InternalError
from mssql_cdc.facts import SnapshotFacts, preflight_facts
from mssql_cdc.options import SnapshotMode, SourceConfig
from mssql_cdc.snapshot import full
from mssql_cdc.snapshot.chunked_open import open_chunked

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["checked_family", "generation_start"]


def checked_family(
    spark: SparkSession,
    config: SourceConfig,
    target: str,
    *,
    app_id: str,
    facts_table: str | None,
    checkpoint: str | None,
    mode: SnapshotMode,
    bootstrap: bool,
    resnapshot: bool,
) -> SnapshotFacts | None:
    """Check the mode lock of a run that may take a snapshot; return the facts it read.

    One read of the family's snapshot rows serves the lock and the pre-flight; while only
    micro-batches committed facts since the last call, the cache under `checkpoint` answers
    without a Spark job (None, a URI checkpoint, reads the table).

    Returns:
        The family's snapshot facts, or None when the run takes no snapshot (no facts table,
        or neither `bootstrap` nor `resnapshot`): then nothing is read.
    Raises:
        ConfigError (a ValueError): the family has an open snapshot of the other mode.
    """
    if facts_table is None or not (bootstrap or resnapshot):
        return None
    facts = preflight_facts(spark, facts_table, app_id, checkpoint=checkpoint)
    full.check_mode_lock(
        spark, config, target, mode=mode, app_id=app_id, facts_table=facts_table, facts=facts
    )
    return facts


def generation_start(
    spark: SparkSession,
    config: SourceConfig,
    target: str,
    *,
    state: GenerationState,
    app_id: str,
    facts_table: str | None,
    bootstrap: bool,
    mode: SnapshotMode,
) -> str | None:
    """The LSN the live generation starts from: its snapshot's after a loss, else in
    generation 0 the bootstrap snapshot's, found or taken now.

    Returns:
        The snapshot's LSN, or None in generation 0 without `bootstrap` (the source's
        startingLsn decides).
    Raises:
        ValueError: the bootstrap's snapshot could not be taken or opened: a full and a
            chunked open of generation 0 raced (ConfigError), or the capture instance has no
            LSN to stamp it with yet.
    """
    if state.generation > 0:
        if state.snapshot is None:  # read_state refuses such a file
            raise RuntimeError(f"{target}: generation {state.generation} has no snapshot")
        return str(state.snapshot.lsn)
    if not bootstrap:
        return None
    if mode == "chunked":
        if facts_table is None:  # check_to_delta refused this already
            raise InternalError(f"{target}: a chunked bootstrap was started without a facts_table")
        return _chunked_bootstrap(spark, config, target, app_id=app_id, facts_table=facts_table)
    return _full_bootstrap(spark, config, target, app_id=app_id, facts_table=facts_table)


def _chunked_bootstrap(
    spark: SparkSession, config: SourceConfig, target: str, *, app_id: str, facts_table: str
) -> str:
    # A second bootstrap that opened again would lock out full runs once more.
    known = full.newest_known_snapshot(
        spark, config, target, app_id=app_id, facts_table=facts_table
    )
    if known is not None:
        return str(known.lsn)
    opened = open_chunked(
        spark,
        config,
        target,
        kind="bootstrap",
        generation=0,
        app_id=app_id,
        facts_table=facts_table,
    )
    return str(opened.lsn)


def _full_bootstrap(
    spark: SparkSession, config: SourceConfig, target: str, *, app_id: str, facts_table: str | None
) -> str:
    taken = full.take_full(
        spark,
        config,
        target,
        kind="bootstrap",
        generation=0,
        new=False,
        app_id=app_id,
        facts_table=facts_table,
    )
    if facts_table is not None:
        full.write_bootstrap(spark, facts_table, app_id=app_id, target=target, snapshot=taken)
    return str(taken.offset.lsn)
