"""`mssql-cdc heartbeat`: beats over TDS to an emulator served as SQL Server, `--create`, the
refusals, and the printed T-SQL script run through pymssql.

Oracles: SQL Server's documentation, not the emulator. `sys.sp_cdc_enable_table` names the
capture instance `schema_table` when @capture_instance is not given
(https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-enable-table-transact-sql),
each committed UPDATE of a captured row writes one change row of operation 3 and one of 4
(https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql),
and an Agent schedule's `@freq_subday_type` is 2 for seconds and 4 for minutes
(https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-add-schedule-transact-sql).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import mssql_python
import pymssql
import pytest

import mssql_cdc
from mssql_cdc.cli import main
from mssql_cdc.cli.heartbeat import DEFAULT_TABLE
from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.sqlserver import DEFAULT_HEARTBEAT_TABLE

HEARTBEAT_COLUMNS = {"id": "tinyint", "beat_at": "datetime2(7)"}

# A section of the printed script -> (error number, start of the message) the emulator's TDS
# front end answers today; SQL Server runs them. The beat (section 2) must run, and section 1
# runs too (its IF NOT EXISTS steps find the table, its row and CDC there, and skip).
REFUSED_TODAY: dict[str, tuple[int, str]] = {
    "3": (208, "Invalid object name"),  # msdb.dbo.sysjobs: the emulator keeps no msdb
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Emulator, TdsServer]]:
    emu = Emulator.create(tmp_path / "shop.db")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    with emu.serve() as srv:
        yield emu, srv


def options_file(tmp_path: Path, srv: TdsServer) -> str:
    path = tmp_path / "options.json"
    path.write_text(
        json.dumps(
            {
                "backend": "pymssql",
                "connectionString": srv.connection_string("pymssql"),
                "captureInstance": "dbo_orders",
            }
        )
    )
    return str(path)


def password(srv: TdsServer) -> str:
    return str(srv.connect_kwargs("pymssql")["password"])


def heartbeat_changes(emu: Emulator) -> list[int]:
    return [int(r["__$operation"]) for r in emu.change_rows("dbo_mssql_cdc_heartbeat")]


def test_create_enables_cdc_on_the_table_and_each_beat_is_one_captured_update(
    tmp_path: Path, served: tuple[Emulator, TdsServer], capsys: pytest.CaptureFixture[str]
) -> None:
    emu, srv = served
    emu.create_table("dbo.mssql_cdc_heartbeat", HEARTBEAT_COLUMNS, primary_key="id")
    args = ["heartbeat", "--options", options_file(tmp_path, srv), "--create", "--count", "3"]
    assert main([*args, "--interval", "0s", "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["capture_instance"] == "dbo_mssql_cdc_heartbeat"
    assert result["prepared"] == ["enabled CDC", "wrote the first row"]
    assert result["beats"] == 3
    # The first row's insert (2), then an update's before and after image (3, 4) per beat.
    assert heartbeat_changes(emu) == [2, 3, 4, 3, 4, 3, 4]
    assert len(emu.lsn_time_mapping()) == 4  # one commit each: the row, three beats
    assert password(srv) not in out + err
    # Ready now: a second run prepares nothing and beats once.
    assert main(["heartbeat", "--options", options_file(tmp_path, srv), "--once", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prepared"] == []
    assert heartbeat_changes(emu) == [2, 3, 4, 3, 4, 3, 4, 3, 4]


def test_a_missing_heartbeat_table_is_refused_without_create_and_names_the_flag(
    tmp_path: Path, served: tuple[Emulator, TdsServer], capsys: pytest.CaptureFixture[str]
) -> None:
    _, srv = served
    assert main(["heartbeat", "--options", options_file(tmp_path, srv), "--once"]) == 2
    err = capsys.readouterr().err
    assert "heartbeat table dbo.mssql_cdc_heartbeat does not exist; pass --create" in err
    assert password(srv) not in err


def test_a_table_cdc_does_not_capture_is_refused_without_create(
    tmp_path: Path, served: tuple[Emulator, TdsServer], capsys: pytest.CaptureFixture[str]
) -> None:
    emu, srv = served
    emu.create_table("dbo.mssql_cdc_heartbeat", HEARTBEAT_COLUMNS, primary_key="id")
    assert main(["heartbeat", "--options", options_file(tmp_path, srv), "--once"]) == 2
    assert "is not captured by CDC; pass --create" in capsys.readouterr().err
    assert emu.change_rows("dbo_orders") == []


def test_a_refused_create_table_exits_1_naming_the_statement_and_the_script(
    tmp_path: Path, served: tuple[Emulator, TdsServer], capsys: pytest.CaptureFixture[str]
) -> None:
    # A table in schema sys is refused by SQL Server (error 2760) and by the emulator; a login
    # without CREATE TABLE permission is answered the same way.
    _, srv = served
    args = ["heartbeat", "--options", options_file(tmp_path, srv), "--create", "--once"]
    assert main([*args, "--table", "sys.mssql_cdc_heartbeat"]) == 1
    err = capsys.readouterr().err
    assert "the server refused to create heartbeat table sys.mssql_cdc_heartbeat" in err
    assert "CREATE TABLE [sys].[mssql_cdc_heartbeat]" in err
    assert "mssql-cdc heartbeat --print-sql" in err
    assert password(srv) not in err


def test_the_emulator_backend_and_a_missing_options_file_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Emulator.create(tmp_path / "e.db")
    options = tmp_path / "options.json"
    options.write_text(
        json.dumps(
            {"backend": "emulator", "emulatorPath": str(tmp_path / "e.db"), "captureInstance": "x"}
        )
    )
    assert main(["heartbeat", "--options", str(options), "--once"]) == 2
    assert "serve an emulator file with `mssql-cdc emulator serve`" in capsys.readouterr().err
    assert main(["heartbeat", "--once"]) == 2
    assert "--options is required to connect" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--count", "0"], "is not a count"),
        (["--count", "3", "--once"], "not allowed with argument"),
        (["--interval", "2d"], "out of range"),
        (["--interval", "soon"], "is not a duration"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["heartbeat", "--options", "o.json", *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "table", ["a.b.c", "dbo.", ".x", "[dbo].[t]", "dbo.bad\x01name", "dbo." + "x" * 129]
)
def test_a_table_that_is_not_schema_dot_name_is_refused(
    table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["heartbeat", "--print-sql", "--table", table]) == 2
    assert "heartbeat table" in capsys.readouterr().err


def test_an_agent_schedule_under_ten_seconds_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["heartbeat", "--print-sql", "--interval", "5s"]) == 2
    assert "heartbeat interval 5.0 is out of range; pass seconds from 10" in capsys.readouterr().err


def test_the_default_table_is_the_librarys() -> None:
    assert DEFAULT_TABLE == DEFAULT_HEARTBEAT_TABLE == "dbo.mssql_cdc_heartbeat"
    assert mssql_cdc.heartbeat_sql().count("[dbo].[mssql_cdc_heartbeat]") >= 4


def sections(script: str) -> dict[str, str]:
    """The printed script's numbered sections ("-- 1. ...") as batches, comments left out."""
    found: dict[str, str] = {}
    for number, body in re.findall(r"^-- (\d)\.[^\n]*\n(.*?)(?=^-- \d\.|\Z)", script, re.S | re.M):
        lines = [line for line in body.splitlines() if not line.lstrip().startswith("--")]
        found[number] = "\n".join(lines).strip()
    return found


