"""The `detail` payloads of facts rows and their JSON (docs/tables.md, '`detail` payloads').

Keys are only ever added, never renamed, removed, retyped or given a new meaning; readers supply
the default of a key a row lacks (the `read_*` functions). Times in JSON are UTC text
"YYYY-MM-DDTHH:MM:SS.fff"; JSON is compact, keys in the listed order, never NaN.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Literal, NotRequired, TypedDict

from mssql_cdc.core import Mode

__all__ = [
    "BatchCommitMetadata",
    "BatchDetail",
    "CaptureInstanceSwitchedDetail",
    "DataSkippedDetail",
    "FactsCommitMetadata",
    "IntExtent",
    "KeysetExtent",
    "RepairDetail",
    "RequestedDetail",
    "SchemaChangeDetail",
    "SeededDetail",
    "SnapshotChunkDetail",
    "SnapshotCommitMetadata",
    "SnapshotCompletionDetail",
    "SnapshotOpenDetail",
    "SnapshotPlanDetail",
    "WaveChunk",
    "WaveCommitMetadata",
    "format_time",
    "json_key",
    "parse_time",
    "read_batch_commit",
    "read_data_skipped",
    "read_open",
    "to_json",
]

Key = Any
"""A key value: a scalar for a one-column key, a list for a composite one, None for an open end."""


class BatchDetail(TypedDict):
    warnings: list[str]


class IntExtent(TypedDict):
    kind: Literal["int"]
    lo: int | None
    hi: int | None
    rows: int | None


class KeysetExtent(TypedDict):
    kind: Literal["keyset"]
    max: Key


class RepairDetail(TypedDict):
    kind: Literal["int", "keyset"]
    chunks: list[list[Key]]  # the reconcile's top-level tiles, the snapshot's chunks
    differing: list[int]  # the chunks read from the source; the others are carried
    key_types: NotRequired[list[str | None]]  # the keys' SQL types, with collations


class SnapshotOpenDetail(TypedDict):
    mode: Mode
    kind: Literal["bootstrap", "resnapshot"]
    generation: int
    lost_from_ts: str | None
    lost_to_ts: str | None
    keys: NotRequired[list[str]]
    plan: NotRequired[IntExtent | KeysetExtent | None]
    requested: NotRequired[bool]  # a re-snapshot a person asked for, not a loss (issue 20)
    gap_deletes: NotRequired[bool]  # its completion derives the gap's deletes
    repair: NotRequired[RepairDetail]  # reconcile(repair=True)'s plan of tiles


class SnapshotPlanDetail(TypedDict):
    snapshot: str
    kind: Literal["int", "keyset"]
    keys: list[str]
    chunk_rows: int
    chunks: list[list[Key]]


class SnapshotChunkDetail(TypedDict):
    snapshot: str
    chunk: int
    wave: int
    lo: Key
    hi: Key
    last: bool
    carried: NotRequired[bool]  # an equal tile: written from bronze's image, not read


class SnapshotCompletionDetail(TypedDict):
    snapshot: str
    chunks: int
    rows: int
    last_lsn: str | None
    read: NotRequired[int]  # a repair's chunks read from the source
    carried: NotRequired[int]  # and those written from bronze's images


class RequestedDetail(TypedDict):
    """A full re-snapshot's completion row when a person asked for it (no loss)."""

    requested: bool


class SeededDetail(TypedDict):
    """A bootstrap row recorded by `seed()`: the copy another tool loaded, not a read."""

    seeded_from: str


class SchemaChangeDetail(TypedDict):
    capture_instance: str
    ddl: str


class CaptureInstanceSwitchedDetail(TypedDict):
    old: str
    new: str
    uncaptured: list[str]


# "from" is a Python keyword, hence the functional form.
DataSkippedDetail = TypedDict(
    "DataSkippedDetail",
    {
        "from": str,
        "to": str,
        "certain": bool,
        "reason": NotRequired[str],
        "capture_instance": str | None,
    },
)


class BatchCommitMetadata(TypedDict):
    """`userMetadata` of a micro-batch's bronze commit (docs/sink.md step 6).

    Written before the batch is read, so it names the batch only. Commits written by earlier
    versions carry the batch's counts too (`rows`, `min_lsn`, ..., `deletes`) and no
    `generation`; `read_batch_commit` reads both shapes.
    """

    batch_id: int
    app_id: str  # the sink id
    generation: int


class FactsCommitMetadata(TypedDict):
    """`userMetadata` of a micro-batch's facts commit: its batch row and source events only,
    never a snapshot event, which lets the pre-flight keep its cache over it (`family_cache`)."""

    facts: Literal["batch"]
    app_id: str  # the sink id
    batch_id: int


