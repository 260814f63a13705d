"""One wave of `backfill()` (docs/snapshots.md, 'Chunked snapshots'): read the next chunks at a
stamp L >= S, append them in one keyed bronze commit, then their `snapshot_chunk` rows in one
keyed facts commit; and the facts of a wave a crash left without them.

A wave is read once: its append carries an observation of each chunk's rows, nothing is
cached, and only a wave whose observation this call lacks counts its rows in bronze
(decision 1348). Split in two, `append_wave` (Spark work only) and `finish_wave` (the facts),
so an overlapped backfill appends the next wave while it finishes the last (decision 1430).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Operation, StoreSettings, StreamOffset, is_store_uri, lsn
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import (
    FactsRow,
    OpenFact,
    append_facts,
    now_naive,
    parse_time,
    snapchunks_key,
    snapshot_chunk_row,
    wave_key,
)
from mssql_cdc.options import SourceConfig, StoreFolder
from mssql_cdc.snapshot.probe import SourceProbe, stamp
from mssql_cdc.snapshot.read import read_chunks
from mssql_cdc.snapshot.targets import recent_commit
from mssql_cdc.tables import (
    Commit,
    Observed,
    append_idempotent,
    ensure_table,
    find_commits,
    observe_aggregates,
    table_ref,
)
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

__all__ = [
    "ChunkRead",
    "Snapshot",
    "WaveAppend",
    "append_wave",
    "discard_wave",
    "facts_of_stored_wave",
    "finish_wave",
    "run_wave",
    "stored_wave",
    "wave_stamp",
]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The chunked snapshot `backfill()` works on: its open and the stream family's app_id."""

    open: OpenFact
    app_id: str
    target: str
    facts_table: str

    @property
    def s(self) -> str:
        return self.open.s.lsn

    @property
    def backfill_id(self) -> str:
        return wave_key(self.app_id, self.s, 0).app_id


@dataclass(frozen=True, slots=True)
class ChunkRead:
    """One chunk as a wave commit's `userMetadata` lists it."""

    chunk: int
    lo: Any
    hi: Any
    last: bool
    rows: int | None
    high_lsn: str | None
    read_seconds: float | None
    read_mb: float | None

    def as_json(self) -> dict[str, Any]:
        return {
            "chunk": self.chunk,
            "lo": self.lo,
            "hi": self.hi,
            "last": self.last,
            "rows": self.rows,
            "high_lsn": self.high_lsn,
            "read_seconds": self.read_seconds,
            "read_mb": self.read_mb,
        }


def _chunk_rows(
    snap: Snapshot, probe: SourceProbe, wave: int, stamp_lsn: str, chunks: Sequence[ChunkRead]
) -> list[FactsRow]:
    written_at = now_naive()
    stamp_ts = parse_time(probe.commit_ts(stamp_lsn))
    return [
        snapshot_chunk_row(
            app_id=snap.app_id,
            generation=snap.open.generation,
            target=snap.target,
            stamp_lsn=stamp_lsn,
            stamp_commit_ts=stamp_ts,
            high_lsn=c.high_lsn,
            high_commit_ts=None if c.high_lsn is None else parse_time(probe.commit_ts(c.high_lsn)),
            rows=c.rows or 0,
            read_seconds=c.read_seconds,
            read_mb=c.read_mb,
            detail={
                "snapshot": snap.s,
                "chunk": c.chunk,
                "wave": wave,
                "lo": c.lo,
                "hi": c.hi,
                "last": c.last,
            },
            started_at=None,
            written_at=written_at,
        )
        for c in chunks
    ]


def _write_chunk_facts(
    spark: SparkSession,
    snap: Snapshot,
    probe: SourceProbe,
    wave: int,
    stamp_lsn: str,
    chunks: Sequence[ChunkRead],
) -> None:
    rows = _chunk_rows(snap, probe, wave, stamp_lsn, chunks)
    append_facts(spark, snap.facts_table, rows, key=snapchunks_key(snap.app_id, snap.s, wave))


