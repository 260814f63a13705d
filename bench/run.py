"""make bench: run the benchmarks side by side with their baselines, write REPORT.md.

Each benchmark module exposes `run() -> Figure` (see bench/report.py) and is listed in
BENCHMARKS. `python bench/run.py` runs them all; `python bench/run.py b4_snapshot ...` (or
`make bench ONLY="b4_snapshot"`) runs only those and keeps the others' stored figures.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

from report import Figure, load_results, save_result, write_report  # noqa: E402

BENCHMARKS: list[str] = [
    "b1_source",
    "b1_stream",
    "b1_catchup",
    "b2_emulator_read",
    "b3_preflight",
    "b4_snapshot",
    "b5_recovery",
    "b6_silver",
    "b7_tds_read",
    "b8_reconcile",
    "s1_fanout",
]


def main(argv: list[str]) -> int:
    chosen = argv or BENCHMARKS
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        print(f"bench: unknown benchmark(s) {', '.join(unknown)}; choose from {BENCHMARKS}")
        return 2
    for name in chosen:
        module = importlib.import_module(name)
        print(f"bench: running {name}", flush=True)
        figure: Figure = module.run().stamped()
        print(figure.summary(), flush=True)
        save_result(RESULTS, name, figure)
    figures = load_results(RESULTS, BENCHMARKS)
    write_report(HERE / "REPORT.md", figures)
    print(f"bench: wrote {HERE / 'REPORT.md'} ({len(figures)} figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
