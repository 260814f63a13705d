"""`mssql-cdc emulator create|workload|idle|advance|capture|cleanup|status|serve`.

docs/emulator.md, 'Command line', gives every verb's arguments and exit codes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mssql_cdc.emulator import (
    PROFILES,
    Emulator,
    EmulatorError,
    JobClock,
    from_micros,
    profile_settings,
    serve,
    to_micros,
)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

# What one `emulator workload` may ask for. The first three are the C++ workload's own bounds
# (cpp/emu/src/workload.cpp), checked here first so a bad flag exits 2 naming itself; the rest
# keep one run to minutes and a few gigabytes (the emulator writes about 100,000 rows a second).
MAX_RATE = 1000.0
MAX_SPAN_SECONDS = 366 * 86400
MAX_COMMITS = 10_000_000
MAX_ROWS_PER_COMMIT = 1000
MAX_ROWS = 50_000_000  # commits times the upper bound of --rows-per-commit
MAX_WEIGHT = 1_000_000
MAX_SEED = 2**64 - 1
PASSWORD_VARIABLE = "MSSQL_CDC_EMULATOR_PASSWORD"  # `serve`: the login's password, kept out of argv


def duration(text: str) -> float:
    """Seconds of '90', '30s', '5m', '24h' or '1d'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration; use e.g. 30s, 5m, 24h")
    return float(match.group(1)) * _UNITS.get(match.group(2) or "s", 1)


def span(text: str) -> float:
    """A `duration` above 0 and at most 366 days (--duration)."""
    seconds = duration(text)
    if not 0 < seconds <= MAX_SPAN_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range; pass a span above 0 and at most 366d"
        )
    return seconds


def interval(text: str) -> float:
    """A `duration` from 0 (never) to 366 days (--idle-every, --cleanup-every)."""
    seconds = duration(text)
    if not 0 <= seconds <= MAX_SPAN_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; pass 0 (never) up to 366d")
    return seconds


