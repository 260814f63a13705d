"""The source's pure modules and the SQL Server seam load without Spark, Delta or a driver."""

from __future__ import annotations

import subprocess
import sys

MODULES = [
    "mssql_cdc.options.config",
    "mssql_cdc.core.offsets",
    "mssql_cdc.core.ranges",
    "mssql_cdc.source.loss_guards",
    "mssql_cdc.core.metrics_files",
    "mssql_cdc.core.events",
    "mssql_cdc.core.batch_files",
    "mssql_cdc.sqlserver",
    "mssql_cdc.sqlserver.tsql.retry",
    "mssql_cdc.sqlserver.instances",
    "mssql_cdc.sqlserver.backend_choice",
]
FORBIDDEN = ["pyspark", "delta", "mssql_python", "pymssql", "pyarrow"]


def test_importing_them_loads_no_spark_delta_driver_or_arrow() -> None:
    code = (
        "import sys\n"
        f"for m in {MODULES!r}: __import__(m)\n"
        f"print(sorted(f for f in {FORBIDDEN!r} if f in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_spark_sources_load_no_delta_sink_or_recovery() -> None:
    code = (
        "import sys\n"
        "import mssql_cdc.source.formats, mssql_cdc.source.planner\n"
        "import mssql_cdc.source.snapshot_format\n"
        "bad = ('delta', 'mssql_cdc.sink.writer', 'mssql_cdc.recovery.preflight',\n"
        "       'mssql_python', 'pymssql')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in bad or m in bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
