"""`SourceConfig`: the typed, validated form of the source options (docs/source-options.md).

`SourceConfig.from_options` is the only reader of raw options; everything else takes the config.
`SourceConfig.to_options` is its inverse, the only writer of option text (for Spark's readers).
A bad value raises `ConfigError` (a `ValueError`) naming the option and what it accepts; the
connection string, the password and the token are never printed, logged or shown in a repr
(credentials apart from the connection string: decision 1385). Options named `fs.*` are
Hadoop's file-system settings (`fs.s3a.endpoint`, `fs.s3a.bucket.<b>.secret.key`), kept in
`store` for a `metricsPath` on an object store and never shown either (decision 1352).
`snapshotMode` is the source's own snapshots (decision 1395); `gapDeletesFrom` the table a
re-snapshot's gap deletes are derived from (decision 1426).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Literal, TypeVar

from mssql_cdc.core import Mode, StoreSettings, lsn
from mssql_cdc.errors import ConfigError, quoted
from mssql_cdc.options.connection_string import (
    MSSQL_PYTHON_KEYS,
    PYMSSQL_KEYS,
    ConnectionString,
)
from mssql_cdc.options.credentials import CREDENTIAL_OPTIONS, Credentials, parse_credentials
from mssql_cdc.options.declared_columns import (
    DeclaredColumn,
    SnapshotChunk,
    format_chunks,
    format_columns,
    format_keys,
    parse_chunks,
    parse_columns,
    parse_keys,
)
from mssql_cdc.options.reader import OptionReader, parse_lsn, shown

__all__ = [
    "BACKENDS",
    "KNOWN_OPTIONS",
    "MAX_ARROW_BATCH_SIZE",
    "MAX_COMMITS_PER_BATCH",
    "MAX_CONNECT_TIMEOUT",
    "MAX_LOCK_TIMEOUT_MS",
    "MAX_PARTITIONS",
    "Backend",
    "DurationGuard",
    "IsolationLevel",
    "OnDataLoss",
    "SchemaChangePolicy",
    "SnapshotMode",
    "SourceConfig",
    "StartingPosition",
    "StreamSnapshotMode",
]

Backend = Literal["mssql-python", "pymssql", "emulator"]
StartingPosition = Literal["earliest", "latest"]
SchemaChangePolicy = Literal["classify", "fail"]
IsolationLevel = Literal["readCommitted", "snapshot"]
DurationGuard = Literal["warn", "refuse", "off"]
# The modes of to_delta's arguments, beside the options' modes: the one definition of each.
OnDataLoss = Literal["fail", "resnapshot"]
# The source's own snapshots (option snapshotMode, docs/source-options.md).
StreamSnapshotMode = Literal["never", "initial", "when_needed"]
SnapshotMode = Mode  # one definition, in core, which the recovery decision crosses C++ with

BACKENDS: tuple[Backend, ...] = ("mssql-python", "pymssql", "emulator")
_POLICIES: tuple[SchemaChangePolicy, ...] = ("classify", "fail")
_ISOLATION: tuple[IsolationLevel, ...] = ("readCommitted", "snapshot")
_GUARDS: tuple[DurationGuard, ...] = ("warn", "refuse", "off")
_STREAM_SNAPSHOTS: tuple[StreamSnapshotMode, ...] = ("never", "initial", "when_needed")

KNOWN_OPTIONS = (
    "captureInstance",
    "connectionString",
    "backend",
    "emulatorPath",
    "connectTimeout",
    "startingLsn",
    "maxCommitsPerBatch",
    "numPartitions",
    "failOnDataLoss",
    "metricsPath",
    "includeCommandId",
    "arrowBatchSize",
    "columns",
    "sourceTimeZone",
    "schemaChangePolicy",
    "snapshotLsn",
    "snapshotChunks",
    "snapshotKeys",
    "isolationLevel",
    "lockTimeoutMs",
    "snapshotDurationGuard",
    "snapshotOnSwitch",
    "snapshotMode",
    "gapDeletesFrom",
    *CREDENTIAL_OPTIONS,
)
"""Every option either format or `to_delta` reads; one dict feeds them all, so none is unknown."""

_MAX_INSTANCE_NAME = 100
# The upper bounds of the numeric options: far above any real setting, and
# low enough that every value stays valid where it is used.
MAX_CONNECT_TIMEOUT = 86_400  # a day; FreeTDS keeps the login timeout in milliseconds in an int
MAX_COMMITS_PER_BATCH = 2**31 - 1  # an int everywhere: Spark's read limit, T-SQL's OFFSET
MAX_PARTITIONS = 32_767  # SQL Server's most user connections; each partition opens one
MAX_ARROW_BATCH_SIZE = 1_000_000  # the emulator's read streams take at most this many rows
MAX_LOCK_TIMEOUT_MS = 2**31 - 1  # SET LOCK_TIMEOUT takes an int
T = TypeVar("T")


@dataclass(frozen=True, slots=True, repr=False)
class SourceConfig:
    """The source options, parsed once. Field names are the options' in snake case."""

    capture_instance: str
    backend: Backend
    connection_string: ConnectionString | None  # None only with the emulator backend
    emulator_path: str | None
    connect_timeout: int
    starting_lsn: StartingPosition | lsn.Lsn
    max_commits_per_batch: int | None  # None: no limit
    num_partitions: int | None  # None: auto
    fail_on_data_loss: bool
    metrics_path: str | None
    include_command_id: bool
    arrow_batch_size: int
    columns: tuple[DeclaredColumn, ...] | None  # None: inferred from the capture instances
    source_time_zone: str  # "auto", "UTC" or a zone name the backend checks at load
    schema_change_policy: SchemaChangePolicy
    snapshot_lsn: lsn.Lsn | None
    snapshot_chunks: tuple[SnapshotChunk, ...] | None
    snapshot_keys: tuple[str, ...] | None
    isolation_level: IsolationLevel
    lock_timeout_ms: int | None  # None: wait for locks
    snapshot_duration_guard: DurationGuard
    # At a switch bronze cannot absorb, re-snapshot into the next generation.
    snapshot_on_switch: bool = False
    # `mssql_cdc` snapshots the table itself first (initial) and after a loss (when_needed).
    snapshot_mode: StreamSnapshotMode = "never"
    # With when_needed: the Delta table holding what the stream delivered, whose keys a
    # re-snapshot lacks become delete rows.
    gap_deletes_from: str | None = None
    # Credentials apart from the connection string; Credentials' repr hides the secrets.
    credentials: Credentials = field(default_factory=Credentials)
    # The `fs.*` options: how the executors reach a metricsPath on an object store.
    store: StoreSettings = field(default_factory=StoreSettings)

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> SourceConfig:
        """Parse and validate `options` (names ignoring case, values trimmed).

        Unknown names are logged once per process as a WARNING and otherwise ignored.

        Raises:
            ConfigError: a value is missing or invalid; the message names the option and what
                it accepts.
        """
        store = _store_options(options)
        plain = {k: v for k, v in options.items() if not _is_store_option(k)}
        opts = OptionReader(plain, KNOWN_OPTIONS)
        backend = opts.choice("backend", BACKENDS, default="mssql-python")
        connection = _connection_string(opts, backend)
        fail_on_data_loss = opts.boolean("failOnDataLoss", default=True)
        snapshot_mode = _snapshot_mode(opts, fail_on_data_loss=fail_on_data_loss)
        return cls(
            capture_instance=_capture_instance(opts),
            backend=backend,
            connection_string=connection,
            emulator_path=_emulator_path(opts, backend),
            connect_timeout=_count(opts, "connectTimeout", 30, MAX_CONNECT_TIMEOUT),
            starting_lsn=_starting_lsn(opts),
            max_commits_per_batch=opts.count(
                "maxCommitsPerBatch",
                default=None,
                maximum=MAX_COMMITS_PER_BATCH,
                hint="omit it for no limit",
            ),
            num_partitions=_num_partitions(opts),
            fail_on_data_loss=fail_on_data_loss,
            metrics_path=opts.folder("metricsPath"),
            include_command_id=opts.boolean("includeCommandId", default=True),
            arrow_batch_size=_count(opts, "arrowBatchSize", 10000, MAX_ARROW_BATCH_SIZE),
            columns=_optional(opts, "columns", parse_columns),
            source_time_zone=_time_zone(opts),
            schema_change_policy=opts.choice("schemaChangePolicy", _POLICIES, default="classify"),
            snapshot_lsn=opts.lsn("snapshotLsn"),
            snapshot_chunks=_optional(opts, "snapshotChunks", parse_chunks),
            snapshot_keys=_optional(opts, "snapshotKeys", parse_keys),
            isolation_level=_isolation(opts),
            lock_timeout_ms=opts.non_negative("lockTimeoutMs", maximum=MAX_LOCK_TIMEOUT_MS),
            snapshot_duration_guard=opts.choice("snapshotDurationGuard", _GUARDS, default="warn"),
            snapshot_on_switch=opts.boolean("snapshotOnSwitch", default=False),
            snapshot_mode=snapshot_mode,
            gap_deletes_from=_gap_deletes_from(opts, snapshot_mode),
            credentials=parse_credentials(
                {name: opts.untrimmed(name) for name in CREDENTIAL_OPTIONS}, backend, connection
            ),
            store=store,
        )

    def to_options(self) -> dict[str, str]:
        """The options, as text, that `from_options` parses back to this config.

        Every field with a value is written, defaults included, in its canonical spelling; a
        None field is left out, since leaving an option out is how None is said. The result
        holds the connection string and the credential options, password and token included,
        and the `fs.*` settings, keys included, for Spark's reader: hand it on, never log or
        print it.
        """
        connection = None if self.connection_string is None else self.connection_string.text
        chunks = None if self.snapshot_chunks is None else format_chunks(self.snapshot_chunks)
        values: dict[str, str | int | bool | None] = {
            "captureInstance": self.capture_instance,
            "backend": self.backend,
            "connectionString": connection,
            "emulatorPath": self.emulator_path,
            "connectTimeout": self.connect_timeout,
            "startingLsn": self.starting_lsn,
            "maxCommitsPerBatch": self.max_commits_per_batch,
            "numPartitions": self.num_partitions,
            "failOnDataLoss": self.fail_on_data_loss,
            "metricsPath": self.metrics_path,
            "includeCommandId": self.include_command_id,
            "arrowBatchSize": self.arrow_batch_size,
            "columns": None if self.columns is None else format_columns(self.columns),
            "sourceTimeZone": self.source_time_zone,
            "schemaChangePolicy": self.schema_change_policy,
            "snapshotLsn": self.snapshot_lsn,
            "snapshotChunks": chunks,
            "snapshotKeys": None if self.snapshot_keys is None else format_keys(self.snapshot_keys),
            "isolationLevel": self.isolation_level,
            "lockTimeoutMs": self.lock_timeout_ms,
            "snapshotDurationGuard": self.snapshot_duration_guard,
            "snapshotOnSwitch": self.snapshot_on_switch,
            "snapshotMode": self.snapshot_mode,
            "gapDeletesFrom": self.gap_deletes_from,
        }
        written = {name: _text(value) for name, value in values.items() if value is not None}
        return written | self.credentials.to_options() | self.store.to_options()

    def partitions(self, default_num_partitions: int | None) -> int:
        """Most partitions per batch or snapshot: `numPartitions`, or with `auto` Spark's
        default parallelism (None where unknown, e.g. Spark Connect), else the planner's CPU
        count, else 1."""
        if self.num_partitions is not None:
            return self.num_partitions
        if default_num_partitions is not None and default_num_partitions > 0:
            return default_num_partitions
        return os.cpu_count() or 1

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "connection_string" and value is not None:
                parts.append(f"{f.name}=<hidden>")
            else:
                parts.append(f"{f.name}={value!r}")
        return f"SourceConfig({', '.join(parts)})"


