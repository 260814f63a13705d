"""The `mssql-cdc` console script: one argparse parser, one module per group of verbs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mssql_cdc.cli import emulator

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mssql-cdc",
        description="Stream SQL Server CDC into Delta Lake; tools for the CDC emulator.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    emulator.register(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; 0 on success, 1 on an error it reports, 2 on a usage error."""
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
