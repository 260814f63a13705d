"""Retrying a Delta write that lost a concurrent commit, with jittered exponential backoff.

Open-source Delta fails a transaction when another one committed something it conflicts with
(a MERGE even on different rows, a metadata or protocol change under an append). Such a write
is safe to run again: the callers here are idempotent (txn keys, GREATEST merges, migrations).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["CONFLICT_CLASSES", "CONFLICT_CODES", "is_concurrent_commit_error", "retry_on_conflict"]

log = logging.getLogger(__name__)
T = TypeVar("T")

CONFLICT_CLASSES = frozenset(
    {
        "DeltaConcurrentModificationException",
        "ConcurrentWriteException",
        "ConcurrentAppendException",
        "ConcurrentDeleteReadException",
        "ConcurrentDeleteDeleteException",
        "ConcurrentTransactionException",
        "MetadataChangedException",
        "ProtocolChangedException",
        "CommitFailedError",  # deltalake's, which commits facts rows at a local path
    }
)
# Error conditions Spark prints in brackets; some paths (SQL commands through py4j) surface the
# conflict only as text.
CONFLICT_CODES = (
    "[DELTA_CONCURRENT_",
    "[DELTA_METADATA_CHANGED]",
    "[DELTA_PROTOCOL_CHANGED]",
)


def is_concurrent_commit_error(exc: BaseException) -> bool:
    """Tell whether `exc` is Delta's concurrent-commit failure (a retry may succeed)."""
    if any(cls.__name__ in CONFLICT_CLASSES for cls in type(exc).__mro__):
        return True
    text = str(exc)
    return any(code in text for code in CONFLICT_CODES)


def retry_on_conflict(
    action: Callable[[], T],
    *,
    what: str,
    budget_seconds: float = 60.0,
    first_delay: float = 0.5,
    max_delay: float = 8.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    jitter: Callable[[], float] = random.random,
) -> T:
    """Run `action`, again after each Delta concurrent-commit error, until `budget_seconds`.

    The delay starts at `first_delay` and doubles up to `max_delay`, each scaled by a random
    factor in [0.5, 1) so that two losers do not collide again in step.

    Returns:
        What `action` returned.
    Raises:
        The last conflict error once the next wait would pass the budget; any other error at once.
    """
    started = clock()
    delay = first_delay
    attempt = 1
    while True:
        try:
            return action()
        except Exception as exc:  # only conflicts are retried; the rest re-raise
            if not is_concurrent_commit_error(exc):
                raise
            wait = delay * (0.5 + jitter() / 2)
            if clock() - started + wait > budget_seconds:
                raise
            log.info("%s lost a concurrent Delta commit (attempt %d); retrying", what, attempt)
            sleep(wait)
            delay = min(delay * 2, max_delay)
            attempt += 1