def _is_store_option(name: object) -> bool:
    return isinstance(name, str) and name.strip().lower().startswith("fs.")


def _store_options(options: Mapping[str, object]) -> StoreSettings:
    """The `fs.*` options, names trimmed, values as text (None: not given)."""
    return StoreSettings.of(
        {
            name.strip(): _text(value) if isinstance(value, (bool, int)) else str(value).strip()
            for name, value in options.items()
            if isinstance(name, str) and _is_store_option(name) and value is not None
        }
    )


def _text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _count(opts: OptionReader, name: str, default: int, maximum: int) -> int:
    value = opts.count(name, default=default, maximum=maximum)
    return default if value is None else value


def _capture_instance(opts: OptionReader) -> str:
    name = opts.required("captureInstance", hint="; name the capture instance to stream")
    if len(name) > _MAX_INSTANCE_NAME:
        raise ConfigError(
            f"option captureInstance is {len(name)} characters long; a capture instance name "
            f"has at most {_MAX_INSTANCE_NAME}"
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise ConfigError(
            f"option captureInstance {quoted(name)} holds a control character; give the name as "
            "sys.sp_cdc_help_change_data_capture lists it"
        )
    return name


def _connection_string(opts: OptionReader, backend: Backend) -> ConnectionString | None:
    text = opts.get("connectionString")
    if backend == "emulator":
        return None if not text else ConnectionString.parse(text)
    if not text:
        raise ConfigError(
            f"option connectionString is required with backend '{backend}'; give an "
            "ODBC-style string such as 'Server=host,1433;Database=db;UID=user;PWD=...', "
            "or use backend 'emulator'"
        )
    parsed = ConnectionString.parse(text)
    parsed.check_keys(PYMSSQL_KEYS if backend == "pymssql" else MSSQL_PYTHON_KEYS, backend=backend)
    return parsed


def _emulator_path(opts: OptionReader, backend: Backend) -> str | None:
    path = opts.local_path("emulatorPath")
    if backend != "emulator":
        if path is not None:
            raise ConfigError(
                f"option emulatorPath is set but backend is '{backend}'; set "
                "backend=emulator to read the emulator file, or remove emulatorPath"
            )
        return None
    if path is None:
        raise ConfigError("option emulatorPath is required with backend 'emulator'")
    if not os.path.isfile(path):
        raise ConfigError(
            f"option emulatorPath: no file at {shown(path)}; give the emulator database file, "
            "readable by the driver and every executor"
        )
    return path


def _starting_lsn(opts: OptionReader) -> StartingPosition | lsn.Lsn:
    value = opts.get("startingLsn")
    if value is None or value.lower() == "earliest":
        return "earliest"
    if value.lower() == "latest":
        return "latest"
    try:
        return parse_lsn(value)
    except (ValueError, OverflowError):
        raise ConfigError(
            "option startingLsn must be earliest, latest or an LSN (optional 0x and 1 to 20 "
            f"hex digits) (got {shown(value)})"
        ) from None


def _num_partitions(opts: OptionReader) -> int | None:
    value = opts.get("numPartitions")
    if value is None or value.lower() == "auto":
        return None
    return opts.count("numPartitions", default=None, maximum=MAX_PARTITIONS, hint="or auto")


def _time_zone(opts: OptionReader) -> str:
    value = opts.get("sourceTimeZone")
    if value is None or value.lower() == "auto":
        return "auto"
    if value.upper() == "UTC":
        return "UTC"
    if not value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value) or len(value) > 128:
        raise ConfigError(
            f"option sourceTimeZone must be auto, UTC or a time zone name (got {shown(value)})"
        )
    return value


