"""`reconcile(..., repair=True)`: re-snapshot only the key tiles that differ (decision 1180).

The repair is a requested chunked re-snapshot, through the recovery's crash-safe steps, opened
just above bronze's own position B (the LSN the reconcile compared at) with the reconcile's
top-level tiles as its chunks. A tile that differs is read from the source by `backfill()`'s
waves; a tile that is equal is *carried*: bronze's latest image of each of its keys, which the
reconcile proved equal to the source as of B, is written as that chunk's rows at S (wave 0,
`"carried": true`). The new generation thus holds a whole snapshot and silver's rebuild needs no
change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from mssql_cdc.core import lsn
from mssql_cdc.core.checkpoint import read_state
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.errors import ConfigError, InternalError
from mssql_cdc.facts import family
from mssql_cdc.facts.details import RepairDetail, json_key
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.reconciliation.carried import carry, write_plan
from mssql_cdc.reconciliation.narrow import KeyRange
from mssql_cdc.recovery.preflight import RecoveryRequest
from mssql_cdc.recovery.spark_steps import SparkRecoveryWrites
from mssql_cdc.snapshot.chunk_plan import usable_keys
from mssql_cdc.snapshot.probe import open_probe

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.facts.family import OpenFact, SnapshotFacts
    from mssql_cdc.reconciliation.api import ReconcileResult

__all__ = [
    "RepairJob",
    "check_repair_arguments",
    "finish_repair",
    "open_repair",
    "pending_repair",
    "prepare_repair",
    "resumed",
]


@dataclass(frozen=True, slots=True)
class RepairJob:
    """A repair's checked arguments, what the mode lock read, and the table's chunk keys."""

    target: str
    app_id: str
    checkpoint: str
    facts_table: str
    request: RecoveryRequest
    facts: SnapshotFacts | None
    keys: tuple[str, ...]
    kind: Literal["int", "keyset"]


def check_repair_arguments(
    against: object,
    *,
    app_id: str | None,
    checkpoint: str | None,
    facts_table: str | None,
) -> None:
    """Refuse a repair the arguments cannot describe, before anything is read or written."""
    if against != "bronze":
        raise ConfigError(
            "reconcile: repair=True repairs bronze, and silver follows bronze through "
            "apply_changes' rebuild; reconcile the bronze table with against='bronze' and "
            "repair=True, then run apply_changes"
        )
    missing = [
        name
        for name, value in (
            ("app_id", app_id),
            ("checkpoint", checkpoint),
            ("facts_table", facts_table),
        )
        if value is None
    ]
    if missing:
        raise ConfigError(
            f"reconcile: repair=True needs the stream's {', '.join(missing)}, as to_delta "
            "takes them: the repair opens the stream's next generation"
        )


def prepare_repair(
    spark: SparkSession,
    config: SourceConfig,
    options: Mapping[str, object],
    target: str,
    *,
    app_id: str,
    checkpoint: str,
    facts_table: str,
    interval_days: float,
    keys: Sequence[str] | None,
) -> RepairJob:
    """Check everything a repair needs, writing nothing: the stream's arguments (as resnapshot()
    checks them), a stopped stream, the mode lock and keys that can bound a chunk.

    Raises:
        ConfigError: the first defect found.
    """
    from mssql_cdc.pipeline.arguments import check_recovery
    from mssql_cdc.snapshot.bootstrap import checked_family
    from mssql_cdc.source.formats import register

    args = check_recovery(
        config, options, target, app_id, checkpoint, facts_table, interval_days, "chunked", False
    )
    running = [q.name for q in spark.streams.active if _of_family(q.name, args.app_id)]
    if running:
        raise ConfigError(
            f"reconcile: the stream {running[0]!r} is running in this session; stop it "
            "(query.stop()) before repair=True, which opens its next generation"
        )
    probe = open_probe(config)
    try:
        index, kind = usable_keys(probe)
    finally:
        probe.close()
    if kind is None:
        raise ConfigError(
            f"reconcile: the key of {target} ({', '.join(index) or 'none'}) cannot bound a "
            "chunk, so no tiles can be re-read; take a whole re-snapshot with "
            "CdcStream.resnapshot() instead"
        )
    if keys is not None and [k.lower() for k in keys] != [k.lower() for k in index]:
        raise ConfigError(
            f"reconcile: repair=True tiles the table by its unique index ({', '.join(index)}); "
            "leave keys out"
        )
    register(spark)
    facts = checked_family(
        spark,
        config,
        args.target,
        app_id=args.app_id,
        facts_table=args.facts_table,
        checkpoint=None if args.checkpoint_is_spark_only else args.checkpoint,
        mode="chunked",
        bootstrap=False,
        resnapshot=True,
    )
    request = replace(args.recovery_request(config), requested=True, gap_deletes=True)
    return RepairJob(
        args.target,
        args.app_id,
        args.checkpoint,
        args.facts_table or facts_table,
        request,
        facts,
        tuple(index),
        kind,
    )


def _of_family(name: str | None, app_id: str) -> bool:
    return name is not None and (name == app_id or name.startswith(f"{app_id}.g"))


def pending_repair(spark: SparkSession, job: RepairJob) -> OpenFact | None:
    """The family's newest chunked snapshot when a repair opened it and it is not complete."""
    facts = family.snapshot_facts(spark, job.facts_table, job.app_id)
    opens = [o for o in facts.opens() if o.mode == "chunked"]
    if not opens:
        return None
    newest = max(opens, key=lambda o: o.s.lsn)
    if "repair" not in newest.detail or family.is_complete(newest, facts.completions()):
        return None
    return newest


