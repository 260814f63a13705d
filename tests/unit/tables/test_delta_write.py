"""Keyed appends committed in process by deltalake (decision 1000). Oracles: the commit files
in `_delta_log`, read as JSON, and the table's rows read back by deltalake."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from mssql_cdc.tables.delta_write import (
    COMPACT_EVERY,
    append_rows,
    columns_of,
    compact,
    writes_in_process,
)
from mssql_cdc.tables.reference import TableOutOfReach
from mssql_cdc.tables.refs import table_ref


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "facts"
    empty = pa.table(
        {
            "app_id": pa.array([], pa.string()),
            "batch_id": pa.array([], pa.int64()),
            "written_at": pa.array([], pa.timestamp("us")),
        }
    )
    write_deltalake(str(path), empty, mode="overwrite")
    return path


def commits(path: Path) -> list[list[dict[str, Any]]]:
    files = sorted((path / "_delta_log").glob("*.json"))
    return [[json.loads(line) for line in f.read_text().splitlines() if line] for f in files]


def rows(path: Path) -> list[dict[str, Any]]:
    return sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["batch_id"])


def test_a_keyed_append_commits_its_rows_key_and_user_metadata_once(table: Path) -> None:
    ref = table_ref(str(table))
    row = {"app_id": "a", "batch_id": 3, "written_at": datetime(2026, 9, 28, 13, 50)}
    assert append_rows(ref, [row], key=("a#facts", 3), user_metadata={"b": 3})
    assert not append_rows(ref, [row], key=("a#facts", 3))
    assert not append_rows(ref, [row], key=("a#facts", 2))
    assert rows(table) == [row]
    last = commits(table)[-1]
    txn = next(a["txn"] for a in last if "txn" in a)
    assert (txn["appId"], txn["version"]) == ("a#facts", 3)
    info = next(a["commitInfo"] for a in last if "commitInfo" in a)
    assert info["userMetadata"] == '{"b":3}'
    assert info["operation"] == "WRITE"
    ids = [a["commitInfo"].get("txnId") for c in commits(table)[1:] for a in c if "commitInfo" in a]
    assert len(ids) == 1
    assert str(uuid.UUID(ids[0])) == ids[0]  # a commit id as Spark writes it


def test_a_column_left_out_is_written_null_and_a_newer_key_appends_again(table: Path) -> None:
    ref = table_ref(str(table))
    assert append_rows(ref, [{"app_id": "a", "batch_id": 0}], key=("k", 0))
    assert append_rows(ref, [{"app_id": "a", "batch_id": 1}], key=("k", 1))
    assert rows(table) == [
        {"app_id": "a", "batch_id": 0, "written_at": None},
        {"app_id": "a", "batch_id": 1, "written_at": None},
    ]
    assert columns_of(ref) == ["app_id", "batch_id", "written_at"]


def test_two_writers_racing_on_one_key_commit_it_once(table: Path) -> None:
    ref = table_ref(str(table))
    results: list[bool] = []
    start = threading.Barrier(4)

    def write(n: int) -> None:
        start.wait()
        row = {"app_id": f"w{n}", "batch_id": 7}
        results.append(append_rows(ref, [row], key=("race", 7)))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, False, False, True]
    assert len(rows(table)) == 1


def test_an_append_without_a_key_commits_each_time_and_records_no_key(table: Path) -> None:
    ref = table_ref(str(table))
    assert append_rows(ref, [{"app_id": "a", "batch_id": 0}], key=None, user_metadata="m")
    assert append_rows(ref, [{"app_id": "a", "batch_id": 1}], key=None)
    assert len(rows(table)) == 2
    assert not any("txn" in action for commit in commits(table) for action in commit)
    assert (
        next(a["commitInfo"] for a in commits(table)[-2] if "commitInfo" in a)["userMetadata"]
        == "m"
    )


def test_a_catalog_name_or_a_uri_is_left_to_spark(tmp_path: Path) -> None:
    assert not writes_in_process(table_ref("main.default.facts"))
    assert not writes_in_process(table_ref("s3://bucket/facts"))
    assert writes_in_process(table_ref(str(tmp_path / "facts")))
    with pytest.raises(TableOutOfReach):
        append_rows(table_ref("main.default.facts"), [{}], key=("k", 0))


def test_a_row_that_does_not_fit_the_schema_commits_nothing(table: Path) -> None:
    ref = table_ref(str(table))
    with pytest.raises(TableOutOfReach):
        append_rows(ref, [{"batch_id": "not a number"}], key=("k", 0))
    assert DeltaTable(str(table)).transaction_version("k") is None
    assert len(commits(table)) == 1


def test_every_hundredth_append_compacts_the_table_keeping_every_row_and_key(
    table: Path,
) -> None:
    # The Delta protocol: a file added or removed with `dataChange` false only rearranges rows
    # already in the table (https://github.com/delta-io/delta/blob/master/PROTOCOL.md, "Add
    # File and Remove File"). The oracle is deltalake's fresh read and the commit files.
    ref = table_ref(str(table))
    written = []
    for n in range(2 * COMPACT_EVERY + 5):
        row = {"app_id": f"s{n % 7}", "batch_id": n, "written_at": datetime(2026, 12, 6, 8, 0)}
        assert append_rows(ref, [row], key=(f"s{n % 7}#facts", n))
        written.append(row)
    assert rows(table) == written
    fresh = DeltaTable(str(table))
    for app in range(7):
        newest = max(n for n in range(len(written)) if n % 7 == app)
        assert fresh.transaction_version(f"s{app}#facts") == newest
    assert len(fresh.file_uris()) <= 1 + 5  # the compacted file and the appends since
    rewrites = [c for c in commits(table) if _operation(c) == "OPTIMIZE"]
    assert len(rewrites) == 2
    for commit in rewrites:
        files = [a.get("add") or a.get("remove") for a in commit if {"add", "remove"} & set(a)]
        assert files
        assert all(f["dataChange"] is False for f in files)
        assert not any("txn" in a for a in commit)
        info = next(a["commitInfo"] for a in commit if "commitInfo" in a)
        assert str(uuid.UUID(info["txnId"])) == info["txnId"]


def test_a_compaction_that_fails_leaves_the_append_committed_and_says_so(
    table: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from deltalake.exceptions import CommitFailedError
    from deltalake.table import TableOptimizer

    def refuse(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise CommitFailedError("a concurrent writer removed a file this compaction read")

    monkeypatch.setattr(TableOptimizer, "compact", refuse)
    ref = table_ref(str(table))
    for n in range(COMPACT_EVERY):
        assert append_rows(ref, [{"app_id": "a", "batch_id": n}], key=("a#facts", n))
    assert [r["batch_id"] for r in rows(table)] == list(range(COMPACT_EVERY))
    assert DeltaTable(str(table)).transaction_version("a#facts") == COMPACT_EVERY - 1
    assert "compacting the table's small files failed" in caplog.text
    assert not any(_operation(c) == "OPTIMIZE" for c in commits(table))


def test_a_compaction_racing_another_writers_appends_loses_no_row(table: Path) -> None:
    # The other writer is deltalake itself on its own table object, as another process is:
    # nothing in this process serializes it with the compaction.
    from deltalake import CommitProperties, Transaction

    ref = table_ref(str(table))
    schema = DeltaTable(str(table)).schema().to_arrow()
    done = threading.Event()

    def write() -> None:
        for n in range(1000, 1060):
            one = pa.Table.from_pylist([{"app_id": "b", "batch_id": n}], schema=pa.schema(schema))
            key = CommitProperties(app_transactions=[Transaction("b#facts", n)])
            write_deltalake(str(table), one, mode="append", commit_properties=key)
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    for n in range(60):
        append_rows(ref, [{"app_id": "a", "batch_id": n}], key=("a#facts", n))
        if n % 20 == 19:
            compact(ref)
    thread.join()
    assert done.is_set()
    expected = list(range(60)) + list(range(1000, 1060))
    assert [r["batch_id"] for r in rows(table)] == expected
    assert DeltaTable(str(table)).transaction_version("b#facts") == 1059


def _operation(commit: list[dict[str, Any]]) -> str | None:
    info = next((a["commitInfo"] for a in commit if "commitInfo" in a), {})
    return info.get("operation")
