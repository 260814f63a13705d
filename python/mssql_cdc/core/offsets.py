"""Stream offsets and LSN ranges, with the JSON forms Spark stores and pickles.

An offset's JSON is a checkpoint contract (docs/source.md, 'Offsets'): exactly
`{"lsn", "commit_ts"}`, both strings, written by Spark as the third line of `offsets/<n>` and
read back by the recovery pre-flight. It never changes shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

from mssql_cdc.core import lsn
from mssql_cdc.errors import StateFileError

__all__ = [
    "LsnRange",
    "Offset",
    "StreamOffset",
    "format_commit_ts",
    "initial_lsn",
    "is_canonical_lsn",
]

_CANONICAL = re.compile(r"^0x[0-9A-F]{20}$")
_COMMIT_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$")


class Offset(TypedDict):
    """The public offset: where a stream or snapshot stands, as JSON holds it.

    Attributes:
        lsn: the LSN, canonical: "0x" and 20 upper-case hex digits.
        commit_ts: the commit time of `lsn` in UTC, `YYYY-MM-DDTHH:MM:SS.mmm`; "" (never None)
            when unknown, such as an LSN SQL Server's lsn_time_mapping no longer holds.
    """

    lsn: str
    commit_ts: str


def is_canonical_lsn(text: object) -> bool:
    """Tell whether `text` is an LSN in canonical form ("0x" + 20 upper-case hex digits)."""
    return isinstance(text, str) and _CANONICAL.match(text) is not None


def format_commit_ts(moment: datetime | None) -> str:
    """Return `moment` (naive UTC) as `YYYY-MM-DDTHH:MM:SS.mmm`, truncated; "" for None."""
    if moment is None:
        return ""
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}"


@dataclass(frozen=True, slots=True)
class StreamOffset:
    """The last commit LSN a batch processed (the next batch starts after it) and its time.

    The value Spark's offset log holds for the `mssql_cdc` source; `to_json()` gives the public
    `Offset`.

    Attributes:
        lsn: the commit LSN, canonical ("0x" and 20 upper-case hex digits).
        commit_ts: its commit time, UTC, `YYYY-MM-DDTHH:MM:SS.mmm`; None when unknown (the
            JSON form then holds "").
    """

    lsn: lsn.Lsn
    commit_ts: str | None  # UTC, `YYYY-MM-DDTHH:MM:SS.mmm`; None when unknown

    def __post_init__(self) -> None:
        if not is_canonical_lsn(self.lsn):
            raise ValueError(f"StreamOffset: lsn {self.lsn!r} is not a canonical LSN")
        if self.commit_ts is not None and not _COMMIT_TS.match(self.commit_ts):
            raise ValueError(
                f"StreamOffset: commit_ts {self.commit_ts!r} is not YYYY-MM-DDTHH:MM:SS.mmm"
            )

    def to_json(self) -> Offset:
        return {"lsn": self.lsn, "commit_ts": self.commit_ts or ""}

    def to_text(self) -> str:
        """Return the offset line exactly as Spark writes it into `offsets/<n>`."""
        return json.dumps(self.to_json())

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | str) -> StreamOffset:
        """Read an offset from its dict or its JSON text.

        Raises:
            StateFileError (a ValueError): the offset is malformed; the message quotes it.
        """
        data: Any = value
        if isinstance(value, str):
            try:
                data = json.loads(value)
            except json.JSONDecodeError:
                raise StateFileError(_malformed(value, "it is not JSON")) from None
        if not isinstance(data, Mapping) or set(data) != {"lsn", "commit_ts"}:
            raise StateFileError(_malformed(value, 'it must have exactly "lsn" and "commit_ts"'))
        if not is_canonical_lsn(data["lsn"]):
            raise StateFileError(_malformed(value, "lsn is not 0x + 20 upper-case hex digits"))
        ts = data["commit_ts"]
        if not isinstance(ts, str) or (ts != "" and not _COMMIT_TS.match(ts)):
            raise StateFileError(_malformed(value, 'commit_ts is not "" or a UTC time with ms'))
        return cls(lsn.Lsn(data["lsn"]), ts or None)


def _malformed(value: object, why: str) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return f"malformed stream offset {text[:200]!r}: {why}"


@dataclass(frozen=True)
class LsnRange:
    """One Spark partition of a micro-batch: the closed LSN interval one task reads.

    Not slotted, so the Spark source can subclass it together with pyspark's InputPartition
    while this module stays free of pyspark. Fields hold only str, bool, None and tuples.

    Attributes:
        capture_instance: the capture instance the task reads.
        from_lsn: the first LSN of the range, canonical; at most `to_lsn`.
        to_lsn: the last LSN of the range, canonical (the range includes it).
        last: True for the one range of a batch whose `to_lsn` is the batch's end offset.
        start_ts: the commit time of the batch's start offset (UTC,
            `YYYY-MM-DDTHH:MM:SS.mmm`); None when unknown.
        null_columns: declared columns (option `columns`) this instance does not capture;
            the task reads them as NULL.
        time_zone: the source's time zone for its commit times: "UTC", a zone name, or a
            fixed offset "+HH:MM".
        batch_start_lsn: the batch's start offset (the LSN before its first change).
        batch_end_lsn: the batch's end offset; event records name the batch by both.
    """

    capture_instance: str
    from_lsn: str  # closed interval, canonical, from_lsn <= to_lsn
    to_lsn: str
    last: bool  # to_lsn is the batch's end offset (exactly one range per batch)
    start_ts: str | None  # commit time of the batch's start offset
    null_columns: tuple[str, ...]  # declared columns this instance does not capture
    time_zone: str  # "UTC", a zone name, or a fixed offset "+HH:MM"
    batch_start_lsn: str
    batch_end_lsn: str

    def __post_init__(self) -> None:
        for name in ("from_lsn", "to_lsn", "batch_start_lsn", "batch_end_lsn"):
            if not is_canonical_lsn(getattr(self, name)):
                raise ValueError(f"LsnRange: {name} {getattr(self, name)!r} is not canonical")
        if self.from_lsn > self.to_lsn:
            raise ValueError(f"LsnRange: from_lsn {self.from_lsn} is above to_lsn {self.to_lsn}")

    def to_json(self) -> dict[str, Any]:
        return {
            "capture_instance": self.capture_instance,
            "from_lsn": self.from_lsn,
            "to_lsn": self.to_lsn,
            "last": self.last,
            "start_ts": self.start_ts,
            "null_columns": list(self.null_columns),
            "time_zone": self.time_zone,
            "batch_start_lsn": self.batch_start_lsn,
            "batch_end_lsn": self.batch_end_lsn,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LsnRange:
        """Rebuild a range from `to_json`'s dict. Raises ValueError when a field is wrong."""
        try:
            return cls(
                capture_instance=str(data["capture_instance"]),
                from_lsn=str(data["from_lsn"]),
                to_lsn=str(data["to_lsn"]),
                last=bool(data["last"]),
                start_ts=None if data["start_ts"] is None else str(data["start_ts"]),
                null_columns=tuple(str(c) for c in data["null_columns"]),
                time_zone=str(data["time_zone"]),
                batch_start_lsn=str(data["batch_start_lsn"]),
                batch_end_lsn=str(data["batch_end_lsn"]),
            )
        except KeyError as exc:
            raise ValueError(f"LsnRange: field {exc.args[0]!r} is missing") from None


