"""`mssql-cdc plan`: what to_delta(..., on_data_loss="resnapshot") would do now, as JSON.

Starts a local Spark session, runs `plan_recovery()` (which writes nothing) and prints the
plan. Exit codes: 0 action none, 10 resnapshot, 11 blocked, 2 an invalid argument, option,
state file or offset log.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["EXIT_CODES", "add_parser", "run"]

EXIT_CODES = {"none": 0, "resnapshot": 10, "blocked": 11}


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="show what a recovering to_delta would do now (writes nothing)",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--options", required=True, help="a JSON file of the source options")
    parser.add_argument("--target", required=True, help="the bronze table")
    parser.add_argument("--app-id", required=True, help="the app_id given to to_delta")
    parser.add_argument("--checkpoint", required=True, help="the checkpoint given to to_delta")
    parser.add_argument("--facts", required=True, help="the facts table")
    parser.add_argument("--snapshot", choices=("full", "chunked"), default="full")
    parser.add_argument("--interval-days", type=float, default=7.0)
    parser.add_argument("--bootstrap", action="store_true", help="as the job's to_delta passes it")
    parser.set_defaults(run=run)


def _options(path: str) -> dict[str, object]:
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"--options {path}: cannot read a JSON object ({exc})") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"--options {path}: the file must hold one JSON object of options")
    return loaded


def run(args: argparse.Namespace) -> int:
    from mssql_cdc import stream
    from mssql_cdc.spark import local_session

    try:
        options = _options(args.options)
        spark = local_session("mssql-cdc-plan")
        plan = stream(spark, options).plan_recovery(
            args.target,
            args.app_id,
            args.checkpoint,
            args.facts,
            resnapshot_interval_days=args.interval_days,
            snapshot=args.snapshot,
            bootstrap=args.bootstrap,
        )
    except ValueError as exc:
        print(f"mssql-cdc plan: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(plan, indent=2))
    return EXIT_CODES[plan["action"]]
