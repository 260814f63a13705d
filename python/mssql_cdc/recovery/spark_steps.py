"""The recovery's reads and writes on Spark: the facts family, the target, the snapshot steps.

`SparkRecoveryReads` and `SparkRecoveryWrites` implement the Protocols of
`mssql_cdc.recovery.preflight` over the facts family queries (`mssql_cdc.facts.snapshot_family`, the
one reader of snapshot facts) and the snapshot modules.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.core import GenerationState, StreamOffset, live_paths, spark_only
from mssql_cdc.facts import (
    BatchSample,
    RepairDetail,
    SnapshotFacts,
    finish_batch_from_bronze,
    sink_has_batches,
)
from mssql_cdc.facts import batch_samples as read_batch_samples
from mssql_cdc.facts import snapshot_facts as read_snapshot_facts
from mssql_cdc.options import SourceConfig
from mssql_cdc.recovery.preflight import FamilyRows, StartingSnapshot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SparkRecoveryReads", "SparkRecoveryWrites", "family_rows_of"]


def family_rows_of(facts: SnapshotFacts) -> FamilyRows:
    """What the decision reads of the family's snapshot facts."""
    return FamilyRows(
        opens=tuple(o.as_open_row() for o in facts.opens()),
        completions=tuple(c.as_completion_row() for c in facts.completions()),
        full_timings=facts.full_timings(),
    )


@dataclass
class _OnSpark:
    """The stream whose recovery steps run on Spark: the session, the source's options, the
    bronze target, the app id and the facts table ("" for none)."""

    spark: SparkSession
    config: SourceConfig
    target: str
    app_id: str
    facts: str


@dataclass(kw_only=True)
class SparkRecoveryReads(_OnSpark):
    """RecoveryReads over the facts table and the bronze target.

    `snapshot_facts`, when given, are the family's snapshot rows the caller has just read (for
    the mode lock); the first `family()` answers from them instead of reading the table again,
    later ones (a pre-flight that found the state moved on decides again) read it anew.
    """

    snapshot_facts: SnapshotFacts | None = None

    def family(self) -> FamilyRows:
        if self.snapshot_facts is not None:
            rows, self.snapshot_facts = family_rows_of(self.snapshot_facts), None
            return rows
        if not self.facts:  # plan_recovery without a facts table reads an empty family
            return FamilyRows()
        return family_rows_of(read_snapshot_facts(self.spark, self.facts, self.app_id))

    def live_batches(self, sink_id: str) -> bool:
        return bool(self.facts) and sink_has_batches(self.spark, self.facts, sink_id)

    def newest_whole(self) -> StreamOffset | None:
        from mssql_cdc.snapshot import newest_whole_snapshot

        return newest_whole_snapshot(self.spark, self.config, self.target)

    def newest_known(self) -> StreamOffset | None:
        from mssql_cdc.snapshot import newest_known_snapshot

        return newest_known_snapshot(
            self.spark,
            self.config,
            self.target,
            app_id=self.app_id,
            facts_table=self.facts or None,
        )

    def batch_samples(self) -> tuple[BatchSample, ...]:
        if not self.facts:
            return ()
        return read_batch_samples(self.spark, self.facts, self.app_id)


@dataclass(kw_only=True)
class SparkRecoveryWrites(_OnSpark):
    """RecoveryWrites through the snapshot, chunked and facts modules.

    `requested`: the facts rows say a person asked for this re-snapshot. `gap_deletes`: the
    completion first derives the gap's deletes. `chunked_at`: a chunked open takes this offset
    as its S instead of a new stamp, and `repair` is the plan its chunks are read in.
    """

    requested: bool = False
    gap_deletes: bool = False
    chunked_at: StreamOffset | None = None
    repair: RepairDetail | None = None
    checkpoint: str = ""

    def finish_last_batch(self, state: GenerationState) -> None:
        if not self.facts:
            return
        metrics = None
        if self.checkpoint and not spark_only(self.checkpoint):
            paths = live_paths(
                self.checkpoint, self.app_id, state, metrics_path=self.config.metrics_path
            )
            metrics = paths.metrics_path or None
        finish_batch_from_bronze(
            self.spark,
            target=self.target,
            facts_table=self.facts,
            app_id=self.app_id,
            generation=state.generation,
            metrics_path=metrics,
        )

    def take_full(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StartingSnapshot:
        from mssql_cdc.snapshot import take_full

        result = take_full(
            self.spark,
            self.config,
            self.target,
            kind="resnapshot",
            generation=generation,
            new=True,
            app_id=self.app_id,
            facts_table=self.facts,
            lost_from_ts=lost_from_ts,
            lost_to_ts=lost_to_ts,
            requested=self.requested,
        )
        return StartingSnapshot(
            result.offset, result.rows, result.started_at, result.duration_ms, result.taken
        )

    def open_chunked(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StreamOffset:
        from mssql_cdc.snapshot import open_chunked as open_chunked_snapshot

        return open_chunked_snapshot(
            self.spark,
            self.config,
            self.target,
            kind="resnapshot",
            generation=generation,
            app_id=self.app_id,
            facts_table=self.facts,
            lost_from_ts=lost_from_ts,
            lost_to_ts=lost_to_ts,
            requested=self.requested,
            gap_deletes=self.gap_deletes,
            at=self.chunked_at,
            repair=self.repair,
        )

    def write_event(
        self,
        generation: int,
        snapshot: StartingSnapshot,
        lost_from_ts: str | None,
        lost_to_ts: str | None,
    ) -> None:
        from mssql_cdc.snapshot import SnapshotResult, write_completion

        if self.gap_deletes:
            # Before the completion row: a crash between the two repeats the deletes on the
            # rerun (which reuses this snapshot), and Delta stores them once.
            self._write_gap_deletes(snapshot.offset)
        write_completion(
            self.spark,
            self.facts,
            app_id=self.app_id,
            generation=generation,
            kind="resnapshot",
            target=self.target,
            snapshot=SnapshotResult(
                offset=snapshot.offset,
                rows=snapshot.rows,
                started_at=snapshot.started_at,
                duration_ms=snapshot.duration_ms,
                taken=snapshot.read_now,
            ),
            lost_from_ts=lost_from_ts,
            lost_to_ts=lost_to_ts,
            requested=self.requested,
        )

    def _write_gap_deletes(self, snapshot: StreamOffset) -> None:
        from mssql_cdc.snapshot import open_probe, write_gap_deletes

        with closing(open_probe(self.config)) as probe:
            keys = list(probe.resolved().index_columns)
        write_gap_deletes(
            self.spark,
            self.target,
            app_id=self.app_id,
            facts_table=self.facts,
            snapshot=snapshot,
            keys=keys,
        )
