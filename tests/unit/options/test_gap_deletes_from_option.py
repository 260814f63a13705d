"""The option gapDeletesFrom (decision 1426): only with snapshotMode=when_needed, and it
round-trips through the options' text."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.options import SourceConfig


def options(tmp_path: Path) -> dict[str, str]:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    return {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(db)}


@pytest.mark.parametrize("mode", ["never", "initial"])
def test_gap_deletes_from_is_refused_unless_the_stream_re_snapshots(
    tmp_path: Path, mode: str
) -> None:
    given = {**options(tmp_path), "gapDeletesFrom": "/t/delivered", "snapshotMode": mode}
    with pytest.raises(ConfigError, match=f"gapDeletesFrom.*snapshotMode={mode}"):
        SourceConfig.from_options(given)


def test_gap_deletes_from_with_when_needed_round_trips(tmp_path: Path) -> None:
    given = {**options(tmp_path), "gapDeletesFrom": "/t/delivered", "snapshotMode": "when_needed"}
    config = SourceConfig.from_options(given)
    assert config.gap_deletes_from == "/t/delivered"
    assert SourceConfig.from_options(config.to_options()) == config
    assert SourceConfig.from_options(options(tmp_path)).gap_deletes_from is None
