"""The UTC instant of each `cdc.lsn_time_mapping` entry, whose time is a server-local time.

A local time that a fall-back repeats has two instants; AT TIME ZONE (and zoneinfo's fold=0)
gives the earlier. The server's clock does not go backwards in LSN order, so an entry's instant
is the smaller of its candidates that is not before the previous entry's instant (decision
1320). The chain needs a start: before an ambiguous entry, the mapping is read back, newest
first, to an unambiguous entry. A lookup with no ambiguous entry reads nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from mssql_cdc.core import lsn

__all__ = ["LOOKBACK_PAGE", "Candidates", "Lookback", "chain", "instants", "previous_instant"]

LOOKBACK_PAGE = 500
"""Mapping entries read per round trip while looking back for the chain's start."""


@dataclass(frozen=True, slots=True)
class Candidates:
    """The UTC instants an entry's local time can stand for: `earliest` is AT TIME ZONE's
    answer; `latest` differs from it only when the zone repeats that local time."""

    lsn: lsn.Lsn
    earliest: datetime
    latest: datetime

    @property
    def ambiguous(self) -> bool:
        return self.latest != self.earliest


Lookback = Callable[[lsn.Lsn, int], Sequence[Candidates]]
"""Entries with start_lsn below the LSN given, newest first, at most the number given."""


def chain(entries: Sequence[Candidates], previous: datetime | None) -> list[datetime]:
    """Each entry's instant, in the order given (LSN order).

    An entry takes the smaller candidate not before `previous` (the instant of the entry before
    the first); when both are before it (a server clock set back by hand), the later one.
    """
    out: list[datetime] = []
    for entry in entries:
        later = previous is not None and entry.earliest < previous
        chosen = entry.latest if later else entry.earliest
        out.append(chosen)
        previous = chosen if previous is None else max(previous, chosen)
    return out


def previous_instant(first: lsn.Lsn, lookback: Lookback) -> datetime | None:
    """The instant of the entry just below `first`; None when there is none.

    Reads back in pages to the newest unambiguous entry below `first` (at most a repeated
    hour's entries) and chains forward from it.
    """
    found: list[Candidates] = []
    below = first
    while True:
        page = lookback(below, LOOKBACK_PAGE)
        for entry in page:
            found.append(entry)
            if not entry.ambiguous:
                return chain(found[::-1], None)[-1]
        if len(page) < LOOKBACK_PAGE:
            return chain(found[::-1], None)[-1] if found else None
        below = page[-1].lsn


def instants(entries: Sequence[Candidates], lookback: Lookback) -> list[datetime]:
    """The instants of consecutive mapping entries (LSN order, none skipped between them)."""
    if not any(e.ambiguous for e in entries):
        return [e.earliest for e in entries]
    start = previous_instant(entries[0].lsn, lookback) if entries[0].ambiguous else None
    return chain(entries, start)
