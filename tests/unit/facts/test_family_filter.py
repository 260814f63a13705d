"""The family's Arrow filter keeps exactly the rows `family_condition` keeps in SQL."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from mssql_cdc.facts.rows import family_filter
from mssql_cdc.tables.delta_read import read_rows
from mssql_cdc.tables.refs import table_ref


def test_the_family_of_a_is_generation_0_rows_of_a_and_generation_n_rows_of_a_gn(
    tmp_path: Path,
) -> None:
    rows = [
        ("A", 0),  # kept: generation 0 of A
        ("A.g1", 1),  # kept
        ("A.g10", 10),  # kept
        ("A.g2", 1),  # another generation's id
        ("A", 1),  # generation n > 0 writes under A.g<n>
        ("A.g1", 0),
        ("AB", 0),  # a longer id sharing the prefix
        ("B", 0),
        (None, 0),  # NULLs keep nothing, as in SQL
        ("A", None),
    ]
    path = str(tmp_path / "facts")
    write_deltalake(
        path,
        pa.table(
            {
                "app_id": [r[0] for r in rows],
                "generation": pa.array([r[1] for r in rows], pa.int32()),
            }
        ),
    )

    kept = read_rows(table_ref(path), where=family_filter("A")).to_pylist()

    assert sorted((r["app_id"], r["generation"]) for r in kept) == [
        ("A", 0),
        ("A.g1", 1),
        ("A.g10", 10),
    ]
