"""`mssql-cdc reconcile`: is the copy right? Compare a target with its source by key tiles.

Checks every argument first, then starts a local Spark session (or uses `SPARK_REMOTE`) and
runs `reconcile()`: silver (or bronze's latest image per key) against the source table as of
the target's own LSN, by row counts and digests per key tile, naming a sample of the missing,
extra and different keys. With --repair (bronze only) a difference is repaired: the
differing tiles are re-snapshotted into the stream's next generation and read before it exits.
Exit codes: 0 equal; 1 different (repaired or not: the verdict is of the comparison), or an
error it reports (the changes after the target's LSN purged, an unreachable source); 2 an
invalid argument or option, or a target without a position, with nothing read.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mssql_cdc.cli.job_args import read_options
from mssql_cdc.cli.output import add_output_flags, print_result
from mssql_cdc.cli.parser import add_verb
from mssql_cdc.cli.session import call_in_session

__all__ = ["add_parser", "render", "run"]


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "reconcile",
        __doc__,
        summary="compare silver or bronze with the source table by key tiles",
        epilog="exit codes: 0 equal; 1 different (with --repair: found and repaired), or an "
        "error it reports; 2 an invalid argument or option, or a target without a position "
        "(nothing read)",
        run=run,
    )
    parser.add_argument("--options", required=True, help="a JSON file of the source options")
    parser.add_argument("--target", required=True, help="the silver table, or bronze")
    parser.add_argument(
        "--against",
        choices=("silver", "bronze"),
        default="silver",
        help="silver compares its rows; bronze its latest image per key",
    )
    parser.add_argument("--control", help="silver's control table (required for silver)")
    parser.add_argument("--facts", help="file the verdict as a facts row in this facts table")
    parser.add_argument("--app-id", help="the stream's app_id (with --facts)")
    parser.add_argument(
        "--keys", help="comma-separated key columns; default the capture instance's unique index"
    )
    parser.add_argument("--tiles", type=int, default=64, help="key tiles to cut the table into")
    parser.add_argument("--sample", type=int, default=20, help="keys of each kind to name")
    parser.add_argument(
        "--sampled",
        type=_sampled,
        help="check a sample of the keys: a fraction above 0 and at most 1, such as 0.01, or a "
        "whole number of rows; the verdict states the bound it gives at 95%% confidence",
    )
    parser.add_argument(
        "--report-table",
        help="append this run's differences to this Delta table (a name or a path)",
    )
    parser.add_argument(
        "--repair",
        action="store_true",
        help="bronze only: re-snapshot the differing tiles into the stream's next generation "
        "(stop the stream first; needs --app-id, --checkpoint and --facts)",
    )
    parser.add_argument("--checkpoint", help="the stream's checkpoint (with --repair)")
    parser.add_argument(
        "--interval-days",
        type=float,
        default=7.0,
        help="with --repair: the re-snapshot's anti-loop guard (resnapshot_interval_days)",
    )
    add_output_flags(parser, json_help="print the verdict as one JSON object")


def run(args: argparse.Namespace) -> int:
    from mssql_cdc import reconcile

    keys = None if args.keys is None else [k.strip() for k in args.keys.split(",") if k.strip()]
    result, code = call_in_session(
        "reconcile",
        verbose=args.verbose,
        call=lambda spark: reconcile(
            spark,
            read_options(args.options),
            args.target,
            against=args.against,
            keys=keys,
            control_table=args.control,
            facts_table=args.facts,
            app_id=args.app_id,
            tiles=args.tiles,
            sample=args.sample,
            repair=args.repair,
            checkpoint=args.checkpoint,
            resnapshot_interval_days=args.interval_days,
            sampled=args.sampled,
            report_table=args.report_table,
        ),
    )
    if result is None:
        return code
    found = result.as_dict()
    print_result(args, found, lambda: render(found))
    return 0 if result.equal else 1


def _sampled(text: str) -> float | int | str:
    """--sampled as reconcile takes it: digits alone are a row count, a number a fraction;
    other text is passed on for reconcile to refuse, naming `sampled`."""
    if text.strip().isdigit():
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def render(found: dict[str, Any]) -> str:
    """The verdict as the text report: one line, then the sampled keys of each kind."""
    head = (
        f"{found['target']} ({found['against']}) against the source as of {found['lsn']}: "
        f"{'equal' if found['equal'] else 'different'}; {found['target_rows']} rows against "
        f"{found['source_rows']}, {found['differing_tiles']} of {found['tiles']} tiles differ"
    )
    lines = [head]
    for kind in ("missing", "extra", "different"):
        if found[f"{kind}_count"]:
            keys = ", ".join(json.dumps(k) for k in found[kind])
            lines.append(f"  {kind} ({found[f'{kind}_count']}): {keys}")
    if found.get("repaired_tiles"):
        lines.append(
            f"  repaired: {found['repaired_tiles']} tiles re-read into the stream's next "
            "generation; restart the stream, then run apply_changes"
        )
    if not found["complete"]:
        lines.append("  (narrowing stopped once the sample was full: counts are of the keys named)")
    sampled = found.get("sampled")
    if sampled:
        bound = sampled["share_below"]
        lines.append(
            f"  sampled {sampled['fraction']:.4%} of the keys: {sampled['differing']} of "
            f"{sampled['keys']} differ"
            + (
                f"; below {bound:.3%} of the table's keys differ at "
                f"{sampled['level']:.0%} confidence"
                if bound is not None
                else " (at least: no bound on the whole table)"
            )
        )
    if found["skipped_columns"]:
        lines.append(f"  not compared: {', '.join(found['skipped_columns'])}")
    return "\n".join(lines)
