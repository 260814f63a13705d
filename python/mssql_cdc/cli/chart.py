"""Charts of retention headroom and lag per micro-batch, with a stream's events
(decision 1380): `mssql-cdc status --chart FILE.png` and the demo's chart.

`chart_data` is pure: what is plotted, line by line, so a test can hold it against the facts
rows. `draw_chart` needs matplotlib (the `demo` extra). `check_chart_path` refuses a path the
chart must not be written to before anything is read (decision 1381).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import StreamHistory

__all__ = [
    "NO_MATPLOTLIB",
    "ChartData",
    "ChartLine",
    "ChartMark",
    "chart_data",
    "check_chart_path",
    "draw_chart",
    "require_matplotlib",
]

NO_MATPLOTLIB = 'matplotlib is not installed (pip install "mssql-cdc[demo]")'
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True, slots=True)
class ChartLine:
    """One plotted line: a stream's batches of one generation, at their source commit times."""

    stream: str
    generation: int
    times: tuple[datetime, ...]
    headroom_hours: tuple[float | None, ...]
    lag_seconds: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class ChartMark:
    """One event drawn on the chart: a line at its time, and the span of changes it lost."""

    stream: str
    event: str
    at: datetime | None
    lost_from: datetime | None
    lost_to: datetime | None


@dataclass(frozen=True, slots=True)
class ChartData:
    """Everything a chart shows."""

    title: str
    lines: tuple[ChartLine, ...]
    marks: tuple[ChartMark, ...]


def chart_data(histories: Sequence[StreamHistory], title: str | None = None) -> ChartData:
    """The lines (one per stream and generation, batches in order) and event marks of the
    streams' histories; `title` defaults to the streams' app_ids."""
    lines: list[ChartLine] = []
    marks: list[ChartMark] = []
    for h in histories:
        for generation in sorted({p.generation for p in h.points}):
            points = [p for p in h.points if p.generation == generation]
            lines.append(
                ChartLine(
                    stream=h.app_id,
                    generation=generation,
                    times=tuple(p.at for p in points),
                    headroom_hours=tuple(p.retention_headroom_hours for p in points),
                    lag_seconds=tuple(p.ingestion_lag_seconds for p in points),
                )
            )
        marks.extend(
            ChartMark(h.app_id, e.event, e.at, e.lost_from_ts, e.lost_to_ts) for e in h.events
        )
    named = ", ".join(h.app_id for h in histories)
    return ChartData(title or f"mssql-cdc: {named}", tuple(lines), tuple(marks))


def require_matplotlib() -> None:
    """Raise ConfigError naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError(f"--chart needs matplotlib: {NO_MATPLOTLIB}") from None


def check_chart_path(text: str) -> Path:
    """The chart's path, or ConfigError: it must end in .png, hold no `..`, lie in an existing
    folder this process may write to, and be new or a PNG file (which is replaced)."""
    path = Path(text)
    if path.suffix.lower() != ".png":
        raise ConfigError(f"--chart {text} does not end in .png; pass a file name like chart.png")
    if ".." in path.parts:
        raise ConfigError(
            f"--chart {text} goes up a folder with '..'; pass the chart's path without '..' "
            "(a folder of your own, e.g. ./charts/stream.png)"
        )
    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(f"--chart {text}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(
            f"--chart {text}: this user may not write to the folder {folder}; pass a path in a "
            "folder you can write to"
        )
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ConfigError(
            f"--chart {text} exists and is not a plain file; pass a new path or a PNG file to "
            "replace"
        )
    if path.exists():
        with open(path, "rb") as handle:
            head = handle.read(len(_PNG_SIGNATURE))
        if head != _PNG_SIGNATURE:
            raise ConfigError(
                f"--chart {text} exists and is not a PNG image; status replaces only a PNG "
                "(a chart drawn before): pass a new path"
            )
    return path


def draw_chart(data: ChartData, path: Path, *, x_label: str | None = None) -> Path:
    """Draw `data` into the PNG at `path` (written whole, then moved into place): headroom
    above, lag below when any batch has one.

    Raises:
        ConfigError: matplotlib is missing.
        OSError: the file cannot be written.
    """
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with_lag = any(v is not None for line in data.lines for v in line.lag_seconds)
    fig, axes = plt.subplots(
        2 if with_lag else 1, 1, figsize=(9, 6.5 if with_lag else 4.5), sharex=True, squeeze=False
    )
    head_ax = axes[0][0]
    colours: dict[str, str] = {}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    several = len({line.stream for line in data.lines}) > 1
    for line in data.lines:
        first = line.stream not in colours
        colour = colours.setdefault(line.stream, palette[len(colours) % len(palette)])
        label = line.stream if several else f"generation {line.generation}"
        style = {"color": colour} if several else {}
        head_ax.plot(
            line.times,
            [_nan(v) for v in line.headroom_hours],
            marker="o",
            label=label if (first or not several) else None,
            **style,
        )
        if with_lag:
            axes[1][0].plot(line.times, [_nan(v) for v in line.lag_seconds], marker=".", **style)
    _marks(data.marks, [row[0] for row in axes])
    head_ax.axhline(0, color="black", linewidth=0.8)
    head_ax.set_ylabel("retention headroom (hours)")
    head_ax.set_title(data.title)
    head_ax.legend(loc="best", fontsize="small")
    bottom = axes[-1][0]
    if with_lag:
        bottom.set_ylabel("ingestion lag (seconds)")
    bottom.set_xlabel(x_label or "source commit time (UTC)")
    fig.autofmt_xdate()
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def _nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


_EVENT_STYLE = {
    "bootstrap": ("tab:green", "bootstrap"),
    "resnapshot": ("tab:red", "re-snapshot"),
    "data_skipped": ("tab:orange", "changes skipped"),
}


def _marks(marks: Sequence[ChartMark], axes: Sequence[Any]) -> None:
    shown: set[str] = set()
    for mark in marks:
        colour, name = _EVENT_STYLE.get(mark.event, ("tab:gray", mark.event))
        for k, ax in enumerate(axes):
            legend = k == 0 and name not in shown
            if mark.lost_from is not None and mark.lost_to is not None:
                lost = "changes lost" if legend and "lost" not in shown else None
                ax.axvspan(mark.lost_from, mark.lost_to, color=colour, alpha=0.15, label=lost)
                if lost:
                    shown.add("lost")
            if mark.at is not None:
                ax.axvline(mark.at, color=colour, linestyle="--", label=name if legend else None)
            if legend:
                shown.add(name)


def _save(fig: Any, path: Path) -> None:
    handle, temporary = tempfile.mkstemp(prefix=".chart-", suffix=".png", dir=path.parent)
    os.close(handle)
    try:
        fig.savefig(temporary, dpi=110)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
