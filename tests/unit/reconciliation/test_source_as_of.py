"""The source side read as of an LSN while changes keep landing, against the emulator's rows
recorded at that LSN."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.core.row_digest import TileDigest, row_digest
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import DataLossError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.reconciliation.source_side import SourceAsOf, SourceTable
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.metadata import ReadColumn

COLUMNS = (ReadColumn("id", "INT", "int"), ReadColumn("status", "STRING", "varchar"))


def _world(tmp_path: Path) -> tuple[Emulator, Backend]:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.orders", {"id": "int", "status": "varchar(12)"}, primary_key="id")
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"id": k, "status": "new"}) for k in range(1, 101)])
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}
    )
    return emu, open_backend(config)


def _side(backend: Backend, at: str) -> SourceAsOf:
    table = SourceTable("dbo_orders", "dbo", "orders", COLUMNS, ("id",))
    return SourceAsOf(
        table, at, tiles=backend.tiles, chunks=backend.chunks, changes=backend.changes
    )


def _digests(rows: list[dict[str, object]], key_range: tuple[object, object]) -> TileDigest:
    lo, hi = key_range
    return TileDigest.of(
        row_digest([r["id"], r["status"]])
        for r in rows
        if (lo is None or r["id"] >= lo) and (hi is None or r["id"] < hi)  # type: ignore[operator]
    )


def test_changes_after_the_lsn_are_taken_back_out(tmp_path: Path) -> None:
    emu, backend = _world(tmp_path)
    emu.commit([("update", "dbo.orders", {"id": 5, "status": "paid"})])
    at = emu.max_lsn()
    assert at is not None
    then = emu.rows("dbo.orders")  # the oracle: the table as it was at `at`
    emu.commit([("delete", "dbo.orders", {"id": 7})])
    emu.commit([("update", "dbo.orders", {"id": 5, "status": "shipped"})])
    emu.commit([("insert", "dbo.orders", {"id": 500, "status": "new"})])
    emu.commit(
        [("update", "dbo.orders", {"id": 9, "status": "x"}), ("delete", "dbo.orders", {"id": 9})]
    )
    ranges = [(None, 6), (6, 50), (50, None)]
    side = _side(backend, at)
    assert side.digests(ranges) == [_digests(then, r) for r in ranges]
    assert side.keyed((None, None)) == {
        (r["id"],): row_digest([r["id"], r["status"]]) for r in then
    }
    backend.close()


def test_changes_landing_between_two_questions_are_folded_in_too(tmp_path: Path) -> None:
    emu, backend = _world(tmp_path)
    at = emu.max_lsn()
    assert at is not None
    then = emu.rows("dbo.orders")
    side = _side(backend, at)
    assert side.digests([(None, None)]) == [_digests(then, (None, None))]
    emu.commit([("delete", "dbo.orders", {"id": k}) for k in range(1, 30)])
    assert side.digests([(None, None)]) == [_digests(then, (None, None))]
    assert side.settled_at == emu.max_lsn()
    backend.close()


def test_a_purge_of_the_changes_after_the_lsn_is_a_data_loss(tmp_path: Path) -> None:
    emu, backend = _world(tmp_path)
    at = emu.max_lsn()
    assert at is not None
    emu.commit([("delete", "dbo.orders", {"id": 1})])
    newest = emu.commit([("delete", "dbo.orders", {"id": 2})])
    emu.cleanup("dbo_orders", newest)
    with pytest.raises(DataLossError, match="cannot read the source as of"):
        _side(backend, at).digests([(None, None)])
    backend.close()


def test_a_range_a_commit_crosses_during_every_read_is_read_key_by_key(tmp_path: Path) -> None:
    emu, backend = _world(tmp_path)
    at = emu.max_lsn()
    assert at is not None
    then = emu.rows("dbo.orders")
    n = iter(range(1000, 2000))

    class Busy:
        """The emulator's hasher with a commit landing inside each of its reads."""

        def range_digests(self, *args: object, **kwargs: object) -> list[TileDigest]:
            k = next(n)
            emu.commit([("update", "dbo.orders", {"id": 3, "status": f"s{k}"})])
            return backend.tiles.range_digests(*args, **kwargs)  # type: ignore[arg-type]

        def key_digests(self, *args: object, **kwargs: object) -> dict[tuple[object, ...], int]:
            emu.commit([("insert", "dbo.orders", {"id": next(n), "status": "new"})])
            return backend.tiles.key_digests(*args, **kwargs)  # type: ignore[arg-type]

        def close(self) -> None:
            pass

    table = SourceTable("dbo_orders", "dbo", "orders", COLUMNS, ("id",))
    side = SourceAsOf(table, at, tiles=Busy(), chunks=backend.chunks, changes=backend.changes)
    ranges = [(None, 50), (50, None)]
    assert side.digests(ranges) == [_digests(then, r) for r in ranges]
    backend.close()
