"""Removing earlier generations of a stream's checkpoint (`mssql-cdc gc`, decision 0960).

The C++ toolkit decides what may go (`_native.checkpoint.plan_gc`: generations older than the
newest `keep`, never the live one, a newer one, a link or a file it does not know); this module
lists the checkpoint for it, checks that each entry holds only what Spark or the library
wrote (`core/gc_guard.py`, decision 1311; otherwise nothing is removed) and acts: each file is
measured just before it is removed, so a report counts only what this run removed. With
`metrics_path` and `app_id`, the removed generations' folders under that `metricsPath` go too.
Nothing outside the checkpoint (or that metrics folder) is touched, and no symbolic link is
followed.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mssql_cdc._native as _native
from mssql_cdc.core import checkpoint
from mssql_cdc.core.app_id import validate_app_id
from mssql_cdc.core.folders import check_cleanable_folder
from mssql_cdc.core.gc_guard import check_removable
from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from mssql_cdc._native import EntryKindName

__all__ = ["GcReport", "Removal", "collect_garbage"]

# A checkpoint keeps 1 to this many generations; a larger --keep is a typo, not a wish.
MAX_KEEP = 1_000_000


@dataclass(frozen=True, slots=True)
class Removal:
    """One folder or file of an earlier generation: removed, or to be removed by a dry run.

    `files` and `bytes` count what this run removed (each measured just before its removal),
    never what another gc removed meanwhile.
    """

    generation: int
    path: str  # absolute
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class KeptEntry:
    """An entry that looks like a generation's and is left in place, and why."""

    path: str
    why: str


@dataclass(frozen=True, slots=True)
class GcReport:
    """What `collect_garbage` removed (or, with `dry_run`, would remove) and kept."""

    checkpoint: str
    live_generation: int
    kept: tuple[int, ...]
    removed: tuple[Removal, ...]
    left: tuple[KeptEntry, ...]
    dry_run: bool
    # planned, but gone before this run reached them (another gc removed them)
    already_removed: tuple[Removal, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "checkpoint": self.checkpoint,
            "live_generation": self.live_generation,
            "kept": list(self.kept),
            "removed": [
                {"generation": r.generation, "path": r.path, "files": r.files, "bytes": r.bytes}
                for r in self.removed
            ],
            "left": [{"path": x.path, "why": x.why} for x in self.left],
            "dry_run": self.dry_run,
            "already_removed": [
                {"generation": r.generation, "path": r.path} for r in self.already_removed
            ],
        }


def _kind(entry: os.DirEntry[str]) -> EntryKindName:
    if entry.is_symlink():
        return "link"
    return "folder" if entry.is_dir(follow_symlinks=False) else "file"


def _listing(folder: str) -> list[tuple[str, EntryKindName]]:
    if not os.path.isdir(folder) or os.path.islink(folder):
        return []
    with os.scandir(folder) as entries:
        return [(e.name, _kind(e)) for e in entries]


def _size(path: str) -> tuple[int, int] | None:
    """Files and bytes under `path`, links counted as files and never followed; None when
    `path` is gone (another gc removed it)."""
    try:
        if not os.path.isdir(path) or os.path.islink(path):
            return 1, os.lstat(path).st_size
    except FileNotFoundError:
        return None
    files = size = 0
    for folder, _dirs, names in os.walk(path):
        for name in names:
            try:
                size += os.lstat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                continue
            files += 1
    return files, size


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(os.path.dirname(path))
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _check_keep(keep: object) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= MAX_KEEP:
        raise ConfigError(
            f"keep must be a whole number from 1 (the live generation only) to {MAX_KEEP:,}, "
            f"not {keep!r}"
        )
    return keep


def _metrics_folders(
    root: str, app_id: str | None, metrics_path: str | None, generations: set[int]
) -> list[tuple[int, str]]:
    if metrics_path is None:
        return []
    if app_id is None:
        raise ConfigError(
            "metrics_path needs app_id: pass the app_id given to to_delta, which names the "
            "generations' folders under metricsPath (<app_id>, <app_id>.g<n>)"
        )
    validate_app_id(app_id)
    checkpoint.check_checkpoint_path(metrics_path)
    # The sink's rule for the folder it cleans: never the filesystem root,
    # the home or working folder, or a parent of one, however the path is spelled.
    base = str(check_cleanable_folder(metrics_path, what="metrics_path"))
    if not os.path.isdir(base):
        raise ConfigError(
            f"metrics_path {metrics_path} is not a folder; pass the metricsPath the stream used"
        )
    found = []
    for g in sorted(generations):
        path = _native.checkpoint.generation_paths(root, app_id, g, base)["metrics_path"]
        if os.path.isdir(path) and not os.path.islink(path) and _inside(path, base):
            found.append((g, path))
    return found


