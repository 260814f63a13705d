"""One story streamed through each backend: the emulator in process, and the same emulator
served over TDS to mssql-python and to pymssql (issue 15, "End to end").

The story: a bootstrap snapshot, changes over restarts (exactly once), a restart with nothing
new, changes the cleanup job purges before the stream reads them (the guard and a resnapshot
recovery), and changes after the recovery. Each backend's bronze, facts and state file must
equal the in-process run's; the in-process run itself is checked against the source table by
the rebuild oracle, so the comparison is not only of the library with itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.spark.support.backends import BACKENDS, Backend
from tests.spark.support.recovery_support import Orders

# Columns that hold wall-clock time, this run's paths or byte counts that differ by driver.
_FACTS_VARYING = {
    "started_at",
    "duration_ms",
    "read_seconds",
    "read_mb",
    "ingestion_lag_seconds",
    "capture_lag_seconds",
    "written_at",
    "target",
    "detail",
}


def _story(spark: SparkSession, root: Path, backend: Backend) -> dict[str, Any]:
    o = Orders(spark, root, backend=backend)
    o.orders(3)
    o.run()  # bootstrap: the snapshot, then the stream
    o.commit(("update", 1, "paid"), ("delete", 2, None))
    o.commit(("insert", 7, "new"))
    o.run()
    o.run()  # nothing new: exactly once over a restart
    o.commit(("update", 7, "shipped"))
    o.cleanup_past_everything()  # the update is purged before the stream reads it
    o.commit(("insert", 8, "late"))
    o.run()  # the guard finds the loss, the recovery re-snapshots
    o.commit(("delete", 1, None))
    o.run()
    assert o.rebuilt() == o.source(), f"{backend}: the rebuild differs from the source"
    bronze = sorted(
        (tuple(sorted(r.items())) for r in o.bronze()),
        key=repr,
    )
    facts = sorted(
        (
            tuple(sorted((k, v) for k, v in r.items() if k not in _FACTS_VARYING))
            for r in o.facts_rows()
        ),
        key=repr,
    )
    state = o.state()
    assert state is not None
    return {"bronze": bronze, "facts": facts, "state": state, "events": o.events("resnapshot")}


_in_process: dict[str, Any] = {}


def _without_time(state: dict[str, Any]) -> dict[str, Any]:
    """The state file's fields but the wall-clock time it was written at."""
    return {k: v for k, v in state.items() if k != "at"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_streams_the_same_bronze_facts_and_state(
    spark: SparkSession, tmp_path: Path, backend: Backend
) -> None:
    if not _in_process:
        _in_process.update(_story(spark, tmp_path / "in-process", "emulator"))
        assert len(_in_process["events"]) == 1, "the story must recover once"
    if backend == "emulator":
        return
    seen = _story(spark, tmp_path / backend, backend)
    assert seen["bronze"] == _in_process["bronze"]
    differing = {
        k
        for ours, theirs in zip(seen["facts"], _in_process["facts"], strict=True)
        for (k, v), (_, w) in zip(ours, theirs, strict=True)
        if v != w
    }
    assert not differing, f"facts columns differ over {backend}: {sorted(differing)}"
    assert _without_time(seen["state"]) == _without_time(_in_process["state"])