def _known(value: lsn.Lsn | None) -> lsn.Lsn | None:
    return None if value is None or value == lsn.ZERO else value


def initial_lsn(
    starting: Literal["earliest", "latest"] | lsn.Lsn,
    *,
    capture_instance: str,
    max_lsn: lsn.Lsn | None,
    oldest_min_lsn: lsn.Lsn | None,
    oldest_start_lsn: lsn.Lsn | None,
    start_lsn: lsn.Lsn | None,
) -> lsn.Lsn:
    """The LSN of a new checkpoint's initial offset, taken as processed (`startingLsn`).

    `earliest`: just below the oldest instance's min_lsn, else below its start LSN.
    `latest`: max_lsn, unless it is NULL or below the configured instance's `start_lsn`
    (capture has not reached a just-enabled instance): then just below that start LSN.
    An explicit LSN is returned as is; a purged one is the first batch's guard's business.

    Raises:
        ValueError: neither max_lsn nor any start LSN is known yet.
    """
    if starting not in ("earliest", "latest"):
        return lsn.Lsn(starting)
    if starting == "earliest":
        floor = _known(oldest_min_lsn) or _known(oldest_start_lsn)
        if floor is not None:
            return lsn.decrement(floor)
    else:
        known_start = _known(start_lsn)
        if max_lsn is not None and (known_start is None or max_lsn >= known_start):
            return max_lsn
        if known_start is not None:
            return lsn.decrement(known_start)
    raise ValueError(
        f"capture instance '{capture_instance}' has no start LSN yet; retry once the capture "
        "job has run"
    )
