"""The folders the library may clean: a derived folder stays inside its parent."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.core.folders import check_inside
from mssql_cdc.errors import ConfigError


def test_a_plain_subfolder_is_inside_its_parent(tmp_path: Path) -> None:
    assert check_inside(tmp_path / "orders", tmp_path, what="x") == tmp_path.resolve() / "orders"


def test_a_symbolic_link_leading_out_of_the_parent_is_refused(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "metrics", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "orders").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ConfigError, match="outside") as refused:
        check_inside(root / "orders", root, what="the generation's metrics folder")
    assert str(elsewhere.resolve()) in str(refused.value)


@pytest.mark.parametrize("name", ["..", ".", "a/../.."])
def test_a_name_that_is_not_below_the_parent_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="outside"):
        check_inside(tmp_path / name, tmp_path, what="x")
