"""Aggregates observed on a DataFrame's next action: the write is the read (decisions 1348,
1350).

Spark's `Observation` folds named aggregate columns into the tasks of the action that runs
first, without a job of its own, on classic Spark and Spark Connect alike. A write Delta skips
(its transaction version is already recorded) runs no task, so its observation reports
nothing: `Observed.values` then answers None instead of waiting, and the caller reads the data
again for the exact figures. Nothing is persisted, so this works where caching is refused.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation

__all__ = ["OBSERVATION_SETTLE_SECONDS", "Observed", "observe_aggregates", "settled"]

# A classic session completes the observation as the action returns; this bounds the wait for
# one whose listener is late, before the caller reads the data again instead.
OBSERVATION_SETTLE_SECONDS = 2.0


@dataclass(frozen=True)
class Observed:
    """`frame` with the aggregates attached, and the observation to ask after its action."""

    frame: DataFrame
    observation: Observation

    def values(self, seconds: float = OBSERVATION_SETTLE_SECONDS) -> dict[str, Any] | None:
        """The observed values once `frame`'s first action ran; None when none ran (a skipped
        write), never waiting longer than `seconds`."""
        found = settled(self.observation, seconds)
        return found or None


def observe_aggregates(df: DataFrame, prefix: str, *columns: Column) -> Observed:
    """Attach the named aggregate `columns` to `df` as an observation of its next action;
    `prefix` starts the observation's unique name (it shows in Spark's UI)."""
    from pyspark.sql import Observation

    observation = Observation(f"{prefix}_{uuid.uuid4().hex}")
    return Observed(df.observe(observation, *columns), observation)


def settled(observation: Observation, seconds: float) -> dict[str, Any] | None:
    """The observation's values without blocking on an action that never ran.

    Spark Connect fills the values from the action's response (empty when none ran). A classic
    observation's `get` waits for its action, forever when none ran, and Spark offers no public
    way to ask whether it completed: so `get` runs on a daemon thread, waited for `seconds`. A
    `get` that never returns (a write Delta skipped although the caller expected to make it, so
    another writer recorded it) leaves one idle thread behind, and the caller reads again.
    """
    found: list[dict[str, Any]] = []

    def wait() -> None:
        found.append(dict(observation.get))

    waiter = threading.Thread(target=wait, name="mssql-cdc-observation", daemon=True)
    waiter.start()
    waiter.join(seconds)
    return found[0] if found else None
