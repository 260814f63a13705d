"""Keyed appends committed in process by deltalake (decision 1000). Oracles: the commit files
in `_delta_log`, read as JSON, and the table's rows read back by deltalake."""

from __future__ import annotations

import json
import sys
import threading
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from mssql_cdc.tables.delta_write import append_rows, columns_of, writes_in_process
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


_WRITER = """
import sys
from mssql_cdc.tables.delta_write import append_rows
from mssql_cdc.tables.refs import table_ref
ref, me = table_ref(sys.argv[1]), sys.argv[2]
for n in range(int(sys.argv[3])):
    append_rows(ref, [{"app_id": me, "batch_id": n}], key=(me + "#facts", n))
"""


def test_two_processes_appending_at_once_keep_every_row_once(table: Path) -> None:
    # Two jobs sharing one facts table: the oracle is the rows each was given. With a
    # compaction every 100 appends in each process, one probe of 230 appends per process in
    # eight ended with 858 rows for 460, so the appending process does not compact (decision
    # 1455).
    import subprocess

    count = 120
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(table), me, str(count)])
        for me in ("a", "b")
    ]
    assert [w.wait(timeout=300) for w in writers] == [0, 0]
    found = sorted((r["app_id"], r["batch_id"]) for r in rows(table))
    assert found == sorted((me, n) for me in ("a", "b") for n in range(count))
    fresh = DeltaTable(str(table))
    assert (fresh.transaction_version("a#facts"), fresh.transaction_version("b#facts")) == (
        count - 1,
        count - 1,
    )
