"""`mssql-cdc demo`: the main job on the embedded emulator, from loss to recovery."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mssql_cdc.errors import ConfigError

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="stream an emulated SQL Server into Delta, lose data to CDC cleanup, recover",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument(
        "--out",
        default="demo-output",
        help="folder for every file it makes, emptied first if an earlier run made it",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="empty --out even when the demo did not make it (never the filesystem root, "
        "the home or working folder, or a parent of one)",
    )
    parser.add_argument("--seed", type=int, default=18, help="seed of the workload")
    parser.add_argument(
        "--backend",
        choices=["emulator", "mssql-python", "pymssql"],
        default="emulator",
        help="how the stream reads the emulator: in process (default), or over TDS through the "
        "mssql-python or pymssql driver, as it reads a real SQL Server",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when bronze's latest image equals the source table after the recovery, 1 when
    it does not, 2 when --out is refused (nothing deleted)."""
    from mssql_cdc.cli.demo_job import run_demo

    try:
        summary = run_demo(args.out, seed=args.seed, force=args.force, backend=args.backend)
    except ConfigError as exc:
        print(f"mssql-cdc demo: {exc}", file=sys.stderr)
        return 2
    return 0 if summary.equal and summary.generation >= 1 else 1
