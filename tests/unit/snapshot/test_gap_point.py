"""Deletes across a gap: the point bronze's image before a re-snapshot is rebuilt from."""

from __future__ import annotations

from mssql_cdc.snapshot.gap_deletes import previous_point

S = "0x00000030000000100001"


def test_the_newest_snapshot_below_s_is_the_point_whole_or_completed() -> None:
    whole, chunked = "0x00000010000000100001", "0x00000020000000100001"
    assert previous_point(S, [whole], [chunked]) == chunked
    assert previous_point(S, [chunked], [whole]) == chunked


def test_the_snapshot_itself_and_newer_ones_are_never_the_point() -> None:
    newer = "0x00000040000000100001"
    assert previous_point(S, [S, newer], [S]) is None


def test_without_an_earlier_snapshot_the_image_comes_from_changes_alone() -> None:
    assert previous_point(S, [], []) is None
