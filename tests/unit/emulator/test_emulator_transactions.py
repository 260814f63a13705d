"""Interleaved transactions through begin() (spec 40, section 3.5; behaviour 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.emulator import ConstraintError
from tests.unit.support.emulator_oracle import at, orders


def test_behaviour_8_the_first_to_begin_and_last_to_commit_has_smaller_seqvals_and_larger_lsn(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    a = emu.begin(at=at(1))
    b = emu.begin(at=at(2))
    a.execute([("insert", "dbo.orders", {"order_id": 1})])
    b.execute([("insert", "dbo.orders", {"order_id": 2})])
    lsn_b = b.commit(at=at(3))
    lsn_a = a.commit(at=at(4))
    assert lsn_a > lsn_b
    rows = {r["order_id"]: r for r in emu.change_rows("dbo_orders")}
    assert rows[1]["__$seqval"] < rows[2]["__$seqval"]
    assert rows[1]["__$start_lsn"] == lsn_a
    begins = {e["start_lsn"]: e["tran_begin_time"] for e in emu.lsn_time_mapping()}
    assert begins[lsn_a] < begins[lsn_b]


def test_changes_are_invisible_until_commit_and_gone_after_rollback(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    t = emu.begin(at=at(1))
    t.execute([("insert", "dbo.orders", {"order_id": 1})])
    assert emu.rows("dbo.orders") == []
    t.rollback()
    assert emu.rows("dbo.orders") == []
    with pytest.raises(ValueError, match="begin a new one"):
        t.execute([("insert", "dbo.orders", {"order_id": 1})])


def test_execute_validates_now_and_sees_its_own_earlier_changes(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    t = emu.begin(at=at(1))
    t.execute([("insert", "dbo.orders", {"order_id": 1})])
    t.execute([("update", "dbo.orders", {"order_id": 1, "status": "x"})])
    with pytest.raises(ConstraintError, match="already exists"):
        t.execute([("insert", "dbo.orders", {"order_id": 1})])
    t.commit(at=at(2))
    assert emu.rows("dbo.orders") == [{"order_id": 1, "status": "x", "amount": None}]


def test_a_key_another_open_transaction_touched_is_locked(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    a = emu.begin(at=at(1))
    a.execute([("insert", "dbo.orders", {"order_id": 1})])
    b = emu.begin(at=at(2))
    with pytest.raises(ConstraintError, match="another open Transaction"):
        b.execute([("insert", "dbo.orders", {"order_id": 1})])
    with pytest.raises(ConstraintError, match="another open Transaction"):
        emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(3))
    with pytest.raises(ValueError, match="open Transaction"):
        emu.add_column("dbo.orders", "x", "int", at=at(3))


def test_closing_the_emulator_rolls_open_transactions_back(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    t = emu.begin(at=at(1))
    t.execute([("insert", "dbo.orders", {"order_id": 1})])
    emu.close()
    from mssql_cdc.emulator import Emulator

    again = Emulator.open(emu.path)
    assert again.rows("dbo.orders") == []
    assert again.max_lsn() is None
