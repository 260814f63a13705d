"""The micro-batch's aggregates observed on its bronze append: one read (decision 1350).

The append is the read; Spark's `Observation` folds the batch's aggregates in the same tasks,
without a job of its own, on classic Spark and Spark Connect alike. An append Delta skips (its
transaction version is already recorded) runs nothing, so its observation reports nothing:
`ObservedBatch.aggregates` then answers None instead of waiting, and the sink reads the batch
once more for the exact values.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.facts import BatchAggregates
from mssql_cdc.sink.micro_batch import aggregate_columns, aggregates_of
from mssql_cdc.tables import OBSERVATION_SETTLE_SECONDS, settled

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

__all__ = ["ObservedBatch", "observe"]

# How long a classic observation may be late before the batch is read again instead.
_SETTLE_SECONDS = OBSERVATION_SETTLE_SECONDS


@dataclass(frozen=True)
class ObservedBatch:
    """The batch with its aggregates attached (`frame`), and the observation to ask after the
    append."""

    frame: DataFrame
    observation: Observation

    def aggregates(self) -> BatchAggregates | None:
        """The observed aggregates once `frame`'s first action ran; None when none ran (a
        skipped append), never waiting longer than a moment."""
        values = _settled(self.observation)
        if not values or "rows" not in values:
            return None
        return aggregates_of(values)


def observe(df: DataFrame) -> ObservedBatch:
    """Attach the sink's batch aggregates to `df` as an observation of its next action."""
    from pyspark.sql import Observation

    observation = Observation(f"mssql_cdc_batch_{uuid.uuid4().hex}")
    return ObservedBatch(df.observe(observation, *aggregate_columns()), observation)


def _settled(observation: Observation) -> dict[str, Any] | None:
    """The observation's values without blocking on an append that never ran
    (`core.settled`): an append Delta skipped although this sink expected to write it (another
    writer recorded the batch) leaves one idle thread behind, and the batch is read again."""
    return settled(observation, _SETTLE_SECONDS)
