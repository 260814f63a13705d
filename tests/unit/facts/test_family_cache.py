"""The pre-flight's family cache: when cached snapshot rows still hold, and its file.

`still_valid` is checked branch by branch on plain commit summaries; `summarize` on commit
lines shaped as Delta writes them; the file round-trips and is ignored whenever it is not
exactly what `store` writes.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from mssql_cdc.facts.family_cache import (
    CACHE_FILE_NAME,
    MAX_COMMITS,
    CacheEntry,
    is_batch_facts_commit,
    load,
    still_valid,
    store,
)
from mssql_cdc.facts.rows import batch_facts_metadata
from mssql_cdc.facts.snapshot_family import FACT_COLUMNS, PREFLIGHT_EVENTS, SnapshotFacts
from mssql_cdc.tables.delta_log import CommitSummary, LogHead, summarize
from tests.support.full_disk import small_disk

ROW: dict[str, Any] = {c: None for c in FACT_COLUMNS} | {
    "app_id": "orders.g1",
    "generation": 1,
    "event": "resnapshot",
    "min_lsn": "0x0000002A000001F00004",
    "max_lsn": "0x0000002A000001F00004",
    "max_commit_ts": datetime(2026, 10, 1, 2, 0, 0, 117000),
    "rows": 3,
    "written_at": datetime(2026, 10, 1, 2, 5),
}
ENTRY = CacheEntry("orders", "id-1", "file:/f", 10, "txn-10", (ROW,))


def batch_commit(version: int, sink: str = "orders.g1", **changes: Any) -> CommitSummary:
    marker = json.dumps({"facts": "batch", "app_id": sink, "batch_id": version})
    fields: dict[str, Any] = {
        "version": version,
        "commit_id": f"txn-{version}",
        "operation": "WRITE",
        "user_metadata": marker,
        "txn_app_ids": (f"{sink}#facts",),
        "kinds": frozenset({"commitInfo", "txn", "add"}),
        "all_data_change": True,
    }
    fields.update(changes)
    return CommitSummary(**fields)


def commits(*found: CommitSummary) -> dict[int, CommitSummary]:
    return {c.version: c for c in found}


def head(version: int, table_id: str = "id-1", location: str = "file:/f") -> LogHead:
    return LogHead(table_id, location, version)


def verdict(
    log: dict[int, CommitSummary], at: LogHead, entry: CacheEntry = ENTRY, app_id: str = "orders"
) -> str | None:
    return still_valid(entry, app_id=app_id, head=at, commit=log.get)


def test_cached_rows_hold_when_nothing_was_committed_since() -> None:
    assert verdict(commits(batch_commit(10)), head(10)) is None


def test_cached_rows_hold_over_micro_batch_facts_commits_of_any_stream() -> None:
    log = commits(batch_commit(10), batch_commit(11), batch_commit(12, sink="other-stream"))
    assert verdict(log, head(12)) is None


def test_another_family_never_uses_the_cached_rows() -> None:
    assert verdict(commits(batch_commit(10)), head(10), app_id="billing") is not None


@pytest.mark.parametrize("at", [head(10, table_id="id-2"), head(10, location="file:/g")])
def test_another_table_never_uses_the_cached_rows(at: LogHead) -> None:
    assert verdict(commits(batch_commit(10)), at) == "cached for another table"


def test_a_version_below_the_cached_one_reads_the_table() -> None:
    assert "below" in (verdict(commits(batch_commit(9)), head(9)) or "")


def test_the_facts_commits_of_five_hundred_other_streams_since_keep_the_cached_rows() -> None:
    # One run of a fan_out job over 500 tables adds each stream's micro-batch facts commit
    # (sink ids of other streams) between two runs of any one of them.
    log = commits(batch_commit(10), *(batch_commit(v, sink=f"t{v % 500}") for v in range(11, 511)))
    assert verdict(log, head(510)) is None


def test_more_than_max_commits_since_reads_the_table() -> None:
    log = commits(*(batch_commit(v) for v in range(10, 10 + MAX_COMMITS + 2)))
    assert verdict(log, head(10 + MAX_COMMITS)) is None
    assert "commits since" in (verdict(log, head(11 + MAX_COMMITS)) or "")


def test_a_rewritten_history_at_the_cached_version_reads_the_table() -> None:
    log = commits(batch_commit(10, commit_id="txn-other"), batch_commit(11))
    assert verdict(log, head(11)) == "commit 10 is not the one the rows were read at"


def test_a_cleaned_up_cached_commit_reads_the_table() -> None:
    assert verdict(commits(batch_commit(11)), head(11)) is not None


def test_an_unreadable_commit_since_reads_the_table() -> None:
    log = commits(batch_commit(10), batch_commit(12))
    found = verdict(log, head(12))
    assert found == "commit 11 is neither a micro-batch's facts commit nor a compaction"


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"user_metadata": None}, id="no userMetadata (a snapshot event write)"),
        pytest.param({"user_metadata": "free text"}, id="another writer's text"),
        pytest.param({"user_metadata": '{"facts": "open"}'}, id="another marker"),
        pytest.param({"operation": "OPTIMIZE"}, id="a compaction"),
        pytest.param({"operation": "MERGE"}, id="a merge"),
        pytest.param(
            {"kinds": frozenset({"commitInfo", "txn", "add", "remove"})}, id="rows removed"
        ),
        pytest.param({"kinds": frozenset({"commitInfo", "metaData"})}, id="a migration"),
        pytest.param({"kinds": frozenset({"commitInfo", "txn"})}, id="no rows added"),
        pytest.param({"all_data_change": False}, id="a rewrite without data change"),
        pytest.param({"txn_app_ids": ()}, id="no transaction key"),
        pytest.param({"txn_app_ids": ("orders#events",)}, id="an event's key"),
        pytest.param({"txn_app_ids": ("orders.g1#facts", "x#facts")}, id="two keys"),
    ],
)
def test_any_other_commit_since_reads_the_table(changes: dict[str, Any]) -> None:
    other = batch_commit(11, **changes)
    assert not is_batch_facts_commit(other)
    assert verdict(commits(batch_commit(10), other, batch_commit(12)), head(12)) is not None


def test_a_compaction_deltalake_committed_since_keeps_the_cached_rows(tmp_path: Path) -> None:
    # The oracle is deltalake's own compaction commit file, summarized: its adds and removes
    # carry `dataChange` false, which the Delta protocol defines as the same rows.
    path = str(tmp_path / "t")
    for n in range(3):
        write_deltalake(path, pa.table({"n": [n]}), mode="append")
    DeltaTable(path).optimize.compact()
    lines = (tmp_path / "t" / "_delta_log" / f"{3:020d}.json").read_text().split("\n")
    compaction = summarize(11, lines)
    assert compaction.rows_unchanged
    assert not is_batch_facts_commit(compaction)
    assert verdict(commits(batch_commit(10), compaction, batch_commit(12)), head(12)) is None


@pytest.mark.parametrize(
    "kinds",
    [
        pytest.param(frozenset({"commitInfo", "add", "remove"}), id="a rewrite that changes data"),
        pytest.param(frozenset({"commitInfo", "remove"}), id="files removed"),
        pytest.param(frozenset({"commitInfo", "add", "remove", "metaData"}), id="and a migration"),
    ],
)
def test_a_rewrite_that_says_it_changes_data_reads_the_table(kinds: frozenset[str]) -> None:
    changing = batch_commit(11, kinds=kinds, operation="OPTIMIZE", all_data_change=False)
    assert not changing.rows_unchanged
    assert verdict(commits(batch_commit(10), changing, batch_commit(12)), head(12)) is not None
    quiet = batch_commit(11, kinds=kinds, any_data_change=False, all_data_change=False)
    assert quiet.rows_unchanged == ("metaData" not in kinds)


def test_a_file_action_without_data_change_flag_counts_as_a_change() -> None:
    lines = [json.dumps({"remove": {"path": "p"}}), json.dumps({"add": {"path": "q"}})]
    assert not summarize(4, lines).rows_unchanged
    lines = [json.dumps({"add": {"path": "q", "dataChange": False}})]
    assert summarize(4, lines).rows_unchanged


def test_the_sinks_marker_is_what_the_rule_recognises() -> None:
    marker = batch_facts_metadata(app_id="orders", generation=2, batch_id=7)
    assert marker == {"facts": "batch", "app_id": "orders.g2", "batch_id": 7}
    found = batch_commit(11, user_metadata=json.dumps(marker), txn_app_ids=("orders.g2#facts",))
    assert is_batch_facts_commit(found)


def test_a_commit_file_is_summarized_from_its_actions() -> None:
    lines = [
        json.dumps(
            {
                "commitInfo": {
                    "operation": "WRITE",
                    "txnId": "t-5",
                    "userMetadata": '{"facts":"batch","app_id":"a","batch_id":5}',
                }
            }
        ),
        json.dumps({"txn": {"appId": "a#facts", "version": 5}}),
        json.dumps({"add": {"path": "p1.parquet", "dataChange": True}}),
        "",
    ]
    found = summarize(5, lines)
    assert found == CommitSummary(
        version=5,
        commit_id="t-5",
        operation="WRITE",
        user_metadata='{"facts":"batch","app_id":"a","batch_id":5}',
        txn_app_ids=("a#facts",),
        kinds=frozenset({"commitInfo", "txn", "add"}),
        all_data_change=True,
    )
    assert is_batch_facts_commit(found)
    compaction = summarize(6, [json.dumps({"add": {"path": "p", "dataChange": False}})])
    assert not compaction.all_data_change


def test_a_line_that_is_not_one_action_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="no single action"):
        summarize(1, ['{"add": {}, "remove": {}}'])
    with pytest.raises(json.JSONDecodeError):
        summarize(1, ["not json"])


def test_the_cache_file_round_trips_its_rows(tmp_path: Path) -> None:
    store(str(tmp_path), ENTRY)
    assert load(str(tmp_path)) == ENTRY
    assert [p.name for p in tmp_path.iterdir()] == [CACHE_FILE_NAME]  # no temporary left


def test_a_cache_file_that_cannot_be_written_is_only_logged_on_a_read_only_disk(
    tmp_path: Path,
) -> None:
    # The cache is an optimisation: a checkpoint on a read-only file system must not fail the
    # call here (removing the temporary file fails there too, with EROFS).
    with small_disk(tmp_path / "disk", size_mb=1) as disk:
        checkpoint = disk.path / "ckpt"
        checkpoint.mkdir()
        disk.read_only()
        store(str(checkpoint), ENTRY)
        assert list(checkpoint.iterdir()) == []
        assert load(str(checkpoint)) is None


def test_a_cache_file_that_cannot_be_written_is_only_logged_on_a_full_disk(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", size_mb=1) as disk:
        checkpoint = disk.path / "ckpt"
        checkpoint.mkdir()
        disk.fill()
        store(str(checkpoint), ENTRY)
        assert list(checkpoint.iterdir()) == []  # no temporary file left behind


def test_no_cache_file_is_written_into_a_checkpoint_not_made_yet(tmp_path: Path) -> None:
    store(str(tmp_path / "new"), ENTRY)
    assert not (tmp_path / "new").exists()
    assert load(str(tmp_path / "new")) is None


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda body: "", id="empty, as a crash can leave it"),
        pytest.param(lambda body: body[: len(body) // 2], id="torn"),
        pytest.param(lambda body: body.replace('"format":1', '"format":2'), id="another format"),
        pytest.param(lambda body: body.replace('"version":10', '"version":"10"'), id="bad type"),
        pytest.param(lambda body: body.replace('"rows":3', '"rows":true'), id="bad row"),
        pytest.param(lambda body: body.replace('"generation":1,', ""), id="a column missing"),
        pytest.param(lambda body: "[]", id="not an object"),
    ],
)
def test_a_cache_file_that_is_not_what_store_writes_is_ignored(tmp_path: Path, mangle: Any) -> None:
    store(str(tmp_path), ENTRY)
    file = tmp_path / CACHE_FILE_NAME
    file.write_text(mangle(file.read_text()))
    assert load(str(tmp_path)) is None


def test_facts_read_for_the_pre_flight_refuse_to_answer_for_plans_and_chunks() -> None:
    facts = SnapshotFacts((ROW,), PREFLIGHT_EVENTS)
    assert [c.generation for c in facts.completions()] == [1]
    with pytest.raises(RuntimeError, match="snapshot_plan"):
        facts.plan("0x0000002A000001F00004")
    with pytest.raises(RuntimeError, match="snapshot_chunk"):
        facts.chunks("0x0000002A000001F00004")
