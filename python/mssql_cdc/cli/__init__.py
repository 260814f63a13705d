"""The `mssql-cdc` console script: one module per verb, each with add_parser() and run()."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mssql_cdc.cli import demo, status

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mssql-cdc", description="SQL Server CDC into Delta Lake on Spark."
    )
    subparsers = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    status.add_parser(subparsers)
    demo.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb and return its exit code (argparse exits 2 on bad usage by itself)."""
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
