"""The pre-flight's cache of a family's snapshot rows, kept in a file under the checkpoint.

A query on the facts table costs a Delta snapshot reconstruction and a scan job, seconds on a
busy machine, yet between two runs of a healthy stream the facts table usually receives only
micro-batch facts commits, which never hold a snapshot event. So `to_delta` keeps the rows it
read, keyed by the facts table's identity and the Delta version they were read at, and the
next call reuses them when every commit since is provably such a commit, or a compaction that
only rewrote files (`still_valid`). The log's head and commit files are read on the driver
without a Spark job (`delta_commits`).
Anything else, or anything unreadable, falls back to the query. Decision 0520; up to
MAX_COMMITS commits since, sized for the commits of a fan_out job's other streams (decision
1434).

The file `<checkpoint>/_mssql_cdc_family_cache.json` is replaced atomically, ignored when it
does not parse or does not match, and trusted for nothing but these rows.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mssql_cdc.facts import snapshot_family
from mssql_cdc.facts.snapshot_family import FACT_COLUMNS, PREFLIGHT_EVENTS, SnapshotFacts
from mssql_cdc.tables import CommitSummary, LogHead, LogReader, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CACHE_FILE_NAME",
    "MAX_COMMITS",
    "CacheEntry",
    "is_batch_facts_commit",
    "load",
    "preflight_facts",
    "still_valid",
    "store",
]

log = logging.getLogger(__name__)

CACHE_FILE_NAME = "_mssql_cdc_family_cache.json"
# More commits since cost more to check than the query saves. A check reads one small commit
# file, a millisecond; the query is a Spark job over the whole facts table, seconds. A fan_out
# job of N streams adds N commits between two runs of each stream, so the bound is sized for
# a thousand tables in one job.
MAX_COMMITS = 1_000
_FORMAT = 1
_TIMES = frozenset({"min_commit_ts", "max_commit_ts", "written_at", "lost_from_ts", "lost_to_ts"})
_INTS = frozenset({"generation", "rows", "duration_ms"})


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """A family's pre-flight rows as the facts table held them at `version` (or later)."""

    app_id: str  # the caller's app_id: the family
    table_id: str
    location: str
    version: int
    commit_id: str  # the txnId of commit `version`: a rewritten history is another table
    rows: tuple[Mapping[str, Any], ...]


def is_batch_facts_commit(commit: CommitSummary) -> bool:
    """Whether `commit` is a micro-batch's facts commit: a blind append of rows under the
    sink's `<sink id>#facts` key, marked by `facts.batch_facts_metadata`."""
    try:
        marker = json.loads(commit.user_metadata or "")
    except ValueError:
        return False
    if not isinstance(marker, dict) or marker.get("facts") != "batch":
        return False
    return (
        commit.operation == "WRITE"
        and commit.kinds <= {"commitInfo", "txn", "add"}
        and "add" in commit.kinds
        and commit.all_data_change
        and commit.txn_app_ids == (f"{marker.get('app_id')}#facts",)
    )


def still_valid(
    entry: CacheEntry,
    *,
    app_id: str,
    head: LogHead,
    commit: Callable[[int], CommitSummary | None],
) -> str | None:
    """None when `entry`'s rows are still the family's rows at `head`, else why not.

    `commit(v)` summarizes commit `v` (None when unreadable); commits are read oldest first
    and only until the first that fails.
    """
    if entry.app_id != app_id:
        return f"cached for app_id {entry.app_id!r}"
    if (entry.table_id, entry.location) != (head.table_id, head.location):
        return "cached for another table"
    if head.version < entry.version:
        return f"the table's version {head.version} is below the cached {entry.version}"
    if head.version - entry.version > MAX_COMMITS:
        return f"{head.version - entry.version} commits since the cached version"
    cached = commit(entry.version)
    if cached is None or cached.commit_id != entry.commit_id:
        return f"commit {entry.version} is not the one the rows were read at"
    for version in range(entry.version + 1, head.version + 1):
        found = commit(version)
        if found is None or not (found.rows_unchanged or is_batch_facts_commit(found)):
            return f"commit {version} is neither a micro-batch's facts commit nor a compaction"
    return None


