"""Which folders the library may empty or clean (docs/security.md).

The sink clears its metrics folder on every batch and the demo empties its output folder, so
both first resolve the folder and refuse one whose emptying would reach what is not theirs: the
filesystem root, the home folder, the working folder, or a folder holding either. A folder the
library derives from a name (`<metricsPath>/<sink id>`) must also stay inside its parent once
symbolic links are resolved.
"""

from __future__ import annotations

import os
from pathlib import Path

from mssql_cdc.errors import ConfigError

__all__ = ["check_cleanable_folder", "check_inside"]


def check_cleanable_folder(path: str | os.PathLike[str], *, what: str) -> Path:
    """Return `path` resolved, when it is a folder (or nothing yet) the library may clean.

    Args:
        path: the folder.
        what: how the message names it, such as "metrics_path" or "demo --out".
    Raises:
        ConfigError: the path is an existing non-folder, the filesystem root, or the home or
            working folder or one of their parents.
    """
    resolved = Path(path).resolve()
    if resolved.exists() and not resolved.is_dir():
        raise ConfigError(f"{what} {os.fspath(path)!r} is a file, not a folder; pass a folder")
    reason = _shared_reason(resolved)
    if reason is not None:
        raise ConfigError(
            f"{what} {os.fspath(path)!r} resolves to {resolved}, {reason}; the library deletes "
            "files in this folder, so pass a folder of its own, such as a new subfolder"
        )
    return resolved


def check_inside(
    folder: str | os.PathLike[str], root: str | os.PathLike[str], *, what: str
) -> Path:
    """Return `folder` resolved, when it lies strictly inside `root` once both are resolved.

    Raises:
        ConfigError: a symbolic link (or `..`) leads `folder` out of `root`.
    """
    resolved, parent = Path(folder).resolve(), Path(root).resolve()
    if parent not in resolved.parents:
        raise ConfigError(
            f"{what} {os.fspath(folder)!r} resolves to {resolved}, outside {parent}; a symbolic "
            f"link leads it out. Remove the link so that {os.fspath(folder)!r} is a folder"
        )
    return resolved


def _shared_reason(resolved: Path) -> str | None:
    if resolved.parent == resolved:
        return "the filesystem root"
    for name, shared in (("home", _home()), ("working", Path.cwd().resolve())):
        if shared is None:
            continue
        if resolved == shared:
            return f"the {name} folder"
        if resolved in shared.parents:
            return f"a parent of the {name} folder {shared}"
    return None


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except RuntimeError:  # no HOME and no passwd entry: there is no home folder to protect
        return None
