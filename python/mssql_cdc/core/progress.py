"""Progress records: INFO log records of long work that also carry their figures as data.

Snapshots, backfill waves, recovery steps and the demo log a readable line through `logging`
(loggers under `mssql_cdc.`) and attach a `Progress` value as the record's `progress`
attribute, so a handler can draw a bar (the CLI does) without parsing text. A library user who
never configures logging sees nothing new: Python shows only WARNING and above by default.
Decision 0920.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Literal

__all__ = ["Progress", "Stage", "Task", "Throughput", "per_second", "progress_of", "report"]

Task = Literal["snapshot", "backfill", "recovery", "demo"]
Stage = Literal["started", "advanced", "finished"]


@dataclass(frozen=True, slots=True)
class Progress:
    """One step of a long task: `done` of `total` `unit`s, with its rate and ETA when known.

    `subject` names what the task works on (a target table, a stream); one task of one subject
    is one bar. `total`, `rate` (units per second) and `eta_seconds` are None when unknown.
    """

    task: Task
    subject: str
    stage: Stage
    done: int
    total: int | None
    unit: str
    rate: float | None = None
    eta_seconds: float | None = None


def report(
    log: logging.Logger, progress: Progress, message: str, *args: object, level: int = logging.INFO
) -> None:
    """Log `message % args` at `level` with `progress` as the record's `progress` attribute."""
    if log.isEnabledFor(level):
        log.log(level, message, *args, extra={"progress": progress})


def per_second(rate: float, unit: str) -> str:
    """A rate for a message: whole numbers from 10 up, two significant digits below."""
    return f"{rate:,.0f} {unit}/s" if rate >= 10 else f"{rate:.2g} {unit}/s"


def progress_of(record: logging.LogRecord) -> Progress | None:
    """The `Progress` a record carries, or None for any other record."""
    value = getattr(record, "progress", None)
    return value if isinstance(value, Progress) else None


class Throughput:
    """Units done since a start on the monotonic clock, and their rate."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def seconds(self) -> float:
        return time.monotonic() - self._start

    def rate(self, done: int) -> float | None:
        """Units per second, or None before any time or unit has passed."""
        elapsed = self.seconds()
        return done / elapsed if done > 0 and elapsed > 0 else None