def rate(text: str) -> float:
    """Commits per simulated second: above 0 and at most MAX_RATE (--rate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; use e.g. 10") from None
    if not (math.isfinite(value) and 0 < value <= MAX_RATE):
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range; pass commits per simulated second above 0 and at most "
            f"{MAX_RATE:g}"
        )
    return value


def seed(text: str) -> int:
    """A seed from 0 to 2**64 - 1 (--seed)."""
    if not re.fullmatch(r"\s*\d{1,20}\s*", text) or int(text) > MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a seed; pass a whole number from 0 to {MAX_SEED}"
        )
    return int(text)


def operation_weights(text: str) -> tuple[int, int, int]:
    """insert=50,update=40,delete=10 as three weights, each 0 to MAX_WEIGHT, one above 0."""
    weights = {"insert": 0, "update": 0, "delete": 0}
    for part in text.split(","):
        name, _, value = part.partition("=")
        if name.strip() not in weights or not value.strip().isdigit():
            raise argparse.ArgumentTypeError(
                f"{text[:80]!r} is not a mix; use e.g. insert=50,update=40,delete=10, each "
                f"weight from 0 to {MAX_WEIGHT:,}"
            )
        weights[name.strip()] = int(value) if len(value.strip()) <= 7 else MAX_WEIGHT + 1
    if max(weights.values()) > MAX_WEIGHT or sum(weights.values()) == 0:
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is out of range; give each weight from 0 to {MAX_WEIGHT:,}, one of "
            "them above 0"
        )
    return weights["insert"], weights["update"], weights["delete"]


def rows_range(text: str) -> tuple[int, int]:
    """'3' or '1-5' rows per commit, 1 <= low <= high <= MAX_ROWS_PER_COMMIT."""
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a row count; use e.g. 1-5, from 1 to {MAX_ROWS_PER_COMMIT}"
        )
    # Seven digits are more than enough; longer ones are refused before int() reads them.
    low, high = (
        int(g) if len(g) <= 7 else MAX_ROWS_PER_COMMIT + 1
        for g in (match.group(1), match.group(2) or match.group(1))
    )
    if not 1 <= low <= high <= MAX_ROWS_PER_COMMIT:
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range; pass a number or a range LOW-HIGH with "
            f"1 <= LOW <= HIGH <= {MAX_ROWS_PER_COMMIT}"
        )
    return low, high


def register(verbs: Any) -> None:  # argparse's subparsers action has no public type
    parser = verbs.add_parser("emulator", help="create and drive a SQL Server CDC emulator file")
    sub = parser.add_subparsers(dest="emulator_verb", required=True, metavar="VERB")

    p = _verb(sub, "create", help="a new emulator file", run=_create)
    p.add_argument("--start", default="2026-09-28T13:50:00", help="the clock's floor (ISO)")
    p.add_argument(
        "--retention-minutes", type=int, default=4320, help="CDC retention of the cleanup job"
    )
    p.add_argument(
        "--capture",
        choices=["immediate", "manual"],
        help="capture at each commit, or only when `emulator capture` runs (default: the "
        "profile's)",
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default="immediate",
        help="immediate (default), or realistic: a real server's capture lag, idle entries and "
        "cleanup job on the emulator's clock",
    )
    p.add_argument("--time-zone", default="UTC", help="server time zone: an IANA name, default UTC")
    p.add_argument("--demo", action="store_true", help="add dbo.orders and instance dbo_orders")

    p = _verb(
        sub, "workload", help="a seeded random OLTP workload over simulated time", run=_workload
    )
    p.add_argument("table")
    p.add_argument(
        "--rate", type=rate, required=True, help="commits per simulated second, up to 1000"
    )
    p.add_argument(
        "--duration", type=span, required=True, help="simulated span, e.g. 10m, up to 366d"
    )
    p.add_argument("--start", help="first simulated time (ISO); default just after the last")
    p.add_argument("--seed", type=seed, default=1, help="seed of the random workload")
    p.add_argument(
        "--mix",
        type=operation_weights,
        default=(50, 40, 10),
        help="weights of inserts, updates and deletes (default insert=50,update=40,delete=10)",
    )
    p.add_argument(
        "--rows-per-commit",
        type=rows_range,
        default=(1, 5),
        help="rows per commit, a number or a range, up to 1000 (default 1-5)",
    )
    _every(p, "--idle-every", "idle entries", 0.0, "0: none", kind=interval)
    _every(p, "--cleanup-every", "runs of the cleanup job", 0.0, "0: none", kind=interval)

    p = _verb(sub, "idle", help="idle entries", run=_idle)
    p.add_argument("--at", help="time of the first entry (ISO)")
    p.add_argument("--count", type=int, default=1, help="how many idle entries")
    _every(p, "--every", "the entries", 300.0, "5m")

    p = _verb(
        sub, "advance", help="run the jobs due up to a time and move the clock there", run=_advance
    )
    p.add_argument("--to", help="the time to move to (ISO); default now")

    p = _verb(
        sub, "capture", help="one capture cycle (manual mode), or all with --all", run=_capture
    )
    p.add_argument("--all", action="store_true")

    p = _verb(sub, "cleanup", help="sp_cdc_cleanup_change_table, or the cleanup job", run=_cleanup)
    p.add_argument("--instance")
    p.add_argument("--lwm", help="new low water mark (an entry's LSN)")
    p.add_argument("--job", action="store_true")
    p.add_argument("--retention-minutes", type=int)

    p = _verb(sub, "status", help="settings, tables, instances, LSNs", run=_status)
    p.add_argument("--json", action="store_true")

    p = _verb(sub, "serve", help="answer SQL Server drivers over TDS until interrupted", run=_serve)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="IPv4 address to listen on (default loopback; another address is warned about)",
    )
    p.add_argument("--port", type=int, default=0, help="TCP port; 0 (default) picks a free one")
    p.add_argument(
        "--login",
        default="sa",
        help="the SQL login clients connect as (default sa); its password is read from "
        f"${PASSWORD_VARIABLE}, else made at random and printed once",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="offer TLS with a self-signed certificate made at start (Encrypt=yes works)",
    )
    p.add_argument(
        "--certificate",
        metavar="PATH",
        help="with --tls, also write the certificate (PEM, no key) to PATH for clients to "
        "trust; PATH must not exist (an existing file is never overwritten)",
    )
    p.add_argument(
        "--log-statements",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="write each login, batch, RPC with its parameters and error returned, passwords "
        "masked, to stderr, or appended to FILE when one is given",
    )
    p.add_argument(
        "--access-token-file",
        metavar="PATH",
        help="with --tls, also accept the Microsoft Entra access token held in PATH as the "
        "login (for tests of token logins; a JWT's exp is its expiry); never printed",
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        help="store this profile's job settings in the file first; a file with jobs runs them "
        "on the wall clock while it is served",
    )


def _verb(sub: Any, name: str, *, help: str, run: Any) -> argparse.ArgumentParser:
    """An emulator verb's parser: the file's `path` first; `run` prints an error in one line."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    parser.add_argument("path")
    parser.set_defaults(run=_guarded(run))
    return parser


