"""Commits and the change rows they produce (spec 40, section 3.5), against a plain-Python model."""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path

import pytest

from mssql_cdc.emulator import (
    ClockError,
    ConstraintError,
    Emulator,
    UnknownObjectError,
)
from tests.unit.support.emulator_oracle import Model, at, dump, orders, replay

COLUMNS = ["order_id", "status", "amount"]


def random_transaction(rng: random.Random, model: Model) -> list[tuple[object, ...]]:
    """A transaction the model accepts: inserts of new keys, updates and deletes of live keys."""
    live = set(model.tables["dbo.orders"])
    changes: list[tuple[object, ...]] = []
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.45 or not live:
            key = rng.randint(1, 10_000)
            while key in live:
                key = rng.randint(1, 10_000)
            amount = Decimal(rng.randint(-99_999, 99_999)) / 100
            changes.append(("insert", "dbo.orders", {"order_id": key, "amount": amount}))
            live.add(key)
        elif choice < 0.75:
            key = rng.choice(sorted(live))
            changes.append(
                ("update", "dbo.orders", {"order_id": key, "status": f"s{rng.randint(0, 9)}"})
            )
        elif choice < 0.85:
            old = rng.choice(sorted(live))
            new = rng.randint(10_001, 20_000)
            while new in live:
                new = rng.randint(10_001, 20_000)
            changes.append(("update", "dbo.orders", {"order_id": new}, {"order_id": old}))
            live.discard(old)
            live.add(new)
        else:
            key = rng.choice(sorted(live))
            changes.append(("delete", "dbo.orders", {"order_id": key}))
            live.discard(key)
    return changes


def test_random_transactions_leave_the_rows_the_model_expects_and_replay_to_them(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    model = Model({"dbo.orders": "order_id"})
    rng = random.Random(7)
    lsns = []
    for i in range(60):
        changes = random_transaction(rng, model)
        model.apply(changes)
        lsns.append(emu.commit(changes, at=at(i)))
    expected = model.rows("dbo.orders", COLUMNS)
    assert emu.rows("dbo.orders") == expected
    assert replay(emu.change_rows("dbo_orders"), "order_id", COLUMNS) == expected
    assert lsns == sorted(lsns)
    assert len(set(lsns)) == len(lsns)


def test_each_commit_lsn_is_the_start_lsn_of_its_rows_and_every_seqval_lies_below_it(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    first = emu.commit(
        [("insert", "dbo.orders", {"order_id": 1}), ("insert", "dbo.orders", {"order_id": 2})],
        at=at(1),
    )
    rows = emu.change_rows("dbo_orders")
    assert [r["__$start_lsn"] for r in rows] == [first, first]
    assert [r["__$command_id"] for r in rows] == [1, 2]
    assert all(r["__$seqval"] < first for r in rows)
    assert rows[0]["__$seqval"] < rows[1]["__$seqval"]
    assert all(r["__$end_lsn"] is None for r in rows)


def test_an_update_writes_old_and_new_images_with_the_set_list_as_mask(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new", "amount": 5})], at=at(1))
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "paid"})], at=at(2))
    old, new = emu.change_rows("dbo_orders")[1:]
    assert (old["__$operation"], new["__$operation"]) == (3, 4)
    assert (old["status"], new["status"]) == ("new", "paid")
    assert old["__$seqval"] == new["__$seqval"]
    # status is ordinal 2: bit 1 of the only byte
    assert old["__$update_mask"] == new["__$update_mask"] == bytes([0b010])


def test_a_key_update_writes_a_delete_then_an_insert_with_all_columns_in_the_mask(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "a"})], at=at(1))
    emu.commit([("update", "dbo.orders", {"order_id": 2}, {"order_id": 1})], at=at(2))
    d, i = emu.change_rows("dbo_orders")[1:]
    assert (d["__$operation"], d["order_id"]) == (1, 1)
    assert (i["__$operation"], i["order_id"], i["status"]) == (2, 2, "a")
    assert (d["__$command_id"], i["__$command_id"]) == (1, 2)
    assert d["__$update_mask"] == i["__$update_mask"] == bytes([0b111])
    assert emu.rows("dbo.orders") == [{"order_id": 2, "status": "a", "amount": None}]


def test_the_update_mask_spans_bytes_with_the_last_byte_holding_ordinals_one_to_eight(
    tmp_path: Path,
) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.wide", {f"c{i}": "int" for i in range(1, 11)}, primary_key="c1")
    emu.enable_cdc("dbo.wide")
    emu.commit([("insert", "dbo.wide", {"c1": 1})], at=at(1))
    emu.commit([("update", "dbo.wide", {"c1": 1, "c9": 5, "c2": 3})], at=at(2))
    mask = emu.change_rows("dbo_wide")[1]["__$update_mask"]
    assert mask == bytes([0b0000_0001, 0b0000_0010])  # ordinal 9 in the first byte, 2 in the last