def test_the_printed_scripts_beat_commits_on_the_emulator_and_is_the_agent_jobs_step(
    served: tuple[Emulator, TdsServer], capsys: pytest.CaptureFixture[str]
) -> None:
    emu, srv = served
    emu.create_table("dbo.mssql_cdc_heartbeat", HEARTBEAT_COLUMNS, primary_key="id")
    emu.enable_cdc("dbo.mssql_cdc_heartbeat")
    emu.commit([("insert", "dbo.mssql_cdc_heartbeat", {"id": 1, "beat_at": datetime(2026, 1, 1)})])
    assert main(["heartbeat", "--print-sql", "--interval", "90s"]) == 0
    script = capsys.readouterr().out
    parts = sections(script)
    assert sorted(parts) == ["1", "2", "3"]
    answers: dict[str, tuple[int, str] | None] = {}
    for number, batch in parts.items():
        conn = pymssql.connect(**srv.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
        try:
            conn.cursor().execute(batch)
            answers[number] = None
        except pymssql.Error as exc:
            raw = exc.args[1]
            text = raw.decode() if isinstance(raw, bytes) else str(raw)
            answers[number] = (int(exc.args[0]), text)
        finally:
            conn.close()
    assert answers["1"] is None
    assert answers["2"] is None
    assert heartbeat_changes(emu) == [2, 3, 4]
    for number, (code, start) in REFUSED_TODAY.items():
        answer = answers[number]
        assert answer is not None, number
        assert answer[0] == code, answer
        assert answer[1].startswith(start), answer
    # The Agent job runs exactly the tested beat, every 90 seconds (seconds: type 2).
    step = re.search(r"@command = N'(.*?)';\n", script, re.S)
    assert step is not None
    assert step.group(1).replace("''", "'") == parts["2"].rstrip(";")
    assert "@freq_subday_type = 2, @freq_subday_interval = 90" in script
    assert main(["heartbeat", "--print-sql", "--interval", "5m"]) == 0
    assert "@freq_subday_type = 4, @freq_subday_interval = 5" in capsys.readouterr().out


def test_the_printed_beat_and_the_verb_run_against_mssql_cdc_emulator_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = Emulator.create(tmp_path / "shop.db")
    emu.create_table("dbo.mssql_cdc_heartbeat", HEARTBEAT_COLUMNS, primary_key="id")
    emu.enable_cdc("dbo.mssql_cdc_heartbeat")
    emu.commit([("insert", "dbo.mssql_cdc_heartbeat", {"id": 1, "beat_at": datetime(2026, 1, 1)})])
    assert main(["heartbeat", "--print-sql"]) == 0
    beat = sections(capsys.readouterr().out)["2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(emu.path)],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"MSSQL_CDC_EMULATOR_PASSWORD": "s3cret-pw"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "serving PATH as database 'shop' on 127.0.0.1:PORT"
        port = int(first.rsplit(":", 1)[1])
        text = f"Server=127.0.0.1,{port};Database=shop;UID=sa;PWD=s3cret-pw;Encrypt=no"
        conn = mssql_python.connect(text, autocommit=True)
        try:
            conn.cursor().execute(beat)  # the Agent job's step, through mssql-python
        finally:
            conn.close()
        options = tmp_path / "options.json"
        options.write_text(
            json.dumps(
                {"backend": "mssql-python", "connectionString": text}  # no captureInstance
            )
        )
        assert (
            main(["heartbeat", "--options", str(options), "--count", "2", "--interval", "0s"]) == 0
        )
        out, err = capsys.readouterr()
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    assert "2 beat(s) committed to dbo.mssql_cdc_heartbeat" in out
    assert "s3cret-pw" not in out + err
    assert heartbeat_changes(emu) == [2, 3, 4, 3, 4, 3, 4]
