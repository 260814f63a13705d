"""The checkpoint toolkit: what a Spark checkpoint processed, and which generation is live.

A thin typed face over `mssql_cdc._native.checkpoint` (C++), which reads Spark's offset log
format v1 and reads and atomically writes `<checkpoint>/_mssql_cdc_generation.json`
(docs/data-loss.md, 'What happens on a loss'; decision 0151).
Everything here works on paths that Python and Spark resolve to the same directory: a local
path or a Volume. A URI or `/dbfs/...` is refused before any file is touched.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mssql_cdc._native as _native
from mssql_cdc.core.lsn import Lsn
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.errors import ConfigError, StateFileError

if TYPE_CHECKING:  # the binding's dict shapes exist only in _native.pyi
    from mssql_cdc._native import OffsetDict, StateDict

__all__ = [
    "MAX_GENERATION",
    "STATE_FILE_NAME",
    "GenerationPaths",
    "GenerationState",
    "LastOffset",
    "StreamOffset",
    "check_checkpoint_path",
    "has_metadata",
    "in_family",
    "is_uri",
    "last_processed_offset",
    "live_paths",
    "offset_from_native",
    "offset_line",
    "offset_to_native",
    "read_state",
    "replace_state",
    "spark_only",
    "write_state",
]

STATE_FILE_NAME = _native.checkpoint.STATE_FILE_NAME
MAX_GENERATION = 1_000_000_000
"""The highest generation the state file holds: the native reader refuses a larger one as
corrupt, so nothing may name one. A unit test keeps the two in step."""

# A scheme has two or more characters, so a Windows drive letter ("C:") is not one.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def offset_to_native(offset: StreamOffset) -> OffsetDict:
    """The binding's dict form of an offset."""
    return {"lsn": offset.lsn, "commit_ts": offset.commit_ts}


def offset_from_native(d: OffsetDict) -> StreamOffset:
    """An offset from the binding's dict form ("" and None both mean an unknown time)."""
    return StreamOffset(lsn=Lsn(d["lsn"]), commit_ts=d["commit_ts"] or None)


def offset_line(offset: StreamOffset) -> str:
    """The offset as the source writes it on line 3 of `offsets/<n>`."""
    return _native.checkpoint.source_offset_json(offset_to_native(offset))


@dataclass(frozen=True, slots=True)
class GenerationState:
    """The content of `_mssql_cdc_generation.json`.

    `snapshot` and `at` are set exactly when `generation > 0`; `recovering` and `failed_at`
    only while a recovery is open.
    """

    generation: int = 0
    snapshot: StreamOffset | None = None
    at: str | None = None
    recovering: StreamOffset | None = None
    failed_at: str | None = None

    def to_native(self) -> StateDict:
        return {
            "generation": self.generation,
            "snapshot": offset_to_native(self.snapshot) if self.snapshot else None,
            "at": self.at,
            "recovering": offset_to_native(self.recovering) if self.recovering else None,
            "failed_at": self.failed_at,
        }

    @classmethod
    def from_native(cls, d: StateDict) -> GenerationState:
        snapshot, recovering = d["snapshot"], d["recovering"]
        return cls(
            generation=d["generation"],
            snapshot=offset_from_native(snapshot) if snapshot else None,
            at=d["at"],
            recovering=offset_from_native(recovering) if recovering else None,
            failed_at=d["failed_at"],
        )


@dataclass(frozen=True, slots=True)
class LastOffset:
    """The last batch a Spark checkpoint committed, and line 3 of its offsets file."""

    batch_id: int
    source_json: str  # exactly as Spark wrote it
    file: str

    def offset(self) -> StreamOffset:
        """The line read as this library's source offset.

        Raises:
            StateFileError: the line is not `{"lsn": ..., "commit_ts": ...}`.
        """
        return offset_from_native(
            _native.checkpoint.parse_source_offset(self.source_json, self.file)
        )


@dataclass(frozen=True, slots=True)
class GenerationPaths:
    """Where a generation runs: its Spark checkpoint, sink app id and metrics folder."""

    generation: int
    checkpoint: str
    app_id: str
    metrics_path: str
    state_file: str


def is_uri(checkpoint: str | os.PathLike[str]) -> bool:
    """Tell whether `checkpoint` is a URI (`dbfs:/`, `abfss://`, `s3://`, `file:`)."""
    return bool(_URI.match(os.fspath(checkpoint)))


def spark_only(checkpoint: str | os.PathLike[str]) -> bool:
    """Tell whether only Spark reads `checkpoint` as the stream's folder: a URI, or `/dbfs/...`,
    which Spark reads as `dbfs:/dbfs/...` and Python as `dbfs:/...`. Python opens no state file
    or generation there."""
    text = os.fspath(checkpoint)
    return is_uri(text) or text == "/dbfs" or text.startswith("/dbfs/")


