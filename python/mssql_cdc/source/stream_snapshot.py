"""The source's own snapshot, option snapshotMode (docs/source.md, 'Snapshots in the stream';
decision 1395): its offsets and which keys a batch reads.

With `initial` or `when_needed`, an offset of `mssql_cdc` may hold one key beside `lsn` and
`commit_ts`: `snapshot`. While the stream reads its snapshot stamped S (`lsn` = S), it is the
JSON text of the first key not read yet (`null`: none read); once every row is read, `done`.
An offset without it is a change offset, exactly as every offset before the option was, so a
checkpoint written before reads on. With `when_needed`, an offset after an in-stream
re-snapshot also holds `resnapshot_at`: when the stream last re-snapshotted (UTC, ISO text), the
anti-loop guard's memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mssql_cdc.core import StreamOffset
from mssql_cdc.errors import StateFileError
from mssql_cdc.options import KeyBound

__all__ = [
    "DONE",
    "SnapshotCursor",
    "SourceOffset",
    "snapshot_keys",
]

DONE = "done"
"""The `snapshot` value of the offset whose batch read the snapshot's last rows."""

_SNAPSHOT = "snapshot"
_RESNAPSHOT_AT = "resnapshot_at"


@dataclass(frozen=True, slots=True)
class SnapshotCursor:
    """Where a snapshot in the stream stands.

    Attributes:
        next_key: the first key not read yet (None: from the table's first key); unused once
            `done`.
        done: every row of the snapshot is read; the next batch reads changes after its S.
    """

    next_key: KeyBound
    done: bool = False

    def to_text(self) -> str:
        """The offset's `snapshot` value."""
        if self.done:
            return DONE
        key = self.next_key
        return json.dumps(list(key) if isinstance(key, tuple) else key)

    @classmethod
    def from_text(cls, text: object, *, where: str) -> SnapshotCursor:
        """Read the offset's `snapshot` value.

        Raises:
            StateFileError: it is neither `done` nor the JSON of a key.
        """
        if text == DONE:
            return cls(None, done=True)
        if not isinstance(text, str):
            raise StateFileError(f"{where}: its snapshot {text!r} is not text")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise StateFileError(f"{where}: its snapshot {text[:200]!r} is not JSON") from None
        return cls(_key(value, where))


def _key(value: object, where: str) -> KeyBound:
    def scalar(part: object) -> bool:
        return part is None or (isinstance(part, str | int | float) and not isinstance(part, bool))

    if isinstance(value, list) and value and all(scalar(p) for p in value):
        return tuple(value)
    if scalar(value):
        return value  # type: ignore[return-value]
    raise StateFileError(f"{where}: its snapshot key {value!r} is not a key (scalars or a list)")


@dataclass(frozen=True, slots=True)
class SourceOffset:
    """An offset of `mssql_cdc`: a change offset, or where a snapshot in the stream stands.

    Attributes:
        position: the LSN and its commit time; in a snapshot, its stamp S.
        cursor: None for a change offset, else how far the snapshot at S is read.
        resnapshot_at: when the stream last re-snapshotted after a loss (aware, UTC), or None.
    """

    position: StreamOffset
    cursor: SnapshotCursor | None = None
    resnapshot_at: datetime | None = None

    @property
    def reading(self) -> bool:
        """A snapshot is being read: the next batch reads more of its rows."""
        return self.cursor is not None and not self.cursor.done

    def to_json(self) -> dict[str, str]:
        """The offset as Spark stores it: `lsn`, `commit_ts`, then the snapshot's keys when any."""
        position = self.position.to_json()
        out = {"lsn": position["lsn"], "commit_ts": position["commit_ts"]}
        if self.cursor is not None:
            out[_SNAPSHOT] = self.cursor.to_text()
        if self.resnapshot_at is not None:
            out[_RESNAPSHOT_AT] = self.resnapshot_at.isoformat(timespec="microseconds")
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> SourceOffset:
        """Read an offset `to_json` wrote, or one written before the option (two keys only).

        Raises:
            StateFileError (a ValueError): the offset is malformed; the message quotes it.
        """
        where = f"stream offset {json.dumps(dict(value), default=str)[:200]}"
        extra = set(value) - {"lsn", "commit_ts", _SNAPSHOT, _RESNAPSHOT_AT}
        if extra:
            raise StateFileError(f"{where}: unknown keys {sorted(extra)}")
        position = StreamOffset.from_json({k: value.get(k) for k in ("lsn", "commit_ts")})
        cursor = None
        if _SNAPSHOT in value:
            cursor = SnapshotCursor.from_text(value[_SNAPSHOT], where=where)
        at = None
        if _RESNAPSHOT_AT in value:
            try:
                at = datetime.fromisoformat(str(value[_RESNAPSHOT_AT]))
            except ValueError:
                raise StateFileError(f"{where}: its resnapshot_at is not an ISO time") from None
        return cls(position, cursor, at)


def snapshot_keys(start: SourceOffset, end: SourceOffset) -> tuple[KeyBound, KeyBound] | None:
    """The keys `[lo, hi)` the batch `(start, end]` reads of its snapshot, or None when the
    batch reads changes. `lo` is None when the batch opens a snapshot, `hi` when it ends one.

    Raises:
        StateFileError: `end` is a change offset while `start` is inside a snapshot (no
            planner of this source writes that pair).
    """
    if end.cursor is None:
        if start.reading:
            raise StateFileError(
                f"stream offsets {start.to_json()} -> {end.to_json()}: a batch cannot leave a "
                "snapshot unfinished; start the query from a new checkpoint"
            )
        return None
    same = start.reading and start.position.lsn == end.position.lsn
    lo = start.cursor.next_key if same and start.cursor is not None else None
    hi = None if end.cursor.done else end.cursor.next_key
    return lo, hi
