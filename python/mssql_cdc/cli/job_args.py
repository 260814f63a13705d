"""What the verbs that run a stream's work take: its to_delta arguments and `--options`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

from mssql_cdc.cli.job_file import load_object
from mssql_cdc.cli.session import call_in_session

__all__ = ["add_stream_arguments", "call_on_stream", "read_options"]

T = TypeVar("T")


def read_options(path: str) -> dict[str, object]:
    """The source options of a job's JSON file, as `stream()` takes them, read by the careful
    loader (`job_file.load_object`).

    Raises:
        ConfigError: the file cannot be read, is not JSON, breaks a rule of the loader (size,
            nesting, duplicate keys, numbers) or holds no object.
    """
    return load_object(path, what="--options file", holds="one JSON object of options", yaml=False)


def add_stream_arguments(
    parser: argparse.ArgumentParser, *, snapshot_help: str, interval_help: str
) -> None:
    """Add the flags naming one stream as its job's `to_delta` call does.

    `--options`, `--target`, `--app-id`, `--checkpoint` and `--facts` are required;
    `--snapshot` (full or chunked) and `--interval-days` take to_delta's defaults.
    """
    parser.add_argument("--options", required=True, help="a JSON file of the source options")
    parser.add_argument("--target", required=True, help="the bronze table")
    parser.add_argument("--app-id", required=True, help="the app_id given to to_delta")
    parser.add_argument("--checkpoint", required=True, help="the checkpoint given to to_delta")
    parser.add_argument("--facts", required=True, help="the facts table")
    parser.add_argument(
        "--snapshot", choices=("full", "chunked"), default="full", help=snapshot_help
    )
    parser.add_argument("--interval-days", type=float, default=7.0, help=interval_help)


def call_on_stream(
    verb: str, args: argparse.Namespace, method: Callable[..., T], **extra: object
) -> tuple[T | None, int]:
    """`method` (a `CdcStream` method) of the stream the flags of `add_stream_arguments` name,
    called with those flags as its to_delta arguments and `extra`, in a session started on
    first use and stopped after it (`call_in_session`, which prints an error and gives its
    exit code)."""
    from mssql_cdc import stream

    return call_in_session(
        verb,
        verbose=args.verbose,
        call=lambda spark: method(
            stream(spark, read_options(args.options)),
            args.target,
            args.app_id,
            args.checkpoint,
            args.facts,
            resnapshot_interval_days=args.interval_days,
            snapshot=args.snapshot,
            **extra,
        ),
    )
