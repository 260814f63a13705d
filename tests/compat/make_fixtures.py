"""Write this version's stored states into `tests/compat/<version>/<story>/`.

    .venv/bin/python -m tests.compat.make_fixtures [OUT]

OUT (default tests/compat/) is the folder the version's folder is written into.

Each story (tests/compat/stories.py) is built under `/tmp/mssql-cdc-compat/<version>/<story>`
(a link to a build folder, tests/compat/placing.py) and copied here whole: the emulator file,
the checkpoint with its state file, bronze, facts and `story.json` (the app id, the
`to_delta` arguments, the generation it ends in, the emulator clock's minute). A version's
folder is written once and never overwritten: the script refuses a version that already has
one (docs/compatibility.md).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

from mssql_cdc import __version__
from mssql_cdc.spark import local_session
from tests.compat.placing import FIXTURES, placed
from tests.compat.stories import APP_ID, STORIES
from tests.spark.support.recovery_support import Orders

# The emulator's lock file (empty, made again on open) and its SQLite write-ahead log, which
# `_store_emulator` folds into the stored file.
_SKIPPED = {"e.db", "e.db-locks", "e.db-wal", "e.db-shm"}


def main(argv: list[str]) -> int:
    out = (Path(argv[0]) if argv else FIXTURES) / __version__
    if out.exists():
        print(f"{out} exists: stored states are never overwritten; bump the version first")
        return 1
    build = Path(tempfile.mkdtemp(prefix="mssql-cdc-compat-build-"))
    spark = local_session("mssql-cdc-compat", warehouse=build / "warehouse", driver_memory="1g")
    try:
        with placed(build / "placed") as root:
            for story in STORIES:
                where = root / __version__ / story.name
                orders = Orders(spark, where, app_id=APP_ID, profile="immediate")
                story.build(orders)
                orders.emu.close()
                manifest = {
                    "version": __version__,
                    "story": story.name,
                    "app_id": APP_ID,
                    "root": str(where),
                    "run": story.run,
                    "generation": story.generation,
                    "chunked": story.chunked,
                    "minute": orders.minute,
                }
                (where / "story.json").write_text(json.dumps(manifest, indent=2) + "\n")
                shutil.copytree(
                    where, out / story.name, ignore=lambda _d, names: _SKIPPED & set(names)
                )
                store(where, out / story.name)
                print(f"wrote {out / story.name}")
    finally:
        spark.stop()
        shutil.rmtree(build, ignore_errors=True)
    return 0


def store(built: Path, stored: Path) -> None:
    """Finish a story's stored copy as git will hold it: the emulator file whole, with what
    its write-ahead log still held (a Spark worker may keep the file open), and no empty
    folders (git keeps none, so a test must not rely on them)."""
    with (
        closing(sqlite3.connect(f"file:{built / 'e.db'}?mode=ro", uri=True)) as source,
        closing(sqlite3.connect(stored / "e.db")) as copy,
    ):
        source.backup(copy)
    for folder in sorted(stored.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
