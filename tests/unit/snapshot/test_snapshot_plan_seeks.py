"""A full snapshot's partitions planned by one-row seeks (decisions 1411, 1412), on every backend:
the emulator in process and its TDS server through mssql-python and pymssql.

The oracle of coverage is the set of keys the test inserted, in plain Python: the partitions'
reads together give each of them exactly once. The oracle of cost is the emulator's count of
the rows the plan read: a few per partition, never the table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer, io_statistics, reset_io_statistics
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.snapshot_format import CdcSnapshotReader, SnapshotPartition
from mssql_cdc.sqlserver.metadata import ReadColumn

BACKENDS = ("emulator", "mssql-python", "pymssql")
# Leading values spread unevenly, each with several second parts whose text order is not
# their order under the column's case-insensitive collation.
KEYS = [(a, b) for a in [*range(-40, 0), *range(0, 3000, 7)] for b in ("b", "A", "c")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Emulator, TdsServer]]:
    emu = Emulator.create(tmp_path_factory.mktemp("seeks") / "e.db")
    emu.create_table(
        "dbo.c",
        {"a": "int", "b": "nvarchar(10) COLLATE Latin1_General_CI_AS", "v": "int"},
        primary_key=["a", "b"],
    )
    emu.commit([("insert", "dbo.c", {"a": a, "b": b, "v": i}) for i, (a, b) in enumerate(KEYS)])
    emu.enable_cdc("dbo.c")
    with emu.serve() as server:
        yield emu, server


def options(emu: Emulator, server: TdsServer, backend: str) -> dict[str, str]:
    if backend == "emulator":
        return {"backend": "emulator", "emulatorPath": str(emu.path)}
    return {"backend": backend, "connectionString": server.connection_string(backend)}  # type: ignore[arg-type]


def planned(
    emu: Emulator, server: TdsServer, backend: str, n: int
) -> tuple[CdcSnapshotReader, list[SnapshotPartition]]:
    chosen = options(emu, server, backend)
    config = SourceConfig.from_options({"captureInstance": "dbo_c", **chosen})
    columns = [ReadColumn("a", "INT"), ReadColumn("b", "STRING"), ReadColumn("v", "INT")]
    reader = CdcSnapshotReader(config, columns, n)
    return reader, list(reader.partitions())  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_composite_integer_led_key_is_planned_by_a_few_seeks_and_read_once(
    served: tuple[Emulator, TdsServer], backend: str
) -> None:
    emu, server = served
    reset_io_statistics(emu.path)
    reader, parts = planned(emu, server, backend, 8)
    cost = io_statistics(emu.path)["dbo.c"]
    assert len(parts) == 8
    assert cost.scans == 0
    assert cost.rows_read <= 8 + 65  # a seek per bound, and the first column's extent
    seen: Counter[tuple[Any, Any]] = Counter()
    for part in parts:
        for batch in reader.read(part):
            rows = batch.to_pydict()
            seen.update(zip(rows["a"], rows["b"], strict=True))
    assert seen == Counter(dict.fromkeys(KEYS, 1))


def test_statistics_io_on_reports_the_plans_seek_over_tds(
    served: tuple[Emulator, TdsServer],
) -> None:
    """SET STATISTICS IO's message, in the shape Microsoft documents: "Table 'x'. Scan count N,
    logical reads M, ..."
    (https://learn.microsoft.com/en-us/sql/t-sql/statements/set-statistics-io-transact-sql)."""
    _, server = served
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    messages: list[str] = []
    conn._conn.set_msghandler(lambda *m: messages.append(m[5].decode()))
    try:
        cursor = conn.cursor()
        cursor.execute("SET STATISTICS IO ON")
        cursor.execute("SELECT TOP (1) a, b FROM dbo.c WHERE a >= 10 ORDER BY a, b")
        assert cursor.fetchall() == [(14, "A")]
        cursor.execute("SELECT COUNT(*) FROM dbo.c")
        assert cursor.fetchall() == [(len(KEYS),)]
        cursor.execute("SET STATISTICS IO OFF")
        cursor.execute("SELECT COUNT(*) FROM dbo.c")
        cursor.fetchall()
    finally:
        conn.close()
    stats = [m for m in messages if m.startswith("Table ")]
    assert stats == [
        "Table 'c'. Scan count 1, logical reads 1, physical reads 0, read-ahead reads 0, "
        "lob logical reads 0, lob physical reads 0, lob read-ahead reads 0.",
        f"Table 'c'. Scan count 1, logical reads {len(KEYS)}, physical reads 0, read-ahead "
        "reads 0, lob logical reads 0, lob physical reads 0, lob read-ahead reads 0.",
    ]
