"""A child process for the `kill` crash tests: its own local Spark, one library call.

Run as `python -m tests.spark.support.crash_child ARGS.json` with MSSQL_CDC_FAILPOINTS=<point>=kill;
the failpoint ends the process with exit code 137. ARGS.json's `call` is "to_delta" (the
default: start the query and wait for it), "backfill", or "source_stream": the `mssql_cdc`
source alone into a Delta path (`target`) with `format("delta")`, trigger availableNow. A
failpoint of the source fires in Spark's driver-side Python runner, whose exit fails the query;
the child then ends itself with exit code 137, as the killed driver would (decision 1398).
Before the call it writes its JVM's pid into ARGS.json's `jvm_pid_file`, so the test can wait
for that JVM to exit too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from pyspark.errors import StreamingQueryException

from mssql_cdc import register, stream
from mssql_cdc.spark import local_session


def source_stream(spark: Any, args: dict[str, Any]) -> int:
    """The source alone into a Delta path; 137 when the query failed, 0 when it finished."""
    register(spark)
    query = (
        spark.readStream.format("mssql_cdc")
        .options(**args["options"])
        .load()
        .writeStream.format("delta")
        .option("checkpointLocation", args["checkpoint"])
        .trigger(availableNow=True)
        .start(args["target"])
    )
    try:
        query.awaitTermination(300)
    except StreamingQueryException as exc:
        print(f"the query failed: {str(exc)[:2000]}", file=sys.stderr, flush=True)
        os._exit(137)  # the planner's runner was killed: end the driver as killed too
    spark.stop()
    return 0


def main(args_file: str) -> int:
    args = json.loads(Path(args_file).read_text())
    spark = local_session("mssql-cdc-crash-child", warehouse=args["warehouse"], driver_memory="1g")
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    Path(args["jvm_pid_file"]).write_text(str(pid))
    if args.get("call") == "source_stream":
        return source_stream(spark, args)
    cdc = stream(spark, args["options"])
    if args.get("call", "to_delta") == "backfill":
        cdc.backfill(
            args["target"], app_id=args["app_id"], facts_table=args["facts"], **args["kwargs"]
        )
    else:
        query = cdc.to_delta(
            args["target"], args["app_id"], args["checkpoint"], args["facts"], **args["kwargs"]
        )
        query.awaitTermination(300)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
