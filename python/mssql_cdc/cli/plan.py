"""`mssql-cdc plan`: what to_delta(..., on_data_loss="resnapshot") would do now.

Checks every argument and option first, then starts a local Spark session (or uses the active
one), runs `plan_recovery()`, which writes nothing, and prints the plan: a short text, or with
`--json` the RecoveryPlan as one JSON object. Exit codes: 0 action none, 10 resnapshot, 11
blocked, 2 an invalid argument, option, state file or offset log (argparse's usage errors exit
2 too), 1 any other error it reports (an unreadable source, say).
"""

from __future__ import annotations

import argparse
from typing import Any

from mssql_cdc.cli.job_args import add_stream_arguments, call_on_stream
from mssql_cdc.cli.output import add_output_flags, print_result
from mssql_cdc.cli.parser import add_verb

__all__ = ["EXIT_CODES", "add_parser", "render", "run"]

EXIT_CODES = {"none": 0, "resnapshot": 10, "blocked": 11}
# The smallest earlier snapshot the estimate scales from (the C++ estimate's kMinSampleRows).
MIN_SAMPLE_ROWS = 1000


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "plan",
        __doc__,
        summary="show what a recovering to_delta would do now (writes nothing)",
        epilog="exit codes: 0 action none, 10 resnapshot, 11 blocked; 2 an invalid argument, "
        "option, state file or offset log (checked before Spark starts); 1 any other error "
        "it reports (an unreadable source, say)",
        run=run,
    )
    add_stream_arguments(
        parser,
        snapshot_help="the snapshot mode the job's to_delta passes",
        interval_help="resnapshot_interval_days as the job's to_delta passes it",
    )
    parser.add_argument("--bootstrap", action="store_true", help="as the job's to_delta passes it")
    add_output_flags(parser, json_help="print the plan as one JSON object")


def _offset(o: dict[str, Any] | None) -> str:
    if o is None:
        return "none (the stream has no start to check)"
    return f"{o['lsn']} ({o['commit_ts'] or 'commit time unknown'})"


def _hours(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f} h"


def render(plan: dict[str, Any]) -> str:
    """The plan as the text `mssql-cdc plan` prints without --json."""
    action = plan["action"]
    rows = [
        ("action", f"{action} (exit {EXIT_CODES[action]})"),
        ("generation", f"{plan['generation']} live, {plan['next_generation']} after the run"),
        ("start", _offset(plan["start"])),
        ("mode", plan["mode"]),
    ]
    if action != "none" or plan["lost_to_ts"] is not None:
        rows.append(
            ("lost", f"{plan['lost_from_ts'] or 'unknown'} to {plan['lost_to_ts'] or 'unknown'}")
        )
    reuse = plan["reuse"]
    if reuse is not None:
        rows.append(
            ("reuse", f"the {reuse['kind']} snapshot at {reuse['lsn']} (gen {reuse['generation']})")
        )
    rows.append(("interval", "ok" if plan["interval_ok"] else "a re-snapshot now would loop"))
    estimate = plan["estimate"]
    if estimate is not None:
        rows.append(("estimate", _estimate(estimate)))
    f = plan["forecast"]
    trend = f["trend_hours_per_day"]
    rows.append(
        (
            "headroom",
            f"{_hours(f['headroom_hours'])} now, trend "
            f"{'unknown' if trend is None else f'{trend:+,.2f} h/day'}, loss by trend at "
            f"{f['loss_by_trend_at'] or 'none'}, if stopped at {f['loss_if_stopped_at'] or 'n/a'}"
            f" ({f['samples']} samples)",
        )
    )
    if plan["reason"]:
        rows.append(("reason", plan["reason"]))
    return "\n".join(f"{k:<12}{v}" for k, v in rows)


def _estimate(e: dict[str, Any]) -> str:
    """The duration estimate in words: each figure, or why it is unknown (never None)."""
    table = "an unknown number of" if e["rows"] is None else f"{e['rows']:,}"
    if e["seconds"] is not None:
        duration = f"about {e['seconds']:,.0f} s to read {table} rows"
    elif e["rows"] is None:
        duration = "duration unknown: the source gives no row count"
    else:
        duration = (
            f"duration unknown for {table} rows: too few rows measured to estimate (no earlier "
            f"full snapshot of at least {MIN_SAMPLE_ROWS:,} rows)"
        )
    retention = (
        "retention unknown (no micro-batch of the last 7 days recorded it)"
        if e["retention_hours"] is None
        else f"retention {_hours(e['retention_hours'])}"
    )
    if e["fits"] is None:
        fits = "fits: unknown (needs both the duration and the retention)"
    else:
        fits = "fits: yes" if e["fits"] else "fits: no, more than half the retention"
    return f"{duration}; {retention}; {fits}"


def run(args: argparse.Namespace) -> int:
    from mssql_cdc import CdcStream

    plan, code = call_on_stream("plan", args, CdcStream.plan_recovery, bootstrap=args.bootstrap)
    if plan is None:
        return code
    print_result(args, plan, lambda: render(dict(plan)))
    return EXIT_CODES[plan["action"]]
