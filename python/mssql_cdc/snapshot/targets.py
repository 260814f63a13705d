"""The newest snapshots of a target (docs/snapshots.md step 1): whole snapshots in bronze, chunk
rows, and the family's completions and chunked opens in the facts.

Bronze rows count when their `_capture_instance` matches, ignoring case, an instance the source
lists for the table or the configured name, so a target shared by two sources is not confused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Operation, StreamOffset, format_commit_ts
from mssql_cdc.facts import SnapshotFacts, snapshot_facts
from mssql_cdc.options import SourceConfig
from mssql_cdc.snapshot.probe import SourceProbe
from mssql_cdc.tables import Commit, LogReader, TableRef, find_commits, open_for_read, table_ref

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FoundSnapshot", "newest_known", "newest_whole", "recent_commit", "whole_snapshot_rows"]


@dataclass(frozen=True, slots=True)
class FoundSnapshot:
    """A snapshot found rather than taken, with its row count where one can be found."""

    offset: StreamOffset
    rows: int | None


def _instance_names(probe: SourceProbe, config: SourceConfig) -> list[str]:
    names = {config.capture_instance.lower(), probe.resolved().capture_instance.lower()}
    names.update(i.name.lower() for i in probe.observe().instances)
    return sorted(names)


def _snapshot_rows(
    spark: SparkSession, probe: SourceProbe, config: SourceConfig, target: str
) -> DataFrame | None:
    from pyspark.sql import functions as F

    handle = open_for_read(spark, target, "bronze")
    if handle is None:
        return None
    frame = spark.table(handle.ref.sql)
    names = _instance_names(probe, config)
    rows = frame.where(
        (F.col("_operation") == Operation.SNAPSHOT) & F.lower("_capture_instance").isin(names)
    )
    snapshot = F.col("_snapshot") if "_snapshot" in frame.columns else F.lit(None)
    chunk = F.col("_chunk") if "_chunk" in frame.columns else F.lit(None).cast("int")
    return rows.select(
        F.coalesce(snapshot, F.col("_start_lsn")).alias("lsn"),
        F.col("_commit_ts").alias("commit_ts"),
        chunk.alias("chunk"),
        snapshot.alias("snapshot"),
    )


def _newest(frame: DataFrame) -> StreamOffset | None:
    newest = frame.orderBy(frame["lsn"].desc()).select("lsn", "commit_ts").limit(1).collect()
    if not newest or newest[0]["lsn"] is None:
        return None
    return StreamOffset(newest[0]["lsn"], format_commit_ts(newest[0]["commit_ts"]) or None)


def newest_whole(
    spark: SparkSession, probe: SourceProbe, config: SourceConfig, target: str
) -> StreamOffset | None:
    """The highest `coalesce(_snapshot, _start_lsn)` of whole-snapshot rows, or None."""
    rows = _snapshot_rows(spark, probe, config, target)
    if rows is None:
        return None
    return _newest(rows.where(rows["chunk"].isNull()))


_RECENT_COMMITS = 16


def whole_snapshot_rows(
    spark: SparkSession, target: str, lsn: str, *, just_written: bool = False
) -> int | None:
    """`numOutputRows` of the newest full snapshot commit at `lsn`, searched through the whole
    history; None when history lost it. `just_written`: the commit was made a moment ago, so
    the newest commits are searched first (a long history is read only if it is not there)."""

    def matches(m: Mapping[str, Any]) -> bool:
        return m.get("lsn") == lsn and "snapshot" in m

    if just_written:
        logged = recent_commit(spark, target, matches)
        if logged is not None:
            return logged.output_rows
        recent = find_commits(spark, target, matches, needle=lsn, newest=_RECENT_COMMITS)
        if recent:
            return recent[0].output_rows
    commits = find_commits(spark, target, matches, needle=lsn)
    return commits[0].output_rows if commits else None


def recent_commit(
    spark: SparkSession,
    target: TableRef | str,
    matches: Callable[[Mapping[str, Any]], bool],
    *,
    newest: int = _RECENT_COMMITS,
) -> Commit | None:
    """The newest of the last `newest` commits whose `userMetadata` `matches`, read from the
    Delta log's commit files without a Spark job (a history query runs one); None when none of
    them does or the log cannot tell, so callers then search the history."""
    reader = LogReader.open(spark, table_ref(target))
    head = None if reader is None else reader.head()
    if reader is None or head is None:
        return None
    for version in range(head.version, max(head.version - newest, -1), -1):
        commit = reader.commit(version)
        if commit is None:
            return None
        try:
            metadata = json.loads(commit.user_metadata or "")
        except ValueError:
            continue  # none, or another writer's free text
        if isinstance(metadata, dict) and matches(metadata):
            return Commit(version, metadata, commit.output_rows)
    return None


def newest_known(
    spark: SparkSession,
    probe: SourceProbe,
    config: SourceConfig,
    target: str,
    *,
    app_id: str | None,
    facts_table: str | None,
    facts: SnapshotFacts | None = None,
) -> FoundSnapshot | None:
    """The newest known snapshot: the highest of the newest whole snapshot, any chunk row's
    `_snapshot` and, with both `app_id` and `facts_table`, the family's completion `max_lsn`
    and chunked open `S`. Its rows: the whole snapshot's commit, else the completion's.
    `facts`, when given, are the family's snapshot facts the caller has just read."""
    candidates: list[FoundSnapshot] = []
    rows = _snapshot_rows(spark, probe, config, target)
    if rows is not None:
        whole = _newest(rows.where(rows["chunk"].isNull()))
        if whole is not None:
            candidates.append(FoundSnapshot(whole, whole_snapshot_rows(spark, target, whole.lsn)))
        chunked = _newest(rows.where(rows["chunk"].isNotNull()))
        if chunked is not None:
            # A chunk row's _commit_ts is its wave's stamp time, not S's: S's comes from facts.
            candidates.append(FoundSnapshot(StreamOffset(chunked.lsn, None), None))
    if app_id is not None and facts_table is not None:
        if facts is None:
            facts = snapshot_facts(spark, facts_table, app_id)
        for completion in facts.completions():
            candidates.append(FoundSnapshot(completion.lsn, completion.rows))
        for opened in facts.opens():
            if opened.mode == "chunked":
                candidates.append(FoundSnapshot(opened.s, None))
    if not candidates:
        return None
    best = max(candidates, key=lambda k: k.offset.lsn)
    # The same LSN may be known both as bronze rows and as a completion: keep a known count.
    same = [k for k in candidates if k.offset.lsn == best.offset.lsn]
    counted = next((k for k in same if k.rows is not None), best)
    commit_ts = next((k.offset.commit_ts for k in same if k.offset.commit_ts), None)
    return FoundSnapshot(StreamOffset(best.offset.lsn, commit_ts), counted.rows)
