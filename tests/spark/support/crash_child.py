"""A child process for the `kill` crash tests: its own local Spark, one library call.

Run as `python -m tests.spark.support.crash_child ARGS.json` with MSSQL_CDC_FAILPOINTS=<point>=kill;
the failpoint ends the process with exit code 137. ARGS.json's `call` is "to_delta" (the
default: start the query and wait for it) or "backfill". Before the call it writes its JVM's
pid into ARGS.json's `jvm_pid_file`, so the test can wait for that JVM to exit too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mssql_cdc import stream
from mssql_cdc.spark import local_session


def main(args_file: str) -> int:
    args = json.loads(Path(args_file).read_text())
    spark = local_session("mssql-cdc-crash-child", warehouse=args["warehouse"], driver_memory="1g")
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    Path(args["jvm_pid_file"]).write_text(str(pid))
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
