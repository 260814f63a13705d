"""The CLI's argparse parser class: defaults in every `--help`, and "did you mean" suggestions.

argparse of Python 3.11 suggests nothing for a mistyped option or verb; `Parser` adds the
closest known names (core/names.py) to its usage errors, which still exit 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from mssql_cdc.core import did_you_mean

__all__ = ["Parser", "add_verb", "parse"]

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help that ends each option's text with its default, unless the text gives it already or
    the default is no value (None, False, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            default in (None, False, argparse.SUPPRESS)
            or default == []
            or "default" in text.lower()
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help shows defaults and whose usage errors suggest names."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        # A verb's parser returns first, so the innermost parser is recorded, not the top one.
        if not hasattr(parsed, "_parser"):
            parsed._parser = self
        return parsed, extras

    def option_names(self) -> list[str]:
        return [name for action in self._actions for name in action.option_strings]

    def error(self, message: str) -> NoReturn:
        match = _INVALID_CHOICE.search(message)
        if match:
            choices = re.findall(r"'([^']*)'", match.group(2))
            message += did_you_mean(match.group(1), choices)
        super().error(message)


def parse(parser: Parser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse `argv`; an unknown option exits 2 with its verb's usage and the closest options."""
    given = list(sys.argv[1:] if argv is None else argv)
    if (
        given
        and given[0].startswith("-")
        and given[0].split("=", 1)[0] not in parser.option_names()
    ):
        # Before the verb: argparse would only say the verb is missing.
        known = parser.option_names()
        parser.error(f"unrecognized arguments: {given[0]}{did_you_mean(given[0], known)}")
    args, extras = parser.parse_known_args(argv)
    if extras:
        innermost: Parser = getattr(args, "_parser", parser)
        known = innermost.option_names()
        hints = "".join(
            did_you_mean(extra.split("=", 1)[0], known) for extra in extras if extra.startswith("-")
        )
        innermost.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
    return args


def add_verb(
    subparsers: Any,  # argparse's subparsers action has no public type
    name: str,
    doc: str | None,
    *,
    summary: str,
    epilog: str,
    run: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """A verb's parser: `summary` in the list of verbs, the first line of the verb module's
    `doc` atop its --help, its exit codes in `epilog`, and `run` called with the parsed flags."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=summary,
        description=doc.splitlines()[0] if doc else None,
        epilog=epilog,
    )
    parser.set_defaults(run=run)
    return parser
