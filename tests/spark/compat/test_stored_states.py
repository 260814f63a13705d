"""Every stored state of every version under tests/compat/ resumes with today's code and ends
equal to its source (docs/compatibility.md).

Each case places a copy of one stored story at the path it was written at
(tests/compat/placing.py), commits more changes on its emulator file, finishes whatever the
story left open (a backfill, a crashed wave) and streams to the end. The oracles are the
emulator's rows read directly and the plain-Python rebuild of bronze and facts
(tests/spark/support/recovery_support.py); the stored files are the other: every Delta commit
and checkpoint file the old version wrote is still there, byte for byte.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.compat.placing import FIXTURES, placed
from tests.compat.stories import STORIES
from tests.spark.support.chunked_support import backfill
from tests.spark.support.recovery_support import Orders

STORED = sorted(p.parent for p in FIXTURES.glob("*/*/story.json"))
# A cache the library rewrites (decision 1314), and Delta's pointer to its newest checkpoint,
# which Delta rewrites at each one (with its checksum file).
_SKIPPED_FILES = ("_mssql_cdc_family_cache.json", "_last_checkpoint", "._last_checkpoint.crc")


def written(folder: Path) -> dict[str, bytes]:
    """The files under `folder` a version must keep as they are: committed Delta log entries
    and checkpoint files (not caches, not the state file, which a resume may advance)."""
    kept: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or path.name in _SKIPPED_FILES:
            continue
        if path.name == "_mssql_cdc_generation.json" or relative.parts[0] == "e.db":
            continue
        if "_delta_log" in relative.parts or relative.parts[0] == "ckpt":
            kept[str(relative)] = path.read_bytes()
    return kept


def test_a_stored_state_exists_for_every_story_of_this_version() -> None:
    versions = {p.parent.name for p in STORED}
    assert versions, "tests/compat/ holds no stored state: run python -m tests.compat.make_fixtures"
    for version in versions:
        assert {p.name for p in STORED if p.parent.name == version} == {s.name for s in STORIES}


@pytest.mark.parametrize("stored", STORED, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_a_stored_state_resumes_and_ends_equal_to_the_source(
    spark: SparkSession, tmp_path: Path, stored: Path
) -> None:
    manifest: dict[str, Any] = json.loads((stored / "story.json").read_text())
    with placed(tmp_path / "placed") as root:
        where = Path(manifest["root"])
        assert where.parent.parent == root
        shutil.copytree(stored, where)
        kept = written(where)
        orders = Orders(
            spark, where, app_id=manifest["app_id"], minute=manifest["minute"], reopen=True,
            profile="immediate",
        )  # fmt: skip
        run: dict[str, Any] = manifest["run"]
        orders.commit(("insert", 20, "resumed"))
        orders.commit(("update", 0, "resumed"))
        orders.commit(("delete", 3, None))
        if manifest["chunked"]:
            orders.run(**run)
            for _ in range(10):
                if backfill(orders)["state"] == "done":
                    break
            assert backfill(orders)["state"] == "done"
        orders.run(**run)
        orders.commit(("insert", 21, "last"))
        orders.run(**run)

        source = orders.source()
        assert (20, "resumed") in source
        assert (21, "last") in source
        assert (0, "resumed") in source
        assert 3 not in dict(source)
        assert orders.rebuilt() == source

        bronze = orders.bronze()
        changes = Counter(
            (r["_start_lsn"], r["_seqval"], r["_operation"]) for r in bronze if r["_operation"]
        )
        assert [c for c, n in changes.items() if n > 1] == []
        state = orders.state()
        generation = manifest["generation"]
        if generation == 0:
            assert state is None or state["generation"] == 0
        else:
            assert state is not None
            assert state["generation"] == generation
        assert state is None or ("recovering" not in state and "failed_at" not in state)
        facts = orders.facts_rows()
        completions = Counter(
            f["generation"] for f in facts if f["event"] in ("bootstrap", "resnapshot")
        )
        assert completions[generation] == 1
        assert all(n == 1 for n in completions.values())
        batches = Counter((f["app_id"], f["batch_id"]) for f in facts if f["event"] is None)
        assert [b for b, n in batches.items() if n > 1] == []
        after = written(where)
        assert {k: v for k, v in after.items() if k in kept} == kept  # nothing rewritten
        orders.emu.close()
