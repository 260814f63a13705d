"""A session that refuses to cache, as serverless compute does: every `DataFrame.persist` and
`DataFrame.cache` raises before anything reaches Spark.

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
from pyspark.sql.dataframe import DataFrame


class CachingRefused(RuntimeError):
    """What the session raises for a persist or cache call."""


def refuse_caching(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make DataFrame.persist and DataFrame.cache raise, on classic and Connect DataFrames
    alike; returns the calls that were refused."""
    refused: list[str] = []

    def refuse(name: str) -> Callable[..., DataFrame]:
        def call(self: DataFrame, *args: object, **kwargs: object) -> DataFrame:
            refused.append(name)
            raise CachingRefused(f"[NOT_SUPPORTED_WITH_SERVERLESS] {name} is not supported")

        return call

    for cls in (DataFrame, ClassicDataFrame, ConnectDataFrame):
        monkeypatch.setattr(cls, "persist", refuse("persist"))
        monkeypatch.setattr(cls, "cache", refuse("cache"))
    return refused
