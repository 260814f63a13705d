"""`seed()`'s copy point: exactly one of at_lsn and as_of, and a commit time mapped to the newest
source commit at or before it, over the emulator. The oracle is the commit times the test gave
each commit, in plain Python."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from mssql_cdc.core.lsn import Lsn
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.snapshot.probe import open_probe
from mssql_cdc.snapshot.seed import seed
from mssql_cdc.snapshot.seed_point import copy_point, lsn_at_time

T0 = datetime(2026, 9, 28, 14, 0)


def _source(tmp_path: Path, commits: int) -> tuple[SourceConfig, list[tuple[datetime, str]]]:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.t", {"k": "int", "v": "int"}, primary_key="k")
    emu.enable_cdc("dbo.t")
    made = []
    for k in range(commits):
        at = T0 + timedelta(seconds=10 * k + 10, milliseconds=250)
        made.append((at, emu.commit([("insert", "dbo.t", {"k": k, "v": k})], at=at.isoformat())))
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_t", "backend": "emulator", "emulatorPath": str(path)}
    )
    return config, made


def expected(made: list[tuple[datetime, str]], moment: datetime) -> str | None:
    found = [lsn for at, lsn in made if at <= moment]
    return found[-1] if found else None


@pytest.mark.parametrize("commits", [1, 2, 5, 13])
def test_a_commit_time_maps_to_the_newest_commit_at_or_before_it(
    tmp_path: Path, commits: int
) -> None:
    config, made = _source(tmp_path, commits)
    probe = open_probe(config)
    moments = [at for at, _ in made]
    moments += [at - timedelta(milliseconds=1) for at, _ in made[1:]]
    moments += [at + timedelta(seconds=3) for at, _ in made[:-1]]
    for moment in moments:
        assert lsn_at_time(probe, moment) == expected(made, moment), moment


def test_a_commit_time_before_every_commit_is_refused_naming_at_lsn(tmp_path: Path) -> None:
    config, made = _source(tmp_path, 3)
    with pytest.raises(ConfigError, match=r"before the oldest commit .* pass the copy's LSN"):
        lsn_at_time(open_probe(config), made[0][0] - timedelta(milliseconds=1))


def test_the_copy_point_is_exactly_one_of_at_lsn_and_as_of() -> None:
    lsn = "0x0000002A000001F00003"
    assert copy_point(lsn.lower(), None) == lsn
    assert copy_point(None, Lsn(lsn)) == lsn
    assert copy_point(None, T0) == T0
    assert copy_point(None, T0.replace(tzinfo=timezone(timedelta(hours=2)))) == T0 - timedelta(
        hours=2
    )
    assert copy_point(None, T0.replace(tzinfo=UTC)) == T0
    with pytest.raises(ConfigError, match="exactly one of at_lsn and as_of"):
        copy_point(None, None)
    with pytest.raises(ConfigError, match="exactly one of at_lsn and as_of"):
        copy_point(lsn, T0)
    with pytest.raises(ConfigError, match=r"as_of=12 is not an LSN.* or a datetime"):
        copy_point(None, 12)
    with pytest.raises(ConfigError, match=r"at_lsn=datetime.* is not an LSN"):
        copy_point(T0, None)


@pytest.mark.parametrize("flag", ["allow_missing_columns", "reseed"])
def test_a_flag_that_is_not_a_bool_is_refused_naming_it(tmp_path: Path, flag: str) -> None:
    config, made = _source(tmp_path, 1)
    with pytest.raises(ConfigError, match=f"seed: {flag}='yes' must be True or False"):
        seed(
            object(),  # type: ignore[arg-type]  # never reached: the flags are checked first
            config,
            str(tmp_path / "copy"),
            str(tmp_path / "bronze"),
            "orders",
            str(tmp_path / "ckpt"),
            str(tmp_path / "facts"),
            made[0][1],
            **{flag: "yes"},  # type: ignore[arg-type]
        )


def test_a_copy_that_is_neither_a_name_nor_a_dataframe_is_refused(tmp_path: Path) -> None:
    config, made = _source(tmp_path, 1)
    with pytest.raises(ConfigError, match="must be a table name or path, or a DataFrame"):
        seed(
            object(),  # type: ignore[arg-type]
            config,
            42,  # type: ignore[arg-type]
            str(tmp_path / "bronze"),
            "orders",
            str(tmp_path / "ckpt"),
            str(tmp_path / "facts"),
            made[0][1],
        )
