"""The driver-side probe of snapshots over the emulator: stamp, observation, key extents and
chunk plans, checked against the emulator's own rows and LSNs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, serve
from mssql_cdc.emulator.wire_faults import WireFault
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.snapshot.chunk_plan import int_chunks, key_extent, keyset_chunks
from mssql_cdc.snapshot.probe import open_probe, stamp
from mssql_cdc.sqlserver.tsql import retry


def _source(tmp_path: Path, key_type: str) -> tuple[Emulator, SourceConfig]:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.t", {"k": key_type, "v": "int"}, primary_key="k")
    emu.enable_cdc("dbo.t")
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_t", "backend": "emulator", "emulatorPath": str(path)}
    )
    return emu, config


def test_the_stamp_is_max_lsn_with_its_commit_time(tmp_path: Path) -> None:
    emu, config = _source(tmp_path, "int")
    last = emu.commit([("insert", "dbo.t", {"k": 1, "v": 1})], at="2026-09-28T14:00:01.250")
    probe = open_probe(config)
    at = stamp(probe)
    assert at.lsn == last == emu.max_lsn()
    assert at.commit_ts == "2026-09-28T14:00:01.250"
    [instance] = probe.observe().instances
    assert (instance.name, instance.min_lsn) == ("dbo_t", emu.min_lsn("dbo_t"))


def test_an_integer_key_has_an_int_extent_and_chunks_covering_every_row(tmp_path: Path) -> None:
    emu, config = _source(tmp_path, "bigint")
    keys = [3, 10, 11, 12, 50, 51, 52, 53, 900]
    emu.commit([("insert", "dbo.t", {"k": k, "v": 0}) for k in keys])
    probe = open_probe(config)
    names, extent = key_extent(probe)
    assert names == ["k"]
    assert extent == {"kind": "int", "lo": 3, "hi": 900, "rows": len(keys)}
    chunks = int_chunks(probe, "k", extent, 3, "bigint")
    assert chunks[0][0] is None
    assert chunks[-1][1] == 901
    for lo, hi in chunks:
        inside = [k for k in keys if (lo is None or lo <= k) and k < hi]
        assert len(inside) <= 3
    assert sum(
        len([k for k in keys if (lo is None or lo <= k) and k < hi]) for lo, hi in chunks
    ) == len(keys)


def test_a_text_key_is_cut_by_keyset_bounds_up_to_its_maximum(tmp_path: Path) -> None:
    emu, config = _source(tmp_path, "nvarchar(10)")
    keys = ["a", "b", "c", "d", "e"]
    emu.commit([("insert", "dbo.t", {"k": k, "v": 0}) for k in keys])
    probe = open_probe(config)
    names, extent = key_extent(probe)
    assert extent == {"kind": "keyset", "max": "e"}
    assert keyset_chunks(probe, names, "c", 2) == [[None, "c"], ["c", "d"]]
    assert keyset_chunks(probe, names, "e", 2) == [[None, "c"], ["c", "e"], ["e", None]]


def test_the_stamp_of_a_commit_in_the_repeated_hour_of_a_fall_back_is_its_true_instant(
    tmp_path: Path,
) -> None:
    """A New York server stores local times; 01:20 EST (06:20 UTC) after 01:50 EDT (05:50 UTC)
    must stamp as 06:20, not AT TIME ZONE's earlier 05:20. Oracle: the UTC
    instants the test commits at (the emulator's clock runs in UTC and stores local times)."""
    from datetime import datetime

    from tests.support.new_york_time import ZONE

    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.configure(time_zone=ZONE)
    emu.create_table("dbo.t", {"k": "int", "v": "int"}, primary_key="k")
    emu.enable_cdc("dbo.t")
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_t", "backend": "emulator", "emulatorPath": str(path)}
    )
    commits = [datetime(2026, 11, 1, 5, 50), datetime(2026, 11, 1, 6, 20)]
    for i, t in enumerate(commits):
        last = emu.commit(
            [("insert", "dbo.t", {"k": i, "v": i})], at=t
        )  # the clock is UTC; the server stores local
    probe = open_probe(config)
    at = stamp(probe)
    assert at.lsn == last
    assert at.commit_ts == "2026-11-01T06:20:00.000"


def test_a_probe_over_tds_reads_again_on_a_new_connection_after_a_transient_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chaos run restarted the server while a re-snapshot held its probe's session (opened
    # before its turn for a snapshot slot): the stamp's read failed with the driver's raw
    # error and the stream failed. Microsoft lists 40613 (database not currently available)
    # among the transient errors to retry on a new connection
    # (https://learn.microsoft.com/azure/azure-sql/database/troubleshoot-common-errors-issues).
    monkeypatch.setattr(retry, "sleep", lambda _seconds: None)
    emu, _ = _source(tmp_path, "int")
    last = emu.commit([("insert", "dbo.t", {"k": 1, "v": 1})], at="2026-09-28T14:00:01.250")
    fault = WireFault("error", match="fn_cdc_get_max_lsn", number=40613, times=1)
    with serve(emu.path, faults=[fault]) as server:
        config = SourceConfig.from_options(
            {
                "captureInstance": "dbo_t",
                "backend": "pymssql",
                "connectionString": server.connection_string("pymssql"),
            }
        )
        probe = open_probe(config)
        try:
            at = stamp(probe)
            assert (at.lsn, at.commit_ts) == (last, "2026-09-28T14:00:01.250")
            assert probe.row_count() == 1
        finally:
            probe.close()
