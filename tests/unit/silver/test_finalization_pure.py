"""The pure parts of finalization: truncation and reading end offsets from progress reports."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from mssql_cdc.finalization import end_offset_from_progress, truncate

OFFSET = {"lsn": "0x0000002A000001F00003", "commit_ts": "2026-09-28T14:03:12.117"}


@pytest.mark.parametrize(
    ("granularity", "expected"),
    [
        ("minute", datetime(2026, 9, 28, 14, 37)),
        ("hour", datetime(2026, 9, 28, 14)),
        ("day", datetime(2026, 9, 28)),
    ],
)
def test_a_verdict_candidate_is_the_start_of_the_period_holding_the_end(
    granularity: Any, expected: datetime
) -> None:
    assert truncate(datetime(2026, 9, 28, 14, 37, 5, 250_000), granularity) == expected


def test_an_unknown_granularity_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="granularity='week'"):
        truncate(datetime(2026, 1, 1), "week")  # type: ignore[arg-type]


def progress(*end_offsets: object) -> dict[str, Any]:
    return {"id": "q", "batchId": 3, "sources": [{"endOffset": e} for e in end_offsets]}


class ProgressObject:
    """Shaped like pyspark's StreamingQueryProgress: its JSON under `.json`."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.json = json.dumps(report)


@pytest.mark.parametrize(
    "report",
    [
        progress(OFFSET),
        progress(json.dumps(OFFSET)),
        json.dumps(progress(OFFSET)),
        ProgressObject(progress(OFFSET)),
    ],
    ids=["dict", "dict-with-json-offset", "json-text", "progress-object"],
)
def test_the_end_offset_is_read_from_every_form_of_progress(report: object) -> None:
    assert end_offset_from_progress(report) == OFFSET


def test_the_offset_of_a_second_source_and_a_missing_one() -> None:
    report = progress(OFFSET, None)
    assert end_offset_from_progress(report, source_index=1) is None
    assert end_offset_from_progress(progress({"lsn": OFFSET["lsn"]})) == {
        "lsn": OFFSET["lsn"],
        "commit_ts": "",
    }
    with pytest.raises(ValueError, match="source_index=2 is out of range: the query has 2"):
        end_offset_from_progress(report, source_index=2)
    with pytest.raises(ValueError, match="no 'sources'"):
        end_offset_from_progress({"id": "q"})
