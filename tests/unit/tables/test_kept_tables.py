"""The shared deltalake table per path and the kept rows of bookkeeping tables: every read
equals what deltalake reads from a table opened afresh, whatever was committed in between.

The oracle is `deltalake.DeltaTable(path).to_pyarrow_table()`, a fresh open of the table by a
library this project did not write; rows are compared as sorted lists.
"""

from __future__ import annotations

import json
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from mssql_cdc.tables import KIND_PROPERTY, append_rows, newest_version, read_rows, table_ref
from mssql_cdc.tables.kept_rows import forget_rows
from mssql_cdc.tables.shared_tables import forget_tables

_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "app_id", "type": "string", "nullable": True, "metadata": {}},
        {"name": "batch_id", "type": "long", "nullable": True, "metadata": {}},
    ],
}


def _create_facts(path: Path, data: pa.Table) -> None:
    """A facts-kind table as Spark creates it (deltalake refuses to write the library's table
    property itself), then `data` appended by deltalake."""
    log = path / "_delta_log"
    log.mkdir(parents=True)
    creation = [
        {"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE", "txnId": "t0"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": str(uuid.uuid4()),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(_SCHEMA),
                "partitionColumns": [],
                "configuration": {KIND_PROPERTY: "facts"},
                "createdTime": 1,
            }
        },
    ]
    text = "\n".join(json.dumps(action) for action in creation) + "\n"
    (log / f"{0:020d}.json").write_text(text)
    _append(path, data)


@pytest.fixture(autouse=True)
def _nothing_kept() -> Any:
    forget_tables()
    forget_rows()
    yield
    forget_tables()
    forget_rows()


def _rows(n: int, start: int = 0, app: str = "a") -> pa.Table:
    return pa.table(
        {
            "app_id": pa.array([app] * n, pa.string()),
            "batch_id": pa.array(range(start, start + n), pa.int64()),
        }
    )


def _fresh(path: Path) -> list[dict[str, Any]]:
    return sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=repr)


def _ours(path: Path) -> list[dict[str, Any]]:
    return sorted(read_rows(table_ref(str(path))).to_pylist(), key=repr)


def _facts_read_once(folder: Path, *, appends: int) -> Path:
    """A facts table of 3 rows and `appends` one-row appends, read once by the library."""
    path = folder / "facts"
    _create_facts(path, _rows(3))
    for i in range(appends):
        _append(path, _rows(1, 10 + i))
    _ours(path)
    return path


