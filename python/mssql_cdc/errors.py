"""The exception tree of mssql-cdc: one root, data loss and schema changes as their own types.

Errors keep their facts as fields and pickle, because Spark executors raise them and the driver
re-raises them.
`is_data_loss` and `is_schema_changed` walk an error's chain by the same rules (decision 1370).
"""

from __future__ import annotations

__all__ = [
    "QUOTED_MAX",
    "ArgumentError",
    "BusyError",
    "CaptureError",
    "CaptureInstanceLimitError",
    "ClockError",
    "ConfigError",
    "ConnectError",
    "ConnectionLostError",
    "ConstraintError",
    "DataLossError",
    "DiskFullError",
    "EmulatorError",
    "FileFormatError",
    "FormatVersionError",
    "HookError",
    "InternalError",
    "InvalidRangeError",
    "LockTimeoutError",
    "MssqlCdcError",
    "NativeStateError",
    "PermissionDeniedError",
    "SchemaChangedError",
    "SchemaError",
    "StateFileError",
    "StreamFailedError",
    "UnknownObjectError",
    "from_native",
    "is_data_loss",
    "is_schema_changed",
    "quoted",
]

QUOTED_MAX = 80
"""The most characters of a caller's value an error message quotes (`quoted`)."""


def quoted(value: object, limit: int = QUOTED_MAX) -> str:
    """`repr(value)` for an error message, cut after `limit` characters with the full length.

    A message names the value it refuses, but a 5,000-character name quoted whole buries the
    message; the start of it is enough to recognize.
    """
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class MssqlCdcError(Exception):
    """Root of every error this library raises on purpose."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


class ConfigError(MssqlCdcError, ValueError):
    """An argument, option or path is invalid; nothing was written or started."""


class StateFileError(MssqlCdcError, ValueError):
    """A stored state file (generation state, checkpoint offset) cannot be read as valid."""


class InternalError(MssqlCdcError):
    """A rule of the library's own broke: a state its code cannot reach, or data it wrote that it
    read back inconsistent. Not a wrong option or argument (that is ConfigError).

    The message says what was found; the text adds that this is a bug to report. Nothing the
    caller passed can fix it, so do not catch it to retry with other arguments.
    """

    REPORT = (
        "; this is a bug in mssql-cdc: please report it, with this message, at "
        "https://github.com/mssql-cdc/mssql-cdc/issues"
    )

    def __str__(self) -> str:
        # The advice is added here, not to args, so the error pickles and re-raises unchanged.
        return super().__str__() + self.REPORT


class DataLossError(MssqlCdcError):
    """CDC cleanup deleted changes this stream had not read yet.

    `first_lsn` is the first LSN the stream still needed, `min_lsn` the oldest the instance
    holds (None when unknown), and `possible` is True when a task found cleanup mid-read (rows
    may be missing) rather than the driver finding the range purged before reading.
    """

    def __init__(
        self,
        message: str,
        capture_instance: str = "",
        lost_from_ts: str | None = None,
        lost_to_ts: str | None = None,
        first_lsn: str | None = None,
        min_lsn: str | None = None,
        possible: bool = False,
    ) -> None:
        # All facts go to args, so the error pickles from an executor to the driver intact.
        super().__init__(
            message, capture_instance, lost_from_ts, lost_to_ts, first_lsn, min_lsn, possible
        )
        self.capture_instance = capture_instance
        self.lost_from_ts = lost_from_ts
        self.lost_to_ts = lost_to_ts
        self.first_lsn = first_lsn
        self.min_lsn = min_lsn
        self.possible = possible


class SchemaChangedError(MssqlCdcError):
    """A captured column changed in a way the stream cannot carry on through."""

    def __init__(self, message: str, capture_instance: str = "") -> None:
        super().__init__(message, capture_instance)
        self.capture_instance = capture_instance


class StreamFailedError(MssqlCdcError):
    """One stream of a fan-out job failed; `app_id` and `capture_instance` name it, and the
    stream's own error is the `__cause__` (`is_data_loss` follows it)."""

    def __init__(self, message: str, app_id: str = "", capture_instance: str = "") -> None:
        super().__init__(message, app_id, capture_instance)
        self.app_id = app_id
        self.capture_instance = capture_instance


class NativeStateError(MssqlCdcError):
    """The native core refused an operation that is not allowed in the current state; raised to
    users when two jobs recover the same stream at once (docs/operations.md)."""


class DiskFullError(MssqlCdcError):
    """The file system holding a folder the run writes (the checkpoint, `metricsPath`) has no
    room: `path` names the folder and `free_bytes` what was free. Nothing was started; free
    space there and run again."""

    def __init__(self, message: str, path: str = "", free_bytes: int = 0) -> None:
        super().__init__(message, path, free_bytes)
        self.path = path
        self.free_bytes = free_bytes


class ConnectionLostError(MssqlCdcError, ConnectionError):
    """The connection to SQL Server broke while a result was arriving, and the driver ended the
    result as if it were whole: the rows read are not all. Transient (SQLSTATE 08S01): the
    read is retried on a new connection."""

    sqlstate = "08S01"


class LockTimeoutError(MssqlCdcError, TimeoutError):
    """A source-table read at READ COMMITTED waited longer than `lock_timeout_ms` (the
    lockTimeoutMs option) for rows an open transaction holds: SQL Server's error 1222, which
    is the driver or emulator error in `__cause__`. Not retried on a new connection; a rerun
    of the read waits again."""

    def __init__(self, message: str, table: str = "", lock_timeout_ms: int | None = None) -> None:
        super().__init__(message, table, lock_timeout_ms)
        self.table = table
        self.lock_timeout_ms = lock_timeout_ms


