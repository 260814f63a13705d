"""apply_changes at granularity 'commit': one row per key and source commit, checked by a
plain-Python oracle over the builder's bronze rows and against the builder's source table.

SQL Server's operations (1 delete, 2 insert, 3 an update's before-image, 4 its after-image) are
documented at
https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from mssql_cdc.errors import ConfigError
from mssql_cdc.silver import apply_changes
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.caching import refuse_caching
from tests.spark.support.silver_builder import (
    CAPTURED,
    SourceTable,
    apply_order,
    lsn_text,
    random_commits,
)

History = dict[tuple[Any, str], tuple[dict[str, Any], bool]]


def apply(src: SourceTable, target: str | None = None, **extra: Any) -> dict[str, Any]:
    return dict(
        apply_changes(
            src.spark,
            src.bronze,
            target or src.silver,
            keys=["id"],
            control_table=src.control,
            facts_table=src.facts,
            **{"granularity": "commit", **extra},
        )
    )


def oracle(rows: list[dict[str, Any]]) -> History:
    """(key, LSN) -> (image, deleted): the key's last row at that LSN in apply order."""
    out: History = {}
    for row in sorted(rows, key=apply_order):
        image = {n: row[n] for n, _ in CAPTURED}
        out[(image["id"], row["_start_lsn"])] = (image, row["_operation"] in (1, 3))
    return out


def history(spark: SparkSession, path: str) -> History:
    rows = spark.read.format("delta").load(path).collect()
    out: History = {
        (r["id"], r["_start_lsn"]): ({n: r[n] for n, _ in CAPTURED}, r["_deleted"]) for r in rows
    }
    assert len(out) == len(rows), "a key and commit is in the history twice"
    return out


def last_images(found: History) -> dict[Any, dict[str, Any]]:
    """Each key's image after its newest history row, deleted keys left out."""
    newest: dict[Any, tuple[str, dict[str, Any], bool]] = {}
    for (key, lsn), (image, deleted) in found.items():
        if key not in newest or lsn > newest[key][0]:
            newest[key] = (lsn, image, deleted)
    return {k: image for k, (_, image, deleted) in newest.items() if not deleted}


def test_a_history_holds_every_key_s_image_per_commit_and_a_rerun_adds_nothing(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = refuse_caching(monkeypatch)  # the history needs no cache either
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(7)
    random_commits(src, rng, 5, captured=False)
    snapshot = src.whole_snapshot()
    src.event("bootstrap", snapshot, rows=len(src.rows))
    random_commits(src, rng, 10)
    src.flush(rng)
    result = apply(src)  # into an empty silver: one append
    assert result["rebuilt"] is False
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    found = history(spark, src.silver)
    assert found == oracle(src.bronze_rows())
    assert last_images(found) == src.rows
    assert any(deleted for _, deleted in found.values())  # a delete was exercised
    assert {lsn for (_, lsn) in found} >= {snapshot}  # the snapshot's images are its rows

    random_commits(src, rng, 10)  # into a silver with rows: an insert-only MERGE
    src.flush(rng)
    with failpoints({"silver.after_merge": "raise"}), pytest.raises(InjectedFault):
        apply(src)  # the rows landed; the position did not move
    random_commits(src, rng, 4)
    src.flush(rng)
    result = apply(src)  # the rerun meets the rows it wrote: each (key, commit) stays once
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    found = history(spark, src.silver)
    assert found == oracle(src.bronze_rows())
    assert last_images(found) == src.rows

    version = DeltaTable.forPath(spark, src.silver).history(1).first()["version"]
    assert apply(src)["applied_lsn"] == result["applied_lsn"]  # nothing new: no commit
    assert DeltaTable.forPath(spark, src.silver).history(1).first()["version"] == version
    assert refused == []


def test_a_target_keeps_its_granularity_and_version_as_of_applies_an_older_bronze(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(11)
    random_commits(src, rng, 6)
    src.flush(rng)
    early = src.bronze_rows()
    old_version = DeltaTable.forPath(spark, src.bronze).history(1).first()["version"]
    random_commits(src, rng, 6)
    src.flush(rng)

    replay = str(tmp_path / "replay")
    result = apply(src, replay, options={"versionAsOf": old_version})
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in early)
    assert history(spark, replay) == oracle(early)
    with pytest.raises(ConfigError, match="versionAsOf=99 is above bronze"):
        apply(src, replay, options={"versionAsOf": 99})
    apply(src, replay)  # the newest version: the rest of the commits
    assert history(spark, replay) == oracle(src.bronze_rows())

    with pytest.raises(ConfigError, match=r"is a history \(granularity='commit'"):
        apply(src, replay, granularity="key")
    apply(src, granularity="key")  # one row per key
    with pytest.raises(ConfigError, match=r"holds one row per key \(granularity='key'"):
        apply(src)
    assert history(spark, replay) == oracle(src.bronze_rows())  # the refusals wrote nothing


def chunk_detail(snapshot: str, chunk: int, wave: int, *, last: bool = False) -> dict[str, Any]:
    return {
        "snapshot": snapshot,
        "chunk": chunk,
        "wave": wave,
        "lo": None,
        "hi": None,
        "last": last,
    }


def test_a_chunk_wave_appended_after_later_changes_were_added_still_reaches_the_history(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(5)
    random_commits(src, rng, 6, captured=False)  # rows that predate the stream
    opened = lsn_text(src.take_lsn())  # the stream starts at S; backfill() reads the chunks
    src.event("snapshot_open", opened, detail={"mode": "chunked", "kind": "bootstrap"})
    stamp = src.take_lsn()  # wave 0 reads the whole table at L ...
    read = [dict(r) for r in src.rows.values()]
    random_commits(src, rng, 5)  # ... while the stream commits changes above L
    src.flush(rng)
    first = apply(src)
    assert first["applied_lsn"] > lsn_text(stamp)  # the changes above L are in the history
    # ... and only then does the wave's append land, stamped L, below the position.
    src.late_chunk(opened, 0, stamp, read)
    src.event("snapshot_chunk", lsn_text(stamp), detail=chunk_detail(opened, 0, 0, last=True))
    random_commits(src, rng, 3)
    src.flush(rng)
    result = apply(src)
    assert result["applied_lsn"] == max(
        r["_start_lsn"] for r in src.bronze_rows() if r["_chunk"] is None
    )
    found = history(spark, src.silver)
    assert {k for (k, lsn) in found if lsn == lsn_text(stamp)} == {r["id"] for r in read}
    assert found == oracle(src.bronze_rows())
    version = DeltaTable.forPath(spark, src.silver).history(1).first()["version"]
    apply(src)  # the wave is recorded as added: nothing again
    assert DeltaTable.forPath(spark, src.silver).history(1).first()["version"] == version
