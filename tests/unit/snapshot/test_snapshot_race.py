"""The full open's race re-check from the facts log: which commits can have changed the
family's chunked opens, and when the rows read before still answer.

Commit summaries are built by hand as Delta writes them; the reader is a dict of them.
"""

from __future__ import annotations

import json
from typing import Any

from mssql_cdc.facts.snapshot_family import SnapshotFacts
from mssql_cdc.snapshot.open_race import MAX_COMMITS, FactsSeen, may_add_open, unseen
from mssql_cdc.tables.delta_log import CommitSummary, LogHead, summarize

KEY = "orders#snapshots"
HEAD_ID = "table-1"


def commit(version: int, **changes: Any) -> CommitSummary:
    fields: dict[str, Any] = {
        "version": version,
        "commit_id": f"txn-{version}",
        "operation": "WRITE",
        "user_metadata": None,
        "txn_app_ids": (),
        "kinds": frozenset({"commitInfo", "add"}),
        "all_data_change": True,
    }
    fields.update(changes)
    return CommitSummary(**fields)


class Log:
    """A reader over hand-made commits; a missing version reads as unreadable."""

    def __init__(self, *found: CommitSummary) -> None:
        self.found = {c.version: c for c in found}
        self.read: list[int] = []

    def commit(self, version: int) -> CommitSummary | None:
        self.read.append(version)
        return self.found.get(version)


def head(version: int, table_id: str = HEAD_ID) -> LogHead:
    return LogHead(table_id=table_id, location="file:/facts", version=version)


def seen(version: int, table_id: str | None = HEAD_ID) -> FactsSeen:
    return FactsSeen(version, table_id, SnapshotFacts(()))


CREATION = commit(0, operation="CREATE TABLE", kinds=frozenset({"commitInfo", "metaData"}))


def test_a_plain_append_without_the_family_key_cannot_add_a_chunked_open() -> None:
    assert not may_add_open(commit(1), KEY)
    assert not may_add_open(commit(1, txn_app_ids=("orders#events",)), KEY)
    assert not may_add_open(commit(1, txn_app_ids=("other#snapshots",)), KEY)


def test_an_append_under_the_family_snapshots_key_may_add_one() -> None:
    assert may_add_open(commit(1, txn_app_ids=(KEY,)), KEY)


def test_commits_that_change_no_rows_cannot_add_one() -> None:
    assert not may_add_open(CREATION, KEY)
    assert not may_add_open(
        commit(3, operation="SET TBLPROPERTIES", kinds=frozenset({"commitInfo", "metaData"})), KEY
    )


def test_a_compaction_that_changes_no_data_cannot_add_one() -> None:
    rearranging = frozenset({"commitInfo", "add", "remove"})
    compaction = commit(2, kinds=rearranging, operation="OPTIMIZE", any_data_change=False)
    assert not may_add_open(compaction, KEY)


def test_rewrites_removals_and_restores_may_change_the_opens() -> None:
    removing = frozenset({"commitInfo", "add", "remove"})
    assert may_add_open(commit(2, kinds=removing), KEY)
    assert may_add_open(commit(2, kinds=frozenset({"commitInfo", "remove"})), KEY)
    assert may_add_open(commit(2, operation="RESTORE"), KEY)
    assert may_add_open(commit(2, operation="MERGE"), KEY)
    assert may_add_open(commit(2, all_data_change=False), KEY)


def test_a_new_table_holding_only_plain_appends_answers_from_the_rows_read_before() -> None:
    log = Log(CREATION, commit(1), commit(2, txn_app_ids=("orders#events",)))
    assert unseen(FactsSeen.nothing(), head(2), log.commit, KEY) is None
    assert log.read == [0, 1, 2]


def test_only_the_commits_after_the_version_read_are_looked_at() -> None:
    log = Log(commit(7), commit(8))
    assert unseen(seen(6), head(8), log.commit, KEY) is None
    assert log.read == [7, 8]


def test_a_chunked_open_committed_after_the_read_sends_the_check_to_the_table() -> None:
    log = Log(CREATION, commit(1, txn_app_ids=(KEY,)), commit(2))
    reason = unseen(FactsSeen.nothing(), head(2), log.commit, KEY)
    assert reason == "commit 1 may hold a chunked open"


def test_an_unreadable_commit_sends_the_check_to_the_table() -> None:
    log = Log(commit(1), commit(3))
    assert unseen(seen(0), head(3), log.commit, KEY) == "commit 2 is unreadable"


def test_a_replaced_table_or_a_long_log_sends_the_check_to_the_table() -> None:
    log = Log(commit(5))
    assert unseen(seen(4), head(5, "table-2"), log.commit, KEY) is not None
    long = unseen(seen(1), head(2 + MAX_COMMITS), log.commit, KEY)
    assert long == f"{1 + MAX_COMMITS} commits since the facts were read"
    assert unseen(seen(9), head(5), log.commit, KEY) is not None
    assert log.read == []


def test_a_commit_files_output_rows_are_read_from_its_operation_metrics() -> None:
    info = {"operation": "WRITE", "operationMetrics": {"numOutputRows": "1000000"}}
    assert summarize(4, [json.dumps({"commitInfo": info})]).output_rows == 1_000_000
    assert summarize(4, [json.dumps({"commitInfo": {"operation": "WRITE"}})]).output_rows is None
