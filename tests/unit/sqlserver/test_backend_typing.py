"""mypy pins each T-SQL backend to the Protocol its caller uses."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[3]


def run_mypy(file: Path) -> tuple[str, int]:
    out, err, status = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--no-incremental", str(file)]
    )
    return out + err, status


def test_every_t_sql_and_emulator_backend_satisfies_its_protocol() -> None:
    out, status = run_mypy(ROOT / "tests" / "typing" / "backends_conform.py")
    assert status == 0, out


def test_a_backend_missing_a_method_is_refused_by_the_same_check(tmp_path: Path) -> None:
    bad = tmp_path / "bad_backend.py"
    bad.write_text(
        "from mssql_cdc.sqlserver import ChangeRangeReader\n"
        "class HalfReader:\n"
        "    def close(self) -> None: ...\n"
        "reader: ChangeRangeReader = HalfReader()\n"
    )
    out, status = run_mypy(bad)
    assert status == 1
    assert "Incompatible types in assignment" in out
