"""mssql-cdc: stream SQL Server Change Data Capture into Delta Lake on Spark.

The public API is exactly `__all__`; everything else is internal. Names whose modules need
Spark or Delta load on first use, so importing the package (as Spark's Python workers do for
the data sources) loads neither the sink nor the recovery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mssql_cdc.errors import (
    ConfigError,
    DataLossError,
    MssqlCdcError,
    SchemaChangedError,
    is_data_loss,
)

if TYPE_CHECKING:
    from mssql_cdc.sink import delta_sink

# Public name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "delta_sink": "mssql_cdc.sink",
}


def register(spark: Any) -> None:
    """Register the Spark formats `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch).

    See `mssql_cdc.source.register`; PySpark is imported only when this is called.

    Raises:
        ImportError: the installed PySpark lacks Spark 4.2's admission-control API.
    """
    from mssql_cdc.source import register as register_formats

    register_formats(spark)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mssql_cdc' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
