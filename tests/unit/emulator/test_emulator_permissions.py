"""Users, gating roles and error 229 in the emulator (issue 21 item 5, decision 1280).

Oracles: SQL Server's documented rules, written out here: sys.fn_cdc_get_min_lsn returns ten
zero bytes when "the caller is not authorized" to read the instance's change data; the change
functions need db_owner or membership in the instance's gating role and otherwise fail with
error 229, "The SELECT permission was denied on the object '<object>', database '<db>',
schema 'cdc'."; sys.sp_cdc_help_change_data_capture lists only instances the caller may read.
Connections stay on 127.0.0.1.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import (
    Emulator,
    PermissionDeniedError,
    SchemaError,
    TdsServer,
    UnknownObjectError,
)
from tests.unit.support.emulator_oracle import at

ZEROS = "0x00000000000000000000"
DENIED_FN = (
    "The SELECT permission was denied on the object 'fn_cdc_get_all_changes_dbo_orders', "
    "database '{db}', schema 'cdc'."
)


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[Emulator]:
    emulator = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emulator.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emulator.enable_cdc("dbo.orders", role_name="cdc_readers")
    emulator.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    emulator.create_user("alice")
    emulator.create_user("bob", roles=["cdc_readers"])
    emulator.create_user("olga", roles=["db_owner"])
    yield emulator
    emulator.close()


def test_a_reader_without_a_user_reads_a_gated_instance_as_dbo(emu: Emulator) -> None:
    reader = emu.reader()
    assert reader.min_lsn("dbo_orders") not in (None, ZEROS)
    assert [i["name"] for i in reader.capture_instances("dbo.orders")] == ["dbo_orders"]


def test_a_user_outside_the_gating_role_gets_zeros_from_min_lsn(emu: Emulator) -> None:
    alice = emu.reader(user="alice")
    assert alice.min_lsn("dbo_orders") == ZEROS
    assert alice.capture_instances("dbo.orders") == []
    assert not alice.may_read("dbo_orders")


def test_a_user_outside_the_gating_role_gets_229_from_the_change_read(emu: Emulator) -> None:
    alice = emu.reader(user="alice")
    low = emu.reader().min_lsn("dbo_orders")
    with pytest.raises(PermissionDeniedError) as raised:
        alice.read_changes("dbo_orders", low, emu.max_lsn())
    assert raised.value.number == 229
    assert str(raised.value) == DENIED_FN.format(db="shop")
    assert isinstance(raised.value, PermissionError)


def test_role_members_and_db_owners_read_the_gated_instance(emu: Emulator) -> None:
    low = emu.reader().min_lsn("dbo_orders")
    for user in ("bob", "olga"):
        reader = emu.reader(user=user)
        assert reader.min_lsn("dbo_orders") == low
        rows = reader.read_changes("dbo_orders", low, emu.max_lsn()).read_all()
        assert rows.column("order_id").to_pylist() == [1]


def test_a_user_added_to_the_role_reads_from_then_on(emu: Emulator) -> None:
    alice = emu.reader(user="alice")
    assert alice.min_lsn("dbo_orders") == ZEROS
    emu.add_role_member("cdc_readers", "alice")
    assert alice.min_lsn("dbo_orders") == emu.reader().min_lsn("dbo_orders")


def test_the_gating_role_shows_in_role_name_over_tds(emu: Emulator) -> None:
    with emu.serve() as server, _connect(server, "sa") as conn:
        cursor = conn.cursor(as_dict=True)
        cursor.execute("EXEC sys.sp_cdc_help_change_data_capture")
        assert [(r["capture_instance"], r["role_name"]) for r in cursor.fetchall()] == [
            ("dbo_orders", "cdc_readers")
        ]


def test_users_and_roles_are_refused_with_sql_servers_numbers(emu: Emulator) -> None:
    with pytest.raises(SchemaError, match="already exists in the current database") as taken:
        emu.create_user("Alice")
    assert taken.value.number == 15023
    with pytest.raises(UnknownObjectError) as no_role:
        emu.create_user("carl", roles=["auditors"])
    assert no_role.value.number == 15151
    with pytest.raises(UnknownObjectError) as no_user:
        emu.add_role_member("cdc_readers", "nobody")
    assert no_user.value.number == 15151
    with pytest.raises(UnknownObjectError, match="create_user"):
        emu.reader(user="nobody").max_lsn()
    with pytest.raises(TypeError, match="list of role names"):
        emu.create_user("dora", roles="cdc_readers")


def test_a_reader_pickles_with_its_user(emu: Emulator) -> None:
    alice = pickle.loads(pickle.dumps(emu.reader(user="alice")))
    assert alice.user == "alice"
    assert alice.min_lsn("dbo_orders") == ZEROS


def _connect(server: TdsServer, user: str) -> Any:
    kwargs = server.connect_kwargs("pymssql") | {"user": user}
    return pymssql.connect(**kwargs, login_timeout=10, timeout=10)


def test_over_tds_the_login_acts_as_its_user(emu: Emulator) -> None:
    with emu.serve() as server:
        with _connect(server, "alice") as conn:
            cursor = conn.cursor()
            cursor.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_orders')")
            assert cursor.fetchall() == [(bytes(10),)]
            cursor.execute("EXEC sys.sp_cdc_help_change_data_capture")
            assert cursor.fetchall() == []
            with pytest.raises(pymssql.Error) as raised:
                cursor.execute(
                    "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders("
                    "sys.fn_cdc_get_min_lsn('dbo_orders'), sys.fn_cdc_get_max_lsn(), N'all')"
                )
            number, text = raised.value.args[0], raised.value.args[1].decode()
            assert number == 229
            assert DENIED_FN.format(db=server.database) in text
        with _connect(server, "bob") as conn:
            cursor = conn.cursor()
            cursor.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_orders')")
            [(low,)] = cursor.fetchall()
            assert "0x" + bytes(low).hex().upper() == emu.reader().min_lsn("dbo_orders")
