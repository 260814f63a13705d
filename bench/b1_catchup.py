"""B1-catch-up: a stream that has fallen behind reads 1,000,000 changes in one micro-batch.

The same emulator file as B1-steady (1,000 commits of 1,000 inserts), streamed with the
default options (no `maxCommitsPerBatch`, `numPartitions` auto: 2 on local[2]) through
`stream(spark, options).to_delta(bronze, facts_table=...)` with trigger availableNow: one
micro-batch of 1,000,000 rows. Side by side, alternating, the plain read and append
(`b1_plain`): the same range read through the source's partition reader in plain batch form
and appended with a plain Delta append. A batch this big shows the costs that grow with the
rows (a second pass over them, before decision 1350), where B1-steady shows the fixed costs
per batch.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import b1_jobs  # noqa: E402
import b1_plain  # noqa: E402
import b1_stream  # noqa: E402
from report import Figure  # noqa: E402

ROWS = 1_000_000
ROUNDS = 2
TARGET = 0.85  # issue 37: one pass, catch-up


def run(rows: int = ROWS, rounds: int = ROUNDS) -> Figure:
    from mssql_cdc.spark import local_session

    spark = local_session("mssql-cdc-bench-b1-catchup")
    ours_s: list[float] = []
    plain_s: list[float] = []
    floors: list[tuple[float, float, float]] = []
    runs: list[b1_jobs.RunJobs] = []
    try:
        with tempfile.TemporaryDirectory(prefix="b1c-") as tmp:
            path = Path(tmp) / "e.db"
            b1_stream.build(path, rows)
            options = b1_stream.emulator_options(path)
            b1_stream.warm_up(spark, Path(tmp))
            offsets = b1_plain.plan_offsets(options, 1)
            for n in range(rounds):
                seconds, _query, counted, _used = b1_stream.measure_ours(
                    spark, options, Path(tmp) / f"ours{n}", rows
                )
                ours_s.append(seconds)
                seconds, plain_jobs = b1_stream.measure_plain(
                    spark, options, offsets, str(Path(tmp) / f"plain{n}")
                )
                plain_s.append(seconds)
                floors.append(
                    b1_plain.run_spec_floor(spark, options, offsets, str(Path(tmp) / f"floor{n}"))
                )
                runs.append(replace(counted, plain_total=plain_jobs))
                print(
                    f"B1-catch-up round {n}: ours {ours_s[-1]:.1f} s, plain read + append "
                    f"{plain_s[-1]:.1f} s, spec floor {floors[-1][0]:.1f} s, jobs "
                    f"{runs[-1].per_batch()}",
                    flush=True,
                )
    finally:
        spark.stop()
    ours = statistics.median(ours_s)
    plain = statistics.median(plain_s)
    short = b1_stream.shortfall(plain, ours, TARGET)
    return Figure(
        key="B1-catch-up",
        title=f"catch-up: {rows:,} emulator change rows in one micro-batch through to_delta "
        "into bronze, with facts",
        unit="rows/s",
        ours=rows / ours,
        baseline=rows / plain,
        baseline_name="plain read and append of the same range (b1_plain)",
        target=f"ratio >= {TARGET} (higher is better)",
        notes=[
            f"default options (one micro-batch, numPartitions auto = 2, availableNow), bronze "
            f"and facts on local disk; median of {rounds} alternating rounds on the shared "
            f"local[2] session, after an untimed warm-up of both sides",
            *b1_stream.job_notes(runs, 1),
            f"ours, s per round (to_delta to termination, including query start-up, planning, "
            f"the emulator read, the table creation, the facts commit): "
            f"{[round(s, 1) for s in ours_s]}; the plain read and append, s per round "
            f"{[round(s, 1) for s in plain_s]}",
            *b1_plain.floor_notes(floors, plain, ours),
            *short,
        ],
        table=[
            "Where the time goes in the one trigger (every round; the sink's steps from its "
            "DEBUG phase records, the engine's from the progress):",
            "",
            *b1_jobs.where_the_time_goes(runs, skip_first=False),
        ],
    )


if __name__ == "__main__":
    import os

    b1_stream.show(
        run(int(os.environ.get("B1_ROWS", ROWS)), int(os.environ.get("B1_ROUNDS", ROUNDS)))
    )
