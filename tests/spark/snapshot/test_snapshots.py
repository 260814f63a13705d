"""Full snapshots at a recorded LSN, their completion rows and the mode lock (spec 30 sections
2 and 4), against the emulator; the oracle is the emulator's own rows."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.core.progress import progress_of
from mssql_cdc.snapshot import full as snapshot_module
from mssql_cdc.snapshot.chunked_open import open_chunked
from mssql_cdc.snapshot.full import (
    SnapshotResult,
    newest_known_snapshot,
    newest_whole_snapshot,
    take_full,
    write_completion,
)
from mssql_cdc.snapshot.probe import SourceProbe
from mssql_cdc.snapshot.whole_progress import read_progress
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.snapshot_support import CI, Source, at, make_source

APP = "orders-v1"


@pytest.fixture
def source(spark: SparkSession, tmp_path: Path) -> Source:
    return make_source(spark, tmp_path)


def bootstrap(source: Source) -> SnapshotResult:
    """What to_delta(bootstrap=True, snapshot="full") does in generation 0."""
    result = take_full(
        source.spark, source.config(), source.target, kind="bootstrap", generation=0,
        new=False, app_id=APP, facts_table=source.facts,
    )  # fmt: skip
    write_completion(
        source.spark, source.facts, app_id=APP, generation=0, kind="bootstrap",
        target=source.target, snapshot=result,
    )  # fmt: skip
    return result


def open_chunked_by_another_run(
    source: Source, *, kind: Literal["bootstrap", "resnapshot"] = "bootstrap", generation: int = 0
) -> StreamOffset:
    return open_chunked(
        source.spark, source.config(), source.target, kind=kind, generation=generation,
        app_id=APP, facts_table=source.facts,
    )  # fmt: skip


def test_a_bootstrap_over_fully_purged_history_holds_exactly_the_table_once(
    source: Source, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    source.insert(1, 2, 3)
    source.update(2, "changed")
    source.delete(3)
    newest = source.insert(4)
    source.wait_for_capture()
    source.emu.cleanup(CI, newest)  # every change before the newest is gone
    progress_seen: list[tuple[str, int]] = []
    real_watch = snapshot_module.watch_whole_read

    @contextlib.contextmanager
    def watch(*args: Any, **kwargs: Any) -> Iterator[str | None]:
        with real_watch(*args, **kwargs) as folder:
            yield folder
            # the append has committed: its tasks told the driver every row they read
            assert folder is not None
            progress_seen.append((folder, read_progress(folder)))

    monkeypatch.setattr(snapshot_module, "watch_whole_read", watch)
    with caplog.at_level(logging.INFO, logger="mssql_cdc.snapshot.full"):
        result = bootstrap(source)
    [(folder, rows_told)] = progress_seen
    assert rows_told == 3
    assert not os.path.exists(folder)
    reports = [p for p in map(progress_of, caplog.records) if p is not None]
    started, *during, finished = reports  # a slow read also reports on its timer in between
    assert all(p.stage == "advanced" and p.done <= 3 for p in during), during
    assert (started.stage, started.done, started.total) == ("started", 0, 3)
    assert (finished.stage, finished.done, finished.total, finished.unit) == (
        "finished", 3, 3, "rows",
    )  # fmt: skip
    assert "snapshot finished, 3 rows read and written in" in caplog.records[-1].getMessage()
    rows = [r for r in source.bronze() if r["_operation"] == 0]
    assert sorted(r["order_id"] for r in rows) == [1, 2, 4]
    assert {r["order_id"]: (r["status"], r["qty"]) for r in rows} == source.source_rows()
    assert {r["_snapshot"] for r in rows} == {result.offset.lsn} == {r["_start_lsn"] for r in rows}
    assert result.offset.lsn == source.emu.max_lsn()
    assert result.rows == 3
    assert result.taken
    [event] = source.facts_rows("bootstrap")
    assert (event["rows"], event["min_lsn"], event["max_lsn"]) == (3, newest, newest)
    [opened] = source.facts_rows("snapshot_open")
    assert opened["min_lsn"] == newest
    assert '"mode":"full"' in opened["detail"]


def test_a_rerun_takes_no_second_snapshot_and_writes_no_second_event(source: Source) -> None:
    source.insert(1, 2)
    first = bootstrap(source)
    source.insert(3)
    again = bootstrap(source)
    assert again.offset == first.offset
    assert not again.taken
    assert again.rows == 2  # from the snapshot's own commit, found by its userMetadata
    assert len([r for r in source.bronze() if r["_operation"] == 0]) == 2
    assert len(source.facts_rows("bootstrap")) == 1
    assert len(source.facts_rows("snapshot_open")) == 1  # a found snapshot opens nothing
    config = source.config()
    assert newest_whole_snapshot(source.spark, config, source.target) == first.offset
    known = newest_known_snapshot(
        source.spark, config, source.target, app_id=APP, facts_table=source.facts
    )
    assert known == first.offset


def test_a_change_committed_between_stamp_and_read_ends_up_once_in_the_latest_image(
    source: Source,
) -> None:
    source.insert(1, 2)
    source.wait_for_capture()
    change: object = ("update", "dbo.orders", {"order_id": 1, "status": "late"})
    source.emu.commit_before_read([change], at=source.tick())  # type: ignore[list-item]
    result = bootstrap(source)
    source.wait_for_capture()
    assert result.offset.lsn < source.emu.max_lsn()  # the change came after the stamp
    snapshot_rows = [r for r in source.bronze() if r["order_id"] == 1 and r["_operation"] == 0]
    assert [r["status"] for r in snapshot_rows] == ["late"]  # the read saw it
    assert source.rebuilt(result.offset.lsn) == source.source_rows()


def test_an_empty_table_leaves_only_its_event(source: Source) -> None:
    source.insert(1)
    source.delete(1)
    result = bootstrap(source)
    assert result.rows == 0
    assert result.taken
    assert not Path(source.target).exists()  # no target rows, no Delta commit
    [event] = source.facts_rows("bootstrap")
    assert (event["rows"], event["max_lsn"]) == (0, result.offset.lsn)
    again = bootstrap(source)  # found through its event, the only trace
    assert again.offset.lsn == result.offset.lsn
    assert not again.taken
    assert again.rows == 0


@pytest.mark.parametrize("point", ["snapshot.before_append", "snapshot.after_append"])
def test_a_crash_in_a_full_snapshot_is_finished_by_the_next_run(point: str, source: Source) -> None:
    source.insert(1, 2, 3)
    with failpoints({point: "raise"}), pytest.raises(InjectedFault):
        bootstrap(source)
    bootstrap(source)
    rows = [r for r in source.bronze() if r["_operation"] == 0]
    assert sorted(r["order_id"] for r in rows) == [1, 2, 3]
    [event] = source.facts_rows("bootstrap")
    assert event["rows"] == 3


def test_a_killed_snapshot_after_its_append_is_found_by_the_next_run(source: Source) -> None:
    source.insert(1, 2)
    code = textwrap.dedent(
        f"""
        from mssql_cdc.spark import local_session
        from mssql_cdc.options.config import SourceConfig
        from mssql_cdc.snapshot.full import take_full
        spark = local_session("kill-twin", cores=1, warehouse={str(source.path.parent / "wh")!r})
        config = SourceConfig.from_options({{"captureInstance": {CI!r}, "backend": "emulator",
                                             "emulatorPath": {str(source.path)!r}}})
        take_full(spark, config, {source.target!r}, kind="bootstrap", generation=0, new=False,
                  app_id={APP!r}, facts_table={source.facts!r})
        """
    )
    env = {**os.environ, "MSSQL_CDC_FAILPOINTS": "snapshot.after_append=kill"}
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300)
    assert child.returncode == 137, child.stderr.decode()[-2000:]
    result = bootstrap(source)
    assert not result.taken
    assert result.rows == 2
    assert len([r for r in source.bronze() if r["_operation"] == 0]) == 2


def test_the_mode_lock_refuses_a_full_snapshot_while_a_chunked_one_is_open(source: Source) -> None:
    source.insert(1)
    config = source.config()
    s = open_chunked_by_another_run(source)
    expected = (
        f"{source.target}: a chunked snapshot open at {s.lsn} (generation 0) has not "
        "completed; this run cannot use snapshot='full'. Call "
        f"backfill({source.target}, app_id={APP}, ...) until it returns 'done', and run "
        "to_delta with snapshot='chunked' meanwhile."
    )
    with pytest.raises(ValueError, match="has not completed") as refused:
        take_full(
            source.spark, config, source.target, kind="manual", generation=0, new=True,
            app_id=APP, facts_table=source.facts,
        )  # fmt: skip
    assert str(refused.value) == expected
    assert not Path(source.target).exists()  # refused before anything was read or written


def test_a_chunked_open_another_run_commits_after_the_facts_were_read_is_seen(
    source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    source.insert(1, 2)
    real_stamp = snapshot_module.stamp
    others: list[str] = []

    def stamp_after_another_open(probe: SourceProbe) -> StreamOffset:
        # Between this run's read of the facts and its open row, another run opens chunked.
        others.append(open_chunked_by_another_run(source).lsn)
        return real_stamp(probe)

    monkeypatch.setattr(snapshot_module, "stamp", stamp_after_another_open)
    with pytest.raises(ValueError, match="another run opened a chunked snapshot") as refused:
        bootstrap(source)
    assert f"generation 0 at {others[0]} first" in str(refused.value)
    assert not Path(source.target).exists()  # refused before the table was read
    opens = source.facts_rows("snapshot_open")
    assert sorted(json.loads(r["detail"])["mode"] for r in opens) == ["chunked", "full"]


def test_a_new_full_snapshot_sees_a_chunked_open_of_its_generation_stored_before_it(
    source: Source,
) -> None:
    source.insert(1)
    config = source.config()
    s = open_chunked_by_another_run(source, kind="resnapshot", generation=1)
    with pytest.raises(ValueError, match=f"generation 1 at {s.lsn} first"):
        take_full(
            source.spark, config, source.target, kind="resnapshot", generation=1, new=True,
            app_id=APP, facts_table=source.facts, lost_from_ts=at(1), lost_to_ts=at(2),
        )  # fmt: skip
    assert not Path(source.target).exists()