def _parquet_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Parquet files read from now on, each as `pq.read_table` was given it."""
    opened: list[str] = []
    real = pq.read_table

    def counting(source: Any, *args: Any, **kwargs: Any) -> pa.Table:
        opened.append(str(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "read_table", counting)
    return opened


def _append(path: Path, data: pa.Table, *, key: tuple[str, int] | None = None) -> None:
    props = CommitProperties(app_transactions=[Transaction(*key)] if key else None)
    write_deltalake(str(path), data, mode="append", commit_properties=props)


def test_a_facts_table_read_after_appends_deletes_and_compaction_equals_a_fresh_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "facts"
    _create_facts(path, _rows(3))
    assert _ours(path) == _fresh(path)
    for i in range(5):
        _append(path, _rows(2, 10 + 2 * i, app=f"s{i}"), key=(f"s{i}#facts", i))
        assert _ours(path) == _fresh(path)
    DeltaTable(str(path)).delete("batch_id = 12")
    assert _ours(path) == _fresh(path)
    assert {"app_id": "s1", "batch_id": 12} not in _ours(path)
    DeltaTable(str(path)).optimize.compact()
    _append(path, _rows(1, 99))
    assert _ours(path) == _fresh(path)


def test_a_second_read_of_a_facts_table_reads_only_the_file_appended_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _facts_read_once(tmp_path, appends=4)
    opened = _parquet_reads(monkeypatch)
    _append(path, _rows(1, 50))
    assert _ours(path) == _fresh(path)
    assert len(opened) == 1
    assert opened[0].startswith(str(path))


def test_a_compaction_since_the_last_read_keeps_the_rows_and_reads_only_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Compaction rewrites files with `dataChange` false, the same rows (Delta protocol), so the
    # kept rows stay; a delete after it still reads the table again.
    path = _facts_read_once(tmp_path, appends=6)
    DeltaTable(str(path)).optimize.compact()
    _append(path, _rows(1, 50))
    opened = _parquet_reads(monkeypatch)
    assert _ours(path) == _fresh(path)
    assert len(opened) == 1  # the appended file; the compacted one holds rows already kept
    DeltaTable(str(path)).delete("batch_id = 11")
    DeltaTable(str(path)).optimize.compact()
    assert _ours(path) == _fresh(path)
    assert {"app_id": "a", "batch_id": 11} not in _ours(path)


def test_a_facts_table_of_many_appended_files_is_read_back_whole_in_few_chunks(
    tmp_path: Path,
) -> None:
    # A filter costs per chunk, and a chunk per file made each stream's read of a 500-stream
    # job's facts table cost a quarter of a second (S1 in bench/REPORT.md).
    path = tmp_path / "facts"
    _create_facts(path, _rows(1))
    for i in range(30):
        _append(path, _rows(1, 10 + i))
    first = read_rows(table_ref(str(path)))
    for i in range(30):
        _append(path, _rows(1, 100 + i))
        if i % 7 == 0:
            read_rows(table_ref(str(path)))
    again = read_rows(table_ref(str(path)))
    assert sorted(again.to_pylist(), key=repr) == _fresh(path)
    assert first.num_rows == 31
    assert again.num_rows == 61
    assert first.column("batch_id").num_chunks <= 8
    assert again.column("batch_id").num_chunks <= 8


def test_a_filtered_read_of_a_kept_table_keeps_what_the_filter_holds(tmp_path: Path) -> None:
    import pyarrow.compute as pc

    path = tmp_path / "facts"
    _create_facts(path, _rows(5))
    _ours(path)
    _append(path, _rows(5, 5, app="b"))
    found = read_rows(table_ref(str(path)), columns=("batch_id",), where=pc.field("app_id") == "b")
    assert sorted(found.column("batch_id").to_pylist()) == [5, 6, 7, 8, 9]
    assert found.schema.names == ["batch_id"]


def test_a_table_created_again_at_the_same_path_is_read_as_the_new_table(tmp_path: Path) -> None:
    path = tmp_path / "facts"
    _create_facts(path, _rows(3))
    for i in range(3):
        _append(path, _rows(1, 10 + i))
    before = newest_version(table_ref(str(path)))
    assert len(_ours(path)) == 6
    shutil.rmtree(path)
    _create_facts(path, _rows(1, 500, app="new"))
    after = newest_version(table_ref(str(path)))
    assert after.table_id != before.table_id
    assert after.version == 1
    assert _ours(path) == [{"app_id": "new", "batch_id": 500}]


def test_a_table_overwritten_in_place_is_read_as_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "facts"
    _create_facts(path, _rows(3))
    _ours(path)
    write_deltalake(str(path), _rows(2, 70), mode="overwrite")
    assert (
        _ours(path)
        == _fresh(path)
        == [
            {"app_id": "a", "batch_id": 70},
            {"app_id": "a", "batch_id": 71},
        ]
    )


def test_a_table_of_no_library_kind_is_read_whole_each_time_with_the_same_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain"
    write_deltalake(str(path), _rows(3))
    assert _ours(path) == _fresh(path)
    _append(path, _rows(2, 3))
    assert _ours(path) == _fresh(path)


def test_appends_from_two_threads_and_reads_between_them_end_equal_to_a_fresh_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "facts"
    _create_facts(path, _rows(1))
    ref = table_ref(str(path))
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(8):
                append_rows(ref, [{"app_id": name, "batch_id": i}], key=(f"{name}#facts", i))
                read_rows(ref)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _ours(path) == _fresh(path)
    assert len(_ours(path)) == 17
    for name in ("x", "y"):
        assert DeltaTable(str(path)).transaction_version(f"{name}#facts") == 7
