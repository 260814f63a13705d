"""A small smoke run of benchmark B2, without timings: it must run and read every row."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"


def test_benchmark_b2_runs_on_a_small_table_and_reports_both_readers() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import b2_emulator_read

        figure = b2_emulator_read.run(rows=3_000, rounds=1, commits=50)
    finally:
        sys.path.remove(str(BENCH))
    assert figure.key == "B2"
    assert figure.ours > 0
    assert figure.baseline > 0
    assert any("commit rate" in note for note in figure.notes)
