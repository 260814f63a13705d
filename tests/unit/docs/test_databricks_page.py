"""docs/databricks.md: what the page says the library does, checked against the library.

No Databricks workspace is at hand, so the page's Databricks facts are cited to Databricks'
documentation and are not tested here. What is tested is the library's side: the paths it
accepts and refuses for a checkpoint and `metricsPath`, the names a Python wheel task needs
(from pyproject.toml, read as plain TOML), the entry point the page's script task calls, and the
page's table of the steps that cache a DataFrame (the modules that call `persist` or `cache`).
"""

from __future__ import annotations

import ast
import re
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.pipeline.arguments import check_to_delta

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "databricks.md"
PY_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
VOLUME = "/Volumes/main/cdc/lake/checkpoints/orders"
SPARK_ONLY = {  # a checkpoint -> how the page names its kind
    "dbfs:/lake/ckpt/orders": "`dbfs:/...`",
    "abfss://c@a.dfs.core.windows.net/ckpt": "`abfss://...`",
    "/dbfs/ckpt": "`/dbfs/...`",
}
CACHING = {  # the page's one step that may cache (where the session allows it), by module
    "reconciliation/target_side.py",
}


@pytest.fixture
def options(tmp_path: Path) -> dict[str, object]:
    db = tmp_path / "e.db"
    db.write_bytes(b"")  # the config only checks that the file exists
    return {"backend": "emulator", "emulatorPath": str(db), "captureInstance": "dbo_orders"}


def to_delta_args(options: dict[str, object], checkpoint: str, on_data_loss: str) -> Any:
    return check_to_delta(
        SourceConfig.from_options(options),
        options,
        target="/Volumes/main/cdc/lake/bronze/orders",
        app_id="orders-v1",
        checkpoint=checkpoint,
        facts_table="/Volumes/main/cdc/lake/facts",
        bootstrap=True,
        on_data_loss=on_data_loss,
        interval_days=7.0,
        mode="full",
    )


def test_the_page_says_plainly_that_it_is_not_tested_on_databricks() -> None:
    assert PAGE.read_text().startswith("# Running on Databricks\n\n**Not tested on Databricks.**")


def test_a_volume_checkpoint_is_one_folder_for_python_and_spark_with_resnapshot(
    options: dict[str, object],
) -> None:
    args = to_delta_args(options, VOLUME, "resnapshot")
    assert args.checkpoint == VOLUME
    assert not args.checkpoint_is_spark_only


@pytest.mark.parametrize("checkpoint", sorted(SPARK_ONLY))
def test_a_uri_or_dbfs_checkpoint_is_refused_with_resnapshot_and_runs_with_fail(
    options: dict[str, object], checkpoint: str
) -> None:
    assert SPARK_ONLY[checkpoint] in PAGE.read_text()
    with pytest.raises(ConfigError, match="must be a local path or a Volume"):
        to_delta_args(options, checkpoint, "resnapshot")
    assert to_delta_args(options, checkpoint, "fail").checkpoint_is_spark_only


def test_metrics_path_takes_a_volume_and_refuses_a_uri(options: dict[str, object]) -> None:
    volume = "/Volumes/main/cdc/lake/metrics"
    assert SourceConfig.from_options({**options, "metricsPath": volume}).metrics_path == volume
    with pytest.raises(ConfigError, match="metricsPath must be a local or FUSE path"):
        SourceConfig.from_options({**options, "metricsPath": "dbfs:/lake/metrics"})


def test_the_wheel_task_names_on_the_page_are_the_packages_own() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["mssql-cdc"] == "mssql_cdc.cli:main"
    text = " ".join(PAGE.read_text().split())
    assert f"names the package `{project['name']}` and the entry point `mssql-cdc`" in text


def test_the_pages_python_parses_and_its_script_task_calls_the_clis_main() -> None:
    blocks = PY_BLOCK.findall(PAGE.read_text())
    trees = [ast.parse(textwrap.dedent(block)) for block in blocks]
    imported = {
        (node.module, alias.name)
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mssql")
        for alias in node.names
    }
    assert ("mssql_cdc.cli", "main") in imported
    from mssql_cdc.cli import main

    with pytest.raises(SystemExit) as usage:  # argparse: `run` without its job file
        main(["run"])
    assert usage.value.code == 2


def test_the_modules_that_cache_a_dataframe_are_the_pages_caching_steps() -> None:
    package = ROOT / "python" / "mssql_cdc"
    caching = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if re.search(r"\.persist\(|\.cache\(\)", path.read_text())
    }
    assert caching == CACHING
