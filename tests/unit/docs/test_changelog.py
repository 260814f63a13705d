"""CHANGELOG.md: its compatibility promise names what the library has, and its version is the
package's.

The promise is policy, but the surfaces it lists are facts: every CLI verb the parser knows,
every table kind the library writes, the state file's name, and the version being released.
A verb or a kind added without a word in the promise fails here. The state file's rule (unknown
keys ignored, not written back) is tested where the file is read:
tests/unit/core/test_checkpoint.py,
test_an_unknown_key_in_the_state_file_is_ignored_and_not_written_back.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from mssql_cdc import __version__
from mssql_cdc.cli import build_parser
from mssql_cdc.core.checkpoint import STATE_FILE_NAME
from mssql_cdc.tables.definitions import KINDS

ROOT = Path(__file__).resolve().parents[3]
CHANGELOG = ROOT / "CHANGELOG.md"


def promise_row(what: str) -> str:
    """The promise table's row whose first cell starts with `**<what>**`."""
    [row] = [
        line for line in CHANGELOG.read_text().splitlines() if line.startswith(f"| **{what}**")
    ]
    return row


def test_the_promise_names_every_cli_verb_the_parser_knows() -> None:
    parser = build_parser()
    [verbs] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    named = set(re.findall(r"`([a-z]+)(?: \.\.\.)?`", promise_row("CLI verbs").split("|")[1]))
    assert named == set(verbs.choices)


def test_the_promise_names_every_table_kind_and_the_state_file() -> None:
    columns = promise_row("Table columns").split("|")[1]
    assert all(kind in columns for kind in KINDS)
    assert f"`{STATE_FILE_NAME}`" in promise_row("State files")


def test_the_version_being_released_is_the_packages() -> None:
    assert f"## Unreleased ({__version__})" in CHANGELOG.read_text()


def test_the_readme_links_the_changelog() -> None:
    assert "[CHANGELOG.md](CHANGELOG.md)" in (ROOT / "README.md").read_text()
