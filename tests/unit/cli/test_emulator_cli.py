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
    ("flags", "message"),
    [
        (["--rate", "0"], "argument --rate: '0' is out of range; pass commits per simulated "
         "second above 0 and at most 1000"),
        (["--rate", "nan"], "argument --rate: 'nan' is out of range"),
        (["--rate", "inf"], "argument --rate: 'inf' is out of range"),
        (["--rate", "1e9"], "argument --rate: '1e9' is out of range"),
        (["--duration", "0"], "argument --duration: '0' is out of range; pass a span above 0 "
         "and at most 366d"),
        (["--duration", "400d"], "argument --duration: '400d' is out of range"),
        (["--cleanup-every", "1000d"], "argument --cleanup-every: '1000d' is out of range; pass "
         "0 (never) up to 366d"),
        (["--rows-per-commit", "1-1000000"], "argument --rows-per-commit: '1-1000000' is out of "
         "range; pass a number or a range LOW-HIGH with 1 <= LOW <= HIGH <= 1000"),
        (["--rows-per-commit", "1-99999999999"], "argument --rows-per-commit: '1-99999999999' "
         "is out of range"),
        (["--rows-per-commit", "5-2"], "argument --rows-per-commit: '5-2' is out of range"),
        (["--rows-per-commit", "0"], "argument --rows-per-commit: '0' is out of range"),
        (["--seed", "-1"], "argument --seed: '-1' is not a seed; pass a whole number from 0 to "
         "18446744073709551615"),
        (["--seed", str(2**64)], "argument --seed"),
        (["--mix", "insert=2147483647,update=2147483647"], "argument --mix: "
         "'insert=2147483647,update=2147483647' is out of range; give each weight from 0 to "
         "1,000,000"),
        (["--mix", "insert=0"], "argument --mix: 'insert=0' is out of range"),
    ],
)  # fmt: skip
def test_a_workload_flag_out_of_range_exits_2_naming_the_flag_and_its_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--demo") == 0
    before = dump(path)
    args = {"--rate": "10", "--duration": "10m", **dict(zip(flags[::2], flags[1::2], strict=True))}
    argv = [part for pair in args.items() for part in pair]
    with pytest.raises(SystemExit) as caught:
        run("emulator", "workload", str(path), "dbo.orders", *argv)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err
    assert dump(path) == before


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rate", "1000", "--duration", "1d"], "--rate 1000 for --duration 86400s asks for "
         "about 86,400,000 commits, more than 10,000,000"),
        (["--rate", "1000", "--duration", "100s", "--rows-per-commit", "1000"],
         "--rows-per-commit up to 1000 over about 100,000 commits asks for up to 100,000,000 "
         "rows, more than 50,000,000"),
    ],
    ids=["too many commits", "too many rows"],
)  # fmt: skip
def test_a_workload_asking_too_much_in_all_exits_2_naming_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--demo") == 0
    before = dump(path)
    assert run("emulator", "workload", str(path), "dbo.orders", *flags) == 2
    assert message in capsys.readouterr().err
    assert dump(path) == before


def test_the_widest_workload_flags_still_run(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--demo") == 0
    argv = ["--rate", "1", "--duration", "3s", "--rows-per-commit", "1000", "--seed",
            str(2**64 - 1), "--mix", "insert=1000000,update=0,delete=0"]  # fmt: skip
    assert run("emulator", "workload", str(path), "dbo.orders", *argv) == 0
