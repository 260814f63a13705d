"""How the CLI shows what the library logs: progress bars or lines, `--quiet`, `--json`,
`--verbose` (docs/cli.md, 'Output').

Progress and warnings go to stderr, the verb's result to stdout. On a terminal each progress
task is a bar (tqdm); otherwise each progress record is one line.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, Never, TextIO

from tqdm import tqdm

from mssql_cdc.core import Progress, progress_of

__all__ = [
    "MAX_MESSAGE",
    "Mode",
    "ProgressView",
    "add_output_flags",
    "fail",
    "mode_of",
    "print_result",
    "showing",
]

Mode = Literal["normal", "quiet", "json", "verbose"]

PACKAGE_LOGGER = "mssql_cdc"


def add_output_flags(parser: argparse.ArgumentParser, *, json_help: str) -> None:
    """Add --quiet, --json and --verbose (one of them at most) to a verb's parser."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--quiet", action="store_true", help="print only errors and the final result"
    )
    group.add_argument("--json", action="store_true", help=json_help)
    group.add_argument(
        "--verbose",
        action="store_true",
        help="print every INFO record of the library, and Spark's start-up lines and warnings",
    )


def mode_of(args: argparse.Namespace) -> Mode:
    """The output mode the parsed flags ask for; "normal" for a verb without them."""
    if getattr(args, "json", False):
        return "json"
    if getattr(args, "quiet", False):
        return "quiet"
    if getattr(args, "verbose", False):
        return "verbose"
    return "normal"


def print_result(args: argparse.Namespace, data: object, text: Callable[[], str]) -> None:
    """Print a verb's result to stdout: `data` as one indented JSON object with --json, else
    the words of `text()`."""
    print(json.dumps(data, indent=2) if mode_of(args) == "json" else text())


# An error quoting a value from a user's file (a job's facts_table of a million characters)
# is cut in the middle, so its start and its advice at the end both stay on screen.
MAX_MESSAGE = 2000


def fail(verb: str, error: object, code: int) -> int:
    """Print `error` to stderr as `mssql-cdc VERB: ...` and return the exit code `code`; a
    message longer than MAX_MESSAGE characters loses its middle."""
    text = str(error)
    if len(text) > MAX_MESSAGE:
        head, tail = MAX_MESSAGE * 3 // 5, MAX_MESSAGE // 5
        left_out = len(text) - head - tail
        text = f"{text[:head]} [... {left_out:,} characters left out ...] {text[-tail:]}"
    print(f"mssql-cdc {verb}: {text}", file=sys.stderr)
    return code


class ProgressView(logging.Handler):
    """Shows the library's log records for one CLI run.

    normal: progress records as bars on a terminal (else as lines), other records from
    WARNING; verbose: every record from INFO as a line; quiet and json: errors only.
    """

    def __init__(self, stream: TextIO, mode: Mode) -> None:
        super().__init__(logging.ERROR if mode in ("quiet", "json") else logging.INFO)
        self.stream = stream
        self.mode = mode
        self.bars_on = mode == "normal" and stream.isatty()
        self._bars: dict[tuple[str, str], tqdm[Never]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            progress = progress_of(record)
            if self.mode == "verbose":
                self._line(f"{record.levelname} {record.name}: {record.getMessage()}")
            elif progress is None:
                if record.levelno >= logging.WARNING:
                    self._line(f"mssql-cdc: {record.levelname.lower()}: {record.getMessage()}")
            elif self.bars_on:
                self._bar(progress, record)
            else:
                self._line(_line_of(progress, record.getMessage()))
        except Exception:  # noqa: BLE001 - logging's contract: a handler never raises
            self.handleError(record)

    def _line(self, text: str) -> None:
        if self._bars:
            tqdm.write(text, file=self.stream)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _bar(self, progress: Progress, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.WARNING:
            self._line(f"mssql-cdc: {record.levelname.lower()}: {message}")
        key = (progress.task, progress.subject)
        bar = self._bars.get(key)
        if bar is None:
            bar = tqdm(
                total=progress.total,
                unit=f" {progress.unit}",
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
            )
            self._bars[key] = bar
        if progress.total is not None and bar.total != progress.total:
            bar.total = progress.total
        label = message if progress.task == "demo" else f"{progress.task} {progress.subject}"
        bar.set_description_str(label[:60], refresh=False)
        bar.n = progress.done
        bar.refresh()
        if progress.stage == "finished":
            bar.close()
            del self._bars[key]

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()
        super().close()


def _line_of(progress: Progress, message: str) -> str:
    if progress.unit == "steps" and progress.total is not None:
        return f"[{progress.done}/{progress.total}] {message}"
    return message


@contextmanager
def showing(mode: Mode, stream: TextIO) -> Iterator[ProgressView]:
    """Show the library's records on `stream` in `mode` while the block runs; afterwards the
    package logger is as it was (tests run many verbs in one process)."""
    logger = logging.getLogger(PACKAGE_LOGGER)
    view = ProgressView(stream, mode)
    level = logger.level
    logger.addHandler(view)
    logger.setLevel(logging.INFO)
    try:
        yield view
    finally:
        logger.removeHandler(view)
        logger.setLevel(level)
        view.close()