class ConnectError(MssqlCdcError, ConnectionError):
    """A connection to SQL Server could not be opened; `server` names it (never a password).

    The driver's own error is the `__cause__`; whether a retry may help is the driver error's
    to say (`sqlserver.tsql.retry.is_transient` looks through to it).
    """

    def __init__(self, message: str, server: str = "") -> None:
        super().__init__(message, server)
        self.server = server


# The SQL Server CDC emulator's errors (docs/emulator.md); mssql_cdc.emulator re-exports them.


class EmulatorError(MssqlCdcError):
    """An error of the SQL Server CDC emulator; `number` is SQL Server's error number or None."""

    def __init__(self, message: str, number: int | None = None) -> None:
        super().__init__(message, number)
        self.number = number


class UnknownObjectError(EmulatorError, LookupError):
    """An unknown table, column (207) or capture instance (208)."""


class SchemaError(EmulatorError, ValueError):
    """A bad type or name; a duplicate table, column or instance; DDL on a key column."""


class CaptureInstanceLimitError(SchemaError):
    """A table already has two capture instances."""


class ConstraintError(EmulatorError, ValueError):
    """A row breaks a rule: 2627, 515, 2628, 8115, 273, 7139, a missing key, a locked key."""


class ClockError(EmulatorError, ValueError):
    """A time before the emulator's last time."""


class InvalidRangeError(EmulatorError):
    """A change range the change function refuses (error 313)."""


class ArgumentError(EmulatorError, ValueError):
    """An argument SQL Server refuses with a numbered error (22964: a cleanup low water mark
    that is no entry of cdc.lsn_time_mapping)."""


class PermissionDeniedError(EmulatorError, PermissionError):
    """The reading user may not read a capture instance's change data (error 229): it is neither
    db_owner nor a member of the instance's gating role."""


class CaptureError(EmulatorError):
    """A capture cycle cannot apply a log record."""


class FileFormatError(EmulatorError, ValueError):
    """The file is not SQLite, or not an emulator file."""


class FormatVersionError(FileFormatError):
    """The file has a newer emulator format than this library reads."""


class BusyError(EmulatorError):
    """The file stayed locked past the busy timeout; retryable."""


class HookError(EmulatorError):
    """A fault hook failed when it fired; the hook is consumed."""


_EMULATOR_ERRORS: dict[str, type[EmulatorError]] = {
    "EmuUnknownObject": UnknownObjectError,
    "EmuSchema": SchemaError,
    "EmuInstanceLimit": CaptureInstanceLimitError,
    "EmuConstraint": ConstraintError,
    "EmuClock": ClockError,
    "EmuInvalidRange": InvalidRangeError,
    "EmuCapture": CaptureError,
    "EmuFileFormat": FileFormatError,
    "EmuFormatVersion": FormatVersionError,
    "EmuBusy": BusyError,
    "EmuHook": HookError,
    "EmuArgument": ArgumentError,
    "EmuPermission": PermissionDeniedError,
}


# The Spark exceptions that carry a Python worker's error back as text naming its class.
_SPARK_WRAPPERS = ("StreamingQueryException", "PythonException")


def _in_chain(exc: BaseException, kind: type[MssqlCdcError]) -> bool:
    """Tell whether `exc` or an error of its `__cause__`/`__context__` chain is a `kind`, or a
    Spark wrapper whose text names `kind`'s class. Not an exception at all: False."""
    if not isinstance(exc, BaseException):
        return False
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, kind):
            return True
        if type(current).__name__ in _SPARK_WRAPPERS and kind.__name__ in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def is_data_loss(exc: BaseException) -> bool:
    """Tell whether `exc` is a DataLossError, also one wrapped by Spark on its way back.

    Spark re-raises a Python data source's error as a StreamingQueryException whose text holds
    the original class name; the cause chain is followed too. Anything that is not an
    exception (None, a message string) is no data loss: False.
    """
    return _in_chain(exc, DataLossError)


def is_schema_changed(exc: BaseException) -> bool:
    """Tell whether `exc` is a SchemaChangedError, also one wrapped by Spark on its way back.

    The same rules as `is_data_loss`: the error itself, its `__cause__`/`__context__` chain,
    and Spark's StreamingQueryException or PythonException whose text names the class.
    Anything that is not an exception (None, a message string) is no schema change: False.
    """
    return _in_chain(exc, SchemaChangedError)


def from_native(kind: str, message: str, number: int = 0) -> BaseException:
    """Build the Python error for a `mssqlcdc::Error` raised by the native core."""
    emulator_error = _EMULATOR_ERRORS.get(kind)
    if emulator_error is not None:
        return emulator_error(message, number or None)
    if kind == "FileExists":
        return FileExistsError(message)
    if kind == "FileNotFound":
        return FileNotFoundError(message)
    if kind == "Type":
        return TypeError(message)
    if kind == "InvalidArgument":
        return ConfigError(message)
    if kind == "OutOfRange":
        return OverflowError(message)
    if kind == "Io":
        return OSError(message)
    if kind == "Corrupt":
        return StateFileError(message)
    if kind == "DataLoss":
        return DataLossError(message)
    return NativeStateError(message)
