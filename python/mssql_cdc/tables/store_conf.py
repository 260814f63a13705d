"""A session's object-store settings: what Spark's S3A connector is told, read once for the
library's own file calls (decision 1352).

The library reads a table's Delta log with deltalake and writes and reads a `metricsPath` on a
store through pyarrow; both need the endpoint and keys Spark uses. They are read from the
session's configuration by the names Hadoop gives them (`core.stores.STORE_KEYS`) and kept in
this process for the readers handed no session (`open_table`). Values are never logged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.core import StoreSettings, is_store_uri, remember_settings, settings_from_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["store_settings"]


def store_settings(spark: SparkSession, uri: str) -> StoreSettings:
    """The S3A settings of `uri`'s bucket in `spark`'s configuration, remembered for this
    process; none for a path or a URI of another scheme."""
    if not is_store_uri(uri):
        return StoreSettings()

    def get(key: str) -> str | None:
        value = spark.conf.get(key, None)
        return None if value is None else str(value)

    settings = settings_from_conf(get, uri)
    remember_settings(uri, settings)
    return settings