def test_a_commit_to_an_untracked_table_returns_an_lsn_without_an_entry(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.create_table("dbo.plain", {"id": "int"}, primary_key="id")
    lsn = emu.commit([("insert", "dbo.plain", {"id": 1})], at=at(1))
    assert lsn.startswith("0x")
    assert emu.lsn_time(lsn) is None
    assert emu.max_lsn() is None


def test_an_update_of_only_uncaptured_columns_writes_no_change_row(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.t", {"id": "int", "a": "int", "b": "int"}, primary_key="id")
    emu.enable_cdc("dbo.t", captured_columns=["id", "a"])
    emu.commit([("insert", "dbo.t", {"id": 1})], at=at(1))
    lsn = emu.commit([("update", "dbo.t", {"id": 1, "b": 2})], at=at(2))
    assert len(emu.change_rows("dbo_t")) == 1
    assert emu.lsn_time(lsn) is None


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ([("insert", "dbo.orders", {"order_id": 1})], ConstraintError, "already exists"),
        ([("update", "dbo.orders", {"order_id": 7, "status": "x"})], ConstraintError, "no row"),
        ([("delete", "dbo.orders", {"order_id": 7})], ConstraintError, "no row with key"),
        ([("insert", "dbo.ordrs", {"order_id": 9})], UnknownObjectError, "no such table"),
        ([("insert", "dbo.orders", {"order_id": 9, "colour": 1})], UnknownObjectError, "colour"),
        ([("insert", "dbo.orders", {"status": "x"})], ValueError, "key column order_id"),
        ([("insert", "dbo.orders", {"order_id": None})], ConstraintError, "515"),
        ([("insert", "dbo.orders", {"order_id": 9, "status": "x" * 21})], ConstraintError, "2628"),
        ([("insert", "dbo.orders", {"order_id": 2**31})], ConstraintError, "8115"),
        (
            [("insert", "dbo.orders", {"order_id": 9, "amount": Decimal("1e17")})],
            ConstraintError,
            "8115",
        ),
        ([("update", "dbo.orders", {"order_id": 1})], ValueError, "sets no column"),
        ([("update", "dbo.orders", {"order_id": 1}, {"order_id": 1})], ValueError, "keeps the key"),
        ([("insert", "dbo.orders", {"order_id": "one"})], TypeError, "int"),
    ],
)
def test_a_bad_change_raises_a_clear_error_and_leaves_the_file_unchanged(
    tmp_path: Path, changes: list[tuple[object, ...]], error: type[Exception], match: str
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "a"})], at=at(1))
    before = dump(path)
    with pytest.raises(error, match=match):
        emu.commit([("insert", "dbo.orders", {"order_id": 2}), *changes], at=at(2))
    assert dump(path) == before


def test_an_empty_transaction_is_a_value_error(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    with pytest.raises(ValueError, match="at least one change"):
        emu.commit([])


def test_errors_carry_sql_server_numbers(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    with pytest.raises(ConstraintError) as caught:
        emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(2))
    assert caught.value.number == 2627


def test_time_going_backwards_is_a_clock_error_and_leaves_the_file_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(60))
    before = dump(path)
    with pytest.raises(ClockError, match="is before the emulator's last time"):
        emu.commit([("insert", "dbo.orders", {"order_id": 2})], at=at(30))
    assert dump(path) == before
    # equal is allowed, and at=None is always later
    emu.commit([("insert", "dbo.orders", {"order_id": 3})], at=at(60))
    lsn = emu.commit([("insert", "dbo.orders", {"order_id": 4})])
    assert emu.lsn_time(lsn) is not None
    assert emu.lsn_time(lsn) > emu.lsn_time(emu.change_rows("dbo_orders")[0]["__$start_lsn"])  # type: ignore[operator]


def test_commit_times_are_rounded_to_datetime_ticks(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    expected = {
        0.0: 0,
        0.001: 0,
        0.002: 3_000,
        0.004: 3_000,
        0.005: 7_000,
        0.998: 997_000,
        0.9995: 0,
    }
    for i, (frac, micros) in enumerate(expected.items()):
        lsn = emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(10 * i + frac))
        got = emu.lsn_time(lsn)
        assert got is not None
        # 0.9995 s is nearer the next second than tick 299 (0.99667 s)
        seconds = 1 if frac == 0.9995 else 0
        assert (got.second % 10, got.microsecond) == (seconds, micros), frac


def test_commit_many_gives_each_transaction_its_own_lsn_and_entry_all_or_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = emu.commit_many(
        [[("insert", "dbo.orders", {"order_id": i})] for i in range(5)],
        at=[at(i) for i in range(5)],
    )
    assert lsns == sorted(lsns)
    assert [e["start_lsn"] for e in emu.lsn_time_mapping()] == lsns
    before = dump(path)
    with pytest.raises(ConstraintError):
        emu.commit_many(
            [
                [("insert", "dbo.orders", {"order_id": 10})],
                [("insert", "dbo.orders", {"order_id": 0})],
            ]
        )
    assert dump(path) == before