def _stored_wave(
    spark: SparkSession, snap: Snapshot, wave: int, attempt: str | None = None
) -> Commit | None:
    """The commit that stored wave `wave`. `attempt`: this call's append of it a moment ago,
    looked for first among the newest commits in the log (a history search costs a job)."""

    def matches(m: Mapping[str, Any]) -> bool:
        return m.get("backfill") == snap.backfill_id and m.get("wave") == wave

    if attempt is not None:
        mine = recent_commit(spark, snap.target, matches)
        # The wave's key lets one commit of it in: found in the log, this append was it.
        if mine is not None and mine.metadata.get("attempt") == attempt:
            return mine
    commits = find_commits(spark, snap.target, matches, needle=snap.backfill_id)
    return commits[-1] if commits else None  # the stored one is the first that committed


def _reads(metadata: Mapping[str, Any]) -> list[ChunkRead]:
    return [
        ChunkRead(
            chunk=int(c["chunk"]),
            lo=c.get("lo"),
            hi=c.get("hi"),
            last=bool(c.get("last", False)),
            rows=None if c.get("rows") is None else int(c["rows"]),
            high_lsn=c.get("high_lsn"),
            read_seconds=c.get("read_seconds"),
            read_mb=c.get("read_mb"),
        )
        for c in metadata.get("chunks", [])
    ]


def _counted(
    spark: SparkSession, snap: Snapshot, stamp_lsn: str, reads: Sequence[ChunkRead]
) -> list[ChunkRead]:
    """`reads` with every chunk's rows: a wave commit lists its chunks without counts (they are
    observed on its append), so a wave whose observation this call lacks (a crash
    before its facts, or an append Delta skipped) counts its op-0 rows in bronze, one job."""
    from pyspark.sql import functions as F

    missing = [c.chunk for c in reads if c.rows is None]
    if not missing:
        return list(reads)
    bronze = spark.table(table_ref(snap.target).sql)
    counted = (
        bronze.where((F.col("_operation") == Operation.SNAPSHOT) & (F.col("_snapshot") == snap.s))
        .where((F.col("_start_lsn") == stamp_lsn) & F.col("_chunk").isin(missing))
        .groupBy("_chunk")
        .count()
        .collect()
    )
    found = {int(r["_chunk"]): int(r["count"]) for r in counted}
    return [c if c.rows is not None else replace(c, rows=found.get(c.chunk, 0)) for c in reads]


def facts_of_stored_wave(
    spark: SparkSession,
    snap: Snapshot,
    probe: SourceProbe,
    wave: int,
    plan: Sequence[Sequence[Any]],
    done: set[int],
) -> None:
    """Write the `snapshot_chunk` rows of wave `wave`, a crash left without them: from its
    commit, or after log cleanup from bronze's op-0 rows of chunks without a row. Chunks in
    `done` (with a row already, such as an earlier wave's repair after log cleanup wrote) get
    none, so a crash with two waves in flight is repaired wave by wave, each chunk once."""
    from pyspark.sql import functions as F

    commit = _stored_wave(spark, snap, wave)
    if commit is not None:
        stamp_lsn = str(commit.metadata["lsn"])
        listed = [c for c in _reads(commit.metadata) if c.chunk not in done]
        if listed:
            reads = _counted(spark, snap, stamp_lsn, listed)
            _write_chunk_facts(spark, snap, probe, wave, stamp_lsn, reads)
        return
    bronze = spark.table(table_ref(snap.target).sql)
    counted = (
        bronze.where((F.col("_operation") == Operation.SNAPSHOT) & (F.col("_snapshot") == snap.s))
        .where(F.col("_chunk").isNotNull() & ~F.col("_chunk").isin(sorted(done) or [-1]))
        .groupBy("_chunk", "_start_lsn")
        .count()
        .collect()
    )
    by_stamp: dict[str, list[ChunkRead]] = {}
    for r in counted:
        i = int(r["_chunk"])
        lo, hi = plan[i]
        read = ChunkRead(i, lo, hi, i == len(plan) - 1, int(r["count"]), None, None, None)
        by_stamp.setdefault(r["_start_lsn"], []).append(read)
    rows: list[FactsRow] = []
    for stamp_lsn, reads in sorted(by_stamp.items()):
        rows.extend(_chunk_rows(snap, probe, wave, stamp_lsn, reads))
    if not rows:
        return
    # One commit under the wave's key, so a repeat of this repair writes nothing.
    append_facts(spark, snap.facts_table, rows, key=snapchunks_key(snap.app_id, snap.s, wave))


