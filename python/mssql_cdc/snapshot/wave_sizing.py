"""How many chunks `backfill()`'s next wave reads, and whether its plan's key still holds.

Pure decisions (decision 1141): `next_wave_chunks` turns the waves measured so far into the next
wave's width under `target_wave_seconds`; `key_change` compares the keys a chunked open
recorded with the keys the source resolves now.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["WaveTime", "key_change", "next_wave_chunks"]

# A wave's width moves by at most this factor from the previous one: one slow wave (a busy
# source, a garbage collection) must not shrink the next to nothing, nor one fast wave blow
# the next past what the executors hold.
_STEP = 2.0
_WINDOW = 4  # the newest waves a fit reads: older ones ran under older conditions


@dataclass(frozen=True, slots=True)
class WaveTime:
    """One wave as measured: the chunks it read and its wall seconds, append included."""

    chunks: int
    seconds: float


def _fit(waves: Sequence[WaveTime]) -> tuple[float, float]:
    """`seconds = fixed + per_chunk * chunks` by least squares, both at least 0; with one
    width only, all of the time is per chunk (the fixed part cannot be told apart)."""
    n = len(waves)
    mean_x = sum(w.chunks for w in waves) / n
    mean_y = sum(w.seconds for w in waves) / n
    sxx = sum((w.chunks - mean_x) ** 2 for w in waves)
    if sxx == 0:
        return 0.0, mean_y / mean_x
    slope = sum((w.chunks - mean_x) * (w.seconds - mean_y) for w in waves) / sxx
    if slope <= 0:  # noise: more chunks never take less time
        return 0.0, mean_y / mean_x
    fixed = mean_y - slope * mean_x
    if fixed < 0:
        return 0.0, mean_y / mean_x
    return fixed, slope


def next_wave_chunks(
    waves: Sequence[WaveTime], *, target_seconds: float | None, default: int, remaining: int
) -> int:
    """The chunks the next wave reads (at least 1, at most `remaining`).

    Without `target_seconds`, or before any wave was measured, it is `default` (the stream's
    partition count). Otherwise the newest waves give a fixed cost per wave and a cost per
    chunk, and the width is what fits `target_seconds`, moved at most 2x from the last wave's.
    """
    if remaining < 1:
        return 0
    width = max(1, default)
    measured = [w for w in waves if w.chunks >= 1 and w.seconds >= 0][-_WINDOW:]
    if target_seconds is not None and measured:
        fixed, per_chunk = _fit(measured)
        last = measured[-1].chunks
        # Chunks that took no measurable time: as many more as one step allows.
        fits = max(target_seconds - fixed, 0.0) / per_chunk if per_chunk > 0 else last * _STEP
        width = min(max(math.floor(fits), math.ceil(last / _STEP)), math.floor(last * _STEP))
    return max(1, min(width, remaining))


def key_change(recorded: Sequence[str], current: Sequence[str]) -> str | None:
    """Why the chunks planned on `recorded` no longer tile the table keyed by `current`, or None
    when they do. Names compare ignoring case, as SQL Server's do; a snapshot opened without a
    usable key reads one chunk holding everything, which no key change can break."""
    if not recorded:
        return None
    if [k.lower() for k in recorded] == [k.lower() for k in current]:
        return None
    now = ", ".join(current) if current else "no usable unique key"
    return f"it was planned on key ({', '.join(recorded)}), and the table's key is now ({now})"
