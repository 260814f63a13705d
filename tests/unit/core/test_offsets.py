"""Offsets and ranges: the exact JSON Spark stores, and strict reading of it."""

from __future__ import annotations

import json
import pickle
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.core.lsn import Lsn
from mssql_cdc.core.offsets import LsnRange, StreamOffset, format_commit_ts
from mssql_cdc.errors import StateFileError

LSN = Lsn("0x0000002A000001F00003")


def test_an_offset_serialises_to_exactly_the_checkpoint_line() -> None:
    offset = StreamOffset(LSN, "2026-09-28T14:03:12.117")
    assert offset.to_text() == (
        '{"lsn": "0x0000002A000001F00003", "commit_ts": "2026-09-28T14:03:12.117"}'
    )
    assert list(offset.to_json()) == ["lsn", "commit_ts"]


def test_an_unknown_commit_time_is_an_empty_string_and_reads_back_as_none() -> None:
    offset = StreamOffset(LSN, None)
    assert offset.to_json() == {"lsn": LSN, "commit_ts": ""}
    assert StreamOffset.from_json(offset.to_text()) == offset


@settings(derandomize=True, database=None, max_examples=200)
@given(
    n=st.integers(min_value=0, max_value=2**80 - 1),
    moment=st.none() | st.datetimes(min_value=datetime(1900, 1, 1)),
)
def test_an_offset_survives_its_json_round_trip(n: int, moment: datetime | None) -> None:
    ts = None if moment is None else format_commit_ts(moment)
    offset = StreamOffset(Lsn(f"0x{n:020X}"), ts)
    assert StreamOffset.from_json(json.loads(offset.to_text())) == offset
    assert StreamOffset.from_json(offset.to_text()) == offset


def test_commit_times_are_truncated_to_milliseconds() -> None:
    assert format_commit_ts(datetime(2026, 9, 28, 14, 3, 12, 117999)) == "2026-09-28T14:03:12.117"
    assert format_commit_ts(datetime(2026, 9, 28, 14, 3, 12)) == "2026-09-28T14:03:12.000"
    assert format_commit_ts(None) == ""


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json", "it is not JSON"),
        ('{"lsn": "0x0000002A000001F00003"}', 'exactly "lsn" and "commit_ts"'),
        ('{"lsn": "0x0000002A000001F00003", "commit_ts": "", "x": 1}', "exactly"),
        ('{"lsn": "0x2a000001f00003", "commit_ts": ""}', "lsn is not 0x + 20 upper-case"),
        ('{"lsn": 42, "commit_ts": ""}', "lsn is not"),
        ('{"lsn": "0x0000002A000001F00003", "commit_ts": "2026-09-28 14:03"}', "commit_ts is"),
        ('{"lsn": "0x0000002A000001F00003", "commit_ts": null}', "commit_ts is"),
        ('["0x0000002A000001F00003", ""]', "exactly"),
    ],
)
def test_a_malformed_offset_is_a_value_error_quoting_it(text: str, why: str) -> None:
    with pytest.raises(StateFileError) as caught:
        StreamOffset.from_json(text)
    assert isinstance(caught.value, ValueError)
    assert why in str(caught.value)
    assert "malformed stream offset" in str(caught.value)


def test_an_offset_refuses_a_non_canonical_lsn_at_construction() -> None:
    with pytest.raises(ValueError, match="is not a canonical LSN"):
        StreamOffset(Lsn("0x2A"), None)


def make_range(**changes: object) -> LsnRange:
    fields: dict[str, object] = {
        "capture_instance": "dbo_orders",
        "from_lsn": "0x0000002A000001000001",
        "to_lsn": "0x0000002A000001F00003",
        "last": True,
        "start_ts": "2026-09-28T14:00:00.000",
        "null_columns": ("note",),
        "time_zone": "UTC",
        "batch_start_lsn": "0x0000002A000001000000",
        "batch_end_lsn": "0x0000002A000001F00003",
    }
    fields.update(changes)
    return LsnRange(**fields)  # type: ignore[arg-type]


def test_a_range_round_trips_through_json_and_pickle() -> None:
    rng = make_range()
    assert LsnRange.from_json(json.loads(json.dumps(rng.to_json()))) == rng
    assert pickle.loads(pickle.dumps(rng)) == rng


def test_a_range_is_never_inverted_or_non_canonical() -> None:
    with pytest.raises(ValueError, match="is above to_lsn"):
        make_range(from_lsn="0x0000002A000001F00004")
    with pytest.raises(ValueError, match="batch_end_lsn '0x1' is not canonical"):
        make_range(batch_end_lsn="0x1")
    with pytest.raises(ValueError, match="field 'time_zone' is missing"):
        LsnRange.from_json({k: v for k, v in make_range().to_json().items() if k != "time_zone"})


def initial(starting: str, **known: int | None) -> str:
    from mssql_cdc.core.offsets import initial_lsn

    args = {k: None if v is None else Lsn(f"0x{v:020X}") for k, v in known.items()}
    return initial_lsn(
        starting,  # type: ignore[arg-type]
        capture_instance="dbo_orders",
        max_lsn=args.get("max_lsn"),
        oldest_min_lsn=args.get("oldest_min_lsn"),
        oldest_start_lsn=args.get("oldest_start_lsn"),
        start_lsn=args.get("start_lsn"),
    )


def n(value: int) -> str:
    return f"0x{value:020X}"


def test_earliest_starts_just_below_the_oldest_min_lsn_else_below_its_start() -> None:
    assert initial("earliest", oldest_min_lsn=50, oldest_start_lsn=10, max_lsn=90) == n(49)
    assert initial("earliest", oldest_min_lsn=None, oldest_start_lsn=10, max_lsn=90) == n(9)
    assert initial("earliest", oldest_min_lsn=0, oldest_start_lsn=10, max_lsn=None) == n(9)


def test_latest_is_max_lsn_unless_capture_has_not_reached_the_instance() -> None:
    assert initial("latest", max_lsn=90, start_lsn=10) == n(90)
    assert initial("latest", max_lsn=5, start_lsn=10) == n(9)
    assert initial("latest", max_lsn=None, start_lsn=10) == n(9)
    assert initial("latest", max_lsn=90, start_lsn=None) == n(90)


def test_an_explicit_lsn_is_taken_as_processed_without_checks() -> None:
    assert initial(n(7), max_lsn=None) == n(7)


@pytest.mark.parametrize("mode", ["earliest", "latest"])
def test_with_nothing_known_the_initial_offset_asks_to_retry(mode: str) -> None:
    with pytest.raises(ValueError, match="'dbo_orders' has no start LSN yet; retry once the"):
        initial(mode, max_lsn=None, oldest_min_lsn=None, oldest_start_lsn=None, start_lsn=None)
