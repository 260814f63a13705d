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

import time
from collections.abc import Sequence
from contextlib import closing
from typing import TYPE_CHECKING

from mssql_cdc.core import StreamOffset, lsn, read_state
from mssql_cdc.errors import ConfigError, InternalError
from mssql_cdc.facts import RepairDetail, is_complete, json_key, snapshot_facts
from mssql_cdc.options import SourceConfig
from mssql_cdc.reconciliation.repair_job import RepairJob
from mssql_cdc.reconciliation.repair_rows import write_carried_chunks, write_repair_plan
from mssql_cdc.reconciliation.result import ReconcileResult
from mssql_cdc.reconciliation.tile_narrowing import KeyRange
from mssql_cdc.recovery import open_next_generation
from mssql_cdc.snapshot import open_probe
from mssql_cdc.sqlserver import open_backend

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.facts import OpenFact

__all__ = [
    "finish_pending_repair",
    "finish_repair",
    "open_repair",
    "pending_repair",
]


def pending_repair(spark: SparkSession, job: RepairJob) -> OpenFact | None:
    """The family's newest chunked snapshot when a repair opened it and it is not complete."""
    facts = snapshot_facts(spark, job.facts_table, job.app_id)
    opens = [o for o in facts.opens() if o.mode == "chunked"]
    if not opens:
        return None
    newest = max(opens, key=lambda o: o.s.lsn)
    if "repair" not in newest.detail or is_complete(newest, facts.completions()):
        return None
    return newest


def open_repair(
    spark: SparkSession,
    config: SourceConfig,
    job: RepairJob,
    *,
    at: str,
    capture_instance: str,
    tiles: Sequence[KeyRange],
    differing: Sequence[int],
    key_types: Sequence[str | None] = (),
) -> OpenFact:
    """Open the next generation just above bronze's position `at` through the recovery's steps
    (a rerun after a crash finishes the same attempt) and return its open.

    S is `at` + 1: above every earlier snapshot of bronze (a completion at `at` itself would
    count this one complete), and below every later commit, since a transaction's commit record
    follows its own begin record. A change found at S all the same is refused, not skipped.
    """
    point = lsn.increment(at)
    with closing(open_backend(config)) as backend:
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
    # The state at S is the state at `at`: its commit time.
    with closing(open_probe(config)) as probe:
        s = StreamOffset(point, probe.commit_ts(at))
    detail: RepairDetail = {
        "kind": job.kind,
        "chunks": [[json_key(lo), json_key(hi)] for lo, hi in tiles],
        "differing": sorted(differing),
        "key_types": list(key_types),
    }
    return _open_generation(spark, config, job, s, detail)


def _open_generation(
    spark: SparkSession, config: SourceConfig, job: RepairJob, s: StreamOffset,
    detail: RepairDetail,
) -> OpenFact:  # fmt: skip
    """Open the repair's generation at S, chunked by `detail`, and return its open row."""
    state = open_next_generation(
        spark, config, job.request, facts_table=job.facts_table, snapshot_facts=job.facts,
        chunked_at=s, repair=detail,
    )  # fmt: skip
    facts = snapshot_facts(spark, job.facts_table, job.app_id)
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
    from mssql_cdc.snapshot import backfill

    detail = opened.detail["repair"]
    state = read_state(job.checkpoint)
    if state is None or state.generation < opened.generation:
        opened = _open_generation(spark, config, job, opened.s, detail)
    write_repair_plan(spark, job, opened, detail)
    carried = [i for i in range(len(detail["chunks"])) if i not in set(detail["differing"])]
    if carried:
        write_carried_chunks(spark, job, opened, detail, carried)
    status = backfill(spark, config, job.target, app_id=job.app_id, facts_table=job.facts_table)
    if not status["done"]:
        raise ConfigError(
            f"{job.target}: the repair's snapshot at {opened.s.lsn} is not complete "
            f"({status['reason']}); call reconcile(repair=True) again to finish it"
        )
    return len(detail["differing"])


def finish_pending_repair(
    spark: SparkSession, config: SourceConfig, job: RepairJob, pending: OpenFact, target: str
) -> ReconcileResult:
    """Finish the repair an earlier call began instead of comparing again.

    Returns:
        A result that is not `equal`, at the repair's S, counting that repair's tiles
        (`tiles`) and those read from the source (`differing_tiles`, `repaired_tiles`); it
        names no keys and counts no rows, since nothing was compared.
    """
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
