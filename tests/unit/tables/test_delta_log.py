"""A path table's Delta metadata read in process, with no Spark: the session given is one that
fails on any use. Oracles: tables written by deltalake, and `_delta_log` files written by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import CommitProperties, Transaction, write_deltalake

from mssql_cdc.silver.table_state import TableState, table_state
from mssql_cdc.tables.commit_lookup import Commit, find_commits
from mssql_cdc.tables.delta_log import LogReader
from mssql_cdc.tables.refs import table_ref
from mssql_cdc.tables.writes import txn_version


class NoSpark:
    """A session whose every use fails the test: these reads must not need Spark."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"Spark was used: spark.{name}")


SPARK: Any = NoSpark()


def append(
    path: Path, value: int, *, metadata: str | None = None, txn: tuple[str, int] | None = None
) -> None:
    custom = None if metadata is None else {"userMetadata": metadata}
    apps = None if txn is None else [Transaction(app_id=txn[0], version=txn[1])]
    write_deltalake(
        str(path),
        pa.table({"a": pa.array([value], pa.int64())}),
        mode="append",
        commit_properties=CommitProperties(custom_metadata=custom, app_transactions=apps),
    )


def hand_written_log(path: Path, commits: list[list[dict[str, Any]]]) -> None:
    log = path / "_delta_log"
    log.mkdir(parents=True)
    for version, actions in enumerate(commits):
        text = "\n".join(json.dumps(action) for action in actions) + "\n"
        (log / f"{version:020d}.json").write_text(text)


SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
)
CREATION = [
    {"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE", "txnId": "t0"}},
    {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
    {
        "metaData": {
            "id": "the-table-id",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": SCHEMA,
            "partitionColumns": [],
            "configuration": {"mssql_cdc.kind": "facts"},
            "createdTime": 1,
        }
    },
]


def written(*, rows: str, **info: str) -> dict[str, Any]:
    """A WRITE commit's commitInfo with `info`'s fields and `rows` output rows."""
    metrics = {"numOutputRows": rows}
    return {"commitInfo": {"operation": "WRITE", "operationMetrics": metrics, **info}}


def add(name: str, *, data_change: bool = True) -> dict[str, Any]:
    return {
        "add": {
            "path": name,
            "partitionValues": {},
            "size": 1,
            "modificationTime": 1,
            "dataChange": data_change,
        }
    }


def test_the_head_is_the_newest_version_and_the_metadata_id(tmp_path: Path) -> None:
    path = tmp_path / "t"
    hand_written_log(path, [CREATION, [{"commitInfo": {"operation": "WRITE"}}, add("p1")]])

    reader = LogReader.open(SPARK, table_ref(str(path)))

    assert reader is not None
    head = reader.head()
    assert head is not None
    assert (head.version, head.table_id, head.location) == (1, "the-table-id", str(path))


def test_a_commits_actions_txn_keys_and_metadata_are_summarized(tmp_path: Path) -> None:
    path = tmp_path / "t"
    hand_written_log(
        path,
        [
            CREATION,
            [
                written(txnId="c1", userMetadata='{"facts":"batch"}', rows="7"),
                {"txn": {"appId": "A#facts", "version": 3}},
                add("p1"),
            ],
            [{"commitInfo": {"operation": "OPTIMIZE"}}, add("p2", data_change=False)],
        ],
    )
    reader = LogReader.open(SPARK, table_ref(str(path)))
    assert reader is not None

    first = reader.commit(1)
    compaction = reader.commit(2)

    assert first is not None
    assert compaction is not None
    assert first.kinds == {"commitInfo", "txn", "add"}
    assert first.txn_app_ids == ("A#facts",)
    assert (first.commit_id, first.operation, first.user_metadata) == (
        "c1",
        "WRITE",
        '{"facts":"batch"}',
    )
    assert first.output_rows == 7
    assert first.all_data_change
    assert compaction.operation == "OPTIMIZE"
    assert not compaction.all_data_change


def test_a_commit_file_log_cleanup_removed_reads_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "t"
    hand_written_log(path, [CREATION, [{"commitInfo": {"operation": "WRITE"}}, add("p1")]])
    (path / "_delta_log" / f"{0:020d}.json").unlink()
    (path / "_delta_log" / f"{0:020d}.json").write_text("not json\n")
    reader = LogReader.open(SPARK, table_ref(str(path)))
    assert reader is not None

    assert reader.commit(0) is None
    assert reader.commit(5) is None


def test_a_table_created_again_at_the_path_has_its_own_commits_read(tmp_path: Path) -> None:
    path = tmp_path / "t"
    hand_written_log(path, [CREATION, [written(txnId="first", rows="1"), add("p1")]])
    before = LogReader.open(SPARK, table_ref(str(path)))
    assert before is not None
    first = before.commit(1)
    assert first is not None
    assert first.commit_id == "first"

    shutil.rmtree(path)
    hand_written_log(path, [CREATION, [written(txnId="second-table", rows="22"), add("q1")]])
    after = LogReader.open(SPARK, table_ref(str(path)))
    assert after is not None
    again = after.commit(1)

    assert again is not None
    assert (again.commit_id, again.output_rows) == ("second-table", 22)


