"""The sink's replay story, shared by the classic and the Spark Connect tiers.

Batches are hand-built (`sink_batches`); bronze's commits are read from its Delta log files and
every expected value is typed out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.sink.writer import delta_sink
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.sink_batches import (
    bronze_rows,
    change,
    commit_metadata,
    facts_rows,
    latest_version,
    lsn,
    reading,
)


def with_batch(rows: list[tuple[Any, ...]], batch_id: int) -> list[tuple[Any, ...]]:
    return [(*row, batch_id) for row in rows]


def batch_rows(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((r for r in facts if r["event"] is None), key=lambda r: r["batch_id"])


def facts_commits(facts: str) -> list[tuple[int, str]]:
    """(batch id, engineInfo) of each micro-batch facts commit, from the log's commit files."""
    found = []
    for path in sorted(Path(facts, "_delta_log").glob("*.json")):
        for line in path.read_text().splitlines():
            info = json.loads(line).get("commitInfo") if line else None
            marker = json.loads(info.get("userMetadata") or "{}") if info else {}
            if marker.get("facts") == "batch":
                found.append((marker["batch_id"], str(info.get("engineInfo", ""))))
    return found


def check_a_replayed_batch_commits_once(spark: SparkSession, bronze: str, facts: str) -> None:
    """A batch offered twice commits once; a crash between bronze's append and the facts
    commit is finished by the replay of a new sink, which appends nothing to bronze again."""
    first = [change(1, 2, 1, "a"), change(2, 2, 2, "b"), change(2, 3, 1, "a", 1)]
    first.append(change(2, 4, 1, "a2", 2))
    second = [change(3, 1, 2, "b"), change(4, 2, 3, "c")]
    sink = delta_sink(bronze, "orders", facts)

    sink(reading(spark, first), 0)
    sink(reading(spark, first), 0)  # the same batch offered twice
    assert bronze_rows(spark, bronze) == sorted(with_batch(first, 0))
    after_first = latest_version(spark, bronze)
    # the commit names the batch; its counts are in the facts row (decision 1350)
    assert commit_metadata(spark, bronze, after_first) == {
        "batch_id": 0,
        "app_id": "orders",
        "generation": 0,
    }

    # the sink fails the batch with an Exception Py4J can answer, caused by the fault
    with (
        failpoints({"sink.after_target_write": "raise"}),
        pytest.raises(RuntimeError, match="interrupted by InjectedFault") as raised,
    ):
        sink(reading(spark, second), 1)
    assert isinstance(raised.value.__cause__, InjectedFault)
    crashed = latest_version(spark, bronze)
    assert crashed == after_first + 1  # bronze took batch 1, the facts did not
    assert [r["batch_id"] for r in batch_rows(facts_rows(spark, facts))] == [0]

    restarted = delta_sink(bronze, "orders", facts)  # Spark replays batch 1 after a restart
    restarted(reading(spark, second), 1)

    assert latest_version(spark, bronze) == crashed  # no new bronze version on replay
    assert bronze_rows(spark, bronze) == sorted(with_batch(first, 0) + with_batch(second, 1))
    counted = [
        tuple(r[c] for c in ("batch_id", "rows", "min_lsn", "max_lsn", "inserts", "updates"))
        + tuple(r[c] for c in ("deletes", "app_id", "generation", "target"))
        for r in batch_rows(facts_rows(spark, facts))
    ]
    assert counted == [
        (0, 4, lsn(1), lsn(2), 2, 1, 0, "orders", 0, bronze),
        (1, 2, lsn(3), lsn(4), 1, 0, 1, "orders", 0, bronze),
    ]
    # one facts commit per batch, committed by deltalake in the driver (decision 1000)
    assert [batch for batch, _ in facts_commits(facts)] == [0, 1]
    assert all(engine.startswith("delta-rs") for _, engine in facts_commits(facts))