class SnapshotCommitMetadata(TypedDict):
    """`userMetadata` of a full snapshot's one bronze commit; history is searched for it."""

    snapshot: str
    lsn: str
    commit_ts: str | None


class WaveChunk(TypedDict):
    chunk: int
    lo: Key
    hi: Key
    last: bool
    rows: int | None
    high_lsn: str | None
    read_seconds: float
    read_mb: float


class WaveCommitMetadata(TypedDict):
    """`userMetadata` of a chunked wave's bronze commit: `backfill` is `A#snap.<S>`."""

    backfill: str
    wave: int
    lsn: str
    attempt: str
    chunks: list[WaveChunk]


def format_time(value: datetime | None) -> str | None:
    """Return a time as JSON text (UTC, milliseconds, no suffix); None stays None."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"


def parse_time(text: str | datetime | None) -> datetime | None:
    """Return a naive UTC datetime from JSON time text; None and "" are None.

    Raises:
        ValueError: the text is not an ISO-8601 time; the message quotes it.
    """
    if text is None or text == "":
        return None
    if isinstance(text, datetime):
        value = text
    else:
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"time {text!r} is not ISO-8601 UTC text like 2026-10-01T02:00:00.000"
            ) from None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def json_key(value: object) -> Key:
    """Return a key value as JSON can hold it: binary as 0x hex, other non-JSON values as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "0x" + bytes(value).hex().upper()
    if isinstance(value, list | tuple):
        return [json_key(v) for v in value]
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, date | Decimal):
        return str(value)
    return str(value)


def to_json(payload: Mapping[str, Any] | None) -> str | None:
    """Return the compact JSON of a payload, keys in their order; None stays None.

    Raises:
        ValueError: the payload holds NaN or infinity.
    """
    if payload is None:
        return None
    return json.dumps(payload, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def read_open(detail: str | Mapping[str, Any]) -> SnapshotOpenDetail:
    """Read a `snapshot_open` detail with the defaults of older rows.

    A missing `mode` is "chunked"; the pre-release `mode = "resnapshot"` reads as mode
    "chunked", kind "resnapshot"; a missing `kind` is "bootstrap".
    """
    raw = dict(json.loads(detail) if isinstance(detail, str) else detail)
    mode = raw.get("mode", "chunked")
    kind = raw.get("kind", "bootstrap")
    if mode == "resnapshot":
        mode, kind = "chunked", "resnapshot"
    result: SnapshotOpenDetail = {
        "mode": mode,
        "kind": kind,
        "generation": int(raw.get("generation", 0)),
        "lost_from_ts": raw.get("lost_from_ts"),
        "lost_to_ts": raw.get("lost_to_ts"),
    }
    if "keys" in raw:
        result["keys"] = list(raw["keys"])
    if "plan" in raw:
        result["plan"] = raw["plan"]
    if raw.get("gap_deletes"):
        result["gap_deletes"] = True
    if "repair" in raw:
        result["repair"] = raw["repair"]
    return result


def read_batch_commit(metadata: str | Mapping[str, Any]) -> BatchCommitMetadata | None:
    """Read a micro-batch bronze commit's `userMetadata`, of either shape; None for another
    commit's (a snapshot's, a wave's, another writer's text).

    The older shape's counts are ignored (the batch's facts row holds them); its missing
    `generation` is the sink id's (`A.g<n>` is generation n, `A` generation 0).
    """
    try:
        raw = json.loads(metadata) if isinstance(metadata, str) else metadata
    except ValueError:
        return None
    if not isinstance(raw, Mapping):
        return None
    batch_id, app_id = raw.get("batch_id"), raw.get("app_id")
    if type(batch_id) is not int or not isinstance(app_id, str) or "facts" in raw:
        return None
    generation = raw.get("generation")
    if type(generation) is not int:
        stem, dot, tail = app_id.rpartition(".g")
        generation = int(tail) if dot and stem and tail.isdigit() else 0
    return {"batch_id": batch_id, "app_id": app_id, "generation": generation}


def read_data_skipped(detail: str | Mapping[str, Any]) -> DataSkippedDetail:
    """Read a `data_skipped` detail: a missing `certain` is true, `capture_instance` None.

    The first, unreleased rows held the text "<from>..<to>"; it reads as a certain skip.
    """
    raw: Mapping[str, Any]
    if isinstance(detail, str):
        text = detail.strip()
        if not text.startswith("{") and ".." in text:
            start, end = text.strip('"').split("..", 1)
            return {"from": start, "to": end, "certain": True, "capture_instance": None}
        raw = json.loads(text)
    else:
        raw = detail
    result: DataSkippedDetail = {
        "from": raw["from"],
        "to": raw["to"],
        "certain": bool(raw.get("certain", True)),
        "capture_instance": raw.get("capture_instance"),
    }
    if "reason" in raw:
        result["reason"] = str(raw["reason"])
    return result
