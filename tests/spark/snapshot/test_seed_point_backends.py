"""seed()'s `as_of` time mapped to an LSN through every backend: the emulator in process and
the same file over TDS through both SQL Server drivers. No Spark session is needed.

The oracle is the commit times the test gave each commit, in plain Python: the newest commit at
or before the time, as `sys.fn_cdc_map_time_to_lsn('largest less than or equal', ...)` defines
it (https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-map-time-to-lsn-transact-sql).
"""

from __future__ import annotations

from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.snapshot.probe import open_probe
from mssql_cdc.snapshot.seed_point import lsn_at_time
from tests.spark.support.backends import BACKENDS, Backend, backend_options

T0 = datetime(2026, 9, 28, 14, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_commit_time_maps_to_the_newest_commit_at_or_before_it_on_every_backend(
    tmp_path: Path, backend: Backend
) -> None:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.t", {"k": "int", "v": "int"}, primary_key="k")
    emu.enable_cdc("dbo.t")
    made: list[tuple[datetime, str]] = []
    for k in range(9):
        at = T0 + timedelta(seconds=7 * k + 7, milliseconds=120)
        made.append((at, emu.commit([("insert", "dbo.t", {"k": k, "v": k})], at=at.isoformat())))
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_t", **backend_options(path, backend)}
    )
    with closing(open_probe(config)) as probe:
        for at, _ in made:
            for moment in (at - timedelta(milliseconds=1), at, at + timedelta(seconds=2)):
                wanted = [lsn for when, lsn in made if when <= moment]
                if not wanted:
                    with pytest.raises(ConfigError, match="before the oldest commit"):
                        lsn_at_time(probe, moment)
                else:
                    assert lsn_at_time(probe, moment) == wanted[-1], (backend, moment)
