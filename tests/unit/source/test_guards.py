"""Data-loss guards: the purge tests, the error texts of 7.3 and the skip's audit record."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.core.lsn import ZERO, Lsn
from mssql_cdc.core.ranges import Piece
from mssql_cdc.errors import DataLossError, is_data_loss
from mssql_cdc.source import loss_guards as guards


def L(n: int) -> Lsn:
    return Lsn(f"0x{n:020X}")


SPEC_DRIVER_MESSAGE = (
    "capture instance 'dbo_orders': changes from 0x0000002A000001100001 on were purged by CDC "
    "cleanup before this stream read them; the oldest change still held is "
    "0x0000002A000001700001 (min_lsn, committed 2026-09-25T14:10:00.000). A re-snapshot is "
    'required: run to_delta(..., on_data_loss="resnapshot") to take one and continue '
    "automatically, or set failOnDataLoss=false to skip ahead to min_lsn and accept the gap."
)


def test_the_driver_error_has_the_spec_text_and_its_facts() -> None:
    error = guards.driver_loss_error(
        "dbo_orders",
        Lsn("0x0000002A000001100001"),
        Lsn("0x0000002A000001700001"),
        min_commit_ts="2026-09-25T14:10:00.000",
        lost_from_ts="2026-09-22T08:00:00.000",
    )
    assert str(error) == SPEC_DRIVER_MESSAGE
    assert (error.capture_instance, error.first_lsn, error.min_lsn, error.possible) == (
        "dbo_orders",
        "0x0000002A000001100001",
        "0x0000002A000001700001",
        False,
    )
    assert (error.lost_from_ts, error.lost_to_ts) == (
        "2026-09-22T08:00:00.000",
        "2026-09-25T14:10:00.000",
    )
    assert is_data_loss(error)


def test_a_data_loss_error_pickles_with_every_fact() -> None:
    error = guards.task_loss_error(
        "dbo_orders",
        L(5),
        L(9),
        L(7),
        "CDC cleanup raised min_lsn past the range start",
        min_commit_ts=None,
        lost_from_ts="2026-09-22T08:00:00.000",
    )
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, DataLossError)
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)
    assert copy.possible is True


def test_the_task_error_names_the_range_the_new_min_lsn_and_both_ways_forward() -> None:
    error = guards.task_loss_error(
        "dbo_orders",
        L(5),
        L(9),
        L(7),
        "CDC cleanup raised min_lsn past the range start",
        min_commit_ts="2026-09-25T14:10:00.000",
        lost_from_ts=None,
        disabled_instance="dbo_old",
    )
    text = str(error)
    assert f"CDC cleanup ran while range {L(5)}–{L(9)} was read" in text
    assert f"min_lsn is now {L(7)}, past the range start" in text
    assert "rows of the range may be missing" in text
    assert "or they were held only by capture instance 'dbo_old', disabled before" in text
    assert text.endswith("skip ahead to min_lsn and accept the gap.")


def test_a_disabled_older_instance_is_named_in_the_driver_error() -> None:
    error = guards.driver_loss_error(
        "v2", L(5), L(9), min_commit_ts=None, lost_from_ts=None, disabled_instance="v1"
    )
    assert "read them, or they were held only by capture instance 'v1', disabled before" in str(
        error
    )
    assert "(min_lsn, commit time unknown)" in str(error)


@settings(derandomize=True, database=None, max_examples=300)
@given(
    start=st.integers(min_value=0, max_value=60),
    max_lsn=st.none() | st.integers(min_value=0, max_value=60),
    min_lsn=st.none() | st.integers(min_value=0, max_value=60),
)
def test_the_pre_flight_test_agrees_with_integer_arithmetic(
    start: int, max_lsn: int | None, min_lsn: int | None
) -> None:
    expected = (
        (max_lsn or 0) > start and min_lsn is not None and min_lsn != 0 and start + 1 < min_lsn
    )
    got = guards.range_after_is_purged(
        L(start), None if max_lsn is None else L(max_lsn), None if min_lsn is None else L(min_lsn)
    )
    assert got == expected


def test_a_null_or_zero_min_lsn_never_reports_a_purge() -> None:
    assert not guards.piece_is_purged(L(5), None)
    assert not guards.piece_is_purged(L(5), ZERO)
    assert guards.piece_is_purged(L(5), L(6))
    assert not guards.piece_is_purged(L(6), L(6))


@pytest.mark.parametrize(
    ("from_n", "after", "error", "reason"),
    [
        (5, L(5), None, None),
        (5, L(4), None, None),
        (5, None, None, None),
        (5, L(6), None, "CDC cleanup raised min_lsn past the range start"),
        (5, ZERO, None, "the capture instance was disabled"),
        (5, None, 208, "the change table vanished during the read (error 208)"),
        (5, L(5), 313, "the server refused the range as below min_lsn (error 313)"),
    ],
)
def test_the_executor_guard_says_why_rows_may_be_missing(
    from_n: int, after: Lsn | None, error: int | None, reason: str | None
) -> None:
    got = guards.executor_guard(L(from_n), after, error)
    if reason is None:
        assert got is None
    else:
        assert got is not None
        assert reason in got


@settings(derandomize=True, database=None, max_examples=300)
@given(
    start=st.integers(min_value=0, max_value=50),
    width=st.integers(min_value=0, max_value=30),
    extra=st.integers(min_value=0, max_value=30),
    m=st.none() | st.integers(min_value=0, max_value=120),
)
def test_the_skip_never_passes_the_target_nor_moves_back(
    start: int, width: int, extra: int, m: int | None
) -> None:
    end, target = start + 1 + width, start + 1 + width + extra
    got = int(guards.skip_end(L(start), L(end), L(target), None if m is None else L(m)), 16)
    if m is not None and m != 0 and start + 1 < m:
        assert got == min(max(end, m), target)
    else:
        assert got == end


def test_a_purged_piece_resumes_at_m_or_is_dropped_when_m_is_past_it() -> None:
    piece = Piece("ci", L(5), L(9))
    assert guards.skip_piece(piece, L(5)) is None
    assert guards.skip_piece(piece, None) is None
    skip = guards.skip_piece(piece, L(7))
    assert skip == guards.Skip(Piece("ci", L(7), L(9)), L(5), L(7))
    dropped = guards.skip_piece(piece, L(12))
    assert dropped == guards.Skip(None, L(5), L(12))


def test_the_driver_skip_event_has_the_spec_shape_and_file_name() -> None:
    record = guards.data_skipped_event(
        "dbo_orders",
        "0x0000002A000001100001",
        "0x0000002A000001700001",
        min_commit_ts="2026-09-25T14:10:00.000",
        lost_from_ts="2026-09-22T08:00:00.000",
        batch_start_lsn="0x0000002A000001100000",
        batch_end_lsn="0x0000002A000001700001",
    )
    assert record.file_name == "event-data_skipped-dbo_orders-0x0000002A000001100001.json"
    spec = json.loads(
        """{"event": "data_skipped", "capture_instance": "dbo_orders",
         "lsn": "0x0000002A000001700001", "commit_ts": "2026-09-25T14:10:00.000",
         "detail": {"from": "0x0000002A000001100001", "to": "0x0000002A000001700001",
                    "certain": true, "capture_instance": "dbo_orders"},
         "lost_from_ts": "2026-09-22T08:00:00.000", "lost_to_ts": "2026-09-25T14:10:00.000",
         "batch_start_lsn": "0x0000002A000001100000",
         "batch_end_lsn": "0x0000002A000001700001"}"""
    )
    assert json.dumps(record.to_json()) == json.dumps(spec)  # same keys, values and order


def test_a_task_skip_is_a_possible_loss_with_its_reason() -> None:
    record = guards.data_skipped_event(
        "dbo orders",
        str(L(5)),
        str(L(7)),
        min_commit_ts=None,
        lost_from_ts=None,
        batch_start_lsn=str(L(4)),
        batch_end_lsn=str(L(9)),
        reason="cleanup during the read",
    )
    assert record.detail == {
        "from": L(5),
        "to": L(7),
        "certain": False,
        "reason": "cleanup during the read",
        "capture_instance": "dbo orders",
    }


def test_a_replanned_batch_with_a_newer_m_names_the_same_file() -> None:
    first = guards.data_skipped_event(
        "ci",
        str(L(5)),
        str(L(7)),
        min_commit_ts=None,
        lost_from_ts=None,
        batch_start_lsn=str(L(4)),
        batch_end_lsn=str(L(9)),
    )
    again = guards.data_skipped_event(
        "ci",
        str(L(5)),
        str(L(8)),
        min_commit_ts=None,
        lost_from_ts=None,
        batch_start_lsn=str(L(4)),
        batch_end_lsn=str(L(9)),
    )
    assert first.file_name == again.file_name
    assert again.lsn == L(8)


def test_the_skip_warning_names_instance_both_lsns_and_the_time() -> None:
    text = guards.skip_warning("dbo_orders", str(L(5)), str(L(7)), "2026-09-25T14:10:00.000")
    assert "'dbo_orders'" in text
    assert f"from {L(5)} to min_lsn {L(7)} (committed 2026-09-25T14:10:00.000)" in text
    assert "are lost" in text


def test_the_task_skip_warning_names_range_instance_and_new_min_lsn() -> None:
    text = guards.task_skip_warning("dbo_orders", str(L(5)), str(L(9)), str(L(7)), "cleanup ran")
    assert f"range {L(5)}–{L(9)}" in text
    assert f"min_lsn is now {L(7)} and rows below it may be missing" in text
    assert "'dbo_orders'" in text


def test_a_refused_read_resumes_at_a_min_lsn_between_its_start_and_its_end() -> None:
    resume = guards.resume_after_refusal
    assert resume(L(10), L(20), L(15), guards.ERROR_BELOW_MIN_LSN) == L(15)
    assert resume(L(10), L(20), L(20), guards.ERROR_BELOW_MIN_LSN) == L(20)  # the end is held
    assert resume(L(10), L(20), L(21), guards.ERROR_BELOW_MIN_LSN) is None  # all of it purged
    assert resume(L(10), L(20), L(10), guards.ERROR_BELOW_MIN_LSN) is None  # no later start
    assert resume(L(10), L(20), ZERO, guards.ERROR_BELOW_MIN_LSN) is None  # disabled
    assert resume(L(10), L(20), None, guards.ERROR_BELOW_MIN_LSN) is None
    assert resume(L(10), L(20), L(15), guards.ERROR_OBJECT_VANISHED) is None  # nothing to read
    assert resume(L(10), L(20), L(15), None) is None  # the read was not refused
