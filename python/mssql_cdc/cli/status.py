"""`mssql-cdc status CHECKPOINT`: where a stream is, read from its files alone.

Needs neither Spark nor SQL Server: the generation state file, the live generation's Spark
checkpoint and its last committed offset, and any pending recovery; with `--facts`, the newest
micro-batch and event rows of the stream in its facts table, read in process
(`mssql_cdc.facts.health`). With `--chart FILE.png`, also a chart of every batch's retention
headroom and lag with the stream's events (`cli/chart.py`); `--job JOB --chart FILE.png` draws
one chart with a line per stream of a fan-out job file instead (decision 1380). Exit codes: 0
when the files are valid, 2 for a missing or refused checkpoint folder, an invalid state file,
an unreadable offset log or facts table, a refused chart path or missing matplotlib.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from mssql_cdc.cli.output import fail, print_result
from mssql_cdc.cli.parser import add_verb
from mssql_cdc.core import (
    STATE_FILE_NAME,
    GenerationState,
    StreamOffset,
    check_checkpoint_path,
    has_metadata,
    last_processed_offset,
    live_paths,
    read_state,
    validate_app_id,
)
from mssql_cdc.errors import ConfigError, MssqlCdcError

__all__ = ["add_parser", "job_streams", "run"]

_PLACEHOLDER_APP_ID = "<app_id>"

# What a stream's checkpoint folder holds: Spark's entries and the library's.
_CHECKPOINT_ENTRIES = frozenset(
    {
        "metadata",
        "offsets",
        "commits",
        "sources",
        "state",
        STATE_FILE_NAME,
        "_generations",
        "_mssql_cdc_metrics",
        "_mssql_cdc_family_cache.json",
    }
)


def _check_is_checkpoint(root: str) -> None:
    """Refuse a generation's folder and a folder that is no checkpoint (an empty one is a
    checkpoint Spark has not started on yet)."""
    parent = os.path.dirname(root)
    if os.path.basename(parent) == "_generations" and os.path.basename(root).isdigit():
        stream_root = os.path.dirname(parent)
        raise ConfigError(
            f"checkpoint {root} is the Spark checkpoint of generation "
            f"{int(os.path.basename(root))} inside the stream's checkpoint {stream_root}; pass "
            f"{stream_root}, the folder given to to_delta (its state file names the live "
            "generation)"
        )
    names = set(os.listdir(root))
    if names and not names & _CHECKPOINT_ENTRIES:
        raise ConfigError(
            f"checkpoint {root} is no stream checkpoint: it holds none of Spark's metadata, "
            "offsets or commits nor a generation state file; pass the checkpoint folder given "
            "to to_delta"
        )


def _check_owner(root: str, app_id: str, facts: str | None, state: Any, last: Any) -> None:
    """Refuse an --app-id that the checkpoint's records show is another stream's."""
    from mssql_cdc.facts import cached_app_id, checkpoint_owners

    owners: set[str] = set()
    cached = cached_app_id(root)
    if cached is not None:
        owners.add(cached)
    if facts is not None and (state is not None or last is not None):
        generation = 0 if state is None else state.generation
        snapshot = None if state is None or state.snapshot is None else str(state.snapshot.lsn)
        batch = None if last is None else (last.batch_id, str(last.offset().lsn))
        owners |= checkpoint_owners(
            facts, generation=generation, last_batch=batch, snapshot_lsn=snapshot
        )
    if owners and app_id not in owners:
        named = ", ".join(repr(o) for o in sorted(owners))
        raise ConfigError(
            f"--app-id {app_id} is not the stream of checkpoint {root}: its records name the "
            f"app_id {named}; pass --app-id {sorted(owners)[0]}"
        )


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "status",
        __doc__,
        summary="show a stream's generation, last committed offset and pending recovery",
        epilog="exit codes: 0 the files are valid; 2 a missing or refused checkpoint folder, "
        "an invalid state file, an unreadable offset log, a facts table that is missing, "
        "not a path, of another kind or unreadable, or (--chart) a refused chart path, a "
        "job file without facts_table or streams, or no matplotlib",
        run=run,
    )
    parser.add_argument(
        "checkpoint",
        metavar="CHECKPOINT",
        nargs="?",
        help="the checkpoint given to to_delta (left out with --job)",
    )
    parser.add_argument("--app-id", help="the app_id given to to_delta, to show the sink app_id")
    parser.add_argument(
        "--facts",
        metavar="PATH",
        help="the facts table's path given to to_delta, to show the newest batch and events "
        "(needs --app-id)",
    )
    parser.add_argument(
        "--chart",
        metavar="FILE.png",
        help="draw every batch's retention headroom and lag, with the stream's events, into "
        "this PNG (needs --facts and --app-id, or --job; and matplotlib); an existing PNG is "
        "replaced, any other existing file refused",
    )
    parser.add_argument(
        "--job",
        metavar="JOB",
        help="a fan-out job file (as `mssql-cdc run` takes): with --chart, one chart with a line "
        "per stream, read from the job's facts_table",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _offset(o: StreamOffset | None) -> dict[str, str | None] | None:
    return {"lsn": o.lsn, "commit_ts": o.commit_ts} if o is not None else None


def collect(root: str, app_id: str | None, facts: str | None = None) -> dict[str, Any]:
    """The status as plain data; raises ValueError (ConfigError, StateFileError) or OSError."""
    root = check_checkpoint_path(root)
    if app_id is not None:
        validate_app_id(app_id)
    if facts is not None and app_id is None:
        # One facts table may hold the rows of several streams.
        raise ConfigError(
            "--facts needs --app-id: pass the app_id given to to_delta to pick the stream's rows"
        )
    if not os.path.isdir(root):
        # A mistyped path would otherwise read as a stream that has not started yet.
        what = "is not a folder" if os.path.exists(root) else "does not exist"
        raise ConfigError(
            f"checkpoint {root} {what}; pass the checkpoint folder given to to_delta "
            "(it exists once the stream has run)"
        )
    if facts is not None:
        _check_facts(facts)
    _check_is_checkpoint(root)
    state = read_state(root)
    paths = live_paths(root, app_id or _PLACEHOLDER_APP_ID, state)
    last = last_processed_offset(paths.checkpoint)
    if app_id is not None:
        _check_owner(root, app_id, facts, state, last)
    live = state or GenerationState()
    return {
        "checkpoint": root,
        "state_file": paths.state_file,
        "has_state_file": state is not None,
        "generation": live.generation,
        "snapshot": _offset(live.snapshot),
        "at": live.at,
        "live_checkpoint": paths.checkpoint,
        "sink_app_id": paths.app_id if app_id else None,
        "metrics_path": paths.metrics_path,
        "spark_started": has_metadata(paths.checkpoint),
        "last_commit": None
        if last is None
        else {
            "batch_id": last.batch_id,
            "offset": _offset(last.offset()),
            "file": last.file,
        },
        "recovering": _offset(live.recovering),
        "failed_at": live.failed_at,
        "facts": None if facts is None or app_id is None else _health(facts, app_id),
    }


def _check_facts(facts: str) -> None:
    # Imported here: the Arrow and Delta readers cost every other verb their import time.
    from mssql_cdc.facts import check_health_table

    check_health_table(facts)


def _health(facts: str, app_id: str) -> dict[str, Any]:
    # Imported here: the Arrow and Delta readers cost every other verb their import time.
    from mssql_cdc.facts import read_health

    return read_health(facts, app_id).to_json()


def _text(s: dict[str, Any]) -> str:
    def show(o: dict[str, str | None]) -> str:
        return f"{o['lsn']} ({o['commit_ts'] or 'commit time unknown'})"

    if not s["has_state_file"]:
        state = "generation 0, no state file"
    elif s["generation"] == 0:
        state = "generation 0"
    else:
        state = f"generation {s['generation']}, started at snapshot {show(s['snapshot'])}"
        state += f", made live {s['at']}"
    sink = s["sink_app_id"] or (
        _PLACEHOLDER_APP_ID
        + ("" if s["generation"] == 0 else f".g{s['generation']}")
        + " (pass --app-id to name it)"
    )
    last = s["last_commit"]
    if last is None:
        commit = "none" + ("" if s["spark_started"] else " (Spark has not started on it)")
    else:
        commit = f"batch {last['batch_id']} at {show(last['offset'])}"
    pending = []
    if s["recovering"] is not None:
        pending.append(f"recovering from {show(s['recovering'])}")
    if s["failed_at"] is not None:
        pending.append(f"a failed re-snapshot at {s['failed_at']}")
    rows = [
        ("checkpoint", s["checkpoint"]),
        ("state", state),
        ("live checkpoint", s["live_checkpoint"]),
        ("sink app_id", sink),
        ("last commit", commit),
        ("pending", "; ".join(pending) or "nothing"),
    ]
    if pending:
        rows.append(("", "run to_delta with on_data_loss='resnapshot' to finish the recovery"))
    if s["facts"] is not None:
        rows.extend(_facts_rows(s["facts"]))
    return "\n".join(f"{k:<16}{v}" for k, v in rows)


def _text_or(value: object, unknown: str) -> str:
    return unknown if value is None else str(value)


def _facts_rows(f: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("facts", f["table"])]
    b = f["latest_batch"]
    if b is None:
        rows.append(("latest batch", "none"))
    else:
        span = "no rows" if b["min_lsn"] is None else f"rows {b['min_lsn']}..{b['max_lsn']}"
        rows += [
            (
                "latest batch",
                f"batch {b['batch_id']} of {b['app_id']}, {_text_or(b['rows'], '?')} "
                f"rows, written {_text_or(b['written_at'], 'at an unknown time')}",
            ),
            (
                "  range",
                f"{span}, end {_text_or(b['end_lsn'], 'unknown')} "
                f"({_text_or(b['end_commit_ts'], 'commit time unknown')})",
            ),
            (
                "  lag",
                "unknown"
                if b["ingestion_lag_seconds"] is None
                else f"{b['ingestion_lag_seconds']} s behind the source's newest change "
                f"({_text_or(b['source_max_commit_ts'], 'its commit time unknown')})",
            ),
            (
                "  headroom",
                "unknown"
                if b["retention_headroom_hours"] is None
                else f"{b['retention_headroom_hours']} h before CDC cleanup reaches the end offset "
                f"(cleanup at {_text_or(b['retention_watermark_ts'], 'an unknown time')})",
            ),
        ]
    for name, e in f["events"].items():
        if e is None:
            rows.append((name, "none"))
            continue
        text = f"{e['app_id']} at {_text_or(e['lsn'], 'no LSN')}"
        if e["rows"] is not None:
            text += f", {e['rows']} rows"
        if e["lost_from_ts"] is not None or e["lost_to_ts"] is not None:
            text += f", lost {_text_or(e['lost_from_ts'], '?')} to {_text_or(e['lost_to_ts'], '?')}"
        rows.append((name, text + f", written {_text_or(e['written_at'], 'at an unknown time')}"))
    return rows


def run(args: argparse.Namespace) -> int:
    if args.job is not None:
        return _job_chart(args)
    if args.checkpoint is None:
        return fail("status", "pass the CHECKPOINT given to to_delta (or --job with --chart)", 2)
    try:
        chart = None if args.chart is None else _check_chart(args.chart, args.facts, args.app_id)
        status = collect(args.checkpoint, args.app_id, args.facts)
        if chart is not None:
            from mssql_cdc.cli.chart import chart_data, draw_chart
            from mssql_cdc.facts import read_history

            draw_chart(chart_data([read_history(args.facts, args.app_id)]), chart)
            status["chart"] = str(chart)
    except (MssqlCdcError, ValueError, OSError) as exc:
        return fail("status", exc, 2)
    print_result(
        args,
        status,
        lambda: _text(status) + (f"\n{'chart':<16}{status['chart']}" if chart else ""),
    )
    return 0


def _check_chart(chart: str, facts: str | None, app_id: str | None) -> Any:
    """The chart's checked path, before anything is read (a Path; typed Any to keep the chart
    module out of this one's imports)."""
    from mssql_cdc.cli.chart import check_chart_path, require_matplotlib

    if facts is None or app_id is None:
        raise ConfigError(
            "--chart needs --facts and --app-id: the chart is drawn from the stream's rows in "
            "its facts table (or pass --job JOB for a fan-out job's streams)"
        )
    require_matplotlib()
    return check_chart_path(chart)


