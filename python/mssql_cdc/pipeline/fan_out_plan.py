"""A fan-out job's description, checked whole before Spark starts.

`plan_streams` turns the job's entries (`StreamEntry` values or mappings with the same keys)
and the settings they share into one `PlannedStream` per entry: its merged source options
parsed into a `SourceConfig`, and its `to_delta` arguments checked by the same rules
`to_delta` applies. Every refusal is a `ConfigError` naming the entry (`streams[3]
(dbo_items)`) and the field. Defaults derived from `root` are used only for a capture
instance whose name is a safe folder name. The streams' folders are compared resolved, so no
two spellings of one folder pass as two, and none lies inside another (decision 1310).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from mssql_cdc.core import Place, check_apart, did_you_mean, place
from mssql_cdc.errors import QUOTED_MAX, ConfigError, quoted
from mssql_cdc.options import OnDataLoss, SnapshotMode, SourceConfig, given_option
from mssql_cdc.pipeline.arguments import ToDeltaArgs, check_to_delta
from mssql_cdc.tables import table_ref

__all__ = [
    "ENTRY_FIELDS",
    "MAX_AT_ONCE",
    "JobSettings",
    "PlannedStream",
    "StreamEntry",
    "check_limit",
    "plan_streams",
]

MAX_AT_ONCE = 64
"""The most snapshots a job may read, or streams it may start, at once: beyond it a job
competes with itself for the driver's cores and the source."""

# A capture instance name from which folders and an app_id may be derived: the app_id grammar
# (letters, digits, '_', '-', '.') without a leading dot, so never '.', '..' or a hidden folder.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*\Z")


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamEntry:
    """One stream of a fan-out job; None takes the job's setting (or its root's default).

    Attributes:
        capture_instance: the capture instance the stream reads (required).
        target: its bronze table; None: `<root>/bronze/<capture_instance>`.
        app_id: its app_id; None: the capture instance's name (with `root` only).
        checkpoint: its checkpoint folder; None: `<root>/checkpoints/<capture_instance>`.
        options: source options merged over the job's options (not `captureInstance`).
        bootstrap: as to_delta's; None takes the job's.
        on_data_loss: "fail" or "resnapshot"; None takes the job's.
        snapshot: "full" or "chunked"; None takes the job's.
        resnapshot_interval_days: the anti-loop interval in days; None takes the job's.
        gap_deletes: as to_delta's; None takes the job's.

    A default from `root` is used only when the capture instance's name is a safe folder name
    and app_id; otherwise the entry gives target, app_id and checkpoint itself.
    """

    capture_instance: str
    target: str | None = None
    app_id: str | None = None
    checkpoint: str | None = None
    options: Mapping[str, object] = field(default_factory=dict)
    bootstrap: bool | None = None
    on_data_loss: OnDataLoss | None = None
    snapshot: SnapshotMode | None = None
    resnapshot_interval_days: float | None = None
    gap_deletes: bool | None = None


ENTRY_FIELDS = tuple(f.name for f in fields(StreamEntry))


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSettings:
    """The settings every stream shares unless its entry gives its own."""

    options: Mapping[str, object]
    facts_table: str
    root: str | None = None
    trigger: Mapping[str, Any] | None = None
    bootstrap: bool = False
    on_data_loss: OnDataLoss = "fail"
    snapshot: SnapshotMode = "full"
    resnapshot_interval_days: float = 7.0
    gap_deletes: bool = False


@dataclass(frozen=True, slots=True)
class PlannedStream:
    """One stream, checked: what `stream(...).to_delta(...)` is called with."""

    index: int
    config: SourceConfig
    options: Mapping[str, object]
    args: ToDeltaArgs

    @property
    def label(self) -> str:
        return f"streams[{self.index}] ({self.config.capture_instance})"


def plan_streams(streams: object, settings: JobSettings) -> tuple[PlannedStream, ...]:
    """Check the whole job and return its streams in the given order.

    Raises:
        ConfigError: the first defect found, naming the entry and the field: an unknown key
            (with the closest known one), a missing capture_instance, a target, app_id or
            checkpoint neither given nor derivable from root, a name unsafe to derive folders
            from, two entries with the same app_id, checkpoint or target (also differing only
            in case, or spelled differently: compared resolved), a folder of one entry inside
            another's or the facts table's, or anything `to_delta` itself would refuse.
    """
    if isinstance(streams, str | bytes) or not isinstance(streams, Sequence) or not streams:
        raise ConfigError(
            f"streams={_shown(streams)}: pass a non-empty list of streams, each a mapping such "
            "as {'capture_instance': 'dbo_orders'} or a StreamEntry"
        )
    shared = _options("options", settings.options)
    if not isinstance(settings.facts_table, str) or not settings.facts_table:
        raise ConfigError(
            f"facts_table={settings.facts_table!r}: pass the one facts table the streams share"
        )
    root = _root(settings.root)
    planned = [
        _plan_one(i, _stream_entry(i, raw), settings, shared, root) for i, raw in enumerate(streams)
    ]
    _refuse_duplicates(planned)
    _refuse_overlaps(planned, settings.facts_table)
    return tuple(planned)


