"""`mssql-cdc gc CHECKPOINT`: remove a stream's earlier generations, never the live one.

After a re-snapshot the earlier generations' Spark checkpoints stay in place, unread. This
removes those older than the newest `--keep` (the live generation counts as one; default 1):
generation 0's Spark files in the checkpoint's root (never the state file, the family cache or
anything else there) and `_generations/<n>` folders, with `--app-id` and `--metrics-path`
their metrics folders under that metricsPath too. Needs neither Spark nor SQL Server.
"""

from __future__ import annotations

import argparse
from typing import Any

from mssql_cdc.cli.output import fail, print_result
from mssql_cdc.cli.parser import add_verb
from mssql_cdc.core import MAX_KEEP, GcReport, collect_garbage
from mssql_cdc.errors import MssqlCdcError

__all__ = ["add_parser", "run"]


def _keep(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_KEEP:
        raise argparse.ArgumentTypeError(
            f"{value} is outside 1 (the live generation only) to {MAX_KEEP:,}"
        )
    return value


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "gc",
        __doc__,
        summary="remove a stream's earlier generations (checkpoints, metrics folders)",
        epilog="exit codes: 0 removed (or nothing to remove, or a dry run); 1 a removal failed "
        "(what it names and what came after it is still in place); 2 a missing or refused "
        "checkpoint, an invalid state file, bad arguments, or a folder to remove that holds "
        "what neither Spark nor mssql-cdc wrote (nothing removed)",
        run=run,
    )
    parser.add_argument("checkpoint", metavar="CHECKPOINT", help="the checkpoint given to to_delta")
    parser.add_argument(
        "--keep",
        type=_keep,
        default=1,
        metavar="N",
        help="generations to keep, the live one included",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would be removed, remove nothing"
    )
    parser.add_argument(
        "--app-id", help="the app_id given to to_delta (names the folders under --metrics-path)"
    )
    parser.add_argument(
        "--metrics-path",
        metavar="PATH",
        help="the stream's metricsPath option, to remove the generations' metrics folders there "
        "(needs --app-id)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    value, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:,.1f} {unit}"


def _text(report: GcReport) -> str:
    verb = "would remove" if report.dry_run else "removed"
    lines = [f"checkpoint {report.checkpoint}: generation {report.live_generation} is live"]
    for r in report.removed:
        lines.append(
            f"{verb} generation {r.generation}: {r.path} ({r.files:,} files, {_size(r.bytes)})"
        )
    lines.extend(
        f"generation {r.generation}: {r.path} was already removed (by another gc)"
        for r in report.already_removed
    )
    if not report.removed and not report.already_removed:
        lines.append("nothing to remove")
    kept = ", ".join(str(g) for g in report.kept) or "none found on disk"
    lines.append(f"kept generations: {kept}")
    lines.extend(f"left in place: {x.path} ({x.why})" for x in report.left)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        report = collect_garbage(
            args.checkpoint,
            keep=args.keep,
            dry_run=args.dry_run,
            app_id=args.app_id,
            metrics_path=args.metrics_path,
        )
    except (MssqlCdcError, ValueError) as exc:
        return fail("gc", exc, 2)
    except OSError as exc:
        return fail(
            "gc",
            f"{exc.strerror or exc}: {exc.filename or 'a file'}; nothing after it was removed: "
            "fix its permissions and run gc again (it continues where it stopped)",
            1,
        )
    print_result(args, report.to_json(), lambda: _text(report))
    return 0
