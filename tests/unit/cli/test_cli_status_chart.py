"""`mssql-cdc status --chart`: the data a chart is drawn from, the paths it refuses, and a
missing matplotlib. The expected lines are written out by hand from the rows each test gives."""

from __future__ import annotations

import json
import os
import re
import struct
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.chart import (
    ChartLine,
    ChartMark,
    chart_data,
    check_chart_path,
    draw_chart,
)
from mssql_cdc.cli.status import job_streams
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import history_from_rows, read_history
from tests.unit.cli import test_cli_status_facts as facts

T0 = datetime(2026, 9, 28, 8)
PNG = b"\x89PNG\r\n\x1a\n"


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def batch(generation: int, batch_id: int, hours: float | None, headroom: float, lag: float) -> Any:
    return {
        "app_id": "orders" if generation == 0 else f"orders.g{generation}",
        "generation": generation,
        "batch_id": batch_id,
        "end_commit_ts": None if hours is None else at(hours),
        "max_commit_ts": None,
        "retention_headroom_hours": headroom,
        "ingestion_lag_seconds": lag,
        "event": None,
        "lost_from_ts": None,
        "lost_to_ts": None,
    }


def event(name: str, generation: int, hours: float, lost: tuple[float, float] | None) -> Any:
    return {
        "app_id": "orders" if generation == 0 else f"orders.g{generation}",
        "generation": generation,
        "batch_id": None,
        "end_commit_ts": at(hours),
        "max_commit_ts": at(hours),
        "retention_headroom_hours": None,
        "ingestion_lag_seconds": None,
        "event": name,
        "lost_from_ts": None if lost is None else at(lost[0]),
        "lost_to_ts": None if lost is None else at(lost[1]),
    }


ROWS = [
    batch(1, 1, 80, 70.0, 2.5),
    event("resnapshot", 1, 75, (2, 7)),
    batch(0, 2, 2, 60.0, 1.0),
    batch(0, 1, 1, 71.0, 0.5),
    event("bootstrap", 0, 0.5, None),
    batch(0, 3, None, 1.0, 1.0),  # no commit time: no place on the chart
    event("snapshot_open", 1, 75, None),  # not an event a chart marks
    batch(1, 0, 76, 72.0, 0.0),
]


def test_the_chart_has_a_line_per_generation_in_batch_order_and_marks_each_event() -> None:
    data = chart_data([history_from_rows("orders", ROWS)])
    assert data.lines == (
        ChartLine("orders", 0, (at(1), at(2)), (71.0, 60.0), (0.5, 1.0)),
        ChartLine("orders", 1, (at(76), at(80)), (72.0, 70.0), (0.0, 2.5)),
    )
    assert data.marks == (
        ChartMark("orders", "bootstrap", at(0.5), None, None),
        ChartMark("orders", "resnapshot", at(75), at(2), at(7)),
    )


def test_a_job_chart_has_a_line_per_stream_and_its_title_names_them() -> None:
    other = [dict(r, app_id="items") for r in ROWS if r["generation"] == 0]
    data = chart_data([history_from_rows("orders", ROWS), history_from_rows("items", other)])
    assert [(line.stream, line.generation) for line in data.lines] == [
        ("orders", 0),
        ("orders", 1),
        ("items", 0),
    ]
    assert data.title == "mssql-cdc: orders, items"


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == PNG
    assert head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def test_a_drawn_chart_is_a_png_of_the_figures_size(tmp_path: Path) -> None:
    path = draw_chart(chart_data([history_from_rows("orders", ROWS)]), tmp_path / "c.png")
    assert png_size(path) == (990, 715)  # 9 x 6.5 inches at 110 dots per inch
    assert path.stat().st_size > 10_000
    assert [p.name for p in tmp_path.iterdir()] == ["c.png"]  # no temporary file left


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("chart.jpg", "does not end in .png"),
        ("../elsewhere/chart.png", re.escape("goes up a folder with '..'")),
        ("missing/chart.png", "the folder missing does not exist"),
    ],
)
def test_a_path_the_chart_must_not_take_is_refused(
    name: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        check_chart_path(name)


def test_a_dot_dot_into_a_folder_of_someone_elses_files_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "report.png").write_bytes(b"not mine")
    mine = tmp_path / "mine"
    mine.mkdir()
    with pytest.raises(ConfigError, match=re.escape("without '..'")):
        check_chart_path(str(mine / ".." / "theirs" / "report.png"))
    assert (theirs / "report.png").read_bytes() == b"not mine"


def test_an_existing_png_is_replaced_and_any_other_file_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.png"
    old.write_bytes(PNG + b"an older chart")
    assert check_chart_path(str(old)) == old
    draw_chart(chart_data([history_from_rows("orders", ROWS)]), old)
    assert png_size(old) == (990, 715)
    notes = tmp_path / "notes.png"
    notes.write_text("someone's notes")
    with pytest.raises(ConfigError, match="exists and is not a PNG image"):
        check_chart_path(str(notes))
    assert notes.read_text() == "someone's notes"
    (tmp_path / "folder.png").mkdir()
    with pytest.raises(ConfigError, match="is not a plain file"):
        check_chart_path(str(tmp_path / "folder.png"))
    (tmp_path / "link.png").symlink_to(old)
    with pytest.raises(ConfigError, match="is not a plain file"):
        check_chart_path(str(tmp_path / "link.png"))