def _encode(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in FACT_COLUMNS:
        value = row.get(c)
        out[c] = value.isoformat() if isinstance(value, datetime) else value
    return out


def _decode(raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) != set(FACT_COLUMNS):
        raise ValueError("a cached row lacks the facts columns")
    row: dict[str, Any] = {}
    for c in FACT_COLUMNS:
        value = raw[c]
        if value is None:
            row[c] = None
        elif c in _TIMES:
            row[c] = datetime.fromisoformat(value)
        elif c in _INTS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"cached {c} is not an integer")
            row[c] = value
        elif isinstance(value, str):
            row[c] = value
        else:
            raise ValueError(f"cached {c} is not text")
    return row


def load(checkpoint: str) -> CacheEntry | None:
    """The cache entry under `checkpoint`, or None when there is none or it is unreadable."""
    try:
        raw = json.loads((Path(checkpoint) / CACHE_FILE_NAME).read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or raw.get("format") != _FORMAT:
            return None
        app_id, table_id, location, commit_id, version = (
            raw[k] for k in ("app_id", "table_id", "location", "commit_id", "version")
        )
        texts = (app_id, table_id, location, commit_id)
        if not all(isinstance(t, str) for t in texts) or type(version) is not int:
            return None
        rows = tuple(_decode(r) for r in raw["rows"])
        return CacheEntry(app_id, table_id, location, version, commit_id, rows)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:  # a cache: unreadable is absent
        log.debug("%s: the family cache is unreadable, ignored: %s", checkpoint, exc)
        return None


def store(checkpoint: str, entry: CacheEntry) -> None:
    """Replace the cache file atomically; only into an existing checkpoint folder, and a
    failure is only logged (the next call reads the table). No fsync: a file a crash left
    empty or torn does not parse and is ignored."""
    folder = Path(checkpoint)
    if not folder.is_dir():
        return
    body = {
        "format": _FORMAT,
        "app_id": entry.app_id,
        "table_id": entry.table_id,
        "location": entry.location,
        "version": entry.version,
        "commit_id": entry.commit_id,
        "rows": [_encode(r) for r in entry.rows],
    }
    temporary = folder / f"{CACHE_FILE_NAME}.{secrets.token_hex(8)}.tmp"
    try:
        temporary.write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")
        os.replace(temporary, folder / CACHE_FILE_NAME)
    except OSError as exc:
        log.debug("%s: the family cache was not written: %s", checkpoint, exc)
        with contextlib.suppress(OSError):  # a read-only file system refuses this too
            temporary.unlink(missing_ok=True)


def preflight_facts(
    spark: SparkSession, facts_table: str, app_id: str, *, checkpoint: str | None
) -> SnapshotFacts:
    """The family's opens and completions for the mode lock and the pre-flight: from the
    cache under `checkpoint` while it is valid, else from the facts table (then cached).

    `checkpoint` None (a URI checkpoint) reads the table every time.
    """
    reader = None
    if checkpoint is not None:
        reader = LogReader.open(spark, table_ref(facts_table, argument="facts_table"))
    head = None if reader is None else reader.head()
    if checkpoint is None or reader is None or head is None:
        return snapshot_family.snapshot_facts(spark, facts_table, app_id, events=PREFLIGHT_EVENTS)
    entry = load(checkpoint)
    if entry is not None:
        reason = still_valid(entry, app_id=app_id, head=head, commit=reader.commit)
        if reason is None:
            if head.version != entry.version:  # move on, so the next check reads less
                _remember(checkpoint, reader, head, app_id, entry.rows)
            return SnapshotFacts(entry.rows, PREFLIGHT_EVENTS)
        log.debug("%s: family cache stale (%s); reading the facts table", facts_table, reason)
    # The head is taken before the query, so the rows are those of its version or a later one:
    # every commit after it is checked next time.
    facts = snapshot_family.snapshot_facts(spark, facts_table, app_id, events=PREFLIGHT_EVENTS)
    _remember(checkpoint, reader, head, app_id, facts.rows)
    return facts


def _remember(
    checkpoint: str,
    reader: LogReader,
    head: LogHead,
    app_id: str,
    rows: tuple[Mapping[str, Any], ...],
) -> None:
    at = reader.commit(head.version)
    if at is None or at.commit_id is None:
        return  # without the commit's id a rewritten history could not be told apart
    entry = CacheEntry(app_id, head.table_id, head.location, head.version, at.commit_id, rows)
    store(checkpoint, entry)
