"""The demo's chart: the retention headroom of each micro-batch, and the changes lost.

Drawn only with the `demo` extra (matplotlib); without it the demo runs the same and its
summary says how to get the chart.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from mssql_cdc.cli.demo_outcome import DemoSummary
from mssql_cdc.cli.demo_workload import START

__all__ = ["NO_MATPLOTLIB", "headroom_chart"]

NO_MATPLOTLIB = 'matplotlib is not installed (pip install "mssql-cdc[demo]")'


def headroom_chart(summary: DemoSummary, path: Path) -> Path | None:
    """Draw `summary`'s headroom per batch and generation, with the lost span, into `path`;
    None when there is no headroom to draw or matplotlib is missing."""
    if not summary.headroom:
        return None
    try:
        import matplotlib
    except ImportError:  # the `demo` extra draws; the story itself needs no matplotlib
        return None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def hours(moment: datetime) -> float:  # simulated hours since the workload began
        return (moment - START).total_seconds() / 3600

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for generation in sorted({g for _, _, g in summary.headroom}):
        points = [(t, h) for t, h, g in summary.headroom if g == generation]
        ax.plot(
            [hours(t) for t, _ in points],
            [h for _, h in points],
            marker="o",
            label=f"generation {generation}",
        )
    event = summary.resnapshot
    if event and event.get("lost_from_ts") and event.get("lost_to_ts"):
        ax.axvspan(
            hours(event["lost_from_ts"]),
            hours(event["lost_to_ts"]),
            color="tab:red",
            alpha=0.15,
            label="changes lost to CDC cleanup",
        )
        ax.axvline(hours(event["lost_to_ts"]), color="tab:red", linestyle="--")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"simulated hours since {START:%Y-%m-%d %H:%M} UTC (source commit time)")
    ax.set_ylabel("retention headroom (hours)")
    ax.set_title("mssql-cdc demo: retention headroom per micro-batch, and the loss")
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
