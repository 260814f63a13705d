"""snapshot="chunked" on a Spark Connect session: a bootstrap read in waves by `backfill()`
beside the running stream, then a capture-instance switch that loses unread changes and is
recovered by a chunked re-snapshot of the newer instance (docs/spark-connect.md).

Bronze's latest image, rebuilt in plain Python, equals the emulator's table at every step.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from tests.spark.support.chunked_support import (
    backfill,
    chunked_resnapshot_of_the_newer_instance,
    details,
    progress,
)
from tests.spark.support.recovery_support import Orders

CHUNKED = {"snapshot": "chunked"}


def test_a_chunked_bootstrap_and_an_instance_switch_recover_through_backfill(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path / "stream", app_id="waves-v1", extra={"numPartitions": "2"})
    orders.orders(8)
    orders.run(**CHUNKED)
    assert orders.bronze() == []  # the stream runs; the snapshot waits for backfill()
    [opened] = orders.events("snapshot_open")
    s = opened["min_lsn"]
    detail = json.loads(opened["detail"])
    assert (detail["mode"], detail["kind"], detail["generation"]) == ("chunked", "bootstrap", 0)
    assert detail["plan"] == {"kind": "int", "lo": 0, "hi": 7, "rows": 8}

    orders.commit(("update", 1, "paid"))
    first = backfill(orders, chunk_rows=2, max_waves=1)
    assert progress(first) == (2, 4, False, "running")
    assert first["snapshot"] == s
    orders.run(**CHUNKED)
    orders.commit(("delete", 6, None))
    assert progress(backfill(orders)) == (4, 4, True, "done")
    orders.run(**CHUNKED)
    chunks = sorted(details(orders, "snapshot_chunk"), key=lambda c: int(c["chunk"]))
    waves = [(c["wave"], c["lo"], c["hi"]) for c in chunks]
    assert waves == [(0, None, 2), (0, 2, 4), (1, 4, 6), (1, 6, 8)]
    assert [c["last"] for c in chunks] == [False, False, False, True]
    [done] = details(orders, "bootstrap")
    assert (done["_app_id"], done["_min_lsn"], done["_max_lsn"]) == ("waves-v1", s, s)
    assert done["_rows"] == sum(c["_rows"] for c in chunks) == 7  # key 6 deleted before wave 1
    assert orders.rebuilt() == orders.source()
    assert orders.source() == [(0, "new"), (1, "paid"), (2, "new"), (3, "new"), (4, "new"),
                               (5, "new"), (7, "new")]  # fmt: skip
    assert progress(backfill(orders)) == (4, 4, True, "done")  # a rerun appends nothing
    assert len(details(orders, "snapshot_chunk")) == 4

    newer = orders.switch_instance_over(("update", 0, "paid"), ("delete", 3, None))
    chunked_resnapshot_of_the_newer_instance(orders, newer)
    assert orders.rebuilt() == orders.source()
    assert orders.source() == [(0, "paid"), (1, "paid"), (2, "new"), (4, "new"), (5, "new"),
                               (7, "new"), (100, "after")]  # fmt: skip
