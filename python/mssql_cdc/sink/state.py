"""What the sink keeps from the facts table: the newest batch row, and earlier event rows.

Reads select by the sink id (`A` or `A.g<n>`) with exact equality, never a pattern.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import FactsRow
from mssql_cdc.tables import TableOutOfReach, TableRef, read_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["EventIdentity", "LastBatch", "already_recorded", "rewound_error"]

EventIdentity = tuple[str | None, str | None, str | None]
"""(`event`, `min_lsn`, `detail`): two event rows with the same identity are one event."""


@dataclass(frozen=True, slots=True)
class LastBatch:
    """The newest micro-batch row of a sink id: its batch id and end LSN (None without metrics)."""

    batch_id: int
    end_lsn: str | None


def already_recorded(
    spark: SparkSession,
    facts: TableRef,
    sink_id: str,
    batch_id: int,
    events: Sequence[FactsRow],
) -> set[EventIdentity]:
    """Identities among `events` that `sink_id` already wrote in a batch before `batch_id`.

    Such an event comes from a file an earlier batch failed to remove; writing it again would
    record one event twice. A path facts table is read in process (no Spark job).
    """
    if not events:
        return set()
    kinds = sorted({row.event for row in events if row.event is not None})
    lsns = sorted({row.min_lsn for row in events if row.min_lsn is not None})
    columns = ("event", "min_lsn", "detail")
    try:
        import pyarrow.compute as pc

        where = (
            (pc.field("app_id") == sink_id)
            & (pc.field("batch_id") < batch_id)
            & pc.field("event").isin(kinds)
            & pc.field("min_lsn").isin(lsns)
        )
        found = read_rows(facts, columns=columns, where=where).to_pylist()
        return {(r["event"], r["min_lsn"], r["detail"]) for r in found}
    except TableOutOfReach:
        pass  # a catalog name, or a path only Spark reads
    from pyspark.sql import functions as F

    rows = (
        spark.table(facts.sql)
        .where(F.col("app_id") == F.lit(sink_id))
        .where(F.col("batch_id") < F.lit(batch_id))
        .where(F.col("event").isin(kinds) & F.col("min_lsn").isin(lsns))
        .select(*columns)
        .collect()
    )
    return {(r["event"], r["min_lsn"], r["detail"]) for r in rows}


def rewound_error(sink_id: str, batch_id: int, last: int, facts: TableRef) -> ConfigError:
    """The error of a checkpoint deleted or rewound under one app_id (a ValueError)."""
    return ConfigError(
        f"checkpoint deleted or rewound under app_id {sink_id}: batch {batch_id} arrived, facts "
        f"hold batches up to {last} in {facts}; restore the checkpoint or start a new "
        "checkpoint with a new app_id"
    )