def _metrics_dir(config: SourceConfig, snap: Snapshot) -> tuple[str, bool]:
    if config.metrics_path is not None and is_store_uri(config.metrics_path):
        # An object store has no folders to create: the chunk files' PUTs make it.
        return f"{config.metrics_path.rstrip('/')}/{snap.open.app_id}/_backfill", False
    if config.metrics_path is not None:
        path = os.path.join(config.metrics_path, snap.open.app_id, "_backfill")
        os.makedirs(path, exist_ok=True)
        return path, False
    return tempfile.mkdtemp(prefix="mssql_cdc_backfill_"), True


def _chunk_metrics(directory: str, chunk: int, store: StoreSettings) -> dict[str, Any] | None:
    name = f"chunk-{chunk}.json"
    if is_store_uri(directory):
        try:  # a file the store cannot give (missing, or its write was refused) is no metrics
            value = json.loads(StoreFolder(directory, store).read(name).decode("utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None
    try:
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            value = json.load(handle)
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _count_columns(chunks: Sequence[tuple[int, Any, Any, bool]]) -> list[Column]:
    """The wave's rows per chunk as named aggregate columns, observed on its append."""
    from pyspark.sql import functions as F

    chunk = F.col("_chunk")
    return [F.count(F.when(chunk == i, 1)).alias(f"chunk_{i}") for i, _, _, _ in chunks]


@dataclass(frozen=True, slots=True)
class WaveAppend:
    """A wave whose append returned and whose `snapshot_chunk` rows are not yet written.

    Attributes:
        wave: its number, the append's transaction version.
        stamp_lsn: the stamp `L` its chunks were read at.
        listed: its chunks as the commit's metadata lists them (no counts).
        attempt: the id this attempt wrote into the commit's metadata.
        read: the appended frame's observation of each chunk's rows.
        directory: where the readers' tasks wrote each chunk's metrics file.
        temporary: whether `directory` is this wave's own, removed by `finish_wave`.
        started: `time.monotonic()` as its read began.
        seconds: the wall seconds of its read and append.
    """

    wave: int
    stamp_lsn: str
    listed: tuple[ChunkRead, ...]
    attempt: str
    read: Observed
    directory: str
    temporary: bool
    started: float
    seconds: float


def wave_stamp(snap: Snapshot, probe: SourceProbe) -> str:
    """A new wave's stamp `L` (the source's `max_lsn`), checked against the snapshot's S.

    Raises:
        ValueError: the stamp is below S (C2: a secondary behind the primary).
    """
    at: StreamOffset = stamp(probe)
    # A repair opens at bronze's position + 1: a stamp at that position holds
    # the same rows as one at S, since nothing can be committed in between.
    floor = lsn.decrement(snap.s) if "repair" in snap.open.detail else snap.s
    if at.lsn < floor:
        raise ConfigError(
            f"{snap.target}: the source's max_lsn {at.lsn} is below the snapshot's S {snap.s}; "
            "a chunk stamped below S could miss changes. Read from the primary, not a "
            "secondary that is behind it"
        )
    return at.lsn


def append_wave(
    spark: SparkSession,
    config: SourceConfig,
    snap: Snapshot,
    wave: int,
    stamp_lsn: str,
    chunks: Sequence[tuple[int, Any, Any, bool]],
    *,
    open_target: bool = True,
) -> WaveAppend:
    """Read `chunks` (`(chunk, lo, hi, last)`) at `stamp_lsn` and append them under the wave's
    key. Spark work only, no source query: an overlapped backfill runs it on a second thread
    while the previous wave's facts are written.

    `open_target` False: this call already opened bronze for write in an earlier wave.
    """
    directory, temporary = _metrics_dir(config, snap)
    try:
        started = time.monotonic()
        read = observe_aggregates(
            read_chunks(
                spark,
                config,
                stamp_lsn,
                snap.s,
                [(i, lo, hi) for i, lo, hi, _ in chunks],
                metrics_path=directory,
            ),
            "mssql_cdc_wave",
            *_count_columns(chunks),
        )
        attempt = str(uuid.uuid4())
        listed = tuple(
            ChunkRead(i, lo, hi, last, None, None, None, None) for i, lo, hi, last in chunks
        )
        metadata = {
            "backfill": snap.backfill_id,
            "wave": wave,
            "lsn": stamp_lsn,
            "attempt": attempt,
            "chunks": [c.as_json() for c in listed],
        }
        if open_target:
            ensure_table(spark, snap.target, "bronze", source_schema=read.frame.schema)
        key = wave_key(snap.app_id, snap.s, wave)
        append_idempotent(
            read.frame, snap.target, key.app_id, key.version, metadata, merge_schema=True
        )
        failpoint("backfill.after_wave_append")
    except BaseException:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    seconds = time.monotonic() - started
    return WaveAppend(
        wave, stamp_lsn, listed, attempt, read, directory, temporary, started, seconds
    )


def discard_wave(appended: WaveAppend) -> None:
    """Remove the wave's own metrics folder when its facts will not be written by this call."""
    if appended.temporary:
        shutil.rmtree(appended.directory, ignore_errors=True)


def stored_wave(spark: SparkSession, snap: Snapshot, appended: WaveAppend) -> Commit | None:
    """The bronze commit that stored `appended`'s wave: this attempt's, or another attempt's
    that stored it first (its `attempt` then differs); None when the log cannot tell."""
    return _stored_wave(spark, snap, appended.wave, appended.attempt)


def finish_wave(
    spark: SparkSession,
    config: SourceConfig,
    snap: Snapshot,
    probe: SourceProbe,
    appended: WaveAppend,
    stored: Commit | None,
) -> int:
    """Write the `snapshot_chunk` rows of an appended wave (`stored`: its commit, from
    `stored_wave`): from its observation, or from the commit and bronze when another attempt
    stored the wave first.

    Returns:
        The rows of the wave bronze stores.
    """
    wave, attempt, directory = appended.wave, appended.attempt, appended.directory
    try:
        if stored is not None and stored.metadata.get("attempt") != attempt:
            # Another attempt stored wave `wave` first: its facts describe what bronze holds.
            stamp_lsn, reads = str(stored.metadata["lsn"]), _reads(stored.metadata)
        else:
            observed = appended.read.values()
            after = probe.observe().max_lsn
            seconds = time.monotonic() - appended.started
            stamp_lsn, reads = appended.stamp_lsn, []
            for c in appended.listed:
                m = _chunk_metrics(directory, c.chunk, config.store)
                rows = None if observed is None else int(observed[f"chunk_{c.chunk}"])
                reads.append(
                    replace(
                        c,
                        rows=rows,
                        high_lsn=(m or {}).get("high_lsn") or after,
                        read_seconds=None if m is None else float(m.get("seconds", seconds)),
                        read_mb=None if m is None else float(m.get("bytes", 0)) / 1e6,
                    )
                )
        reads = _counted(spark, snap, stamp_lsn, reads)
        _write_chunk_facts(spark, snap, probe, wave, stamp_lsn, reads)
        return sum(c.rows or 0 for c in reads)
    finally:
        discard_wave(appended)


def run_wave(
    spark: SparkSession,
    config: SourceConfig,
    snap: Snapshot,
    probe: SourceProbe,
    wave: int,
    chunks: Sequence[tuple[int, Any, Any, bool]],
    *,
    open_target: bool = True,
) -> int:
    """Read `chunks` (`(chunk, lo, hi, last)`) at a new stamp, append, write their rows.

    The append is the read: each chunk's rows are observed on it, so the
    commit's `userMetadata` lists the chunks without their counts, which the facts rows carry.

    `open_target` False: this call already opened bronze for write in an earlier wave.

    Returns:
        The rows of the wave bronze stores (another attempt may have stored it first).

    Raises:
        ValueError: the stamp is below S (C2: a secondary behind the primary).
    """
    stamp_lsn = wave_stamp(snap, probe)
    appended = append_wave(spark, config, snap, wave, stamp_lsn, chunks, open_target=open_target)
    try:
        stored = stored_wave(spark, snap, appended)
    except BaseException:
        discard_wave(appended)
        raise
    return finish_wave(spark, config, snap, probe, appended, stored)
