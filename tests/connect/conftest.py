"""One local Spark Connect session with Delta per test run; no test may leave a query running.

The Connect server runs in this pytest process's JVM, which must hold no classic session:
`make test-python` runs this tier in a pytest process of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.spark import local_connect_session
from tests.spark.support.query_guard import no_query_left_running  # noqa: F401 - autouse


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    # No try/except: if Spark, Delta or the Connect server cannot start, every test here fails.
    home = tmp_path_factory.mktemp("spark")
    session = local_connect_session("mssql-cdc-connect-tests", warehouse=home)
    assert type(session).__module__.startswith("pyspark.sql.connect"), type(session)
    yield session
    session.stop()
