"""The CDC cleanup job racing a running stream over more than 100,000 changes, in rounds.

Each round commits a block of transactions, then runs `to_delta` with availableNow and small
batches while a thread raises the capture instance's low water mark, paced by the batches the
checkpoint has committed: behind the stream (rows already read) or ahead of it (rows it still
needs). The oracle is the test's own log, in plain Python: every change it committed with its
commit LSN, and every mark it cleaned up to. Nothing here asks the library what to expect.
"""

from __future__ import annotations

import bisect
import json
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from mssql_cdc import is_data_loss, stream
from mssql_cdc.emulator import Emulator
from tests.support import emulator_profile

START = datetime(2026, 9, 28, 13, 50)
ROUNDS = 3
COMMITS_PER_ROUND = 3_400
INSERTS, UPDATES, DELETES = 6, 3, 1  # per commit: 10 operations, 13 change rows
BATCH_COMMITS = 1_700  # maxCommitsPerBatch: two batches per round, each a few seconds
PACE_SECONDS = 0.05  # between two cleanups

Row = tuple[str, int, int, str]  # (commit LSN, _operation, order_id, status): unique per commit
Policy = Callable[[random.Random], bool]  # True: the next mark goes ahead of the stream


def lsn_int(text: str) -> int:
    return int(text, 16)


@dataclass
class Workload:
    """dbo.orders on an emulator file, the changes committed to it and the marks cleaned up to."""

    root: Path
    rng: random.Random = field(default_factory=lambda: random.Random(14))
    lsns: list[str] = field(default_factory=list)  # every commit LSN, ascending
    rows: list[Row] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)
    _live: list[int] = field(default_factory=list)  # the keys in the table, in any order
    _status: dict[int, str] = field(default_factory=dict)  # key -> status, for before-images
    _index: dict[int, int] = field(default_factory=dict)  # key -> its place in _live
    _next_key: int = 0

    def __post_init__(self) -> None:
        self.path = self.root / "e.db"
        # Pinned: the oracle is every commit's LSN as commit_many returns it, cleaned up to
        # while the stream reads; lag on the realistic profile is test_source_realistic's story.
        emu = emulator_profile.create(self.path, pinned="immediate", start=START)
        emu.create_table(
            "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
        )
        emu.enable_cdc("dbo.orders")
        emu.close()

    def commit_round(self, number: int) -> None:
        """COMMITS_PER_ROUND transactions of inserts, updates and deletes, one second apart."""
        transactions: list[list[tuple[str, str, dict[str, object]]]] = []
        expected: list[list[tuple[int, int, str]]] = []
        for c in range(COMMITS_PER_ROUND):
            changes: list[tuple[str, str, dict[str, object]]] = []
            rows: list[tuple[int, int, str]] = []
            touched = self.rng.sample(self._live, UPDATES + DELETES) if self._live else []
            for key in touched[:UPDATES]:
                status = f"u{number}-{c}"
                changes.append(("update", "dbo.orders", {"order_id": key, "status": status}))
                rows += [(3, key, self._status[key]), (4, key, status)]
                self._status[key] = status
            for key in touched[UPDATES:]:
                changes.append(("delete", "dbo.orders", {"order_id": key}))
                rows.append((1, key, self._status.pop(key)))
                self._forget(key)
            for _ in range(INSERTS):
                key, status = self._next_key, f"i{number}-{c}"
                self._next_key += 1
                changes.append(("insert", "dbo.orders", {"order_id": key, "status": status}))
                rows.append((2, key, status))
                self._status[key] = status
                self._index[key] = len(self._live)
                self._live.append(key)
            transactions.append(changes)
            expected.append(rows)
        first = len(self.lsns)
        times = [START + timedelta(seconds=first + i + 1) for i in range(COMMITS_PER_ROUND)]
        with Emulator.open(self.path) as emu:
            lsns = emu.commit_many(transactions, at=times)
        for commit_lsn, rows in zip(lsns, expected, strict=True):
            self.rows += [(commit_lsn, op, key, status) for op, key, status in rows]
        self.lsns += lsns

    def _forget(self, key: int) -> None:
        """Drop `key` from the live keys in O(1): the last key takes its place."""
        at, last = self._index.pop(key), self._live.pop()
        if last != key:
            self._live[at], self._index[last] = last, at

    def rows_through(self, end: str | None) -> Counter[Row]:
        limit = -1 if end is None else lsn_int(end)
        return Counter(r for r in self.rows if lsn_int(r[0]) <= limit)


def committed_end(checkpoint: Path) -> str | None:
    """The end LSN of the last batch the checkpoint committed, read from Spark's own files."""
    commits = checkpoint / "commits"
    done = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.exists() else []
    if not done:
        return None
    lines = (checkpoint / "offsets" / str(max(done))).read_text().splitlines()
    end: str = json.loads(lines[2])["lsn"]
    return end


class Cleaner(threading.Thread):
    """Raises the low water mark of dbo_orders while a query runs, ahead or behind the stream."""

    def __init__(
        self, work: Workload, checkpoint: Path, policy: Policy, *, since: str | None
    ) -> None:
        super().__init__(name="cleanup-race", daemon=True)
        self._work, self._checkpoint, self._policy = work, checkpoint, policy
        self._since = since  # where the stream stood when the round began
        self._rng = random.Random(len(work.lsns))  # its own: the workload's stays reproducible
        self._halt = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with Emulator.open(self._work.path) as emu:
                while not self._halt.wait(PACE_SECONDS):
                    mark = self._next_mark(committed_end(self._checkpoint) or self._since)
                    if mark is not None and (
                        not self._work.marks or lsn_int(mark) > lsn_int(self._work.marks[-1])
                    ):
                        emu.cleanup("dbo_orders", mark)
                        self._work.marks.append(mark)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread, which re-raises
            self.failure = exc

    def _next_mark(self, position: str | None) -> str | None:
        if position is None:
            return None  # startingLsn earliest: rows purged before the first batch are no loss
        lsns, rng = self._work.lsns, self._rng
        read = bisect.bisect_right(lsns, position)
        if self._policy(rng):
            return lsns[min(read + rng.randrange(400), len(lsns) - 1)]
        behind = read - 1 - rng.randrange(300)
        return lsns[behind] if behind >= 0 else None

    def finish(self) -> None:
        self._halt.set()
        self.join(60)
        assert not self.is_alive(), "the cleanup thread did not stop"
        if self.failure is not None:
            raise self.failure


