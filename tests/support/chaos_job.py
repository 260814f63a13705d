"""The driver process of a chaos run: its own local Spark and one `fan_out` job.

Run as `python -m tests.support.chaos_job JOB.json`. JOB.json holds `fan_out`'s arguments
(`streams`, `options`, `facts_table`, `root`, `trigger`, ...), the Spark `warehouse` and
`mode`: "stream" runs until killed or until a stream fails; "final" runs the job with an
`availableNow` trigger to its end, then `apply_changes` once per entry of `silver` (each
`{bronze, silver, keys}`) into `control_table`. Exit codes: 0 the job ended, 1 a stream failed
(each failure printed, naming its stream).
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from mssql_cdc import apply_changes, fan_out
from mssql_cdc.errors import MssqlCdcError
from mssql_cdc.spark import local_session


def main(job_file: str) -> int:
    job: dict[str, Any] = json.loads(Path(job_file).read_text())
    mode = job.pop("mode")
    warehouse = job.pop("warehouse")
    silver = job.pop("silver", [])
    control = job.pop("control_table", None)
    spark = local_session("mssql-cdc-chaos", warehouse=warehouse, driver_memory="1g")
    streams = job.pop("streams")
    running = fan_out(spark, streams, **job)
    with contextlib.suppress(MssqlCdcError):  # every failure is printed below
        running.await_termination()
    for failure in running.failures:
        print(f"chaos job: stream failed: {failure}", flush=True)
        cause = failure.__cause__ or failure
        print("".join(traceback.format_exception(cause)), flush=True)
    if running.failures:
        return 1
    if mode == "final":
        for entry in silver:
            result = apply_changes(
                spark,
                entry["bronze"],
                entry["silver"],
                keys=entry["keys"],
                control_table=control,
                facts_table=job["facts_table"],
            )
            print(f"chaos job: silver {entry['silver']}: {result}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
