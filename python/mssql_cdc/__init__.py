"""mssql-cdc: stream SQL Server Change Data Capture into Delta Lake on Spark.

The public API is exactly `__all__`; everything else is internal.
"""

from mssql_cdc.errors import (
    ConfigError,
    DataLossError,
    MssqlCdcError,
    SchemaChangedError,
    is_data_loss,
)
from mssql_cdc.silver import ApplyResult, apply_changes

__all__ = [
    "ApplyResult",
    "ConfigError",
    "DataLossError",
    "MssqlCdcError",
    "SchemaChangedError",
    "apply_changes",
    "is_data_loss",
]

__version__ = "0.1.0"
