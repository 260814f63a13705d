"""B3, native half: the cost of finding a checkpoint's last processed offset.

The pre-flight of to_delta(on_data_loss="resnapshot") reads the last committed batch of the
Spark checkpoint before the query starts. We time `checkpoint.last_processed_offset` on
checkpoints of 1, 100 and 10,000 committed batches laid out as Spark 4.2 writes them (offsets,
commits and their .crc siblings) against the least any reader must do: one `os.listdir` of the
same commits folder. The target is a cost that stays a small multiple of that listing, i.e.
grows no faster than the folder itself.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from mssql_cdc import checkpoint  # noqa: E402
from report import Figure  # noqa: E402

SIZES = (1, 100, 10_000)
META = '{"batchWatermarkMs":0,"batchTimestampMs":1795950779067,"conf":{}}'


def make_checkpoint(root: Path, batches: int) -> Path:
    ckpt = root / f"ckpt-{batches}"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir(parents=True)
    (ckpt / "metadata").write_text('{"id":"bench"}')
    for n in range(batches):
        line3 = json.dumps({"lsn": f"0x{n + 1:020X}", "commit_ts": "2026-09-28T14:03:12.117"})
        (ckpt / "offsets" / str(n)).write_text(f"v1\n{META}\n{line3}")
        (ckpt / "offsets" / f".{n}.crc").write_bytes(b"crc")
        (ckpt / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (ckpt / "commits" / f".{n}.crc").write_bytes(b"crc")
    return ckpt


def median_micros(call: Callable[[], object], *, budget_s: float = 1.0) -> float:
    call()  # warm the page cache and the import
    samples: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(samples) < 5 or (time.perf_counter() < deadline and len(samples) < 2000):
        t0 = time.perf_counter()
        call()
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples)


def run() -> Figure:
    ours: dict[int, float] = {}
    listing: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="b3-") as tmp:
        for size in SIZES:
            ckpt = make_checkpoint(Path(tmp), size)
            last = checkpoint.last_processed_offset(ckpt)
            if last is None or last.batch_id != size - 1:
                raise RuntimeError(f"B3: expected batch {size - 1} as the last, got {last}")
            commits = str(ckpt / "commits")
            ours[size] = median_micros(lambda c=ckpt: checkpoint.last_processed_offset(c))
            listing[size] = median_micros(lambda d=commits: os.listdir(d))
    notes = [
        f"{size:>6,} batches: last_processed_offset {ours[size]:,.1f} us, os.listdir "
        f"{listing[size]:,.1f} us, ratio {ours[size] / listing[size]:.2f}"
        for size in SIZES
    ]
    growth = ours[SIZES[-1]] / ours[SIZES[0]]
    notes.append(
        f"growth from 1 to 10,000 batches: {growth:,.1f}x for last_processed_offset, "
        f"{listing[SIZES[-1]] / listing[SIZES[0]]:,.1f}x for the listing alone"
    )
    notes.append(
        "Spark keeps about 100 batches in the logs by default (minBatchesToRetain), so the "
        "10,000-batch case is a bound, not the usual size. Lower is better for these times."
    )
    return Figure(
        key="B3",
        title="pre-flight: last processed offset of a 10,000-batch checkpoint",
        unit="us",
        ours=ours[SIZES[-1]],
        baseline=listing[SIZES[-1]],
        baseline_name="os.listdir of commits/",
        target="ratio <= 2 (lower is better), growing no faster than the listing",
        notes=notes,
    )


if __name__ == "__main__":
    figure = run()
    print(figure.summary())
    for note in figure.notes:
        print(" ", note)
