"""The demo's chart is drawn by the same code as `status --chart`, from the demo's summary: a
line per generation and the lost span of its re-snapshot."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from mssql_cdc.cli.chart import ChartLine, ChartMark
from mssql_cdc.cli.demo_chart import demo_chart_data, headroom_chart
from mssql_cdc.cli.demo_outcome import DemoSummary


def summary(tmp_path: Path) -> DemoSummary:
    s = DemoSummary(out_dir=tmp_path, equal=True)
    s.headroom = [
        (datetime(2026, 9, 28, 8), 20.5, 0),
        (datetime(2026, 9, 28, 9), 19.5, 0),
        (datetime(2026, 10, 1, 8), 71.0, 1),
    ]
    s.resnapshot = {
        "lost_from_ts": datetime(2026, 9, 28, 10),
        "lost_to_ts": datetime(2026, 9, 30, 2),
    }
    return s


def test_the_demo_chart_has_a_line_per_generation_and_marks_the_loss(tmp_path: Path) -> None:
    data = demo_chart_data(summary(tmp_path))
    assert data.lines == (
        ChartLine(
            "demo",
            0,
            (datetime(2026, 9, 28, 8), datetime(2026, 9, 28, 9)),
            (20.5, 19.5),
            (None, None),
        ),
        ChartLine("demo", 1, (datetime(2026, 10, 1, 8),), (71.0,), (None,)),
    )
    lost_from, lost_to = datetime(2026, 9, 28, 10), datetime(2026, 9, 30, 2)
    assert data.marks == (ChartMark("demo", "resnapshot", lost_to, lost_from, lost_to),)


def test_the_demo_chart_is_a_png_with_the_headroom_panel_only(tmp_path: Path) -> None:
    path = headroom_chart(summary(tmp_path), tmp_path / "retention-headroom.png")
    assert path == tmp_path / "retention-headroom.png"
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    size = (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big"))
    assert size == (990, 495)  # 9 x 4.5 inches at 110 dots per inch: no lag panel