def _isolation(opts: OptionReader) -> IsolationLevel:
    value = opts.get("isolationLevel")
    if value is not None and value.lower() in ("readuncommitted", "nolock"):
        raise ConfigError(
            f"option isolationLevel must be readCommitted or snapshot (got {shown(value)}); "
            "snapshots never read uncommitted rows: NOLOCK and READ UNCOMMITTED are never used"
        )
    return opts.choice("isolationLevel", _ISOLATION, default="readCommitted")


def _snapshot_mode(opts: OptionReader, *, fail_on_data_loss: bool) -> StreamSnapshotMode:
    mode = opts.choice("snapshotMode", _STREAM_SNAPSHOTS, default="never")
    if mode == "when_needed" and not fail_on_data_loss:
        raise ConfigError(
            "option snapshotMode=when_needed re-snapshots on a loss, and failOnDataLoss=false "
            "skips it: they contradict; remove failOnDataLoss=false (or choose snapshotMode "
            "never or initial)"
        )
    return mode


def _gap_deletes_from(opts: OptionReader, mode: StreamSnapshotMode) -> str | None:
    path = opts.folder("gapDeletesFrom")
    if path is not None and mode != "when_needed":
        raise ConfigError(
            f"option gapDeletesFrom names the table whose keys a re-snapshot's deletes come "
            f"from, and only snapshotMode=when_needed re-snapshots (got snapshotMode="
            f"{mode}); set snapshotMode=when_needed or remove gapDeletesFrom"
        )
    return path


def _optional(opts: OptionReader, name: str, parse: Callable[[str], T]) -> T | None:
    value = opts.get(name)
    if value is None:
        return None
    if value == "":
        raise ConfigError(f"option {name} must not be empty; omit it instead")
    return parse(value)
