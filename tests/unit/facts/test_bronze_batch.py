"""A batch's aggregates from bronze's rows, by the rules of docs/tables.md's facts columns:
`rows` every row, the `_start_lsn` and `_commit_ts` ranges, and the counts of operation codes
1 delete, 2 insert and 4 update after-image, per
https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql
"""

from __future__ import annotations

import json
from datetime import datetime

import pyarrow as pa

from mssql_cdc.facts import BatchAggregates, aggregates_of_arrow
from mssql_cdc.tables.commit_rows import added_files


def test_bronze_rows_of_a_batch_count_every_row_and_each_operation_code() -> None:
    rows = pa.table(
        {
            "_start_lsn": [
                "0x0000002A000000100003",
                "0x0000002A000000100003",
                "0x0000002A000000200002",
            ],
            "_operation": [3, 4, 1],
            "_commit_ts": [datetime(2026, 9, 28, 14, 1), datetime(2026, 9, 28, 14, 1), None],
        }
    )
    assert aggregates_of_arrow(rows) == BatchAggregates(
        rows=3,
        min_lsn="0x0000002A000000100003",
        max_lsn="0x0000002A000000200002",
        min_commit_ts=datetime(2026, 9, 28, 14, 1),
        max_commit_ts=datetime(2026, 9, 28, 14, 1),
        deletes=1,
        inserts=0,
        updates=1,
    )


def test_an_empty_batch_s_commit_has_no_ranges() -> None:
    rows = pa.table(
        {
            "_start_lsn": pa.array([], pa.string()),
            "_operation": pa.array([], pa.int32()),
            "_commit_ts": pa.array([], pa.timestamp("us")),
        }
    )
    assert aggregates_of_arrow(rows) == BatchAggregates(0, None, None, None, None, 0, 0, 0)


def test_a_commit_s_added_files_are_its_add_actions_paths_url_decoded() -> None:
    lines = [
        json.dumps({"commitInfo": {"userMetadata": "{}"}}),
        json.dumps({"txn": {"appId": "a", "version": 3}}),
        json.dumps({"add": {"path": "part-00000-a%20b.snappy.parquet", "size": 1}}),
        json.dumps({"remove": {"path": "part-old.parquet"}}),
        json.dumps({"add": {"path": "part-00001-c.snappy.parquet", "size": 1}}),
        "",
    ]
    assert added_files(lines) == ["part-00000-a b.snappy.parquet", "part-00001-c.snappy.parquet"]
