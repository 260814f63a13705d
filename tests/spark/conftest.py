"""One local SparkSession with Delta per test run; no test may leave a streaming query running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.spark import local_session
from tests.spark.support.backends import stop_servers
from tests.spark.support.query_guard import no_query_left_running  # noqa: F401 - autouse


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    # No try/except: if Spark or Delta cannot start, every test here fails rather than skips.
    session = local_session("mssql-cdc-tests", warehouse=tmp_path_factory.mktemp("spark"))
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def no_server_left_running() -> Iterator[None]:
    yield
    stop_servers()


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    return tmp_path / "tables"