def check_checkpoint_path(checkpoint: str | os.PathLike[str]) -> str:
    """Return `checkpoint` as an absolute local path, refusing what Python would misread.

    Raises:
        ConfigError: a URI, or `/dbfs/...`, which Spark reads as `dbfs:/dbfs/...` and Python
            as `dbfs:/...`: the pre-flight would see no commits and call a healthy stream
            purged.
    """
    text = os.fspath(checkpoint)
    if not text:
        raise ConfigError("checkpoint is empty; pass the stream's checkpoint folder")
    reason = ""
    if is_uri(text):
        reason = "it is a URI, which Python cannot open as a folder"
    elif text == "/dbfs" or text.startswith("/dbfs/"):
        reason = "Spark reads /dbfs/... as dbfs:/dbfs/... while Python reads it as dbfs:/..."
    if reason:
        raise ConfigError(
            f"checkpoint {text} must be a local path or a Volume that Python and Spark resolve "
            f"to the same directory ({reason}); use a local path or /Volumes/<catalog>/<schema>/"
            "<volume>/..."
        )
    return os.path.abspath(text)


_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _checked_root(checkpoint: str | os.PathLike[str]) -> str:
    """The checkpoint made absolute, once its state file, if any, is a regular file.

    The type is read with stat before anything opens the file: opening a named pipe for
    reading would wait for a writer forever.

    Raises:
        ConfigError: as check_checkpoint_path.
        StateFileError: the state file's name holds a folder, a pipe, a socket or a device.
    """
    root = check_checkpoint_path(checkpoint)
    file = os.path.join(root, STATE_FILE_NAME)
    try:
        mode = os.stat(file).st_mode
    except FileNotFoundError:
        return root
    except NotADirectoryError:
        return root  # the checkpoint is no folder: the native call names it
    if stat.S_ISREG(mode):
        return root
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
    raise StateFileError(
        f"the generation state file {file} is {kind}, not a regular file; the library never "
        f"opens it. Move it out of the checkpoint folder: the stream's state file is a "
        f"regular JSON file its recovery writes (generation 0 has none)"
    )


def read_state(checkpoint: str | os.PathLike[str]) -> GenerationState | None:
    """Read the generation state of the stream whose root checkpoint is `checkpoint`.

    Returns:
        The state, or None when there is no state file (generation 0).
    Raises:
        ConfigError: the path is a URI or /dbfs/... (see check_checkpoint_path).
        StateFileError: the file exists but is not a valid state, or is no regular file (a
            folder, a pipe, a socket, a device: never opened); never read as generation 0.
    """
    raw = _native.checkpoint.read_state(_checked_root(checkpoint))
    return GenerationState.from_native(raw) if raw is not None else None


def write_state(checkpoint: str | os.PathLike[str], state: GenerationState) -> None:
    """Replace the state file atomically (temporary file, fsync, rename, fsync of the folder),
    whatever it holds.

    Raises:
        ConfigError: an invalid path, or a state its generation cannot use.
        StateFileError: the state file's name holds no regular file (a folder, a pipe).
        OSError: the write failed; the old content is intact.
    """
    _native.checkpoint.write_state(_checked_root(checkpoint), state.to_native())


def replace_state(
    checkpoint: str | os.PathLike[str], expected: GenerationState, state: GenerationState
) -> bool:
    """Write `state` only while the file still holds `expected` (compare-and-set).

    No file compares equal to `GenerationState()`. There is no lock file (a FUSE mount
    promises no exclusive create, and a crashed run's lock would need a person): the file is
    read again and compared just before the atomic write, so only two runs writing within that
    moment can both pass, and either state is a valid start.

    Returns:
        True when written; False, writing nothing, when another run changed the state since
        `expected` was read: read it again and decide again.
    Raises:
        ConfigError: an invalid path, or a state its generation cannot use.
        StateFileError: the file holds no valid state, or is no regular file.
        OSError: the write failed; the old content is intact.
    """
    return _native.checkpoint.replace_state(
        _checked_root(checkpoint), expected.to_native(), state.to_native()
    )


def last_processed_offset(spark_checkpoint: str | os.PathLike[str]) -> LastOffset | None:
    """The last batch the Spark checkpoint committed (offsets without a commit are replays).

    Returns:
        The batch and its source line, or None when nothing is committed.
    Raises:
        ConfigError: an invalid path, or an offset log version other than v1.
        StateFileError: the committed batch's offsets file is missing or truncated.
    """
    raw = _native.checkpoint.last_committed_offset(check_checkpoint_path(spark_checkpoint))
    if raw is None:
        return None
    batch_id, source_json, file = raw
    return LastOffset(batch_id=batch_id, source_json=source_json, file=file)


def has_metadata(spark_checkpoint: str | os.PathLike[str]) -> bool:
    """Tell whether Spark ever started a query on the checkpoint (its `metadata` file)."""
    return _native.checkpoint.has_metadata(check_checkpoint_path(spark_checkpoint))


def live_paths(
    checkpoint: str | os.PathLike[str],
    app_id: str,
    state: GenerationState | None,
    *,
    metrics_path: str | None = None,
) -> GenerationPaths:
    """The paths and sink app id of the live generation (generation 0 without a state).

    Raises:
        ConfigError: an invalid checkpoint, or an empty app_id.
    """
    generation = state.generation if state is not None else 0
    raw = _native.checkpoint.generation_paths(
        check_checkpoint_path(checkpoint), app_id, generation, metrics_path
    )
    return GenerationPaths(**raw)


def in_family(row_app_id: str, app_id: str, generation: int) -> bool:
    """Tell whether a facts row (`row_app_id`, `generation`) belongs to the stream `app_id`."""
    return _native.checkpoint.in_family(row_app_id, app_id, generation)
