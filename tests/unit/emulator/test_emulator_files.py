"""Creating and opening emulator files, and the file-level errors of spec 40 sections 3.1 and 4."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.emulator import (
    Emulator,
    FileFormatError,
    FormatVersionError,
)
from tests.unit.support.emulator_oracle import dump, orders


def test_a_new_file_has_no_entry_and_reopens_with_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    assert emu.max_lsn() is None
    emu.close()
    again = Emulator.open(path)
    assert again.tables() == ["dbo.orders"]
    assert again.capture_instances("dbo.orders") == ["dbo_orders"]


def test_create_refuses_an_existing_path_and_a_missing_folder(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    Emulator.create(path).close()
    with pytest.raises(FileExistsError, match="already exists"):
        Emulator.create(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Emulator.create(tmp_path / "nope" / "e.db")


def test_create_with_a_bad_setting_is_a_value_error_and_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    with pytest.raises(ValueError, match="retention_minutes"):
        Emulator.create(path, retention_minutes=0)
    with pytest.raises(ValueError, match="capture"):
        Emulator.create(path, capture="sometimes")  # type: ignore[arg-type]
    assert not path.exists()


def test_open_of_a_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"Emulator\.create"):
        Emulator.open(tmp_path / "missing.db")


def test_open_of_a_plain_text_file_is_a_file_format_error_and_leaves_it_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello " * 200)
    before = path.read_bytes()
    with pytest.raises(FileFormatError, match="not an mssql-cdc emulator file"):
        Emulator.open(path)
    assert path.read_bytes() == before


def test_open_of_a_foreign_sqlite_file_is_a_file_format_error_and_leaves_it_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(FileFormatError):
        Emulator.open(path)
    assert path.read_bytes() == before


def test_open_of_a_newer_format_names_both_versions_and_leaves_the_file_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    orders(path).close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 3")
    con.commit()
    con.close()
    before = dump(path)
    with pytest.raises(FormatVersionError, match="format 3; this mssql-cdc reads up to 2"):
        Emulator.open(path)
    assert dump(path) == before


def test_open_of_a_format_1_file_says_its_times_are_microseconds_and_leaves_it_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    orders(path).close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    before = dump(path)
    with pytest.raises(FormatVersionError, match=r"format 1, .*microseconds.*create the file"):
        Emulator.open(path)
    assert dump(path) == before


def test_a_closed_emulator_refuses_further_calls(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.close()
    with pytest.raises(ValueError, match="closed"):
        emu.commit([("insert", "dbo.orders", {"order_id": 1})])


READS_OF_AN_EMULATOR = {
    "rows": lambda emu: emu.rows("dbo.orders"),
    "change_rows": lambda emu: emu.change_rows("dbo_orders"),
    "min_lsn": lambda emu: emu.min_lsn("dbo_orders"),
    "max_lsn": lambda emu: emu.max_lsn(),
    "lsn_time": lambda emu: emu.lsn_time("0x" + "0" * 20),
    "capture_instances": lambda emu: emu.capture_instances("dbo.orders"),
    "lsn_time_mapping": lambda emu: emu.lsn_time_mapping(),
    "captured_columns": lambda emu: emu.captured_columns("dbo_orders"),
    "ddl_history": lambda emu: emu.ddl_history("dbo_orders"),
    "tables": lambda emu: emu.tables(),
    "reader": lambda emu: emu.reader(),
    "settings": lambda emu: emu.settings(),
    "now": lambda emu: emu.now(),
}


@pytest.mark.parametrize("read", READS_OF_AN_EMULATOR.values(), ids=READS_OF_AN_EMULATOR.keys())
def test_a_closed_emulator_refuses_reads_too(tmp_path: Path, read: Any) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})])
    read(emu)  # answers while open
    emu.close()
    with pytest.raises(ValueError, match=r"e\.db is closed; open it again"):
        read(emu)


def test_a_closed_reader_refuses_reads_and_one_taken_before_the_close_still_reads(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})])
    kept = emu.reader()
    closed = emu.reader()
    closed.close()
    emu.close()
    for read in (
        closed.max_lsn,
        closed.tables,
        lambda: closed.read_changes("dbo_orders", lsn, lsn),
    ):
        with pytest.raises(ValueError, match=r"EmulatorReader for .*e\.db is closed"):
            read()
    assert kept.max_lsn() == lsn  # an independent reader has its own life


def test_settings_round_trip_and_unknown_names_are_value_errors(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db", capture="manual")
    emu.configure(maxtrans=3, idle_interval_seconds=60, cleanup_job_rule="after")
    s = emu.settings()
    assert (s["capture"], s["maxtrans"], s["idle_interval_seconds"]) == ("manual", 3, 60)
    assert s["cleanup_job_rule"] == "after"
    with pytest.raises(ValueError, match="unknown emulator setting"):
        emu.configure(colour="blue")
    with pytest.raises(ValueError, match="maxtrans"):
        emu.configure(maxtrans=0)