def check_limit(name: str, value: object, what: str) -> int:
    """`value` as given, when it is a whole number from 1 to MAX_AT_ONCE."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_AT_ONCE:
        raise ConfigError(
            f"{name}={value!r}: pass how many {what}, a whole number from 1 to {MAX_AT_ONCE}"
        )
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _options(where: str, value: object) -> dict[str, object]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}={_shown(value)}: pass a mapping of source option names")
    if given_option(value, "captureInstance"):
        raise ConfigError(
            f"{where} gives captureInstance: each stream names its own capture instance in its "
            "capture_instance field"
        )
    return dict(value)


def _root(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        raise ConfigError(f"root={_shown(value)}: pass the folder the derived defaults go under")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise ConfigError(f"root={_shown(value)}: pass the folder as a str path")
    return text.rstrip("/") or "/"


def _stream_entry(index: int, raw: object) -> StreamEntry:
    if isinstance(raw, StreamEntry):
        entry = raw
    elif isinstance(raw, Mapping):
        unknown = [k for k in raw if k not in ENTRY_FIELDS]
        if unknown:
            key = str(unknown[0])
            raise ConfigError(
                f"streams[{index}]: unknown field {key!r}{did_you_mean(key, ENTRY_FIELDS)}; "
                f"a stream takes {', '.join(ENTRY_FIELDS)}"
            )
        entry = StreamEntry(**{str(k): v for k, v in raw.items()})  # types checked below
    else:
        raise ConfigError(
            f"streams[{index}]={_shown(raw)}: pass a mapping such as "
            "{'capture_instance': 'dbo_orders'} or a StreamEntry"
        )
    if not isinstance(entry.capture_instance, str) or not entry.capture_instance.strip():
        raise ConfigError(
            f"streams[{index}]: capture_instance={_shown(entry.capture_instance)}: pass the name "
            "of the capture instance this stream reads"
        )
    return entry


def _plan_one(
    index: int,
    entry: StreamEntry,
    settings: JobSettings,
    shared: Mapping[str, object],
    root: str | None,
) -> PlannedStream:
    name = entry.capture_instance.strip()
    label = f"streams[{index}] ({name if len(name) <= QUOTED_MAX else quoted(name)})"
    own = _options(f"{label}: options", entry.options)
    options = {**shared, **own, "captureInstance": name}
    target = _given_or_derived(label, "target", entry.target, root, name, "bronze")
    checkpoint = _given_or_derived(label, "checkpoint", entry.checkpoint, root, name, "checkpoints")
    app_id = entry.app_id
    if app_id is None:
        _require_derivable(label, "app_id", root, name)
        app_id = name
    try:
        config = SourceConfig.from_options(options)
        args = check_to_delta(
            config,
            options,
            target=target,
            app_id=app_id,
            checkpoint=checkpoint,
            facts_table=settings.facts_table,
            bootstrap=_own_or_shared(entry.bootstrap, settings.bootstrap),
            on_data_loss=_own_or_shared(entry.on_data_loss, settings.on_data_loss),
            interval_days=_own_or_shared(
                entry.resnapshot_interval_days, settings.resnapshot_interval_days
            ),
            mode=_own_or_shared(entry.snapshot, settings.snapshot),
            trigger=settings.trigger,
            gap_deletes=_own_or_shared(entry.gap_deletes, settings.gap_deletes),
        )
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    return PlannedStream(index, config, options, args)


def _own_or_shared(own: object, shared: object) -> Any:
    return shared if own is None else own


def _require_derivable(label: str, what: str, root: str | None, name: str) -> None:
    if root is None:
        raise ConfigError(
            f"{label}: {what} is missing; give the stream's {what}, or give the job a root to "
            "derive it from the capture instance's name"
        )
    if not _SAFE_NAME.match(name):
        raise ConfigError(
            f"{label}: cannot derive {what} from the capture instance's name {quoted(name)}: only "
            "letters, digits, '_', '-' and '.' (not first) make a safe folder name and app_id; "
            "give this stream its target, app_id and checkpoint"
        )


def _given_or_derived(
    label: str, what: str, given: object, root: str | None, name: str, folder: str
) -> object:
    if given is not None:
        return given
    _require_derivable(label, what, root, name)
    return f"{root}/{folder}/{name}"


def _refuse_duplicates(planned: list[PlannedStream]) -> None:
    """Two streams may share nothing but the facts table; folders and app_ids are compared
    ignoring case, since a case-insensitive file system would make them one."""
    for what in ("app_id", "checkpoint", "target"):
        seen: dict[str, PlannedStream] = {}
        for stream in planned:
            value = str(getattr(stream.args, what))
            key = value.lower()
            first = seen.setdefault(key, stream)
            if first is not stream:
                same = "the same" if str(getattr(first.args, what)) == value else "a case-variant"
                raise ConfigError(
                    f"{stream.label}: {what} {value!r} is {same} {what} as {first.label}'s; "
                    f"each stream needs its own {what}"
                )


def _refuse_overlaps(planned: list[PlannedStream], facts_table: str) -> None:
    """The streams' folders compared resolved: no checkpoint or table path of
    one stream is, or lies inside, another's or the shared facts table; catalog targets are
    compared as names."""
    names: dict[object, PlannedStream] = {}
    places: list[Place] = []
    facts = table_ref(facts_table, argument="facts_table")
    if facts.is_path:
        places.append(place(facts.text, what="facts_table"))
    for stream in planned:
        target = table_ref(stream.args.target, argument="target")
        if target.is_path:
            places.append(place(target.text, what=f"{stream.label}: target"))
        else:
            first = names.setdefault(target, stream)
            if first is not stream:
                raise ConfigError(
                    f"{stream.label}: target {target.text!r} names the same table as "
                    f"{first.label}'s target {first.args.target!r}; each stream needs its own "
                    "target"
                )
        places.append(place(stream.args.checkpoint, what=f"{stream.label}: checkpoint"))
    check_apart(places)
