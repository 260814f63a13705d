"""Path tables read in process by deltalake: rows, filters, times, and what is out of reach."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake

from mssql_cdc.tables.delta_read import read_rows
from mssql_cdc.tables.reference import TableOutOfReach, find_table
from mssql_cdc.tables.refs import table_ref


def orders(tmp_path: Path) -> str:
    path = str(tmp_path / "orders")
    data = pa.table(
        {
            "app_id": ["A", "A.g1", "B"],
            "generation": pa.array([0, 1, 0], pa.int32()),
            "at": pa.array(
                [datetime(2026, 1, 2, 3, 4, 5, 6), None, datetime(2026, 1, 1)], pa.timestamp("us")
            ),
        }
    )
    write_deltalake(path, data)
    return path


def test_the_rows_of_a_path_table_are_read_with_their_values(tmp_path: Path) -> None:
    table = read_rows(table_ref(orders(tmp_path)))

    assert table.column_names == ["app_id", "generation", "at"]
    assert sorted(table.to_pylist(), key=lambda r: r["app_id"]) == [
        {"app_id": "A", "generation": 0, "at": datetime(2026, 1, 2, 3, 4, 5, 6)},
        {"app_id": "A.g1", "generation": 1, "at": None},
        {"app_id": "B", "generation": 0, "at": datetime(2026, 1, 1)},
    ]


def test_columns_select_and_order_and_a_filter_keeps_only_matching_rows(tmp_path: Path) -> None:
    where = (pc.field("generation") == 0) & (pc.field("app_id") == "A")

    table = read_rows(table_ref(orders(tmp_path)), columns=["at", "app_id"], where=where)

    assert table.to_pylist() == [{"at": datetime(2026, 1, 2, 3, 4, 5, 6), "app_id": "A"}]


def test_a_comparison_with_null_keeps_no_row_as_in_sql(tmp_path: Path) -> None:
    table = read_rows(table_ref(orders(tmp_path)), where=pc.field("at") >= datetime(2025, 1, 1))

    assert sorted(table.column("app_id").to_pylist()) == ["A", "B"]


def test_a_timestamp_with_a_time_zone_reads_as_naive_utc(tmp_path: Path) -> None:
    path = str(tmp_path / "zoned")
    at = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    write_deltalake(path, pa.table({"at": pa.array([at], pa.timestamp("us", tz="UTC"))}))

    table = read_rows(table_ref(path))

    assert table.schema.field("at").type == pa.timestamp("us")
    assert table.column("at").to_pylist() == [datetime(2026, 3, 4, 5, 6, 7)]


def test_a_naive_timestamp_keeps_its_wall_time(tmp_path: Path) -> None:
    table = read_rows(table_ref(orders(tmp_path)), columns=["at"])

    assert table.schema.field("at").type == pa.timestamp("us")


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda p: p, id="a missing path"),
        pytest.param(lambda p: (p.mkdir(), p)[1], id="an empty folder"),
    ],
)
def test_no_delta_table_at_a_path_is_out_of_reach(tmp_path: Path, make: object) -> None:
    path = make(tmp_path / "nothing")  # type: ignore[operator]

    with pytest.raises(TableOutOfReach, match="no Delta log"):
        read_rows(table_ref(str(path)))


def test_a_folder_of_parquet_files_without_a_log_is_not_a_table(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    folder = tmp_path / "files"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1]}), folder / "part-0.parquet")

    assert find_table(table_ref(str(folder))) is False
    with pytest.raises(TableOutOfReach):
        read_rows(table_ref(str(folder)))


def test_a_catalog_name_and_a_dbfs_path_are_out_of_reach() -> None:
    with pytest.raises(TableOutOfReach, match="catalog name"):
        read_rows(table_ref("ops.facts"))
    with pytest.raises(TableOutOfReach, match="dbfs"):
        read_rows(table_ref("/dbfs/lake/facts"))
    assert find_table(table_ref("ops.facts")) is None
    assert find_table(table_ref("/dbfs/lake/facts")) is None


def test_a_column_the_table_lacks_is_out_of_reach(tmp_path: Path) -> None:
    with pytest.raises(TableOutOfReach, match="no columns"):
        read_rows(table_ref(orders(tmp_path)), columns=["app_id", "written_at"])


def test_a_table_with_a_reader_feature_deltalake_lacks_is_out_of_reach(tmp_path: Path) -> None:
    log = tmp_path / "future" / "_delta_log"
    log.mkdir(parents=True)
    actions = [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["aFeatureFromTheFuture"],
                "writerFeatures": ["aFeatureFromTheFuture"],
            }
        },
        {
            "metaData": {
                "id": "t-1",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(
                    {
                        "type": "struct",
                        "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}],
                    }
                ),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 1,
            }
        },
    ]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")

    with pytest.raises(TableOutOfReach):
        read_rows(table_ref(str(tmp_path / "future")))


def test_a_path_with_dot_dot_reads_the_table_it_resolves_to(tmp_path: Path) -> None:
    orders(tmp_path)
    (tmp_path / "elsewhere").mkdir()

    table = read_rows(table_ref(str(tmp_path / "elsewhere" / ".." / "orders")))

    assert table.num_rows == 3
    assert find_table(table_ref(str(tmp_path / "elsewhere" / ".." / "orders"))) is True