def test_a_missing_table_has_no_head(tmp_path: Path) -> None:
    reader = LogReader.open(SPARK, table_ref(str(tmp_path / "missing")))

    assert reader is not None
    assert reader.head() is None


def test_transaction_versions_are_the_last_recorded_per_app_id(tmp_path: Path) -> None:
    path = tmp_path / "t"
    append(path, 1, txn=("orders#events", 0))
    append(path, 2, txn=("orders#events", 1))
    append(path, 3, txn=("orders#facts", 5))

    assert txn_version(SPARK, str(path), "orders#events") == 1
    assert txn_version(SPARK, str(path), "orders#facts") == 5
    assert txn_version(SPARK, str(path), "orders#snapplan.x") is None
    assert txn_version(SPARK, str(tmp_path / "missing"), "orders#events") is None


def test_commits_are_found_by_their_user_metadata_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "t"
    append(path, 1, metadata=json.dumps({"snapshot": "full", "lsn": "0x01"}))
    append(path, 2, metadata="another writer's free text")
    append(path, 3)
    append(path, 4, metadata=json.dumps({"snapshot": "full", "lsn": "0x02"}))

    def full(m: Any) -> bool:
        return "snapshot" in m

    found = find_commits(SPARK, str(path), full)

    assert [(c.version, dict(c.metadata)) for c in found] == [
        (3, {"snapshot": "full", "lsn": "0x02"}),
        (0, {"snapshot": "full", "lsn": "0x01"}),
    ]
    assert [c.version for c in find_commits(SPARK, str(path), full, needle="0x01")] == [0]
    assert [c.version for c in find_commits(SPARK, str(path), full, newest=2)] == [3]
    assert find_commits(SPARK, str(tmp_path / "missing"), full) == []


def test_a_commits_output_rows_come_from_its_operation_metrics(tmp_path: Path) -> None:
    path = tmp_path / "t"
    hand_written_log(
        path,
        [
            CREATION,
            [
                written(userMetadata='{"lsn":"0x05"}', rows="42"),
                add("p1"),
            ],
        ],
    )

    assert find_commits(SPARK, str(path), lambda m: True) == [Commit(1, {"lsn": "0x05"}, 42)]


def test_the_table_state_is_the_version_and_the_live_file_count(tmp_path: Path) -> None:
    path = tmp_path / "t"
    hand_written_log(
        path,
        [
            CREATION,
            [{"commitInfo": {"operation": "WRITE"}}, add("p1"), add("p2")],
            [
                {"commitInfo": {"operation": "DELETE"}},
                {"remove": {"path": "p1", "dataChange": True, "deletionTimestamp": 1}},
            ],
        ],
    )

    assert table_state(SPARK, table_ref(str(path))) == TableState(version=2, files=1)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        pytest.param(lambda p: None, False, id="a missing path"),
        pytest.param(lambda p: p.mkdir(), False, id="an empty folder"),
        pytest.param(
            lambda p: (p / "_delta_log").mkdir(parents=True),
            False,
            id="a log folder with no commit yet",
        ),
        pytest.param(lambda p: append(p, 1), True, id="a delta table"),
    ],
)
def test_a_path_exists_when_a_delta_table_is_there(
    tmp_path: Path, make: Any, expected: bool
) -> None:
    make(tmp_path / "t")

    assert table_ref(str(tmp_path / "t")).exists(SPARK) is expected


def test_a_folder_of_parquet_files_with_no_log_does_not_exist(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    (tmp_path / "t").mkdir()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "t" / "part-0.parquet")

    assert table_ref(str(tmp_path / "t")).exists(SPARK) is False


def test_a_path_with_dot_dot_names_the_table_it_resolves_to(tmp_path: Path) -> None:
    append(tmp_path / "t", 1, txn=("app", 4))
    (tmp_path / "x").mkdir()
    dotted = str(tmp_path / "x" / ".." / "t")

    assert table_ref(dotted).exists(SPARK)
    assert txn_version(SPARK, dotted, "app") == 4


class CatalogOnly:
    """A session that knows one catalog table and no location for it."""

    def __init__(self) -> None:
        self.catalog = self
        self.asked: list[str] = []

    def tableExists(self, name: str) -> bool:
        self.asked.append(name)
        return name == "`ops`.`facts`"


def test_a_catalog_name_exists_as_the_catalog_says() -> None:
    spark = CatalogOnly()

    assert table_ref("ops.facts").exists(spark) is True  # type: ignore[arg-type]
    assert table_ref("ops.other").exists(spark) is False  # type: ignore[arg-type]
    assert spark.asked == ["`ops`.`facts`", "`ops`.`other`"]
