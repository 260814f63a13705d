"""`mssql-cdc --version` names the installed distribution's version."""

from __future__ import annotations

from importlib import metadata

import pytest

from mssql_cdc.cli import main


def test_version_prints_the_installed_version_and_exits_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    # the oracle: the version pip recorded for the installed distribution
    assert capsys.readouterr().out == f"mssql-cdc {metadata.version('mssql-cdc')}\n"
