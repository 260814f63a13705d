"""`snapshotOnSwitch`: a capture-instance switch ahead of the stream that retypes a column bronze
holds is met, before the query starts, by a snapshot into the next generation rather than by a
batch that fails in the sink (docs/source-options.md, decision 1120).

The new generation starts at the snapshot's LSN, at or past the newer instance's start, so no
batch of it straddles the switch, and silver rebuilds from rows that all carry the new type.
"""

from __future__ import annotations

import logging
from contextlib import closing
from typing import TYPE_CHECKING

from mssql_cdc.core import Instance, Observation, last_processed_offset, live_paths, read_state
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.options import SourceConfig
from mssql_cdc.recovery.preflight import RecoveryRequest
from mssql_cdc.snapshot import bronze_retypes, open_probe
from mssql_cdc.tables import allow_type_widening, open_for_read, table_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["switch_ahead", "switch_snapshot_due"]

log = logging.getLogger("mssql_cdc.recovery.preflight")


def switch_ahead(observation: Observation, position: str) -> Instance | None:
    """The newer instance the stream at `position` has yet to switch to, once capture reached
    its start; None when there is none."""
    if len(observation.instances) < 2 or observation.max_lsn is None:
        return None
    newer = observation.instances[-1]
    if position < newer.start_lsn <= observation.max_lsn:
        return newer
    return None


def _processed_position(checkpoint: str, app_id: str) -> str | None:
    """The last LSN the live generation processed (its snapshot's before its first batch)."""
    state = read_state(checkpoint)
    last = last_processed_offset(live_paths(checkpoint, app_id, state).checkpoint)
    if last is not None:
        return last.offset().lsn
    if state is not None and state.snapshot is not None:
        return str(state.snapshot.lsn)
    return None


def switch_snapshot_due(
    spark: SparkSession, config: SourceConfig, request: RecoveryRequest
) -> bool:
    """Whether a switch ahead retypes a bronze column, so the next generation must open from a
    snapshot; when it is, bronze is first let widen the column.

    Nothing is read of the table and nothing written unless such a switch is ahead: a stream
    that has not started, a bronze that does not exist yet or allows type widening, and a
    switch that keeps every type are left to the stream.
    Raises:
        SchemaChangedError: a retyped column bronze's values do not fit (a narrowing or another
            type family): no snapshot into this bronze can hold it; nothing written.
    """
    position = _processed_position(request.checkpoint, request.app_id)
    bronze = open_for_read(spark, request.target, "bronze")
    if position is None or bronze is None:
        return False
    with closing(open_probe(config)) as probe:
        observation = probe.observe()
    newer = switch_ahead(observation, position)
    if newer is None:
        return False
    if table_properties(spark, bronze.ref).get("delta.enableTypeWidening") == "true":
        return False  # the sink widens the column itself
    retyped = bronze_retypes(spark, config, bronze.ref, at=observation.max_lsn or position)
    if not retyped:
        return False
    narrowed = [r for r in retyped if not r.widens]
    if narrowed:
        first = narrowed[0]
        raise SchemaChangedError(
            f"{request.target}: capture instance '{newer.name}' reads column {first.column} as "
            f"{first.new_type}, which cannot hold bronze's {first.bronze_type} values, so no "
            "snapshot into this bronze can (snapshotOnSwitch); start a new bronze table",
            newer.name,
        )
    log.warning(
        "%s: capture instance '%s' retypes %s at %s; snapshotOnSwitch widens bronze and "
        "re-snapshots into the next generation",
        request.target,
        newer.name,
        ", ".join(f"{r.column} {r.bronze_type} -> {r.new_type}" for r in retyped),
        newer.start_lsn,
    )
    allow_type_widening(spark, bronze.ref)
    return True
