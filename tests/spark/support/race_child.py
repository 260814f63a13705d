"""A child process for the race tests: to_delta on a shared checkpoint, paused at one step.

Run as `python -m tests.spark.support.race_child ARGS.json`. ARGS.json is crash_child's, plus
`pause_at`: "read_state" (right after the pre-flight read the state file) or a failpoint name
(right before that failpoint). There the child creates `paused_file` and waits until the test
creates `go_file`, so the test can run the other side of the race in between. It writes what
it ended with into `result_file`: the state it continued and its query's name and error.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from mssql_cdc import stream
from mssql_cdc.recovery import preflight
from mssql_cdc.spark import local_session


def pause_once(args: dict[str, Any]) -> None:
    paused, go = Path(args["paused_file"]), Path(args["go_file"])
    if paused.exists():
        return
    paused.write_text("paused")
    deadline = time.monotonic() + 600
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{go} was not created within 600 s")
        time.sleep(0.2)


def arm(args: dict[str, Any]) -> None:
    point = args["pause_at"]
    if point == "read_state":
        read_state = preflight.read_state

        def paused_read(checkpoint: Any) -> Any:
            state = read_state(checkpoint)
            pause_once(args)
            return state

        preflight.read_state = paused_read  # type: ignore[assignment]
        return
    failpoint = preflight.failpoint

    def paused_failpoint(name: str) -> None:
        if name == point:
            pause_once(args)
        failpoint(name)

    preflight.failpoint = paused_failpoint  # type: ignore[assignment]


def main(args_file: str) -> int:
    args = json.loads(Path(args_file).read_text())
    spark = local_session("mssql-cdc-race-child", warehouse=args["warehouse"], driver_memory="1g")
    arm(args)
    query = stream(spark, args["options"]).to_delta(
        args["target"], args["app_id"], args["checkpoint"], args["facts"], **args["kwargs"]
    )
    error = None
    try:
        query.awaitTermination(300)
    except Exception as exc:  # noqa: BLE001 - reported to the test, which decides
        error = str(exc)[:2000]
    Path(args["result_file"]).write_text(json.dumps({"query": query.name, "error": error}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
