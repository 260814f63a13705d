"""Snapshot slots: a bound on how many full snapshots one job reads at once.

A fan-out job starts many streams, and each stream's pre-flight may take a full snapshot (a
bootstrap or a re-snapshot). Reading every table at once would compete for the same cores and
the same SQL Server, so the job hands its streams a shared semaphore, and `take_full` holds one
slot from its stamp to its last write. Outside a job no semaphore is set and nothing waits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["limited", "slot"]

_SLOTS: ContextVar[threading.BoundedSemaphore | None] = ContextVar("snapshot_slots", default=None)


@contextmanager
def limited(slots: threading.BoundedSemaphore) -> Iterator[None]:
    """Make every full snapshot taken in this context (this thread) hold one of `slots`."""
    token = _SLOTS.set(slots)
    try:
        yield
    finally:
        _SLOTS.reset(token)


@contextmanager
def slot() -> Iterator[None]:
    """Hold one slot of the context's semaphore while the block runs; no wait without one."""
    slots = _SLOTS.get()
    if slots is None:
        yield
        return
    with slots:
        yield
