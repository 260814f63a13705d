"""CDC's job procedures over TDS, through pymssql: sp_cdc_help_jobs, sp_cdc_change_job,
sp_cdc_start_job, sp_cdc_stop_job and sp_cdc_scan (decision 1363).

The oracle for what a client may send and see is Microsoft's documentation of each procedure
(cited per test); that a setting sent over the wire is the one the emulator's jobs use is
checked through the in-process API on the same file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer

HELP_JOBS = (
    "https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/"
    "sys-sp-cdc-help-jobs-transact-sql"
)
CHANGE_JOB = (
    "https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/"
    "sys-sp-cdc-change-job-transact-sql"
)


def build(path: Path, **create: Any) -> Emulator:
    emu = Emulator.create(path, start="2026-09-28T13:50:00", **create)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    return emu


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = build(tmp_path / "shop.db")
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def execute(server: TdsServer, sql: str) -> list[dict[str, Any]]:
    """The rows of the statement's result set by column name ([] when it has none)."""
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        if cursor.description is None:
            conn.commit()
            return []
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        conn.close()


def refusal(server: TdsServer, sql: str) -> tuple[int, str]:
    """The error number and message the server answers `sql` with."""
    with pytest.raises(pymssql.Error) as caught:
        execute(server, sql)
    number, raw = caught.value.args[0], caught.value.args[1]
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return int(number), text


def jobs(server: TdsServer) -> dict[str, dict[str, Any]]:
    return {row["job_type"]: row for row in execute(server, "EXEC sys.sp_cdc_help_jobs")}


def test_help_jobs_answers_with_the_columns_microsoft_documents(server: TdsServer) -> None:
    # HELP_JOBS, "Result set": job_id, job_type, job_name, maxtrans, maxscans, continuous,
    # pollinginterval, retention, threshold; job types capture and cleanup (dbo.cdc_jobs).
    rows = execute(server, "EXEC sys.sp_cdc_help_jobs")
    assert list(rows[0]) == [
        "job_id",
        "job_type",
        "job_name",
        "maxtrans",
        "maxscans",
        "continuous",
        "pollinginterval",
        "retention",
        "threshold",
    ]
    assert sorted(row["job_type"] for row in rows) == ["capture", "cleanup"]


def test_help_jobs_shows_the_emulators_job_settings(emulator: Emulator, server: TdsServer) -> None:
    emulator.configure(maxtrans=300, maxscans=4, retention_minutes=600, cleanup_threshold=70)
    found = jobs(server)
    assert (found["capture"]["maxtrans"], found["capture"]["maxscans"]) == (300, 4)
    assert (found["cleanup"]["retention"], found["cleanup"]["threshold"]) == (600, 70)


def test_a_retention_set_over_tds_is_the_emulators_retention(
    emulator: Emulator, server: TdsServer
) -> None:
    # CHANGE_JOB: @retention, minutes, for the cleanup job.
    execute(server, "EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = 10080")
    assert emulator.settings()["retention_minutes"] == 10080
    assert jobs(server)["cleanup"]["retention"] == 10080


def test_the_cleanup_job_started_over_tds_keeps_the_retention_set_over_tds(
    emulator: Emulator, server: TdsServer
) -> None:
    # sys.sp_cdc_start_job starts the cleanup job, which keeps `retention` minutes back from
    # the newest entry (the cleanup job reads its retention from the job's configuration).
    for order_id, at in ((1, "2026-09-28T14:00"), (2, "2026-09-28T14:30"), (3, "2026-09-28T16:00")):
        emulator.commit([("insert", "dbo.orders", {"order_id": order_id, "status": "x"})], at=at)
    execute(server, "EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = 60")
    execute(server, "EXEC sys.sp_cdc_start_job @job_type = N'cleanup'")
    assert [row["order_id"] for row in emulator.change_rows("dbo_orders")] == [2, 3]


@pytest.mark.parametrize("retention", [0, -5, 52494801])
def test_a_retention_outside_what_microsoft_documents_is_refused(
    emulator: Emulator, server: TdsServer, retention: int
) -> None:
    # CHANGE_JOB: "The maximum value is 52494800 (100 years). If specified, the value must be
    # a positive integer."
    sql = f"EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = {retention}"
    number, text = refusal(server, sql)
    assert number != 2812
    assert "retention" in text
    assert emulator.settings()["retention_minutes"] == 4320


def test_the_largest_retention_microsoft_documents_is_taken(
    emulator: Emulator, server: TdsServer
) -> None:
    execute(server, "EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = 52494800")
    assert emulator.settings()["retention_minutes"] == 52494800


@pytest.mark.parametrize(
    ("job_type", "parameter"),
    [
        ("capture", "@retention = 60"),
        ("capture", "@threshold = 100"),
        ("cleanup", "@maxtrans = 100"),
        ("cleanup", "@maxscans = 2"),
        ("cleanup", "@continuous = 0"),
        ("cleanup", "@pollinginterval = 10"),
    ],
)
def test_a_parameter_of_the_other_job_type_is_refused(
    emulator: Emulator, server: TdsServer, job_type: str, parameter: str
) -> None:
    # CHANGE_JOB: @maxtrans, @maxscans, @continuous and @pollinginterval are "valid only for
    # capture jobs", @retention "only for cleanup jobs"; sp_cdc_add_job's page says the same
    # of the delete threshold.
    before = emulator.settings()
    number, text = refusal(
        server, f"EXEC sys.sp_cdc_change_job @job_type = N'{job_type}', {parameter}"
    )
    assert number != 2812
    assert parameter.split()[0] in text
    assert emulator.settings() == before


