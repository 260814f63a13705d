"""An in-memory stream world for the recovery's order of work: facts, target and source.

The fakes implement the recovery's Protocols with the smallest behaviour that keeps the
world consistent: a snapshot taken is found again as the newest whole snapshot, an event
written is found again as a completion row, a chunked open as an open row. Every durable
step is journaled with the state file as it was at that moment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from mssql_cdc.core.checkpoint import GenerationState, read_state
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.core.recovery_decision import CompletionRow, Instance, OpenRow
from mssql_cdc.recovery.preflight import BatchSample, FamilyRows, RecoveryRequest, StartingSnapshot
from mssql_cdc.testing import failpoint

META = '{"batchWatermarkMs":0,"batchTimestampMs":1795950779067,"conf":{}}'


def L(n: int) -> str:
    return f"0x{n:020X}"


def ts(n: int) -> str:
    """A commit time that rises with n (minutes after a fixed origin)."""
    return f"2026-10-01T{n // 60 % 24:02d}:{n % 60:02d}:00.000"


def commit_batch(spark_ckpt: Path, n: int, lsn: int) -> None:
    """Batch n committed by Spark with the source offset at `lsn` (offset log format v1)."""
    (spark_ckpt / "offsets").mkdir(parents=True, exist_ok=True)
    (spark_ckpt / "commits").mkdir(parents=True, exist_ok=True)
    line = json.dumps({"lsn": L(lsn), "commit_ts": ts(lsn)})
    (spark_ckpt / "offsets" / str(n)).write_text(f"v1\n{META}\n{line}")
    (spark_ckpt / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    (spark_ckpt / "metadata").write_text('{"id":"x"}')


@dataclass
class World:
    checkpoint: Path
    max_lsn: int | None = 500
    min_lsn: int | None = 300
    start_lsn: int = 10
    next_snapshot: int = 400
    opens: list[OpenRow] = field(default_factory=list)
    completions: list[CompletionRow] = field(default_factory=list)
    whole: list[StreamOffset] = field(default_factory=list)
    live_batch_ids: set[str] = field(default_factory=set)
    samples: list[BatchSample] = field(default_factory=list)
    timings: list[tuple[int, int]] = field(default_factory=list)
    table_rows: int | None = 3
    journal: list[tuple[str, object]] = field(default_factory=list)
    source_reads: list[str] = field(default_factory=list)
    target_reads: list[str] = field(default_factory=list)  # the seconds-long Spark queries
    # finish_last_batch calls: the generation, and the state file as it was then
    finished: list[tuple[int, GenerationState | None]] = field(default_factory=list)
    purge_during_read: int | None = None  # cleanup moves min_lsn here while a read runs

    def request(self, **kw: object) -> RecoveryRequest:
        args: dict[str, object] = {
            "target": "bronze.orders",
            "app_id": "life-v1",
            "checkpoint": str(self.checkpoint),
        }
        args.update(kw)
        return RecoveryRequest(**args)  # type: ignore[arg-type]

    def _state_now(self) -> object:
        return read_state(self.checkpoint)

    # RecoveryReads
    def family(self) -> FamilyRows:
        return FamilyRows(tuple(self.opens), tuple(self.completions), tuple(self.timings))

    def live_batches(self, sink_id: str) -> bool:
        return sink_id in self.live_batch_ids

    def newest_whole(self) -> StreamOffset | None:
        self.target_reads.append("whole")
        return max(self.whole, key=lambda o: o.lsn, default=None)

    def newest_known(self) -> StreamOffset | None:
        self.target_reads.append("known")
        known = [o for o in self.whole] + [c.lsn for c in self.completions]
        known += [o.s for o in self.opens if o.mode == "chunked"]
        return max(known, key=lambda o: o.lsn, default=None)

    def batch_samples(self) -> tuple[BatchSample, ...]:
        return tuple(self.samples)

    # SourceObserver
    def max_lsn_now(self) -> str | None:
        return None if self.max_lsn is None else L(self.max_lsn)

    def instances(self) -> tuple[Instance, ...]:
        self.source_reads.append("instances")
        low = None if self.min_lsn is None else L(self.min_lsn)
        return (Instance("dbo_orders", L(self.start_lsn), low, ts(self.min_lsn or 0)),)

    def commit_ts(self, at: str) -> str | None:
        return ts(int(at, 16))

    def row_count(self) -> int | None:
        return self.table_rows

    def close(self) -> None:
        pass

    # RecoveryWrites
    def finish_last_batch(self, state: GenerationState) -> None:
        self.finished.append((state.generation, read_state(self.checkpoint)))

    def take_full(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StartingSnapshot:
        self.journal.append(("open_full", (generation, self._state_now())))
        self.opens.append(
            OpenRow(
                generation,
                "full",
                "resnapshot",
                StreamOffset(L(self.next_snapshot), ts(self.next_snapshot)),
            )
        )
        failpoint("snapshot.before_append")
        offset = StreamOffset(L(self.next_snapshot), ts(self.next_snapshot))
        self.whole.append(offset)
        self.journal.append(("append", generation))
        if self.purge_during_read is not None:
            self.min_lsn = self.purge_during_read
        failpoint("snapshot.after_append")
        return StartingSnapshot(
            offset, rows=3, started_at=datetime(2026, 10, 1), duration_ms=1500, read_now=True
        )

    def open_chunked(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StreamOffset:
        offset = StreamOffset(L(self.max_lsn or 0), ts(self.max_lsn or 0))
        self.opens.append(OpenRow(generation, "chunked", "resnapshot", offset))
        self.journal.append(("open_chunked", (generation, lost_from_ts, lost_to_ts)))
        failpoint("chunked.after_open")
        return offset

    def write_event(
        self,
        generation: int,
        snapshot: StartingSnapshot,
        lost_from_ts: str | None,
        lost_to_ts: str | None,
    ) -> None:
        if any(c.generation == generation for c in self.completions):
            return  # txnVersion = generation: Delta skips the repeat
        self.completions.append(CompletionRow(generation, snapshot.offset))
        self.journal.append(("event", (generation, snapshot.rows, lost_from_ts, lost_to_ts)))


class Source:
    """The world's source face under the SourceObserver names."""

    def __init__(self, world: World) -> None:
        self.world = world

    def max_lsn(self) -> str | None:
        self.world.source_reads.append("max_lsn")
        return self.world.max_lsn_now()

    def instances(self) -> tuple[Instance, ...]:
        return self.world.instances()

    def commit_ts(self, at: str) -> str | None:
        return self.world.commit_ts(at)

    def row_count(self) -> int | None:
        return self.world.row_count()

    def close(self) -> None:
        pass


def sample(
    at: datetime, headroom: float | None, retention_hours: float | None = None
) -> BatchSample:
    watermark = None if retention_hours is None else at - timedelta(hours=retention_hours)
    return BatchSample(at, headroom, at if retention_hours is not None else None, watermark)
