"""`mssql-cdc heartbeat --options FILE`: commits to a captured table keep idle streams current.

Without commits SQL Server's CDC neither moves its newest LSN nor writes a commit time
(decision 1379), so a caught-up stream's lag and retention headroom stay those of its last
change. Each beat updates the one row of the heartbeat table (`--table`, default
dbo.mssql_cdc_heartbeat); `--create` makes the table and enables CDC on it first, when
missing. `--print-sql` prints the same as a T-SQL script with a SQL Server Agent job, for
servers where the beat should not depend on a running process. Exit codes: 0 every beat
committed; 1 the server could not be reached or refused a statement; 2 a bad flag, options
file or table, or a missing table without --create. The connection string is read from the
options file and never printed.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from mssql_cdc.cli.emulator import duration
from mssql_cdc.cli.job_args import read_options
from mssql_cdc.cli.output import add_output_flags, fail, print_result
from mssql_cdc.cli.parser import add_verb
from mssql_cdc.errors import ConfigError, MssqlCdcError

__all__ = ["add_parser", "run"]

DEFAULT_TABLE = "dbo.mssql_cdc_heartbeat"
MAX_COUNT = 1_000_000_000


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "heartbeat",
        __doc__,
        summary="commit to a captured heartbeat table so idle streams stay current",
        epilog="exit codes: 0 every beat committed (or the script printed); 1 the server could "
        "not be reached or refused a statement; 2 a bad flag, options file or table, or a "
        "missing heartbeat table without --create",
        run=run,
    )
    parser.add_argument(
        "--options",
        help="a JSON file of the stream's source options (backend, connectionString); not "
        "needed with --print-sql",
    )
    parser.add_argument("--table", default=DEFAULT_TABLE, help="the heartbeat table, schema.name")
    parser.add_argument(
        "--create",
        action="store_true",
        help="create the table, enable CDC on it and write its row when missing",
    )
    parser.add_argument(
        "--interval",
        type=_interval,
        default=60.0,
        help="time between beats, e.g. 30s, 5m (default: 60s)",
    )
    repeat = parser.add_mutually_exclusive_group()
    repeat.add_argument("--count", type=_count, help="commit this many beats, then stop")
    repeat.add_argument("--once", action="store_true", help="commit one beat (as --count 1)")
    repeat.add_argument(
        "--print-sql",
        action="store_true",
        help="print the T-SQL setup and SQL Server Agent job instead of connecting",
    )
    add_output_flags(parser, json_help="print the result as one JSON object")


def _interval(text: str) -> float:
    seconds = duration(text)
    if not 0 <= seconds <= 86_400:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; pass 0s up to 1d")
    return seconds


def _count(text: str) -> int:
    if not text.strip().isdigit() or len(text.strip()) > 10 or not 1 <= int(text) <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a count; pass a whole number from 1 to {MAX_COUNT:,}, or "
            "leave --count out to beat until interrupted"
        )
    return int(text)


def run(args: argparse.Namespace) -> int:
    # Imported here: the T-SQL backends cost every other verb their import time.
    from mssql_cdc import heartbeat, heartbeat_sql

    if args.print_sql:
        try:
            script = heartbeat_sql(args.table, interval_seconds=args.interval)
        except ConfigError as exc:
            return fail("heartbeat", exc, 2)
        print_result(args, {"sql": script}, lambda: script.rstrip("\n"))
        return 0
    if args.options is None:
        return fail(
            "heartbeat",
            "--options is required to connect: pass the stream's source options file "
            "(or --print-sql for the T-SQL script)",
            2,
        )
    count = 1 if args.once else args.count

    def beat(n: int, at: datetime) -> None:
        if not args.quiet and not args.json:
            print(f"beat {n} committed at {at:%Y-%m-%d %H:%M:%S} UTC", file=sys.stderr)

    try:
        result = heartbeat(
            read_options(args.options),
            table=args.table,
            create=args.create,
            count=count,
            interval_seconds=args.interval,
            on_beat=beat,
        )
    except ConfigError as exc:
        return fail("heartbeat", exc, 2)
    except KeyboardInterrupt:
        return 0
    except (MssqlCdcError, OSError) as exc:
        return fail("heartbeat", exc, 1)
    data = {
        "table": result.table,
        "capture_instance": result.capture_instance,
        "prepared": list(result.prepared),
        "beats": result.beats,
        "last_beat_at": None if result.last_beat_at is None else result.last_beat_at.isoformat(),
    }
    print_result(
        args,
        data,
        lambda: (
            f"{result.beats} beat(s) committed to {result.table} (capture instance "
            f"{result.capture_instance})"
            + (f"; {', '.join(result.prepared)}" if result.prepared else "")
        ),
    )
    return 0
