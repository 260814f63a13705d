"""The `mssql-cdc` console script: one argparse parser, one module per verb or group of verbs."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mssql_cdc import __version__
from mssql_cdc.cli import demo, emulator, gc, heartbeat, plan, reconcile, resnapshot, run, status
from mssql_cdc.cli.output import mode_of, showing
from mssql_cdc.cli.parser import Parser, parse

__all__ = ["main"]


def build_parser() -> Parser:
    parser = Parser(
        prog="mssql-cdc",
        description="Stream SQL Server CDC into Delta Lake on Spark; tools for the CDC emulator.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    status.add_parser(verbs)
    plan.add_parser(verbs)
    resnapshot.add_parser(verbs)
    reconcile.add_parser(verbs)
    gc.add_parser(verbs)
    run.add_parser(verbs)
    heartbeat.add_parser(verbs)
    emulator.register(verbs)
    demo.add_parser(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb: 0 on success, 1 on an error it reports, 2 on a usage error or bad input."""
    args = parse(build_parser(), argv)
    with showing(mode_of(args), sys.stderr):
        code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
