"""`mssql-cdc resnapshot`: re-snapshot a stream on purpose, without a loss.

Checks every argument and option first, then starts a local Spark session (or uses
`SPARK_REMOTE`), runs `CdcStream.resnapshot()`, which opens the stream's next generation from a
new snapshot through the automatic recovery's steps, and prints the generation now live. Stop
the stream first; its next run starts the new generation. Exit codes: 0 the new generation is
live; 2 an invalid argument, option, state file or offset log, the anti-loop guard, the mode
lock or a stream that has not started, with nothing written; 1 any other error it reports (the
snapshot purged during its own read, an unreachable source).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mssql_cdc.cli.job_args import add_stream_arguments, read_options
from mssql_cdc.cli.output import add_output_flags
from mssql_cdc.cli.session import call_in_session

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "resnapshot",
        help="open a stream's next generation from a new snapshot, without a loss",
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog="exit codes: 0 the new generation is live; 2 an invalid argument, option, state "
        "file or offset log, the anti-loop guard, the mode lock, or a stream that has not "
        "started (nothing written); 1 any other error it reports",
    )
    add_stream_arguments(
        parser,
        snapshot_help="full reads the table now; chunked opens a snapshot for backfill()",
        interval_help="refuse within this many days of the last re-snapshot; 0 re-snapshots now",
    )
    add_output_flags(parser, json_help="print the new generation as one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from mssql_cdc import stream

    result, code = call_in_session(
        "resnapshot",
        verbose=args.verbose,
        call=lambda spark: stream(spark, read_options(args.options)).resnapshot(
            args.target,
            args.app_id,
            args.checkpoint,
            args.facts,
            resnapshot_interval_days=args.interval_days,
            snapshot=args.snapshot,
        ),
    )
    if result is None:
        return code
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        snapshot = result["snapshot"]
        print(
            f"generation {result['generation']} is live (sink app_id {result['sink_app_id']}, "
            f"checkpoint {result['checkpoint']}), starting at the snapshot "
            f"{snapshot['lsn']} ({snapshot['commit_ts'] or 'commit time unknown'})"
        )
    return 0
