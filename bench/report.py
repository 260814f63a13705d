"""Benchmark figures and the REPORT.md writer: every figure is a ratio against a baseline."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    """One benchmark: our rate and the baseline's, measured side by side in one run."""

    key: str
    title: str
    unit: str
    ours: float
    baseline: float
    baseline_name: str
    target: str
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline if self.baseline else float("nan")

    def summary(self) -> str:
        return (
            f"{self.key} {self.title}: {self.ours:,.1f} {self.unit} vs {self.baseline_name} "
            f"{self.baseline:,.1f} {self.unit}: ratio {self.ratio:.2f} (target {self.target})"
        )


def write_report(path: Path, figures: list[Figure]) -> None:
    lines = [
        "# Benchmark report",
        "",
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.machine()}, Python {platform.python_version()}.",
        "Each figure is measured side by side with its baseline in the same run.",
        "",
    ]
    if not figures:
        lines.append("No benchmarks exist yet; the issues that add B1 to B6 add them here.")
    else:
        lines += [
            "| key | benchmark | ours | baseline | ratio | target |",
            "|---|---|---|---|---|---|",
        ]
        for f in figures:
            lines.append(
                f"| {f.key} | {f.title} | {f.ours:,.1f} {f.unit} | {f.baseline_name}: "
                f"{f.baseline:,.1f} {f.unit} | {f.ratio:.2f} | {f.target} |"
            )
        for f in figures:
            if f.notes:
                lines += ["", f"## {f.key}: {f.title}", "", *[f"- {n}" for n in f.notes]]
    path.write_text("\n".join(lines) + "\n")
