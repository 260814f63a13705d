"""The source's event record: the one type the source writes and the sink reads.

Planning writes a batch's certain skips, DDL and instance switches as event files; a task puts
its possible skips in its range file's `events`; the sink turns each record into a facts row.
The JSON form is the file contract: a stream upgraded mid-batch reads the files the previous
version wrote, so keys keep their names, order and meaning, and are only ever added
(docs/source.md, 'Events and metrics files'; decision 0208).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from mssql_cdc.core.metrics_files import EVENT_KINDS, EventJson, EventKind, event_file_name
from mssql_cdc.errors import StateFileError

__all__ = ["EventRecord"]

_TEXT_KEYS = ("capture_instance", "lsn", "batch_start_lsn", "batch_end_lsn")
_TIME_KEYS = ("commit_ts", "lost_from_ts", "lost_to_ts")


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One source event of a batch, as its file holds it.

    `lsn` is a skip's min_lsn (where reading resumes), the DDL's LSN or the switch's S, and
    `commit_ts` its commit time (UTC text, None when unknown). `detail` becomes the facts row's
    `detail` as it is, keys in their order. `lost_from_ts` and `lost_to_ts` bound a skip's gap
    and are None for the other events.
    """

    event: EventKind
    capture_instance: str
    lsn: str
    commit_ts: str | None
    detail: Mapping[str, Any]
    lost_from_ts: str | None
    lost_to_ts: str | None
    batch_start_lsn: str
    batch_end_lsn: str

    @property
    def file_name(self) -> str:
        """`event-<kind>-<ci>-<lsn>.json`; a skip is named by its first lost LSN (`from`), which a
        replan after more cleanup finds again, so the replan rewrites the same file."""
        at = str(self.detail["from"]) if self.event == "data_skipped" else self.lsn
        return event_file_name(self.event, self.capture_instance, at)

    def to_json(self) -> EventJson:
        """The record's JSON object, keys in the order every version of the library wrote."""
        return {
            "event": self.event,
            "capture_instance": self.capture_instance,
            "lsn": self.lsn,
            "commit_ts": self.commit_ts,
            "detail": dict(self.detail),
            "lost_from_ts": self.lost_from_ts,
            "lost_to_ts": self.lost_to_ts,
            "batch_start_lsn": self.batch_start_lsn,
            "batch_end_lsn": self.batch_end_lsn,
        }

    @classmethod
    def from_json(cls, payload: object, *, where: str) -> EventRecord:
        """Read a record written by `to_json`, by this or an earlier version of the library.

        Args:
            payload: the parsed JSON value.
            where: names the record in an error: its file, and its place in the file.
        Raises:
            StateFileError (a ValueError): the value is not such a record; the message names
                `where` and the first key at fault.
        """
        if not isinstance(payload, dict):
            raise _refused(where, f"holds a JSON {type(payload).__name__}, not an object")
        event = payload.get("event")
        if event not in EVENT_KINDS:
            raise _refused(where, f"its event {event!r} is not one of {_kinds()}")
        for key in _TEXT_KEYS:
            if not isinstance(payload.get(key), str):
                raise _refused(where, f"its {key} is not a string")
        for key in _TIME_KEYS:
            if key not in payload or not isinstance(payload[key], str | None):
                raise _refused(where, f"its {key} is neither a string nor null")
        detail = payload.get("detail")
        if not isinstance(detail, dict):
            raise _refused(where, "its detail is not an object")
        if event == "data_skipped":  # the gap the facts readers and the file name need
            for key in ("from", "to"):
                if not isinstance(detail.get(key), str):
                    raise _refused(where, f"its detail's {key} is not a string")
        return cls(
            event=cast("EventKind", event),
            capture_instance=payload["capture_instance"],
            lsn=payload["lsn"],
            commit_ts=payload["commit_ts"],
            detail=dict(detail),
            lost_from_ts=payload["lost_from_ts"],
            lost_to_ts=payload["lost_to_ts"],
            batch_start_lsn=payload["batch_start_lsn"],
            batch_end_lsn=payload["batch_end_lsn"],
        )


def _kinds() -> str:
    return ", ".join(sorted(EVENT_KINDS))


def _refused(where: str, problem: str) -> StateFileError:
    return StateFileError(f"{where} is not a source event record: {problem}")
