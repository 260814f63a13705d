"""Run-wide rules: a skipped test fails the run, because a skip hides what it did not check."""

from __future__ import annotations

import pytest
from hypothesis import settings

# moto's S3 server (started only by a test that asks for `s3`), for every tier
from tests.support.s3_server import s3, s3_endpoint  # noqa: F401

_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skipped and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _skipped:
        terminalreporter.write_line(
            f"FAILED: {len(_skipped)} test(s) were skipped, and skips are not allowed: "
            + ", ".join(_skipped),
            red=True,
        )


# Timing deadlines measure the machine, not the code: a loaded CI host must not fail a property.
settings.register_profile("mssql-cdc", deadline=None)
settings.load_profile("mssql-cdc")
