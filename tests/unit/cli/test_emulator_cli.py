"""`mssql-cdc emulator ...`: verbs, a reproducible workload, status and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mssql_cdc.cli import main
from mssql_cdc.emulator import Emulator
from tests.unit.support.emulator_oracle import dump


def run(*args: str) -> int:
    return main(list(args))


def test_create_with_demo_makes_the_orders_table_and_its_instance(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--demo") == 0
    emu = Emulator.open(path)
    assert emu.tables() == ["dbo.orders"]
    assert emu.capture_instances("dbo.orders") == ["dbo_orders"]
    assert [c["name"] for c in emu.captured_columns("dbo_orders")] == [
        "order_id", "customer_id", "status", "amount", "updated_at",
    ]  # fmt: skip


def test_create_sets_the_server_zone_and_an_unknown_zone_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ny.db"
    assert run("emulator", "create", str(path), "--demo", "--time-zone", "America/New_York") == 0
    assert Emulator.open(path).reader().server_time_zone() == "America/New_York"
    bad = tmp_path / "mars.db"
    assert run("emulator", "create", str(bad), "--demo", "--time-zone", "Mars/Olympus") == 1
    assert "Mars/Olympus" in capsys.readouterr().err
    assert list(tmp_path.glob("mars.db*")) == []


def test_two_workload_runs_with_one_seed_give_identical_files(tmp_path: Path) -> None:
    dumps = []
    for name in ("a.db", "b.db"):
        path = tmp_path / name
        assert run("emulator", "create", str(path), "--demo") == 0
        args = ["--rate", "30", "--duration", "2m", "--seed", "5", "--start", "2026-09-28T14:00:00"]
        assert (
            run("emulator", "workload", str(path), "dbo.orders", *args, "--idle-every", "10s") == 0
        )
        dumps.append(dump(path))
    assert dumps[0] == dumps[1]
    assert any('"cdc.dbo_orders_CT"' in line for line in dumps[0])


def test_the_workload_keeps_the_source_table_equal_to_its_change_rows(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    run("emulator", "create", str(path), "--demo")
    run("emulator", "workload", str(path), "dbo.orders", "--rate", "50", "--duration", "1m")
    emu = Emulator.open(path)
    state: dict[object, dict[str, object]] = {}
    columns = ["order_id", "customer_id", "status", "amount", "updated_at"]
    for r in emu.change_rows("dbo_orders"):
        if r["__$operation"] == 1:
            del state[r["order_id"]]
        elif r["__$operation"] in (2, 4):
            state[r["order_id"]] = {c: r[c] for c in columns}
    assert emu.rows("dbo.orders") == [state[k] for k in sorted(state)]  # type: ignore[type-var]


def test_idle_cleanup_and_status_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.db"
    run("emulator", "create", str(path), "--demo")
    run("emulator", "workload", str(path), "dbo.orders", "--rate", "10", "--duration", "10m")
    capsys.readouterr()
    at = "2026-09-28T15:00:00"
    assert run("emulator", "idle", str(path), "--at", at, "--count", "3", "--every", "5m") == 0
    idle = capsys.readouterr().out.split()
    assert len(idle) == 3
    assert run("emulator", "cleanup", str(path), "--job", "--retention-minutes", "30") == 0
    capsys.readouterr()
    assert run("emulator", "status", str(path), "--json") == 0
    info = json.loads(capsys.readouterr().out)
    assert info["max_lsn"] == idle[-1]
    assert info["max_lsn_time"] == "2026-09-28T15:10:00"
    (table,) = info["tables"]
    assert table["rows"] == len(Emulator.open(path).rows("dbo.orders"))
    assert table["instances"][0]["min_lsn"] == Emulator.open(path).min_lsn("dbo_orders")


def test_an_emulator_error_exits_1_with_the_message_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("emulator", "status", str(tmp_path / "missing.db")) == 1
    assert "does not exist" in capsys.readouterr().err
    path = tmp_path / "e.db"
    run("emulator", "create", str(path), "--demo")
    assert run("emulator", "cleanup", str(path), "--instance", "nope", "--lwm", "0x00") == 1
    assert "no such capture instance" in capsys.readouterr().err


def test_a_usage_error_exits_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        run("emulator", "workload", str(tmp_path / "e.db"), "dbo.orders", "--rate", "x")
    assert caught.value.code == 2


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--rate", "0", "rate 0 commits per simulated second is out of range"),
        ("--rate", "nan", "rate nan commits per simulated second is out of range"),
        ("--rate", "inf", "rate inf commits per simulated second is out of range"),
        ("--rate", "1e9", "rate 1e+09 commits per simulated second is out of range"),
        ("--duration", "0", "duration 0 s is out of range"),
        ("--duration", "400d", "duration 3.456e+07 s is out of range"),
        ("--cleanup-every", "1000d", "cleanup_every 8.64e+07 s is out of range"),
    ],
)
def test_a_workload_rate_or_span_out_of_bounds_exits_1_and_commits_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--demo") == 0
    before = dump(path)
    args = {"--rate": "10", "--duration": "10m", flag: value}
    argv = [part for pair in args.items() for part in pair]
    assert run("emulator", "workload", str(path), "dbo.orders", *argv) == 1
    assert message in capsys.readouterr().err
    assert dump(path) == before