def _every(
    parser: argparse.ArgumentParser,
    flag: str,
    between: str,
    default: float,
    shown: str,
    *,
    kind: Any = duration,
) -> None:
    """A flag of the simulated time between `between`: a `duration` (or `kind`), `shown` as its
    default."""
    parser.add_argument(
        flag,
        type=kind,
        default=default,
        help=f"simulated time between {between} (default {shown})",
    )


def _guarded(verb: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(verb(args))
        except (EmulatorError, OSError, ValueError, TypeError, LookupError) as exc:
            print(f"mssql-cdc emulator {args.emulator_verb}: {exc}", file=sys.stderr)
            return 1

    return run


def _create(args: argparse.Namespace) -> int:
    emu = Emulator.create(
        args.path,
        start=args.start,
        retention_minutes=args.retention_minutes,
        capture=args.capture,
        profile=args.profile,
    )
    try:
        _set_up(emu, args)
    except BaseException:
        emu.close()  # a failed create leaves no file behind, as Emulator.create promises
        for suffix in ("", "-wal", "-shm"):
            Path(str(args.path) + suffix).unlink(missing_ok=True)
        raise
    emu.close()
    print(f"created {args.path}" + (" with dbo.orders and dbo_orders" if args.demo else ""))
    return 0


def _set_up(emu: Emulator, args: argparse.Namespace) -> None:
    emu.configure(time_zone=args.time_zone)
    if args.demo:
        emu.create_table(
            "dbo.orders",
            {
                "order_id": "int",
                "customer_id": "int",
                "status": "nvarchar(20)",
                "amount": "decimal(18,2)",
                "updated_at": "datetime2",
            },
            primary_key="order_id",
        )
        emu.enable_cdc("dbo.orders")


def _workload_too_large(args: argparse.Namespace) -> str | None:
    """Why the flags together ask for more than one run may do, or None."""
    commits = args.rate * args.duration
    if commits > MAX_COMMITS:
        return (
            f"--rate {args.rate:g} for --duration {args.duration:g}s asks for about "
            f"{commits:,.0f} commits, more than {MAX_COMMITS:,}; run shorter workloads one "
            "after another"
        )
    rows = commits * args.rows_per_commit[1]
    if rows > MAX_ROWS:
        return (
            f"--rows-per-commit up to {args.rows_per_commit[1]} over about {commits:,.0f} commits "
            f"asks for up to {rows:,.0f} rows, more than {MAX_ROWS:,}; lower --rows-per-commit, "
            "--rate or --duration"
        )
    return None


def _workload(args: argparse.Namespace) -> int:
    too_large = _workload_too_large(args)
    if too_large is not None:
        print(f"mssql-cdc emulator workload: {too_large}", file=sys.stderr)
        return 2  # a usage error, as argparse's own: nothing was opened
    with Emulator.open(args.path) as emu:
        result = emu._open_engine.workload(
            args.table,
            args.rate,
            args.duration,
            None if args.start is None else to_micros(args.start),
            args.seed,
            *args.mix,
            *args.rows_per_commit,
            args.idle_every,
            args.cleanup_every,
        )
    span = ""
    if result["commits"]:
        first = from_micros(int(str(result["first_time"])))
        last = from_micros(int(str(result["last_time"])))
        span = f", {first:%Y-%m-%d %H:%M:%S} to {last:%Y-%m-%d %H:%M:%S}"
    print(
        f"{result['commits']} commits ({result['inserts']} inserts, {result['updates']} updates, "
        f"{result['deletes']} deletes), {result['idle_entries']} idle entries, "
        f"{result['cleanups']} cleanup runs{span}; LSNs {result['first_lsn']} to "
        f"{result['last_lsn']}"
    )
    return 0


def _idle(args: argparse.Namespace) -> int:
    if args.count < 1:
        raise ValueError("--count must be 1 or more")
    with Emulator.open(args.path) as emu:
        first = datetime.fromisoformat(args.at) if args.at else None
        for i in range(args.count):
            at = None if first is None else first + timedelta(seconds=args.every * i)
            print(emu.idle(at=at))
    return 0


def _advance(args: argparse.Namespace) -> int:
    with Emulator.open(args.path) as emu:
        now = emu.advance(at=args.to)
        pending = emu.pending_capture()
        print(f"clock at {now.isoformat()}; max_lsn {emu.max_lsn()}; {pending} pending")
    return 0


def _capture(args: argparse.Namespace) -> int:
    with Emulator.open(args.path) as emu:
        top = emu.drain() if args.all else emu.capture()
        print(f"max_lsn {top}; {emu.pending_capture()} records pending")
    return 0


def _cleanup(args: argparse.Namespace) -> int:
    with Emulator.open(args.path) as emu:
        if args.job == bool(args.instance or args.lwm):
            raise ValueError("give either --instance CI --lwm LSN, or --job")
        if args.job:
            emu.run_cleanup_job(retention_minutes=args.retention_minutes)
        else:
            if not (args.instance and args.lwm):
                raise ValueError("--instance and --lwm go together")
            emu.cleanup(args.instance, args.lwm)
        for table in emu.tables():
            for ci in emu.capture_instances(table):
                print(f"{ci}: min_lsn {emu.min_lsn(ci)}")
    return 0


def status(emu: Emulator) -> dict[str, Any]:
    """What `status` shows, as a JSON-ready dict."""
    reader = emu.reader()
    tables = []
    for name in emu.tables():
        info = reader.table_info(name)
        instances = []
        for inst in reader.capture_instances(name):
            instances.append(
                {
                    "name": inst["name"],
                    "min_lsn": inst["low_water_mark"],
                    # None until a capture cycle reaches the enable (manual capture)
                    "start_lsn": inst["start_lsn"],
                    "create_lsn": inst["create_lsn"],
                    "change_rows": len(emu.change_rows(inst["name"])),
                    "columns": [c["name"] for c in reader.captured_columns(inst["name"])],
                }
            )
        tables.append({"name": name, "rows": info["row_count"], "instances": instances})
    entries = emu.lsn_time_mapping()
    top = emu.max_lsn()
    top_time = emu.lsn_time(top) if top else None
    return {
        "path": str(emu.path),
        "format": 1,
        "settings": emu.settings(),
        "tables": tables,
        "max_lsn": top,
        "max_lsn_time": top_time.isoformat() if top_time else None,
        "oldest_entry": entries[0]["start_lsn"] if entries else None,
        "pending_capture": emu.pending_capture(),
        "pending_hooks": len(emu.pending_hooks()),
    }


def _status(args: argparse.Namespace) -> int:
    with Emulator.open(args.path) as emu:
        info = status(emu)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"{info['path']}: format {info['format']}")
    print("settings: " + ", ".join(f"{k}={v}" for k, v in info["settings"].items()))
    for t in info["tables"]:
        print(f"table {t['name']}: {t['rows']} rows")
        for i in t["instances"]:
            print(
                f"  instance {i['name']}: min_lsn {i['min_lsn']}"
                f"{'' if i['start_lsn'] else ' (start_lsn NULL: not captured yet)'}, "
                f"{i['change_rows']} change rows, "
                f"columns {', '.join(i['columns'])}"
            )
    print(f"max_lsn {info['max_lsn']} at {info['max_lsn_time']}; oldest {info['oldest_entry']}")
    print(f"pending capture {info['pending_capture']}, pending hooks {info['pending_hooks']}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    # SIGTERM ends the process like Ctrl-C: through the finally below, which stops the server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if args.certificate and not args.tls:
        print("mssql-cdc emulator serve: --certificate needs --tls; add --tls", file=sys.stderr)
        return 2  # a usage error, as argparse's own
    if args.certificate and os.path.lexists(args.certificate):
        print(
            f"mssql-cdc emulator serve: --certificate {args.certificate} already exists and is "
            "never overwritten; give a path that does not exist yet",
            file=sys.stderr,
        )
        return 2
    token = None
    if args.access_token_file:
        if not args.tls:
            print(
                "mssql-cdc emulator serve: --access-token-file needs --tls; add --tls",
                file=sys.stderr,
            )
            return 2
        try:
            token = Path(args.access_token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            print(
                f"mssql-cdc emulator serve: cannot read --access-token-file "
                f"{args.access_token_file}: {type(exc).__name__}; give a UTF-8 file holding "
                "the token",
                file=sys.stderr,
            )
            return 2
    if args.profile:
        with Emulator.open(args.path) as emu:
            mode, settings = profile_settings(args.profile, None)
            emu.configure(capture=mode, **settings)
    password = os.environ.get(PASSWORD_VARIABLE) or None
    server = serve(
        args.path,
        host=args.host,
        port=args.port,
        tls=args.tls,
        login=args.login,
        password=password,
        access_token=token,
        log_statements=args.log_statements or False,
    )
    jobs = JobClock(args.path)
    try:
        if args.certificate and server.certificate_pem:
            # "x": created here or not at all, so a file made meanwhile is never overwritten.
            try:
                with open(args.certificate, "x", encoding="ascii") as out:
                    out.write(server.certificate_pem)
            except FileExistsError:
                print(
                    f"mssql-cdc emulator serve: --certificate {args.certificate} appeared "
                    "while the server started and is never overwritten; give a new path",
                    file=sys.stderr,
                )
                return 2
        tls = " with TLS" if server.tls else ""
        print(
            f"serving {args.path} as database {server.database!r} on "
            f"{server.host}:{server.port}{tls}"
        )

        # A password the user chose stays out of the output; a made one is shown this once.
        def shown(text: str) -> str:
            return text.replace(password, f"${PASSWORD_VARIABLE}") if password else text

        print(f"  pymssql:      {shown(server.connection_string('pymssql'))}")
        print(f"  mssql-python: {shown(server.connection_string('mssql-python'))}")
        print(f"  JDBC:         {shown(server.connection_string('jdbc'))}")
        chosen = f"from ${PASSWORD_VARIABLE}" if password else "made now, shown only above"
        print(f"  login {server.login!r}, password {chosen}", flush=True)
        if token is not None:
            print("  access token: the one in --access-token-file, as that login", flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        jobs.stop()
        server.stop()
    return 0
