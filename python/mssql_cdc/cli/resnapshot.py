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
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.job_args import add_stream_arguments, call_on_stream
from mssql_cdc.cli.output import add_output_flags, print_result
from mssql_cdc.cli.parser import add_verb

if TYPE_CHECKING:
    from mssql_cdc import ResnapshotResult

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "resnapshot",
        __doc__,
        summary="open a stream's next generation from a new snapshot, without a loss",
        epilog="exit codes: 0 the new generation is live; 2 an invalid argument, option, state "
        "file or offset log, the anti-loop guard, the mode lock, or a stream that has not "
        "started (nothing written); 1 any other error it reports",
        run=run,
    )
    add_stream_arguments(
        parser,
        snapshot_help="full reads the table now; chunked opens a snapshot for backfill()",
        interval_help="refuse within this many days of the last re-snapshot; 0 re-snapshots now",
    )
    add_output_flags(parser, json_help="print the new generation as one JSON object")


def run(args: argparse.Namespace) -> int:
    from mssql_cdc import CdcStream

    result, code = call_on_stream("resnapshot", args, CdcStream.resnapshot)
    if result is None:
        return code
    print_result(args, result, lambda: _text(result))
    return 0


def _text(result: ResnapshotResult) -> str:
    snapshot = result["snapshot"]
    return (
        f"generation {result['generation']} is live (sink app_id {result['sink_app_id']}, "
        f"checkpoint {result['checkpoint']}), starting at the snapshot "
        f"{snapshot['lsn']} ({snapshot['commit_ts'] or 'commit time unknown'})"
    )
