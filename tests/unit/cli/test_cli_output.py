"""What the CLI shows of the library's progress and results: bars, lines, --quiet, --json,
--verbose; did-you-mean for mistyped flags and verbs; defaults and exit codes in --help."""

from __future__ import annotations

import argparse
import io
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import build_parser, main
from mssql_cdc.cli.demo_outcome import DemoSummary
from mssql_cdc.cli.output import ProgressView, showing
from mssql_cdc.core.progress import Progress, report

log = logging.getLogger("mssql_cdc.snapshot.full")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def emit_a_snapshot_and_a_warning() -> None:
    for done in (0, 500, 1000):
        stage = "started" if done == 0 else "finished" if done == 1000 else "advanced"
        report(
            log,
            Progress("snapshot", "bronze.orders", stage, done, 1000, "rows"),
            "bronze.orders: %d of 1000 rows",
            done,
        )
    log.info("an INFO record without progress")
    log.warning("a warning")
    log.error("an error")


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "normal",
            [
                "bronze.orders: 0 of 1000 rows",
                "bronze.orders: 500 of 1000 rows",
                "bronze.orders: 1000 of 1000 rows",
                "mssql-cdc: warning: a warning",
                "mssql-cdc: error: an error",
            ],
        ),
        ("quiet", ["mssql-cdc: error: an error"]),
        ("json", ["mssql-cdc: error: an error"]),
        (
            "verbose",
            [
                "INFO mssql_cdc.snapshot.full: bronze.orders: 0 of 1000 rows",
                "INFO mssql_cdc.snapshot.full: bronze.orders: 500 of 1000 rows",
                "INFO mssql_cdc.snapshot.full: bronze.orders: 1000 of 1000 rows",
                "INFO mssql_cdc.snapshot.full: an INFO record without progress",
                "WARNING mssql_cdc.snapshot.full: a warning",
                "ERROR mssql_cdc.snapshot.full: an error",
            ],
        ),
    ],
)
def test_each_mode_shows_what_it_promises_off_a_terminal(mode: Any, expected: list[str]) -> None:
    out = io.StringIO()
    with showing(mode, out):
        emit_a_snapshot_and_a_warning()
    assert out.getvalue().splitlines() == expected


def test_on_a_terminal_progress_is_a_bar_that_reaches_its_total() -> None:
    out = Terminal()
    with showing("normal", out) as view:
        emit_a_snapshot_and_a_warning()
        assert view.bars_on
    text = out.getvalue()
    assert "\r" in text  # a bar redrawn in place
    assert "1000/1000" in text
    assert "bronze.orders: 500 of 1000 rows" not in text  # the bar replaces the lines
    assert "mssql-cdc: warning: a warning\n" in text


def test_after_a_verb_the_package_logger_is_as_it_was() -> None:
    logger = logging.getLogger("mssql_cdc")
    before = (logger.level, list(logger.handlers))
    with showing("normal", io.StringIO()):
        assert any(isinstance(h, ProgressView) for h in logger.handlers)
    assert (logger.level, list(logger.handlers)) == before


def test_a_library_user_without_logging_configured_sees_no_progress() -> None:
    # In a process of its own: pytest's log capture would hide what Python's default shows.
    script = (
        "import logging\n"
        "from mssql_cdc.core.progress import Progress, report\n"
        "log = logging.getLogger('mssql_cdc.snapshot.full')\n"
        "report(log, Progress('snapshot', 't', 'started', 0, None, 'rows'), 'a progress record')\n"
        "log.warning('a warning')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert (done.stdout, done.stderr) == ("", "a warning\n")


def summary(tmp_path: Path) -> DemoSummary:
    return DemoSummary(
        out_dir=tmp_path,
        runs=8,
        generation=1,
        resnapshot={"max_lsn": "0x01", "rows": 42, "lost_from_ts": "a", "lost_to_ts": "b"},
        bronze_rows=300,
        source_rows=42,
        equal=True,
    )


@pytest.fixture
def fake_demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """run_demo replaced by one that logs two steps and returns a fixed summary."""
    calls: list[dict[str, Any]] = []

    def run_demo(out: str, **kwargs: Any) -> DemoSummary:
        from mssql_cdc.cli.demo_job import progress

        calls.append({"out": out, **kwargs})
        progress(1, "emulator database")
        progress(6, "done", finished=True)
        return summary(tmp_path)

    monkeypatch.setattr("mssql_cdc.cli.demo_job.run_demo", run_demo)
    return calls


def test_demo_json_prints_only_the_result_on_stdout(
    fake_demo: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["demo", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {
        "equal": True,
        "backend": "emulator",
        "runs": 8,
        "generation": 1,
        "bronze_rows": 300,
        "source_rows": 42,
        "resnapshot": {"snapshot_lsn": "0x01", "rows": 42, "lost_from_ts": "a", "lost_to_ts": "b"},
        "out": str(tmp_path),
        "chart": None,
    }
    assert fake_demo[0]["verbose"] is False


def test_demo_quiet_prints_the_summary_and_no_progress(
    fake_demo: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("Summary\n")
    assert "bronze latest image vs source: EQUAL" in out


def test_demo_shows_its_steps_on_stderr_and_the_summary_on_stdout(
    fake_demo: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--verbose"]) == 0
    assert fake_demo[0]["verbose"] is True
    assert main(["demo"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[-2:] == ["[1/6] emulator database", "[6/6] done"]
    assert "[1/6]" not in out


def test_quiet_and_json_cannot_be_combined(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--quiet", "--json"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["demo", "--sede", "3"], "(did you mean --seed?)"),
        (["demo", "--quite"], "(did you mean --quiet?)"),
        (["status", "ckpt", "--app_id", "a"], "(did you mean --app-id?)"),
        (["emulator", "create", "e.db", "--retension-minutes", "5"], "--retention-minutes?"),
        (["stauts", "ckpt"], "(did you mean status?)"),
        (["--verison"], "(did you mean --version?)"),
    ],
    ids=[
        "a demo flag",
        "a mode flag",
        "underscore for dash",
        "a nested verb's flag",
        "a verb",
        "a flag before the verb",
    ],
)
def test_a_mistyped_name_exits_2_suggesting_the_closest(
    argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert suggestion in capsys.readouterr().err


def test_a_name_close_to_nothing_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--xyzzy"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --xyzzy" in err
    assert "did you mean" not in err


def all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += all_parsers(sub)
    return found


def test_every_help_names_each_option_default() -> None:
    for parser in all_parsers(build_parser()):
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if not action.option_strings or action.default in (None, False, argparse.SUPPRESS):
                continue
            shown = f"(default: {action.default})" in text or "default" in (action.help or "")
            assert shown, f"{parser.prog} {action.option_strings[0]}: no default in --help"
    demo = " ".join(all_parsers(build_parser())[0].format_help().split())
    assert "mssql-cdc" in demo


def test_plan_help_lists_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 action none, 10 resnapshot, 11 blocked; 2 an invalid argument" in text
    assert "--interval-days INTERVAL_DAYS resnapshot_interval_days" in text
    assert "(default: 7.0)" in text
