"""The demo's chart: the retention headroom of each micro-batch, and the changes lost.

Drawn by `cli/chart.py`, as `status --chart` draws a stream's, and only with the `demo` extra
(matplotlib); without it the demo runs the same and its summary says how to get the chart.
"""

from __future__ import annotations

from pathlib import Path

from mssql_cdc.cli.chart import NO_MATPLOTLIB, ChartData, ChartLine, ChartMark, draw_chart
from mssql_cdc.cli.demo_outcome import DemoSummary
from mssql_cdc.cli.demo_workload import START
from mssql_cdc.errors import ConfigError

__all__ = ["NO_MATPLOTLIB", "demo_chart_data", "headroom_chart"]


def demo_chart_data(summary: DemoSummary) -> ChartData:
    """The demo's headroom per batch, a line per generation, and its loss as a mark."""
    lines = []
    for generation in sorted({g for _, _, g in summary.headroom}):
        points = [(t, h) for t, h, g in summary.headroom if g == generation]
        lines.append(
            ChartLine(
                stream="demo",
                generation=generation,
                times=tuple(t for t, _ in points),
                headroom_hours=tuple(h for _, h in points),
                lag_seconds=tuple(None for _ in points),
            )
        )
    event = summary.resnapshot
    marks: tuple[ChartMark, ...] = ()
    if event and event.get("lost_from_ts") and event.get("lost_to_ts"):
        lost_from, lost_to = event["lost_from_ts"], event["lost_to_ts"]
        marks = (ChartMark("demo", "resnapshot", lost_to, lost_from, lost_to),)
    return ChartData(
        "mssql-cdc demo: retention headroom per micro-batch, and the loss", tuple(lines), marks
    )


def headroom_chart(summary: DemoSummary, path: Path) -> Path | None:
    """Draw `summary`'s headroom per batch and generation, with the lost span, into `path`;
    None when there is no headroom to draw or matplotlib is missing."""
    if not summary.headroom:
        return None
    try:
        return draw_chart(
            demo_chart_data(summary),
            path,
            x_label=f"simulated time since {START:%Y-%m-%d %H:%M} UTC (source commit time)",
        )
    except ConfigError:  # the `demo` extra draws; the story itself needs no matplotlib
        return None