@dataclass
class Stream:
    """`to_delta` of the workload into path-based bronze and facts tables."""

    spark: SparkSession
    work: Workload
    fail_on_data_loss: bool

    def __post_init__(self) -> None:
        root = self.work.root
        self.target, self.facts = str(root / "bronze"), str(root / "facts")
        self.checkpoint, self.metrics = root / "ckpt", root / "metrics"

    def run_racing(self, policy: Policy) -> StreamingQueryException | None:
        """One availableNow run with the cleaner racing it; the query's failure, if any."""
        options = {
            "backend": "emulator",
            "emulatorPath": str(self.work.path),
            "captureInstance": "dbo_orders",
            "maxCommitsPerBatch": str(BATCH_COMMITS),
            "failOnDataLoss": str(self.fail_on_data_loss).lower(),
            "metricsPath": str(self.metrics),
        }
        cleaner = Cleaner(self.work, self.checkpoint, policy, since=committed_end(self.checkpoint))
        query = stream(self.spark, options).to_delta(
            self.target,
            "race-v1",
            str(self.checkpoint),
            self.facts,
            trigger={"availableNow": True},
            on_data_loss="fail",
        )
        cleaner.start()
        try:
            try:
                assert query.awaitTermination(900)  # a deadline for a loaded machine
            except StreamingQueryException as exc:
                return exc
            return None
        finally:
            cleaner.finish()

    def bronze(self) -> Counter[Row]:
        if not (Path(self.target) / "_delta_log").exists():
            return Counter()
        table = (
            self.spark.read.format("delta")
            .load(self.target)
            .select("_start_lsn", "_operation", "order_id", "status")
            .toArrow()
        )
        return Counter(
            (r["_start_lsn"], r["_operation"], r["order_id"], r["status"])
            for r in table.to_pylist()
        )

    def skips(self) -> list[dict[str, Any]]:
        """The `detail` of every data_skipped facts row."""
        if not (Path(self.facts) / "_delta_log").exists():
            return []
        found = (
            self.spark.read.format("delta")
            .load(self.facts)
            .where("event = 'data_skipped'")
            .select("detail")
            .collect()
        )
        return [json.loads(r["detail"]) for r in found]


def behind(rng: random.Random) -> bool:
    return False


def ahead(rng: random.Random) -> bool:
    return True


def now_and_then(rng: random.Random) -> bool:
    return rng.random() < 0.3


def test_with_fail_on_data_loss_a_race_either_fails_the_query_or_leaves_bronze_exact(
    spark: SparkSession, tmp_path: Path
) -> None:
    work = Workload(tmp_path)
    run = Stream(spark, work, fail_on_data_loss=True)
    failure = None
    for number in range(ROUNDS):
        work.commit_round(number)
        # Cleanup trails the stream, then overtakes it in the last round.
        failure = run.run_racing(ahead if number == ROUNDS - 1 else behind)
        end = committed_end(run.checkpoint)
        assert run.bronze() == work.rows_through(end)  # exactly once, up to the committed end
        if failure is not None:
            assert is_data_loss(failure), failure
            assert number == ROUNDS - 1, f"cleanup behind the stream failed round {number}"
            break
    assert len(work.rows) >= 100_000
    assert len(work.marks) > ROUNDS
    end = committed_end(run.checkpoint)
    if failure is None:
        assert end == work.lsns[-1]
        return
    # The loss is real: cleanup moved past the first LSN the stream still needed.
    assert end is not None
    assert lsn_int(work.marks[-1]) > lsn_int(end) + 1
    assert not run.skips()


def test_without_fail_on_data_loss_bronze_misses_only_the_ranges_data_skipped_rows_record(
    spark: SparkSession, tmp_path: Path
) -> None:
    work = Workload(tmp_path)
    run = Stream(spark, work, fail_on_data_loss=False)
    for number in range(ROUNDS):
        work.commit_round(number)
        assert run.run_racing(now_and_then) is None
    assert len(work.rows) >= 100_000
    assert committed_end(run.checkpoint) == work.lsns[-1]
    skips = run.skips()
    assert skips, "cleanup never overtook the stream; the race tested nothing"
    # A skip resumes where cleanup put the mark, never past it.
    assert {s["to"] for s in skips} <= set(work.marks)
    certain = [(lsn_int(s["from"]), lsn_int(s["to"])) for s in skips if s["certain"]]
    possible = [(lsn_int(s["from"]), lsn_int(s["to"])) for s in skips if not s["certain"]]

    def within(ranges: list[tuple[int, int]], row: Row) -> bool:
        return any(lo <= lsn_int(row[0]) < hi for lo, hi in ranges)

    bronze = run.bronze()
    assert max(bronze.values()) == 1  # no change row twice
    assert not set(bronze) - set(work.rows)  # no row that was never committed
    missing = [r for r in work.rows if r not in bronze]
    assert missing
    assert [r for r in missing if not within(certain + possible, r)] == []
    # A planned skip reads nothing of its range: every row in it is missing.
    assert [r for r in bronze if within(certain, r)] == []
