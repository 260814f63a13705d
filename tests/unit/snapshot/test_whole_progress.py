"""A whole snapshot's progress while its one append runs: the tasks' files and the driver's
records (decision 0924), without a JVM."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mssql_cdc.core.progress import Progress, progress_of
from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.snapshot import whole_progress
from mssql_cdc.snapshot.whole_progress import read_progress, watch_whole_read
from mssql_cdc.source import snapshot_format
from mssql_cdc.source.snapshot_format import CdcSnapshotReader
from mssql_cdc.sqlserver.metadata import ReadColumn

LOG = logging.getLogger("mssql_cdc.test.whole_progress")


def fake_session(master: str | None) -> Any:
    return SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: master))


def numbers(path: Path, n: int) -> None:
    emu = Emulator.create(path)
    emu.create_table("dbo.numbers", {"id": "int", "v": "int"}, primary_key="id")
    emu.enable_cdc("dbo.numbers")
    emu.commit([("insert", "dbo.numbers", {"id": i, "v": i * 2}) for i in range(n)])


def test_each_task_of_a_whole_read_leaves_the_rows_it_read_in_its_progress_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    numbers(tmp_path / "e.db", 1000)
    folder = tmp_path / "progress"
    config = SourceConfig.from_options(
        {
            "captureInstance": "dbo_numbers",
            "backend": "emulator",
            "emulatorPath": str(tmp_path / "e.db"),
            "metricsPath": str(folder),
            "arrowBatchSize": "100",
        }
    )
    written: list[tuple[int, int, bool]] = []
    real_write = snapshot_format._write_progress

    def spy(where: str, partition: int, rows: int, *, done: bool) -> None:
        written.append((partition, rows, done))
        real_write(where, partition, rows, done=done)

    monkeypatch.setattr(snapshot_format, "_PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(snapshot_format, "_write_progress", spy)
    reader = CdcSnapshotReader(config, [ReadColumn("id", "INT"), ReadColumn("v", "INT")], 3)
    parts = list(reader.partitions())
    read = [sum(b.num_rows for b in reader.read(p)) for p in parts]
    assert sum(read) == 1000
    assert len(parts) == 3
    files = sorted(os.listdir(folder))
    assert files == ["progress-0.json", "progress-1.json", "progress-2.json"]
    for index, rows in enumerate(read):
        record = json.loads((folder / f"progress-{index}.json").read_text())
        assert record == {"kind": "progress", "partition": index, "rows": rows, "done": True}
        steps = [r for p, r, _ in written if p == index]
        assert steps == sorted(steps)
        assert len(steps) > 1
    assert read_progress(str(folder)) == 1000


def test_a_whole_read_without_a_metrics_folder_writes_no_progress(tmp_path: Path) -> None:
    numbers(tmp_path / "e.db", 10)
    config = SourceConfig.from_options(
        {
            "captureInstance": "dbo_numbers",
            "backend": "emulator",
            "emulatorPath": str(tmp_path / "e.db"),
        }
    )
    reader = CdcSnapshotReader(config, [ReadColumn("id", "INT")], 1)
    [part] = reader.partitions()
    assert sum(b.num_rows for b in reader.read(part)) == 10
    assert not list(tmp_path.rglob("*progress*"))


def test_the_sum_skips_other_files_half_written_ones_and_a_missing_folder(tmp_path: Path) -> None:
    (tmp_path / "progress-0.json").write_text('{"rows": 40}')
    (tmp_path / "progress-1.json").write_text('{"rows": 2')  # cut short
    (tmp_path / "progress-2.json").write_text("[1, 2]")
    (tmp_path / ".progress-3.json.ab12.tmp").write_text('{"rows": 1000}')
    (tmp_path / "chunk-0.json").write_text('{"rows": 1000}')
    (tmp_path / "progress-4.json").write_text('{"rows": 2}')
    assert read_progress(str(tmp_path)) == 42
    assert read_progress(str(tmp_path / "gone")) == 0


def records(caplog: pytest.LogCaptureFixture) -> list[Progress]:
    return [p for p in map(progress_of, caplog.records) if p is not None]


def test_the_driver_reports_rows_rate_and_eta_while_the_files_grow_and_removes_its_folder(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(whole_progress, "REPORT_SECONDS", 0.02)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        with watch_whole_read(fake_session("local[2]"), LOG, "t", expected=1000) as folder:
            assert folder is not None
            assert os.path.isdir(folder)
            for rows in (250, 600):
                (Path(folder) / "progress-0.json").write_text(json.dumps({"rows": rows}))
                deadline = time.monotonic() + 10
                while not any(p.done == rows for p in records(caplog)):
                    assert time.monotonic() < deadline, "no progress record"
                    time.sleep(0.01)
    assert not os.path.exists(folder)
    seen = records(caplog)
    assert [p.done for p in seen] == [250, 600]  # one record per change, none when idle
    first, last = seen
    assert (first.rate, first.eta_seconds) == (None, None)  # no rate from one sighting
    assert (last.task, last.subject, last.stage, last.total, last.unit) == (
        "snapshot", "t", "advanced", 1000, "rows",
    )  # fmt: skip
    assert last.rate is not None
    assert last.rate > 0
    assert last.eta_seconds == pytest.approx(400 / last.rate)
    message = caplog.records[-1].getMessage()
    assert message.startswith("t: snapshot read 600 of about 1,000 rows, ")
    assert "s left" in message


def test_a_count_below_the_rows_read_is_not_shown_as_a_total(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(whole_progress, "REPORT_SECONDS", 0.02)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        with watch_whole_read(fake_session("local-cluster[2,1,1024]"), LOG, "t", expected=5) as f:
            assert f is not None
            (Path(f) / "progress-0.json").write_text('{"rows": 9}')
            deadline = time.monotonic() + 10
            while not records(caplog):
                assert time.monotonic() < deadline, "no progress record"
                time.sleep(0.01)
    [seen] = records(caplog)
    assert (seen.done, seen.total, seen.eta_seconds) == (9, None, None)
    assert "of about" not in caplog.records[-1].getMessage()


@pytest.mark.parametrize("master", ["yarn", "spark://host:7077", "k8s://x", None])
def test_no_folder_is_offered_where_executors_may_not_share_the_drivers_disk(
    master: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=LOG.name):
        with watch_whole_read(fake_session(master), LOG, "t", expected=10) as folder:
            assert folder is None


def test_no_folder_is_made_when_nobody_listens_to_info(tmp_path: Path) -> None:
    quiet = logging.getLogger("mssql_cdc.test.whole_progress.quiet")
    quiet.setLevel(logging.WARNING)
    with watch_whole_read(fake_session("local[2]"), quiet, "t", expected=10) as folder:
        assert folder is None
