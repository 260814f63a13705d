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
from mssql_cdc.spark import skip_native_rebuild_check

skip_native_rebuild_check()  # in Spark's Python workers of a local_session (decision 0371)

if TYPE_CHECKING:
    from mssql_cdc.backfill import BackfillStatus
    from mssql_cdc.offsets import Offset
    from mssql_cdc.recovery_plan import RecoveryPlan
    from mssql_cdc.silver import ApplyResult, apply_changes
    from mssql_cdc.sink import delta_sink
    from mssql_cdc.stream import CdcStream, stream

# Public name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "ApplyResult": "mssql_cdc.silver",
    "BackfillStatus": "mssql_cdc.backfill",
    "CdcStream": "mssql_cdc.stream",
    "Offset": "mssql_cdc.offsets",
    "RecoveryPlan": "mssql_cdc.recovery_plan",
    "stream": "mssql_cdc.stream",
    "apply_changes": "mssql_cdc.silver",
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
    loaded = importlib.import_module(module)
    # Importing `mssql_cdc.stream` binds the package attribute `stream` to the module; the
    # public name is the function, so every lazy name of that module is bound here at once.
    for lazy_name, lazy_module in _LAZY.items():
        if lazy_module == module:
            globals()[lazy_name] = getattr(loaded, lazy_name)
    return globals()[name]


__all__ = [
    "ApplyResult",
    "BackfillStatus",
    "CdcStream",
    "ConfigError",
    "DataLossError",
    "MssqlCdcError",
    "Offset",
    "RecoveryPlan",
    "SchemaChangedError",
    "apply_changes",
    "delta_sink",
    "is_data_loss",
    "register",
    "stream",
]

__version__ = "0.1.0"
