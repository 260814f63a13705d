"""Benchmark figures and the REPORT.md writer: every figure is a ratio against a baseline.

Each benchmark's latest figure is kept in `bench/results/<module>.json` with the time it was
measured, so one benchmark can be rerun alone (`make bench ONLY=b4_snapshot`) without losing
the others; REPORT.md is always rendered from every stored figure.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field
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
    table: list[str] = field(default_factory=list)  # Markdown lines shown after the notes
    measured_at: str = ""
    machine: str = ""

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline if self.baseline else float("nan")

    def summary(self) -> str:
        return (
            f"{self.key} {self.title}: {self.ours:,.1f} {self.unit} vs {self.baseline_name} "
            f"{self.baseline:,.1f} {self.unit}: ratio {self.ratio:.2f} (target {self.target})"
        )

    def stamped(self) -> Figure:
        """The figure with the time and machine of this run recorded."""
        fields = asdict(self)
        fields["measured_at"] = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        fields["machine"] = (
            f"{platform.machine()}, Python {platform.python_version()}, "
            f"load average {_load_average()}"
        )
        return Figure(**fields)


def _load_average() -> str:
    try:
        import os

        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def save_result(results: Path, module: str, figure: Figure) -> None:
    """Store one benchmark's figure as `<results>/<module>.json`."""
    results.mkdir(parents=True, exist_ok=True)
    text = json.dumps(asdict(figure), indent=2, sort_keys=True) + "\n"
    (results / f"{module}.json").write_text(text)


def load_results(results: Path, modules: list[str]) -> list[Figure]:
    """The stored figures of the given modules, in their order; missing ones are left out."""
    figures = []
    for module in modules:
        path = results / f"{module}.json"
        if path.exists():
            figures.append(Figure(**json.loads(path.read_text())))
    return figures


def write_report(path: Path, figures: list[Figure]) -> None:
    lines = [
        "# Benchmark report",
        "",
        "Written by `make bench` from the figures in `bench/results/`. Each figure is measured",
        "side by side with its baseline in the same run; its section says when and at what load.",
        "The development machine has 2 cores shared with other work, so read the figures as",
        "indicative and the ratios as the comparable part.",
        "",
    ]
    if not figures:
        lines.append("No benchmark has been measured yet; run `make bench`.")
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
            lines += ["", f"## {f.key}: {f.title}", ""]
            if f.measured_at:
                lines.append(f"- measured {f.measured_at} on {f.machine}")
            lines += [f"- {n}" for n in f.notes]
            if f.table:
                lines += ["", *f.table]
    path.write_text("\n".join(lines) + "\n")
