"""Removing earlier generations of a stream's checkpoint (`mssql-cdc gc`, decision 0960).

The C++ toolkit decides what may go (`_native.checkpoint.plan_gc`: generations older than the
newest `keep`, never the live one, a newer one, a link or a file it does not know); this module
lists the checkpoint for it and acts: sizes, then removal. With `metrics_path` and `app_id`,
the removed generations' folders under that `metricsPath` go too. Nothing outside the
checkpoint (or that metrics folder) is touched, and no symbolic link is followed.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc import _native
from mssql_cdc.core import checkpoint
from mssql_cdc.core.app_id import validate_app_id
from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from mssql_cdc._native import EntryKindName

__all__ = ["GcReport", "Removal", "collect_garbage"]

# A checkpoint keeps 1 to this many generations; a larger --keep is a typo, not a wish.
MAX_KEEP = 1_000_000


@dataclass(frozen=True, slots=True)
class Removal:
    """One folder or file of an earlier generation: removed, or to be removed by a dry run."""

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


def _size(path: str) -> tuple[int, int]:
    """Files and bytes under `path`, links counted as files and never followed."""
    if not os.path.isdir(path) or os.path.islink(path):
        return 1, os.lstat(path).st_size
    files = size = 0
    for folder, _dirs, names in os.walk(path):
        for name in names:
            files += 1
            size += os.lstat(os.path.join(folder, name)).st_size
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
    base = os.path.realpath(checkpoint.check_checkpoint_path(metrics_path))
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


def _vanished_is_fine(_function: object, _path: str, error: BaseException) -> None:
    if not isinstance(error, FileNotFoundError):
        raise error


def _remove(path: str) -> None:
    if not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
    elif sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_vanished_is_fine)
    else:
        shutil.rmtree(path, onerror=lambda f, p, info: _vanished_is_fine(f, p, info[1]))


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
            `app_id`, an invalid app_id.
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
    generations = {g for g, _ in targets}
    targets += _metrics_folders(root, app_id, metrics_path, generations)
    removed = []
    for generation, path in targets:
        try:
            files, size = _size(path)
            if not dry_run:
                _remove(path)
        except FileNotFoundError:
            continue  # another gc removed it first
        removed.append(Removal(generation, path, files, size))
    left = tuple(
        KeptEntry(os.path.join(root, *x["path"].split("/")), x["why"]) for x in plan["left"]
    )
    return GcReport(root, live, tuple(plan["kept"]), tuple(removed), left, dry_run)
