"""The LSN a seeded copy was taken at, from `at_lsn` or `as_of` (docs/snapshots.md, 'Starting
from an existing copy'; decision 1374).

`as_of` is an LSN (the library's `Lsn` or its hex text) or a commit time. A time maps to the
newest cdc.lsn_time_mapping entry whose commit time, in UTC to the millisecond as the stream
stamps `_commit_ts`, is at or before it: the copy then holds every change committed by then.
The entries are walked by doubling steps from the first (`nth_entry_after`), so a mapping of
n entries costs about 2 log2(n)^2 queries at most, each one row.
"""

from __future__ import annotations

from datetime import UTC, datetime

from mssql_cdc.core import lsn as lsns
from mssql_cdc.errors import ConfigError, quoted
from mssql_cdc.facts import parse_time
from mssql_cdc.snapshot.probe import SourceProbe

__all__ = ["copy_point", "lsn_at_time"]


def copy_point(at_lsn: object, as_of: object) -> str | datetime:
    """The one of `at_lsn` and `as_of` that was given: a normalized LSN, or a naive UTC time.

    Raises:
        ConfigError: both or neither given, or a value that is neither an LSN nor a datetime.
    """
    if (at_lsn is None) == (as_of is None):
        raise ConfigError(
            "seed: pass exactly one of at_lsn and as_of (the LSN the copy was taken at, or "
            f"its commit time); got at_lsn={quoted(at_lsn)} and as_of={quoted(as_of)}"
        )
    name, value = ("at_lsn", at_lsn) if at_lsn is not None else ("as_of", as_of)
    if isinstance(value, datetime) and name == "as_of":
        if value.tzinfo is not None:
            return value.astimezone(UTC).replace(tzinfo=None)
        return value  # naive: UTC, as every time the library takes and gives
    try:
        if not isinstance(value, str):
            raise TypeError(value)
        return lsns.normalize(value)
    except (TypeError, ValueError):
        also = " or a datetime (the copy's commit time, naive UTC)" if name == "as_of" else ""
        raise ConfigError(
            f"seed: {name}={quoted(value)} is not an LSN; pass the LSN the copy was taken at, as "
            f"'0x' + 20 hex digits (sys.fn_cdc_get_max_lsn() when the copy started){also}"
        ) from None


def lsn_at_time(probe: SourceProbe, moment: datetime) -> str:
    """The newest mapping entry committed at or before `moment` (naive UTC).

    Raises:
        ConfigError: no entry is that old (the copy predates what the source still maps).
    """
    cutoff = moment.replace(microsecond=moment.microsecond // 1000 * 1000)

    def committed_by(entry: str) -> bool:
        stamp = parse_time(probe.commit_ts(entry) or None)
        return stamp is not None and stamp <= cutoff

    best: str | None = None
    base = str(lsns.ZERO)
    step = 1
    while True:
        entry = probe.nth_entry_after(base, step)
        if entry is not None and committed_by(entry):
            best, base, step = entry, entry, step * 2
        elif step > 1:
            step = 1  # overshot: the answer is within the last step, walk it again from 1
        else:
            break
    if best is None:
        raise ConfigError(
            f"seed: as_of={moment.isoformat()} (UTC) is before the oldest commit the source "
            "still maps in cdc.lsn_time_mapping; pass the copy's LSN as at_lsn instead"
        )
    return best
