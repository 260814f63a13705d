"""mssql-cdc: stream SQL Server Change Data Capture into Delta Lake on Spark.

The public API is exactly `__all__`; everything else is internal.
"""

from typing import Any

from mssql_cdc.errors import (
    ConfigError,
    DataLossError,
    MssqlCdcError,
    SchemaChangedError,
    is_data_loss,
)
from mssql_cdc.sink import delta_sink


def register(spark: Any) -> None:
    """Register the Spark formats `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch).

    See `mssql_cdc.source.register`; PySpark is imported only when this is called.

    Raises:
        ImportError: the installed PySpark lacks Spark 4.2's admission-control API.
    """
    from mssql_cdc.source import register as register_formats

    register_formats(spark)


__all__ = [
    "ConfigError",
    "DataLossError",
    "MssqlCdcError",
    "SchemaChangedError",
    "delta_sink",
    "is_data_loss",
    "register",
]

__version__ = "0.1.0"
