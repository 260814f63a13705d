"""Commit times across New York's 2026 fall-back through every backend: the emulator in process,
and the same file over TDS through pymssql and mssql-python (decision 1320).

Oracle (plain Python): the UTC instants the test set the server's clock to. Every commit of the
repeated hour (01:00-02:00 local) after a first-occurrence commit with a later local time takes its
true instant, so the commit times never go backwards in LSN order, for point lookups (`commit_time`,
which the watermark, the pre-flight's lost interval and the batch plan use) and for change rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mssql_cdc.core import lsn
from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.serve import serve
from mssql_cdc.facts.metrics import retention_headroom_hours
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
from mssql_cdc.sqlserver.metadata import ReadColumn
from mssql_cdc.sqlserver.tsql.backend import TsqlCaptureCatalog, TsqlChangeReader
from mssql_cdc.sqlserver.tsql.drivers import open_session
from tests.support.new_york_time import ZONE, at_time_zone_utc

COMMITS = [  # 06:00 UTC: 02:00 EDT falls back to 01:00 EST
    datetime(2026, 11, 1, 4, 40),  # 00:40 EDT
    datetime(2026, 11, 1, 5, 10),  # 01:10 EDT
    datetime(2026, 11, 1, 5, 50),  # 01:50 EDT
    datetime(2026, 11, 1, 6, 20),  # 01:20 EST, the second 01:20
    datetime(2026, 11, 1, 6, 40),  # 01:40 EST
    datetime(2026, 11, 1, 7, 30),  # 02:30 EST
]
OTHER = datetime(2026, 11, 1, 6, 30)  # 01:30 EST, a commit of another table


@pytest.fixture(scope="module")
def new_york(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("ny") / "e.db"
    emu = Emulator.create(path, profile="immediate", start="2026-11-01T04:00:00")
    emu.configure(time_zone=ZONE)
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.create_table("dbo.other", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.orders")
    emu.enable_cdc("dbo.other")
    lsns = []
    for i, t in enumerate(COMMITS):
        if t > OTHER and len(lsns) == 4:
            emu.commit([("insert", "dbo.other", {"id": 1})], at=OTHER)
        lsns.append(emu.commit([("insert", "dbo.orders", {"order_id": i})], at=t))
    return path, lsns


@pytest.fixture(params=["emulator", "pymssql", "mssql-python"])
def backend(request: pytest.FixtureRequest, new_york: tuple[Path, list[str]]) -> Iterator[Any]:
    path, _ = new_york
    if request.param == "emulator":
        yield EmulatorBackend(str(path)), ZONE
        return
    with serve(path) as server:
        connection = ConnectionString.parse(server.connection_string(request.param))
        session = open_session(request.param, connection, connect_timeout=10)
        try:
            zone = TsqlCaptureCatalog(session).resolve_time_zone("auto")
            assert zone == "Eastern Standard Time"
            yield TsqlChangeReader(session), zone
        finally:
            session.close()


def test_at_time_zone_alone_would_put_the_second_0120_before_the_first_0150() -> None:
    assert at_time_zone_utc(COMMITS[3]) == datetime(2026, 11, 1, 5, 20) < COMMITS[2]


def test_point_lookups_give_the_true_instant_of_every_commit(
    backend: Any, new_york: tuple[Path, list[str]]
) -> None:
    reader, zone = backend
    _, lsns = new_york
    for at, t in zip(lsns, COMMITS, strict=True):
        assert reader.commit_time(lsn.Lsn(at), zone) == t, t
        assert reader.commit_time(lsn.increment(at), zone) == t, t


@pytest.mark.parametrize("batch_rows", [1, 1000])
def test_change_rows_carry_true_instants_never_going_backwards_in_lsn_order(
    backend: Any, new_york: tuple[Path, list[str]], batch_rows: int
) -> None:
    reader, zone = backend
    _, lsns = new_york
    for first in (0, 3):  # from before the fall-back, and from the second 01:20 itself
        batches = reader.read_changes(
            "dbo_orders",
            lsn.Lsn(lsns[first]),
            lsn.Lsn(lsns[-1]),
            columns=(ReadColumn("order_id", "INT"),),
            include_command_id=False,
            time_zone=zone,
            batch_rows=batch_rows,
        )
        table = pa.Table.from_batches(list(batches))
        assert table.column_names == [
            "_capture_instance",
            "_start_lsn",
            "_seqval",
            "_operation",
            "_commit_ts",
            "order_id",
        ]
        times = table.column("_commit_ts").to_pylist()
        assert times == COMMITS[first:]
        assert times == sorted(times)


def test_the_retention_headroom_from_a_mark_in_the_repeated_hour_is_the_true_span(
    backend: Any, new_york: tuple[Path, list[str]]
) -> None:
    # The mark on the second 01:20 and the end on 02:30 EST are 70 minutes apart; AT TIME ZONE
    # alone would give 05:20 for the mark and claim 2.17 hours of headroom.
    reader, zone = backend
    _, lsns = new_york
    mark = reader.commit_time(lsn.Lsn(lsns[3]), zone)
    end = reader.commit_time(lsn.Lsn(lsns[-1]), zone)
    assert retention_headroom_hours(end, mark) == 1.17
