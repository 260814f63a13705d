"""Failpoints: armed points crash as asked, unarmed ones do nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mssql_cdc.testing import InjectedFault, failpoint, failpoints


def test_an_unarmed_point_does_nothing() -> None:
    failpoint("recovery.after_event")


def test_an_armed_point_raises_an_injected_fault_that_except_exception_does_not_catch() -> None:
    with failpoints({"recovery.after_event": "raise"}):
        with pytest.raises(InjectedFault, match=r"recovery\.after_event"):
            try:
                failpoint("recovery.after_event")
            except Exception:  # noqa: BLE001 - proves the fault passes through
                pytest.fail("InjectedFault was caught by except Exception")
    failpoint("recovery.after_event")  # disarmed again after the block


def test_an_unknown_point_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown failpoint 'recovery\.after_evnt'"):
        with failpoints({"recovery.after_evnt": "raise"}):
            pass


def test_kill_ends_the_process_with_exit_code_137_through_the_environment() -> None:
    code = (
        "from mssql_cdc.testing import failpoint\n"
        "failpoint('sink.after_facts_write')\n"
        "print('alive')"
    )
    env_spec = "sink.after_facts_write=kill"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"MSSQL_CDC_FAILPOINTS": env_spec, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 137
    assert "alive" not in done.stdout


def test_the_pinned_clock_is_what_the_library_reads_and_is_released_after() -> None:
    from datetime import UTC, datetime

    from mssql_cdc.core import clock as _clock
    from mssql_cdc.testing import clock

    with clock("2026-10-01T12:00:00") as pinned:
        assert _clock.now() == datetime(2026, 10, 1, 12, tzinfo=UTC) == pinned
    assert _clock.now() != pinned
