"""Concurrency as on SQL Server (decision 1160): a change read at read committed sees the
cleanup that commits while it streams, and disable_cdc waits for the reads that hold the
instance, failing with error 1222 after lock_timeout_ms, in this process or another."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.emulator import BusyError, Emulator, EmulatorReader
from tests.unit.support.emulator_oracle import at, orders


def six_commits(path: Path) -> tuple[Emulator, list[str]]:
    emu = orders(path)
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i + 1)) for i in range(6)]
    return emu, lsns


def test_a_cleanup_committed_mid_read_removes_the_rows_the_read_has_not_reached(
    tmp_path: Path,
) -> None:
    emu, lsns = six_commits(tmp_path / "e.db")
    batches = EmulatorReader(tmp_path / "e.db").read_changes(
        "dbo_orders", lsns[0], lsns[-1], batch_rows=2
    )
    first = batches.read_next_batch().column("order_id").to_pylist()
    emu.cleanup("dbo_orders", lsns[4])  # the changes of orders 0 to 3 go
    rest = [i for b in batches for i in b.column("order_id").to_pylist()]
    assert (first, rest) == ([0, 1], [4, 5])


def test_disable_cdc_waits_for_an_open_read_then_fails_with_error_1222(tmp_path: Path) -> None:
    emu, lsns = six_commits(tmp_path / "e.db")
    emu.configure(lock_timeout_ms=50)
    assert emu.settings()["lock_timeout_ms"] == 50
    batches = EmulatorReader(tmp_path / "e.db").read_changes(
        "dbo_orders", lsns[0], lsns[-1], batch_rows=2
    )
    batches.read_next_batch()
    with pytest.raises(BusyError, match=r"^Lock request time out period exceeded\.") as timed_out:
        emu.disable_cdc("dbo_orders")
    assert timed_out.value.number == 1222
    rest = [i for b in batches for i in b.column("order_id").to_pylist()]
    assert rest == [2, 3, 4, 5]  # the instance was left whole
    emu.disable_cdc("dbo_orders")  # the exhausted read released it
    assert emu.capture_instances("dbo.orders") == []


def hold_a_read(path: str, lsns: list[str], started: Any, finish: Any, out: Any) -> None:
    batches = EmulatorReader(path).read_changes("dbo_orders", lsns[0], lsns[-1], batch_rows=2)
    got = batches.read_next_batch().column("order_id").to_pylist()
    started.set()
    finish.wait(60)
    got += [i for b in batches for i in b.column("order_id").to_pylist()]
    out.put(got)


def test_a_read_in_another_process_holds_the_instance_until_it_ends(tmp_path: Path) -> None:
    emu, lsns = six_commits(tmp_path / "e.db")
    emu.configure(lock_timeout_ms=50)
    ctx = multiprocessing.get_context("spawn")
    started, finish, out = ctx.Event(), ctx.Event(), ctx.Queue()
    path = str(tmp_path / "e.db")
    child = ctx.Process(target=hold_a_read, args=(path, lsns, started, finish, out))
    child.start()
    try:
        assert started.wait(60)
        with pytest.raises(BusyError) as timed_out:
            emu.disable_cdc("dbo_orders")
        assert timed_out.value.number == 1222
        finish.set()
        assert out.get(timeout=60) == [0, 1, 2, 3, 4, 5]
    finally:
        finish.set()
        child.join(60)
    assert child.exitcode == 0
    emu.disable_cdc("dbo_orders")
    assert emu.capture_instances("dbo.orders") == []