_NOT_A_FOLDER = (NotADirectoryError, IsADirectoryError)


def _unlink_counted(name: str, dir_fd: int | None) -> tuple[int, int]:
    """Remove one file or link, measured just before; (0, 0) when another gc was first."""
    try:
        size = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return 0, 0
    except IsADirectoryError:  # replaced by a folder since it was listed
        files, size, _ = _remove_tree(name, dir_fd)
        return files, size
    return 1, size


def _remove_tree(name: str, dir_fd: int | None) -> tuple[int, int, bool]:
    """Remove the folder `name` (relative to `dir_fd`) without following any link.

    Returns the files and bytes this call removed, each measured just before its removal, and
    whether this call removed the folder itself; what another gc removed first is not counted.
    """
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return 0, 0, False
    except _NOT_A_FOLDER:  # a file now, or a link (never followed)
        files, size = _unlink_counted(name, dir_fd)
        return files, size, files > 0
    except OSError as exc:
        if exc.errno != errno.ELOOP:  # ELOOP: O_NOFOLLOW met a link
            raise
        files, size = _unlink_counted(name, dir_fd)
        return files, size, files > 0
    files = size = 0
    try:
        with os.scandir(fd) as found:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in found]
        for entry, is_dir in entries:
            if is_dir:
                f, b, _ = _remove_tree(entry, fd)
            else:
                f, b = _unlink_counted(entry, fd)
            files, size = files + f, size + b
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return files, size, False
    return files, size, True


def _remove(path: str) -> tuple[int, int] | None:
    """Remove `path` and return the files and bytes this run removed; None when another gc
    had removed all of it first."""
    try:
        is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None
    if is_dir:
        files, size, removed = _remove_tree(path, None)
    else:
        files, size = _unlink_counted(path, None)
        removed = files > 0
    return (files, size) if removed or files else None


def collect_garbage(
    root: str,
    *,
    keep: int = 1,
    dry_run: bool = False,
    app_id: str | None = None,
    metrics_path: str | None = None,
) -> GcReport:
    """Remove the generations of the stream at checkpoint `root` older than the newest `keep`
    (the live generation counts as one), or with `dry_run` only say what would go.

    Raises:
        ConfigError: a URI or missing checkpoint, a `keep` below 1, `metrics_path` without
            `app_id`, an invalid app_id, a `metrics_path` the sink would refuse to clean (the
            filesystem root, the home or working folder or a parent of one), or an entry to
            remove that holds what neither Spark nor the library wrote (nothing is removed).
        StateFileError: the state file is not a valid state (nothing is removed).
        OSError: a removal failed; what came before it is gone, the rest is in place.
    """
    keep = _check_keep(keep)
    root = os.path.realpath(checkpoint.check_checkpoint_path(root))
    if not os.path.isdir(root):
        what = "is not a folder" if os.path.exists(root) else "does not exist"
        raise ConfigError(f"checkpoint {root} {what}; pass the checkpoint folder given to to_delta")
    state = checkpoint.read_state(root)
    live = 0 if state is None else state.generation
    plan = _native.checkpoint.plan_gc(
        live, keep, _listing(root), _listing(os.path.join(root, "_generations"))
    )
    targets = [(r["generation"], os.path.join(root, *r["path"].split("/"))) for r in plan["remove"]]
    kinds = [
        "generation" if r["path"].startswith("_generations/") else "zero" for r in plan["remove"]
    ]
    metrics = _metrics_folders(root, app_id, metrics_path, {g for g, _ in targets})
    check_removable(
        [(path, kind) for (_, path), kind in zip(targets, kinds, strict=True)]
        + [(path, "metrics") for _, path in metrics]
    )
    removed, gone = [], []
    for generation, path in targets + metrics:
        counted = _size(path) if dry_run else _remove(path)
        if counted is None:
            gone.append(Removal(generation, path, 0, 0))
        else:
            removed.append(Removal(generation, path, *counted))
    left = tuple(
        KeptEntry(os.path.join(root, *x["path"].split("/")), x["why"]) for x in plan["left"]
    )
    return GcReport(root, live, tuple(plan["kept"]), tuple(removed), left, dry_run, tuple(gone))