def test_a_job_type_other_than_capture_or_cleanup_is_refused(server: TdsServer) -> None:
    # CHANGE_JOB: "Valid inputs are capture and cleanup."
    number, text = refusal(server, "EXEC sys.sp_cdc_change_job @job_type = N'purge', @maxtrans = 9")
    assert number != 2812
    assert "purge" in text


def test_a_maxtrans_that_is_not_positive_is_refused(emulator: Emulator, server: TdsServer) -> None:
    # CHANGE_JOB: @maxtrans "If specified, the value must be a positive integer."
    number, text = refusal(server, "EXEC sys.sp_cdc_change_job @maxtrans = 0")
    assert number != 2812
    assert "@maxtrans" in text
    assert emulator.settings()["maxtrans"] == 500


def test_the_capture_job_settings_sent_over_tds_are_the_emulators(
    emulator: Emulator, server: TdsServer
) -> None:
    # CHANGE_JOB: @job_type defaults to capture.
    execute(server, "EXEC sys.sp_cdc_change_job @maxtrans = 250, @maxscans = 3")
    assert (emulator.settings()["maxtrans"], emulator.settings()["maxscans"]) == (250, 3)


def test_a_polling_interval_with_continuous_omitted_makes_the_job_continuous(
    emulator: Emulator, server: TdsServer
) -> None:
    # CHANGE_JOB: "If @continuous is omitted or explicitly set to NULL and @pollinginterval is
    # explicitly set to a value greater than 0, @continuous is automatically set to 1."
    execute(server, "EXEC sys.sp_cdc_change_job @job_type = N'capture', @pollinginterval = 7")
    capture = jobs(server)["capture"]
    assert (capture["continuous"], capture["pollinginterval"]) == (True, 7)
    assert emulator.settings()["polling_interval_seconds"] == 7


def test_a_job_made_not_continuous_polls_at_zero_whatever_interval_is_sent(
    emulator: Emulator, server: TdsServer
) -> None:
    # CHANGE_JOB: "If @continuous is changed from 1 to 0, @pollinginterval is automatically set
    # to 0. A value specified for @pollinginterval other than 0 is ignored."
    execute(server, "EXEC sys.sp_cdc_change_job @pollinginterval = 7")
    execute(server, "EXEC sys.sp_cdc_change_job @continuous = 0, @pollinginterval = 30")
    capture = jobs(server)["capture"]
    assert (capture["continuous"], capture["pollinginterval"]) == (False, 0)
    assert emulator.settings()["polling_interval_seconds"] is None


def test_a_stopped_capture_job_captures_nothing_until_it_is_started(tmp_path: Path) -> None:
    # sp_cdc_stop_job / sp_cdc_start_job stop and start the capture job; a commit reaches the
    # change table only through the capture job.
    emu = build(tmp_path / "shop.db", profile="realistic")
    try:
        with emu.serve() as srv:
            execute(srv, "EXEC sys.sp_cdc_stop_job @job_type = N'capture'")
            emu.commit(
                [("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at="2026-09-28T14:00"
            )
            emu.advance(at="2026-09-28T14:10")
            assert emu.change_rows("dbo_orders") == []
            assert jobs(srv)["capture"]["pollinginterval"] == 5  # its settings are kept
            execute(srv, "EXEC sys.sp_cdc_start_job")
            emu.advance(at="2026-09-28T14:20")
            assert [row["order_id"] for row in emu.change_rows("dbo_orders")] == [1]
    finally:
        emu.close()


def test_a_scan_captures_what_the_log_holds(tmp_path: Path) -> None:
    # sp_cdc_scan "scans the log" for the capture job (sys.sp_cdc_add_job, @continuous = 0:
    # up to @maxscans scans of @maxtrans transactions, then it exits).
    emu = build(tmp_path / "shop.db", capture="manual")
    try:
        emu.commit(
            [("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at="2026-09-28T14:00"
        )
        with emu.serve() as srv:
            execute(srv, "EXEC sys.sp_cdc_scan")
        assert [row["order_id"] for row in emu.change_rows("dbo_orders")] == [1]
    finally:
        emu.close()


def test_a_value_the_emulator_cannot_hold_is_refused_before_anything_is_stored(
    emulator: Emulator, server: TdsServer
) -> None:
    # CHANGE_JOB takes @pollinginterval 0 (no wait between scans); the emulator's capture job
    # waits at least 1 s, so it refuses the call, and the @maxtrans sent with it stays unset.
    number, _ = refusal(
        server, "EXEC sys.sp_cdc_change_job @maxtrans = 42, @continuous = 1, @pollinginterval = 0"
    )
    assert number == 50000
    assert emulator.settings()["maxtrans"] == 500


def test_an_rpc_call_of_change_job_binds_its_arguments_by_position(
    emulator: Emulator, server: TdsServer
) -> None:
    # CHANGE_JOB's syntax: @job_type, @maxtrans, @maxscans, @continuous, @pollinginterval,
    # @retention, @threshold, in that order.
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        conn.cursor().callproc(
            "sys.sp_cdc_change_job", ("cleanup", None, None, None, None, 2880, 900)
        )
        conn.commit()
    finally:
        conn.close()
    assert (emulator.settings()["retention_minutes"], emulator.settings()["cleanup_threshold"]) == (
        2880,
        900,
    )
