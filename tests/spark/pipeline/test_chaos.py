"""A short chaos run in CI: a fan_out job over TDS under random faults, then the checker.

The run (tests/support/chaos_run.py) streams three tables of a `realistic` emulator through
pymssql and mssql-python in turn, with a fixed seed, for `SECONDS`: kill -9 of the driver,
CDC cleanup at a short retention, a capture-instance switch, a column added, the TDS server
restarted, a connection cut in the middle of a result, a slow server and a full disk under the
checkpoints and the metrics folder (a tmpfs, so root), each kind at least once. A driver
started on the full disk must fail with the library's DiskFullError message, naming the fault
and saying to free space and run again (the text docs/operations.md documents). The oracle is
the independent history checker (tests/support/history_checker.py) over the change history the
run kept aside: every change once in bronze or inside a recorded loss, each snapshot equal to
the source at its LSN, facts equal to bronze, silver equal to the source. `make chaos
SECONDS=N SEED=S` runs a long one (docs/reliability.md).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.chaos_run import DISK_FULL_ADVICE, FAULT_KINDS, ChaosSettings, run_chaos

SEED = 40
SECONDS = 80.0  # with faults 3.5 to 10.5 s apart: at least eight, every kind once


def test_a_short_chaos_run_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    result = run_chaos(
        ChaosSettings(seconds=SECONDS, seed=SEED, out=tmp_path / "chaos", mean_gap=7.0)
    )

    print(result.render())
    assert result.report.violations == [], result.render()
    assert result.problems == [], result.render()
    assert set(result.faults) == set(FAULT_KINDS), result.render()
    assert result.disk_refusals, result.render()
    assert all(part in r for r in result.disk_refusals for part in DISK_FULL_ADVICE)
    assert result.report.checked["source changes checked"] > 100
    assert set(result.driver_starts) == {"pymssql", "mssql-python"}
