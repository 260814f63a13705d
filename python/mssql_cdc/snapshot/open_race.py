"""The race re-check of a full snapshot's open (docs/snapshots.md step 3), answered from the facts
table's Delta log where the log can tell.

Once a full open row is appended, a chunked open of the same generation that another run
committed first must be seen. Re-reading the family's facts costs a Delta snapshot and a scan
job, seconds on a busy driver. A chunked open is only ever appended under the family's
`A#snapshots` transaction key, so the commits made since the facts were last read tell without
a job whether one can have arrived: when none of them is an append under that key, nor anything
else that adds or removes rows (an overwrite, a restore, a rewrite), the rows read before still
answer. Whatever the log cannot tell falls back to the query. Decision 0455.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.facts import OpenFact, SnapshotFacts, snapshot_facts, snapshots_key
from mssql_cdc.tables import CommitSummary, LogHead, LogReader, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MAX_COMMITS", "FactsSeen", "chunked_opens", "facts_seen", "may_add_open", "unseen"]

log = logging.getLogger(__name__)

MAX_COMMITS = 64  # more commits to read cost about what the query costs
_ROW_ACTIONS = frozenset({"add", "remove"})


@dataclass(frozen=True, slots=True)
class FactsSeen:
    """The family's snapshot facts as read at the facts table's `version` or later.

    `version` -1 (nothing known about the log before the read): every commit is checked.
    """

    version: int
    table_id: str | None
    facts: SnapshotFacts

    @classmethod
    def nothing(cls) -> FactsSeen:
        return cls(-1, None, SnapshotFacts(()))


def facts_seen(spark: SparkSession, facts_table: str, app_id: str) -> FactsSeen:
    """Read the family's snapshot facts, noting the log's version first (the rows are those of
    that version or a later one)."""
    head = _head(spark, facts_table)[1]
    facts = snapshot_facts(spark, facts_table, app_id)
    if head is None:
        return FactsSeen(-1, None, facts)
    return FactsSeen(head.version, head.table_id, facts)


def may_add_open(commit: CommitSummary, snapshots_app_id: str) -> bool:
    """Whether `commit` can have added or removed a chunked open of the family whose chunked
    opens are keyed `snapshots_app_id`: only a commit that changes rows can, and of those only
    a plain append (`WRITE` of data, no removal) is known not to unless it carries that key."""
    if not commit.kinds & _ROW_ACTIONS or commit.rows_unchanged:
        return False  # creation, properties, added columns, compaction: the rows are the same
    if "remove" in commit.kinds or commit.operation != "WRITE" or not commit.all_data_change:
        return True
    return snapshots_app_id in commit.txn_app_ids


def unseen(
    seen: FactsSeen,
    head: LogHead,
    commit: Callable[[int], CommitSummary | None],
    snapshots_app_id: str,
) -> str | None:
    """None when no commit after `seen.version` up to `head` can have changed the family's
    chunked opens, else why it may have. `commit(v)` summarizes commit `v` (None: unreadable)."""
    if seen.version >= 0 and seen.table_id != head.table_id:
        return "the facts table was replaced since it was read"
    if head.version < seen.version:
        return f"the facts table's version {head.version} is below the {seen.version} read"
    if head.version - seen.version > MAX_COMMITS:
        return f"{head.version - seen.version} commits since the facts were read"
    for version in range(seen.version + 1, head.version + 1):
        found = commit(version)
        if found is None:
            return f"commit {version} is unreadable"
        if may_add_open(found, snapshots_app_id):
            return f"commit {version} may hold a chunked open"
    return None


def chunked_opens(
    spark: SparkSession, facts_table: str, app_id: str, seen: FactsSeen
) -> list[OpenFact]:
    """The family's chunked opens as the facts table holds them now: those of `seen` when the
    log shows nothing since that can have changed them, else read again (the caller has
    opened the facts table for write)."""
    reader, head = _head(spark, facts_table)
    reason = "the facts table's log is out of reach"
    if reader is not None and head is not None:
        found = unseen(seen, head, reader.commit, snapshots_key(app_id, 0).app_id)
        if found is None:
            return [o for o in seen.facts.opens() if o.mode == "chunked"]
        reason = found
    log.debug("%s: reading the facts again for the race check: %s", facts_table, reason)
    facts = snapshot_facts(spark, facts_table, app_id, checked=True, events=("snapshot_open",))
    return [o for o in facts.opens() if o.mode == "chunked"]


def _head(spark: SparkSession, facts_table: str) -> tuple[LogReader | None, LogHead | None]:
    reader = LogReader.open(spark, table_ref(facts_table, argument="facts_table"))
    return reader, None if reader is None else reader.head()
