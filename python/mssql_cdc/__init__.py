"""mssql-cdc: stream SQL Server Change Data Capture into Delta Lake on Spark.

The public API is exactly `__all__`; everything else is internal. Names whose modules need
Spark or Delta load on first use, so importing the package (as Spark's Python workers do for
the data sources) loads neither the sink nor the recovery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mssql_cdc.core import lazy_names
from mssql_cdc.errors import (
    ConfigError,
    DataLossError,
    MssqlCdcError,
    SchemaChangedError,
    is_data_loss,
    is_schema_changed,
)
from mssql_cdc.spark import skip_native_rebuild_check

__version__ = "0.1.0"  # the one place the version is written; pyproject.toml reads it here

skip_native_rebuild_check()  # a local_session's workers: the driver ran the rebuild check

if TYPE_CHECKING:
    from mssql_cdc.core import Offset
    from mssql_cdc.pipeline import (
        OBSERVED_METRICS,
        CdcStream,
        FanOutJob,
        PrometheusTextExporter,
        StreamEntry,
        fan_out,
        observed_figures,
        stream,
    )
    from mssql_cdc.reconciliation import ReconcileResult, reconcile
    from mssql_cdc.recovery import RecoveryPlan, ResnapshotResult
    from mssql_cdc.silver import ApplyResult, apply_changes
    from mssql_cdc.sink import delta_sink
    from mssql_cdc.snapshot import BackfillStatus
    from mssql_cdc.sqlserver import HeartbeatResult, heartbeat, heartbeat_sql

# Public name -> the package whose face exports it, imported when the name is first used.
__getattr__ = lazy_names(
    __name__,
    {
        "ApplyResult": "mssql_cdc.silver",
        "BackfillStatus": "mssql_cdc.snapshot",
        "CdcStream": "mssql_cdc.pipeline",
        "FanOutJob": "mssql_cdc.pipeline",
        "HeartbeatResult": "mssql_cdc.sqlserver",
        "OBSERVED_METRICS": "mssql_cdc.pipeline",
        "Offset": "mssql_cdc.core",
        "PrometheusTextExporter": "mssql_cdc.pipeline",
        "ReconcileResult": "mssql_cdc.reconciliation",
        "RecoveryPlan": "mssql_cdc.recovery",
        "ResnapshotResult": "mssql_cdc.recovery",
        "StreamEntry": "mssql_cdc.pipeline",
        "stream": "mssql_cdc.pipeline",
        "apply_changes": "mssql_cdc.silver",
        "delta_sink": "mssql_cdc.sink",
        "fan_out": "mssql_cdc.pipeline",
        "heartbeat": "mssql_cdc.sqlserver",
        "heartbeat_sql": "mssql_cdc.sqlserver",
        "observed_figures": "mssql_cdc.pipeline",
        "reconcile": "mssql_cdc.reconciliation",
    },
)


def register(spark: Any) -> None:
    """Register the Spark formats `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch).

    See `mssql_cdc.source.formats.register`; PySpark is imported only when this is called.

    Raises:
        ImportError: the installed PySpark lacks Spark 4.2's admission-control API.
    """
    from mssql_cdc.source import register as register_formats

    register_formats(spark)


__all__ = [
    "OBSERVED_METRICS",
    "ApplyResult",
    "BackfillStatus",
    "CdcStream",
    "ConfigError",
    "DataLossError",
    "FanOutJob",
    "HeartbeatResult",
    "MssqlCdcError",
    "Offset",
    "PrometheusTextExporter",
    "ReconcileResult",
    "RecoveryPlan",
    "ResnapshotResult",
    "SchemaChangedError",
    "StreamEntry",
    "apply_changes",
    "delta_sink",
    "fan_out",
    "heartbeat",
    "heartbeat_sql",
    "is_data_loss",
    "is_schema_changed",
    "observed_figures",
    "reconcile",
    "register",
    "stream",
]
