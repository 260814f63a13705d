"""Without the `demo` extra, the demo's summary skips only the chart and says how to get it."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import pytest

from mssql_cdc.cli.demo import summary_text
from mssql_cdc.cli.demo_chart import headroom_chart
from mssql_cdc.cli.demo_outcome import DemoSummary


def test_without_matplotlib_the_summary_says_to_install_the_demo_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    summary = DemoSummary(out_dir=tmp_path, equal=True)
    summary.headroom = [(datetime(2026, 9, 28, 8), 20.5, 0), (datetime(2026, 10, 1, 8), 3.0, 1)]
    summary.chart = headroom_chart(summary, tmp_path / "retention-headroom.png")
    lines = summary_text(summary).splitlines()
    assert summary.chart is None
    assert not (tmp_path / "retention-headroom.png").exists()
    wanted = 'chart: not drawn: matplotlib is not installed (pip install "mssql-cdc[demo]")'
    assert any(" ".join(line.split()) == wanted for line in lines), lines
    assert any("bronze latest image vs source: EQUAL" in line for line in lines)
