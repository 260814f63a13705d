"""The demo's output folder: emptied before a run only when an earlier run made it.

The demo leaves a marker file in every folder it prepares. A non-empty folder without it holds
someone else's files, so the demo refuses it unless `--force`; the filesystem root and the home
or working folder (or a parent of them) are refused even with `--force`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mssql_cdc.core import check_cleanable_folder
from mssql_cdc.errors import ConfigError

__all__ = ["MARKER", "prepare_out_dir"]

MARKER = ".mssql-cdc-demo"
_MARKER_TEXT = "This folder was made by `mssql-cdc demo`; its next run empties it.\n"


def prepare_out_dir(out_dir: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Return `out_dir` resolved and empty but for the demo's marker, creating it if needed.

    Raises:
        ConfigError: the folder is not the demo's (non-empty, no marker) and `force` is False,
            or it is a file, the filesystem root, or the home or working folder or a parent
            of one; nothing was deleted.
    """
    out = check_cleanable_folder(out_dir, what="demo --out")
    if out.exists():
        marker = out / MARKER
        marked = marker.is_file() and not marker.is_symlink()
        entries = sorted(entry for entry in out.iterdir() if not (marked and entry == marker))
        if entries and not marked and not force:
            shown = ", ".join(entry.name for entry in entries[:3])
            more = f" and {len(entries) - 3} more" if len(entries) > 3 else ""
            raise ConfigError(
                f"demo --out {os.fspath(out_dir)!r}: {out} holds files the demo did not make "
                f"({shown}{more}; no {MARKER} marker), and a run empties its folder. Nothing "
                "was deleted; pass a new or empty folder, or add --force to delete its contents"
            )
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()  # a symbolic link goes, never what it points to
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
    return out
