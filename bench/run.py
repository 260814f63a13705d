"""make bench: run every benchmark in bench/ side by side with its baseline, write REPORT.md.

Each benchmark module exposes `run() -> Figure` (see bench/report.py) and is listed in
BENCHMARKS.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import Figure, write_report  # noqa: E402

BENCHMARKS: list[str] = ["b1_source", "b2_emulator_read", "b3_preflight"]


def main() -> int:
    figures: list[Figure] = []
    for name in BENCHMARKS:
        module = importlib.import_module(name)
        print(f"bench: running {name}", flush=True)
        figure: Figure = module.run()
        print(figure.summary(), flush=True)
        figures.append(figure)
    write_report(HERE / "REPORT.md", figures)
    print(f"bench: wrote {HERE / 'REPORT.md'} ({len(figures)} figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
