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


# The tier runs a file per worker at a time (decisions 0980, 1454). A file whose few tests take
# minutes each starts first, so the tier never ends with one worker running such a file alone
# while the other idles; the rest follow with the files of most tests first, as xdist would.
RUN_FIRST = (
    "tests/spark/declarative/test_declarative_pipeline.py",
    "tests/spark/pipeline/test_chaos.py",
    "tests/spark/recovery/test_crash_matrix.py",
    "tests/spark/pipeline/test_demo_tables.py",
    "tests/spark/pipeline/test_fan_out.py",
    "tests/spark/recovery/test_recovery_races.py",
    "tests/spark/recovery/test_killed_before_facts.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    first = [name for name in RUN_FIRST if name in by_file]
    rest = sorted(
        (name for name in by_file if name not in RUN_FIRST), key=lambda n: -len(by_file[n])
    )
    items[:] = [item for name in (*first, *rest) for item in by_file[name]]