def job_streams(job: dict[str, Any], path: str) -> tuple[str, list[str]]:
    """A fan-out job file's facts table and the app_id of each stream (its `app_id`, else its
    capture instance's name, as `fan_out` names it with `root`).

    Raises:
        ConfigError: no `facts_table` or `streams`, or an entry without an app_id or capture
            instance.
    """
    facts = job.get("facts_table")
    streams = job.get("streams")
    if not isinstance(facts, str) or not isinstance(streams, list) or not streams:
        raise ConfigError(f"{path}: the job needs a 'facts_table' path and a 'streams' list")
    app_ids: list[str] = []
    for k, entry in enumerate(streams):
        named = None
        if isinstance(entry, dict):
            named = entry.get("app_id") or entry.get("capture_instance")
        if not isinstance(named, str) or not named:
            raise ConfigError(
                f"{path}: stream {k} names no app_id nor capture_instance; give each entry one"
            )
        validate_app_id(named)
        app_ids.append(named)
    return facts, app_ids


def _job_chart(args: argparse.Namespace) -> int:
    from mssql_cdc.cli.chart import chart_data, check_chart_path, draw_chart, require_matplotlib
    from mssql_cdc.cli.run import read_job
    from mssql_cdc.facts import read_history

    try:
        if args.chart is None or args.checkpoint is not None or args.app_id or args.facts:
            raise ConfigError(
                "--job draws a chart only: pass --job JOB --chart FILE.png, without a "
                "CHECKPOINT, --app-id or --facts (the job file names them)"
            )
        require_matplotlib()
        chart = check_chart_path(args.chart)
        facts, app_ids = job_streams(read_job(args.job), args.job)
        histories = [read_history(facts, app_id) for app_id in app_ids]
        title = f"mssql-cdc job {os.path.basename(args.job)}"
        draw_chart(chart_data(histories, title=title), chart)
    except (MssqlCdcError, ValueError, OSError) as exc:
        return fail("status", exc, 2)
    result = {"job": args.job, "facts": facts, "streams": app_ids, "chart": str(chart)}
    print_result(
        args,
        result,
        lambda: f"chart of {len(app_ids)} stream(s) ({', '.join(app_ids)}) written to {chart}",
    )
    return 0
