"""Automatic recovery after CDC data loss: the pre-flight, its dry run, the Spark steps and
what the recovery observes of the source.

These names are the package's face; other packages import them from here, not from its
modules. `open_next_generation` is the one operation that opens a stream's next generation
from a snapshot: the automatic recovery, `CdcStream.resnapshot` and `reconcile(repair=True)`
all run it. Importing the package loads neither Spark nor Delta.
"""

from mssql_cdc.recovery.arguments import (
    MAX_INTERVAL_DAYS,
    RecoverySettings,
    StreamArguments,
    check_recovery,
    check_recovery_settings,
    check_stream_names,
)
from mssql_cdc.recovery.generations import (
    ResnapshotResult,
    live_generation,
    open_next_generation,
    plan_on_spark,
    request_resnapshot,
)
from mssql_cdc.recovery.owner import check_started_stream, check_stream_owner
from mssql_cdc.recovery.plan import RecoveryPlan
from mssql_cdc.recovery.preflight import RecoveryRequest

__all__ = [
    "MAX_INTERVAL_DAYS",
    "RecoveryPlan",
    "RecoveryRequest",
    "RecoverySettings",
    "ResnapshotResult",
    "StreamArguments",
    "check_recovery",
    "check_recovery_settings",
    "check_started_stream",
    "check_stream_names",
    "check_stream_owner",
    "live_generation",
    "open_next_generation",
    "plan_on_spark",
    "request_resnapshot",
]
