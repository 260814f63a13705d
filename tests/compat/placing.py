"""Where a stored state lives while it runs: the absolute root it was written at.

Facts rows name their bronze table by the path it was written at (the `target` column), so a
stored state resumes only at that path, as a user's own tables do. Every state is written
under `ROOT` (`/tmp/mssql-cdc-compat/<version>/<story>/`), and `placed` makes `ROOT` a
symbolic link to a folder of the caller's for the block (the generator's build folder, a
test's `tmp_path`), holding a lock so two runs on one machine take turns. It never deletes
what is at `ROOT`: a folder there that is not its own link is an error naming it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["FIXTURES", "ROOT", "placed"]

ROOT = Path("/tmp/mssql-cdc-compat")
"""The absolute root every stored state was written under, and is resumed under."""
FIXTURES = Path(__file__).resolve().parent
"""`tests/compat/`: one folder per version, one folder per story in it."""
_LOCK = Path("/tmp/mssql-cdc-compat.lock")


@contextmanager
def placed(folder: Path) -> Iterator[Path]:
    """`ROOT` as a link to `folder` for the block (created if missing); yields `ROOT`."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if ROOT.is_symlink():
                ROOT.unlink()  # a link a killed run left: only the link, never its target
            elif ROOT.exists():
                raise RuntimeError(
                    f"{ROOT} exists and is not a symbolic link; move it away: stored states "
                    f"are resumed through a link at that path"
                )
            os.symlink(folder, ROOT)
            try:
                yield ROOT
            finally:
                if ROOT.is_symlink():
                    ROOT.unlink()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
