"""`mssql-cdc demo`: the main job on the embedded emulator, from loss to recovery.

Progress goes to stderr (bars on a terminal); the summary, or with --json one JSON object,
to stdout. Exit codes: 0 bronze's latest image equals the source table after the recovery
(with --tables, every table's, and only the paused tables re-snapshotted), 1 it does not,
2 --out or --tables is refused (nothing deleted).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.output import add_output_flags, fail, print_result
from mssql_cdc.cli.parser import add_verb
from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from mssql_cdc.cli.demo_outcome import DemoSummary

__all__ = ["add_parser", "result", "run", "summary_text"]


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "demo",
        __doc__,
        summary="stream an emulated SQL Server into Delta, lose data to CDC cleanup, recover",
        epilog="exit codes: 0 bronze equals the source after the recovery; 1 it does not; "
        "2 --out or --tables is refused (nothing deleted)",
        run=run,
    )
    parser.add_argument(
        "--out",
        default="demo-output",
        help="folder for every file it makes, emptied first if an earlier run made it",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="empty --out even when the demo did not make it (never the filesystem root, "
        "the home or working folder, or a parent of one)",
    )
    parser.add_argument("--seed", type=int, default=18, help="seed of the workload")
    parser.add_argument(
        "--tables",
        type=int,
        default=1,
        help="how many tables to stream in one fan_out job (1 to 20); above 1, the streams of "
        "the last half stop while cleanup runs, and only those tables re-snapshot",
    )
    parser.add_argument(
        "--backend",
        choices=["emulator", "mssql-python", "pymssql"],
        default="emulator",
        help="how the stream reads the emulator: in process, or over TDS through the "
        "mssql-python or pymssql driver, as it reads a real SQL Server",
    )
    parser.add_argument(
        "--profile",
        choices=["immediate", "realistic"],
        default="immediate",
        help="the emulator's server: capture at each commit (default), or realistic: capture "
        "lag, idle entries and the nightly cleanup job (docs/emulator.md, 'Profiles')",
    )
    add_output_flags(parser, json_help="print the result as one JSON object, without progress")


def result(summary: DemoSummary) -> dict[str, Any]:
    """The demo's result as `--json` prints it (docs/cli.md, 'Output')."""
    event = summary.resnapshot or {}
    tables = {"tables": [asdict(t) for t in summary.tables]} if summary.tables else {}
    return {
        "equal": summary.equal,
        "backend": summary.backend,
        "runs": summary.runs,
        "generation": summary.generation,
        "bronze_rows": summary.bronze_rows,
        "source_rows": summary.source_rows,
        "resnapshot": None
        if not event
        else {
            "snapshot_lsn": event.get("max_lsn"),
            "rows": event.get("rows"),
            "lost_from_ts": _text(event.get("lost_from_ts")),
            "lost_to_ts": _text(event.get("lost_to_ts")),
        },
        "out": str(summary.out_dir),
        "chart": None if summary.chart is None else str(summary.chart),
        **tables,
    }


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def summary_text(summary: DemoSummary) -> str:
    """The closing summary the demo prints without --json."""
    from mssql_cdc.cli.demo_chart import NO_MATPLOTLIB
    from mssql_cdc.cli.demo_job import APP_ID
    from mssql_cdc.cli.demo_workload import TABLE
    from mssql_cdc.core import STATE_FILE_NAME

    r = result(summary)
    if summary.tables:
        return _tables_text(summary)
    event = r["resnapshot"]
    state_file = summary.out_dir / "checkpoint" / STATE_FILE_NAME
    rows = [
        ("backend", r["backend"]),
        ("runs of to_delta", str(r["runs"])),
        ("live generation", f"{r['generation']} (sink app_id {APP_ID}.g{r['generation']})"),
        ("state file", str(state_file)),
    ]
    if event is None:
        rows.append(("'resnapshot' facts row", "none (no loss was found)"))
    else:
        rows += [
            ("'resnapshot' facts row", f"snapshot {event['snapshot_lsn']}, {event['rows']} rows"),
            ("lost interval", f"{event['lost_from_ts']} to {event['lost_to_ts']}"),
        ]
    rows += [
        ("bronze rows", str(r["bronze_rows"])),
        (f"source rows ({TABLE})", str(r["source_rows"])),
        ("bronze latest image vs source", "EQUAL" if r["equal"] else "DIFFERENT"),
    ]
    if r["chart"]:
        rows.append(("chart", r["chart"]))
    elif summary.headroom:
        rows.append(("chart", f"not drawn: {NO_MATPLOTLIB}"))
    return "Summary\n" + "\n".join(f"  {k + ':':<31}{v}" for k, v in rows)


def _tables_text(summary: DemoSummary) -> str:
    lines = [
        "Summary",
        f"  {'backend:':<31}{summary.backend}",
        f"  {'runs of the job:':<31}{summary.runs}",
        f"  {'table':<18}{'stream':<10}{'generation':<12}{'re-snapshot':<13}"
        f"{'bronze rows':<13}{'source rows':<13}bronze latest image vs source",
    ]
    for t in summary.tables:
        lines.append(
            f"  {t.table:<18}{'paused' if t.paused else 'ran':<10}{t.generation:<12}"
            f"{'yes' if t.resnapshot else 'no':<13}{t.bronze_rows:<13}{t.source_rows:<13}"
            f"{'EQUAL' if t.equal else 'DIFFERENT'}"
        )
    verdict = (
        "every table equal; only the paused tables re-snapshotted"
        if summary.equal
        else "NOT as expected (see the table above)"
    )
    lines.append(f"  {'verdict:':<31}{verdict}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mssql_cdc.cli.demo_job import run_demo

    try:
        summary = run_demo(
            args.out,
            seed=args.seed,
            force=args.force,
            backend=args.backend,
            tables=args.tables,
            verbose=args.verbose,
            profile=args.profile,
        )
    except ConfigError as exc:
        return fail("demo", exc, 2)
    print_result(args, result(summary), lambda: summary_text(summary))
    return 0 if summary.equal and summary.generation >= 1 else 1