def test_a_folder_this_user_may_not_write_to_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.geteuid() == 0:  # root may write anywhere: the system's answer for another user
        real = os.access
        monkeypatch.setattr(
            os, "access", lambda p, mode: False if Path(p) == locked else real(p, mode)
        )
    with pytest.raises(ConfigError, match="may not write to the folder"):
        check_chart_path(str(locked / "c.png"))


def test_a_place_that_takes_no_file_fails_the_write_and_leaves_nothing() -> None:
    # /proc takes no new files, even from root: the write itself fails (status exits 2 with it).
    data = chart_data([history_from_rows("orders", ROWS)])
    with pytest.raises(OSError, match=r"\[Errno \d+\]"):
        draw_chart(data, check_chart_path("/proc/mssql-cdc-chart.png"))
    assert not Path("/proc/mssql-cdc-chart.png").exists()


def test_without_matplotlib_the_chart_is_refused_naming_the_extra_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    args = ["status", str(tmp_path / "missing"), "--app-id", "a", "--facts", str(tmp_path)]
    assert main([*args, "--chart", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert 'matplotlib is not installed (pip install "mssql-cdc[demo]")' in err
    assert not (tmp_path / "c.png").exists()


def test_a_chart_needs_the_facts_table_and_the_app_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", str(tmp_path), "--chart", str(tmp_path / "c.png")]) == 2
    assert "--chart needs --facts and --app-id" in capsys.readouterr().err


def test_a_job_files_streams_are_named_by_app_id_else_capture_instance(tmp_path: Path) -> None:
    job = {
        "facts_table": "/lake/facts",
        "streams": [{"capture_instance": "dbo_orders"}, {"capture_instance": "x", "app_id": "y"}],
    }
    assert job_streams(job, "job.json") == ("/lake/facts", ["dbo_orders", "y"])
    with pytest.raises(ConfigError, match="stream 0 names no app_id nor capture_instance"):
        job_streams({"facts_table": "/f", "streams": [{}]}, "job.json")
    with pytest.raises(ConfigError, match="needs a 'facts_table' path and a 'streams' list"):
        job_streams({"streams": [{"app_id": "a"}]}, "job.json")


def test_job_takes_no_checkpoint_and_needs_a_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"facts_table": str(tmp_path), "streams": [{"app_id": "a"}]}))
    assert main(["status", "--job", str(job)]) == 2
    assert "--job draws a chart only" in capsys.readouterr().err
    assert main(["status", str(tmp_path), "--job", str(job), "--chart", "c.png"]) == 2
    assert "without a CHECKPOINT" in capsys.readouterr().err


def test_a_job_chart_reads_each_streams_rows_from_the_jobs_facts_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        facts.batch("orders", 0, 0, facts.t(1, 1), 1, 2, end_commit_ts=at(1)),
        facts.batch("orders", 0, 1, facts.t(1, 2), 3, 4, end_commit_ts=at(2)),
        facts.event("orders.g1", 1, "resnapshot", facts.t(1, 3), 5, end_commit_ts=at(3)),
        facts.batch("orders.g1", 1, 0, facts.t(1, 4), 6, 7, end_commit_ts=at(4)),
        facts.batch("items", 0, 0, facts.t(1, 1), 1, 2, end_commit_ts=at(1.5)),
        facts.batch("other", 0, 0, facts.t(1, 1), 1, 2, end_commit_ts=at(1.5)),
    ]
    for r in rows:
        r["retention_headroom_hours"] = 10.0 + r["batch_id"] if r["event"] is None else None
    table = facts.facts_table(tmp_path / "facts", rows)
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "facts_table": table,
                "streams": [
                    {"capture_instance": "orders"},
                    {"capture_instance": "x", "app_id": "items"},
                ],
            }
        )
    )
    chart = tmp_path / "job.png"
    assert main(["status", "--job", str(job), "--chart", str(chart), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result == {
        "job": str(job),
        "facts": table,
        "streams": ["orders", "items"],
        "chart": str(chart),
    }
    assert png_size(chart)[0] == 990
    data = chart_data([read_history(table, "orders"), read_history(table, "items")])
    assert [
        (line.stream, line.generation, line.times, line.headroom_hours) for line in data.lines
    ] == [
        ("orders", 0, (at(1), at(2)), (10.0, 11.0)),
        ("orders", 1, (at(4),), (10.0,)),
        ("items", 0, (at(1.5),), (10.0,)),
    ]
    assert [(m.stream, m.event, m.at) for m in data.marks] == [("orders", "resnapshot", at(3))]
