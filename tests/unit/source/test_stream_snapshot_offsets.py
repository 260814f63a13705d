"""The offsets of the source's own snapshot (option snapshotMode): their JSON, read back the
same, offsets written before the option still read, and which keys a batch reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mssql_cdc.core import StreamOffset
from mssql_cdc.errors import StateFileError
from mssql_cdc.source.stream_snapshot import SnapshotCursor, SourceOffset, snapshot_keys

S = "0x0000002A000001F00003"
LATER = "0x0000002B000000100001"
TS = "2026-09-28T14:00:00.123"


def at(where: str, cursor: SnapshotCursor | None = None) -> SourceOffset:
    return SourceOffset(StreamOffset(where, TS), cursor)


def test_an_offset_written_before_the_option_reads_as_a_change_offset() -> None:
    old = {"lsn": S, "commit_ts": TS}
    offset = SourceOffset.from_json(old)
    assert offset == SourceOffset(StreamOffset(S, TS))
    assert not offset.reading
    assert offset.to_json() == old  # and is written back with exactly its two keys


@pytest.mark.parametrize(
    "cursor",
    [
        SnapshotCursor(None),
        SnapshotCursor(17),
        SnapshotCursor("O'Brien  "),
        SnapshotCursor(2.5),
        SnapshotCursor((3, "north", None)),
        SnapshotCursor(None, done=True),
    ],
    ids=["not-started", "int", "text", "float", "composite", "done"],
)
def test_a_snapshot_offset_survives_spark_s_json_unchanged(cursor: SnapshotCursor) -> None:
    offset = SourceOffset(
        StreamOffset(S, None), cursor, datetime(2026, 9, 28, 14, 5, 6, 7, tzinfo=UTC)
    )
    text = json.dumps(offset.to_json())  # Spark keeps the offset as JSON text
    assert SourceOffset.from_json(json.loads(text)) == offset
    assert list(offset.to_json())[:2] == ["lsn", "commit_ts"]


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        ({"lsn": S, "commit_ts": TS, "snapshot": "{"}, "is not JSON"),
        ({"lsn": S, "commit_ts": TS, "snapshot": "[]"}, "is not a key"),
        ({"lsn": S, "commit_ts": TS, "snapshot": "true"}, "is not a key"),
        ({"lsn": S, "commit_ts": TS, "snapshot": 5}, "is not text"),
        ({"lsn": S, "commit_ts": TS, "resnapshot_at": "soon"}, "resnapshot_at is not an ISO"),
        ({"lsn": S, "commit_ts": TS, "chunk": "1"}, "unknown keys ['chunk']"),
        ({"lsn": "0x1", "commit_ts": TS}, "lsn is not 0x + 20"),
    ],
)
def test_a_malformed_offset_is_refused_quoting_what_is_wrong(
    offset: dict[str, object], message: str
) -> None:
    with pytest.raises(StateFileError) as caught:
        SourceOffset.from_json(offset)
    assert message in str(caught.value)


def test_the_first_batch_of_a_snapshot_reads_from_the_first_key() -> None:
    start = at(S, SnapshotCursor(None))
    assert snapshot_keys(start, at(S, SnapshotCursor(10))) == (None, 10)
    assert snapshot_keys(start, at(S, SnapshotCursor(None, done=True))) == (None, None)


def test_a_later_batch_reads_from_where_the_previous_one_stopped() -> None:
    start = at(S, SnapshotCursor((1, "b")))
    assert snapshot_keys(start, at(S, SnapshotCursor((4, "a")))) == ((1, "b"), (4, "a"))
    assert snapshot_keys(start, at(S, SnapshotCursor(None, done=True))) == ((1, "b"), None)


def test_a_batch_after_changes_or_a_finished_snapshot_opens_a_new_snapshot() -> None:
    # when_needed: the changes after S were lost; the batch begins a snapshot at LATER
    assert snapshot_keys(at(S), at(LATER, SnapshotCursor(8))) == (None, 8)
    done = at(S, SnapshotCursor(None, done=True))
    assert snapshot_keys(done, at(LATER, SnapshotCursor(None, done=True))) == (None, None)


def test_a_batch_between_change_offsets_reads_changes() -> None:
    assert snapshot_keys(at(S), at(LATER)) is None
    assert snapshot_keys(at(S, SnapshotCursor(None, done=True)), at(LATER)) is None


def test_a_batch_that_would_leave_a_snapshot_unfinished_is_refused() -> None:
    with pytest.raises(StateFileError, match="cannot leave a snapshot unfinished"):
        snapshot_keys(at(S, SnapshotCursor(3)), at(LATER))
