"""`mssql-cdc run JOB`: start the streams of a job file with `fan_out` and wait for them.

The job file is JSON (or YAML, with PyYAML installed): one object whose keys are `fan_out`'s
arguments, `streams` a list of stream entries (docs/fan-out.md). The whole job is checked
before Spark starts. Exit codes: 0 every stream ended or was stopped, 1 a stream failed (each
failure is printed, naming its stream) or another error it reports, 2 an invalid job file,
entry or option (argparse's usage errors exit 2 too).
"""

from __future__ import annotations

import argparse
import inspect
import math
from pathlib import Path
from typing import Any

from mssql_cdc.cli.job_file import load_object
from mssql_cdc.cli.output import add_output_flags, fail, print_result
from mssql_cdc.cli.parser import add_verb
from mssql_cdc.cli.session import session_on_first_use
from mssql_cdc.core import did_you_mean
from mssql_cdc.errors import ConfigError, MssqlCdcError

__all__ = [
    "EXIT_FAILED",
    "MAX_TIMEOUT",
    "add_parser",
    "job_arguments",
    "read_job",
    "run",
    "timeout_seconds",
]

EXIT_FAILED = 1


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = add_verb(
        subparsers,
        "run",
        __doc__,
        summary="run the streams of a job file (many tables in one job)",
        epilog="exit codes: 0 every stream ended or was stopped; 1 a stream failed; 2 an "
        "invalid job file, entry or option (checked before Spark starts)",
        run=run,
    )
    parser.add_argument("job", metavar="JOB", help="the job file, .json, .yaml or .yml")
    parser.add_argument(
        "--timeout",
        type=timeout_seconds,
        default=None,
        help="stop the streams after this many seconds (default: wait until they end)",
    )
    add_output_flags(parser, json_help="print each stream's result as one JSON object")


# The longest --timeout: a year. Leave the flag out to wait until the streams end.
MAX_TIMEOUT = 365 * 86400


def timeout_seconds(text: str) -> float:
    """--timeout's seconds: a finite number from 0 to MAX_TIMEOUT (argparse names the flag)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 <= value <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range; pass seconds from 0 to {MAX_TIMEOUT} (a year), or leave "
            "--timeout out to wait until the streams end"
        )
    return value


def read_job(path: str) -> dict[str, Any]:
    """The job file's object, read by the careful loader (`job_file.load_object`).

    Raises:
        ConfigError: the file cannot be read, is not JSON or YAML, breaks a rule of the
            loader (size, nesting, duplicate keys, numbers, aliases) or holds no object.
    """
    return load_object(
        path,
        what="job file",
        holds="one object with a 'streams' list",
        yaml=Path(path).suffix.lower() in (".yaml", ".yml"),
    )


def job_arguments(job: dict[str, Any], path: str) -> tuple[object, dict[str, Any]]:
    """The job's `streams` and the keyword arguments of `fan_out` it gives.

    Raises:
        ConfigError: a key `fan_out` does not take (with the closest one), or a missing
            `streams` or `facts_table`.
    """
    from mssql_cdc import fan_out

    known = [
        name
        for name, p in inspect.signature(fan_out).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    for key in job:
        if key != "streams" and key not in known:
            raise ConfigError(
                f"{path}: unknown key {key!r}{did_you_mean(str(key), [*known, 'streams'])}; a "
                f"job takes streams, {', '.join(known)}"
            )
    required = [
        name
        for name, p in inspect.signature(fan_out).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    for key in ("streams", *required):
        if key not in job:
            raise ConfigError(f"{path}: the job has no {key!r}")
    kwargs = {k: v for k, v in job.items() if k != "streams"}
    kwargs.setdefault("options", {})
    return job["streams"], kwargs


def run(args: argparse.Namespace) -> int:
    from mssql_cdc import fan_out

    spark, stop_if_started_here = session_on_first_use(
        verbose=args.verbose, app_name="mssql-cdc-run"
    )
    try:
        try:
            streams, kwargs = job_arguments(read_job(args.job), args.job)
            job = fan_out(spark, streams, **kwargs)
        except ConfigError as exc:
            return fail("run", exc, 2)
        except (MssqlCdcError, OSError) as exc:
            return fail("run", exc, 1)
        try:
            ended = job.await_termination(args.timeout)
        except MssqlCdcError:
            ended = True  # every failure is printed below, the first one included
        except KeyboardInterrupt:
            ended = False
        if not ended:
            job.stop()
    finally:
        stop_if_started_here()
    failures = job.failures
    for failure in failures:
        fail("run", failure, EXIT_FAILED)
    results = [
        {"app_id": app_id, "target": job.targets[app_id], "state": state}
        for app_id, state in job.states().items()
    ]
    print_result(
        args,
        {"streams": results, "failures": [str(f) for f in failures]},
        lambda: _table(results),
    )
    return EXIT_FAILED if failures else 0


def _table(results: list[dict[str, Any]]) -> str:
    width = max(len(r["app_id"]) for r in results)
    return "\n".join(f"{r['app_id']:<{width}}  {r['state']:<8}  {r['target']}" for r in results)
