"""Spark's Python workers of a local_session skip the editable install's rebuild check."""

from __future__ import annotations

import sys

import pytest

from mssql_cdc.spark import NATIVE_CHECKED_ENV, skip_native_rebuild_check


class ScikitBuildRedirectingFinder:
    """Stands in for the editable install's finder: only its once-per-process flag matters."""

    def __init__(self) -> None:
        self.rebuilt = False

    def find_spec(self, *args: object) -> None:
        return None


@pytest.fixture
def finder(monkeypatch: pytest.MonkeyPatch) -> ScikitBuildRedirectingFinder:
    fake = ScikitBuildRedirectingFinder()
    monkeypatch.setattr(sys, "meta_path", [fake, *sys.meta_path])
    return fake


def test_a_process_started_by_a_checked_driver_marks_the_rebuild_as_done(
    finder: ScikitBuildRedirectingFinder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NATIVE_CHECKED_ENV, "1")

    assert skip_native_rebuild_check() is True
    assert finder.rebuilt is True


def test_without_the_drivers_mark_the_rebuild_check_stays(
    finder: ScikitBuildRedirectingFinder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NATIVE_CHECKED_ENV, raising=False)

    assert skip_native_rebuild_check() is False
    assert finder.rebuilt is False