class _RepairWrites(SparkRecoveryWrites):
    """The recovery's writes, with the chunked open at the repair's S and plan."""

    def __init__(
        self, spark: SparkSession, config: SourceConfig, job: RepairJob, at: StreamOffset,
        detail: RepairDetail,
    ) -> None:  # fmt: skip
        super().__init__(
            spark, config, job.target, job.app_id, job.facts_table, requested=True,
            gap_deletes=True,
        )  # fmt: skip
        self._at, self._detail = at, detail

    def open_chunked(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StreamOffset:
        from mssql_cdc.snapshot import chunked_open

        return chunked_open.open_chunked(
            self._spark,
            self._config,
            self._target,
            kind="resnapshot",
            generation=generation,
            app_id=self._app_id,
            facts_table=self._facts,
            lost_from_ts=lost_from_ts,
            lost_to_ts=lost_to_ts,
            requested=True,
            gap_deletes=True,
            at=self._at,
            repair=self._detail,
        )


def open_repair(
    spark: SparkSession,
    config: SourceConfig,
    job: RepairJob,
    *,
    at: str,
    capture_instance: str,
    tiles: Sequence[KeyRange],
    differing: Sequence[int],
) -> OpenFact:
    """Open the next generation just above bronze's position `at` through the recovery's steps
    (a rerun after a crash finishes the same attempt) and return its open.

    S is `at` + 1: above every earlier snapshot of bronze (a completion at `at` itself would
    count this one complete), and below every later commit, since a transaction's commit record
    follows its own begin record. A change found at S all the same is refused, not skipped.
    """
    from mssql_cdc.sqlserver.backend_choice import open_backend

    point = lsn.increment(at)
    backend = open_backend(config)
    try:
        newest = backend.changes.max_lsn()
        # Nothing is committed at S while max_lsn is below it (and a read above it fails).
        found = newest is not None and lsn.compare(newest, point) >= 0
        if found:
            batches = backend.changes.read_changes(
                capture_instance, point, point, columns=[], include_command_id=False,
                time_zone="UTC", batch_rows=16,
            )  # fmt: skip
            found = any(b.num_rows for b in batches)
        if found:
            raise ConfigError(
                f"{job.target}: a change of {capture_instance} was committed at {point}, just "
                f"above bronze's position {at}, where the repair's snapshot would open; run the "
                "stream once so bronze holds it, then repair again"
            )
    finally:
        backend.close()
    probe = open_probe(config)
    try:  # the state at S is the state at `at`: its commit time
        s = StreamOffset(point, probe.commit_ts(at))
    finally:
        probe.close()
    detail: RepairDetail = {
        "kind": job.kind,
        "chunks": [[json_key(lo), json_key(hi)] for lo, hi in tiles],
        "differing": sorted(differing),
    }
    return _recover(spark, config, job, s, detail)


def _recover(
    spark: SparkSession, config: SourceConfig, job: RepairJob, s: StreamOffset,
    detail: RepairDetail,
) -> OpenFact:  # fmt: skip
    from mssql_cdc.recovery.observer import open_observer
    from mssql_cdc.recovery.preflight import recover
    from mssql_cdc.recovery.spark_steps import SparkRecoveryReads

    reads = SparkRecoveryReads(
        spark, config, job.target, job.app_id, job.facts_table, snapshot_facts=job.facts
    )
    observer = open_observer(config)
    try:
        state = recover(job.request, reads, _RepairWrites(spark, config, job, s, detail), observer)
    finally:
        observer.close()
    facts = family.snapshot_facts(spark, job.facts_table, job.app_id)
    mine = [o for o in facts.opens() if o.generation == state.generation and o.mode == "chunked"]
    if not mine or "repair" not in mine[0].detail:
        raise InternalError(
            f"{job.target}: the repair's snapshot of generation {state.generation} was not "
            "found after opening it; check that nothing else deletes facts rows"
        )
    return mine[0]


def finish_repair(
    spark: SparkSession, config: SourceConfig, job: RepairJob, opened: OpenFact
) -> int:
    """Open the generation first if a crash left only the open row, then write the plan and the
    carried chunks and read the differing ones; returns the tiles read from the source.

    Raises:
        ConfigError: backfill() stopped before the snapshot was complete.
    """
    from mssql_cdc.snapshot.backfill import backfill

    detail = opened.detail["repair"]
    state = read_state(job.checkpoint)
    if state is None or state.generation < opened.generation:
        opened = _recover(spark, config, job, opened.s, detail)
    write_plan(spark, job, opened, detail)
    carried = [i for i in range(len(detail["chunks"])) if i not in set(detail["differing"])]
    if carried:
        carry(spark, job, opened, detail, carried)
    status = backfill(spark, config, job.target, app_id=job.app_id, facts_table=job.facts_table)
    if not status["done"]:
        raise ConfigError(
            f"{job.target}: the repair's snapshot at {opened.s.lsn} is not complete "
            f"({status['reason']}); call reconcile(repair=True) again to finish it"
        )
    return len(detail["differing"])


def resumed(
    spark: SparkSession, config: SourceConfig, job: RepairJob, pending: OpenFact, target: str
) -> ReconcileResult:
    """Finish the repair an earlier call began; the result counts its tiles, names no keys."""
    import time

    from mssql_cdc.reconciliation.api import ReconcileResult

    started = time.perf_counter()
    repaired = finish_repair(spark, config, job, pending)
    tiles = len(pending.detail["repair"]["chunks"])
    return ReconcileResult(
        equal=False, lsn=pending.s.lsn, against="bronze", target=target, tiles=tiles,
        differing_tiles=repaired, source_rows=0, target_rows=0, missing=(), extra=(),
        different=(), missing_count=0, extra_count=0, different_count=0, complete=False,
        columns=(), skipped_columns=(), seconds=round(time.perf_counter() - started, 3),
        repaired_tiles=repaired,
    )  # fmt: skip
