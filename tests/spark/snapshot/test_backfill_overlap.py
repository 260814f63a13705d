"""Overlapped backfill waves (`target_wave_seconds`): the next wave is read and appended while
the previous one's facts rows are written, with every chunk once in bronze and in the facts.
The oracle is the emulator's table by plain query and counts written here in plain Python."""

from __future__ import annotations

import importlib
import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.snapshot.backfill import backfill
from mssql_cdc.snapshot.chunked_open import open_chunked
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.snapshot_support import Source, make_source

APP = "orders-v1"
# The module, not the function the package's face exports under the same name.
backfill_module = importlib.import_module("mssql_cdc.snapshot.backfill")


@pytest.fixture
def source(spark: SparkSession, tmp_path: Path) -> Source:
    return make_source(spark, tmp_path)


def opened(source: Source) -> str:
    return open_chunked(
        source.spark, source.config(numPartitions="1"), source.target, kind="bootstrap",
        generation=0, app_id=APP, facts_table=source.facts,
    ).lsn  # fmt: skip


def run(source: Source, **kwargs: object) -> dict[str, object]:
    status = backfill(
        source.spark, source.config(numPartitions="1"), source.target, app_id=APP,
        facts_table=source.facts, target_wave_seconds=600, **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip
    return dict(status)


def snapshot_rows(source: Source, s: str) -> list[dict[str, Any]]:
    return [r for r in source.bronze() if r["_operation"] == 0 and r["_snapshot"] == s]


def wave_commits(source: Source) -> Counter[int]:
    """Bronze commits of backfill waves per wave, from the Delta history."""
    history = source.spark.sql(f"DESCRIBE HISTORY delta.`{source.target}`").collect()
    found: Counter[int] = Counter()
    for commit in history:
        metadata = json.loads(commit["userMetadata"] or "{}")
        if "backfill" in metadata:
            found[int(metadata["wave"])] += 1
    return found


def assert_each_row_once(source: Source, s: str) -> None:
    """Bronze's snapshot rows are the source's rows, one per key; every chunk has one facts row
    whose count is its rows in bronze; every wave was appended once."""
    rows = snapshot_rows(source, s)
    assert set(Counter(r["order_id"] for r in rows).values()) == {1}
    # No change after the open: the snapshot is the table as a plain query reads it now.
    assert {r["order_id"]: (r["status"], r["qty"]) for r in rows} == source.source_rows()
    chunk_facts = source.facts_rows("snapshot_chunk")
    chunks = Counter(json.loads(r["detail"])["chunk"] for r in chunk_facts)
    [plan] = source.facts_rows("snapshot_plan")
    assert chunks == Counter(range(len(json.loads(plan["detail"])["chunks"])))
    in_bronze = Counter(r["_chunk"] for r in rows)
    assert {json.loads(r["detail"])["chunk"]: r["rows"] for r in chunk_facts} == {
        c: in_bronze.get(c, 0) for c in chunks
    }
    waves = wave_commits(source)
    assert set(waves.values()) == {1}
    assert sorted(waves) == list(range(len(waves)))
    [event] = source.facts_rows("bootstrap")
    assert event["rows"] == len(rows)


def test_an_overlapped_backfill_appends_the_next_wave_while_the_last_one_s_facts_are_written(
    source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    source.insert(*range(1, 13))
    s = opened(source)
    spans: dict[str, dict[int, tuple[float, float, str]]] = {"append": {}, "finish": {}}
    append_wave, finish_wave = backfill_module.append_wave, backfill_module.finish_wave

    def timed_append(*args: Any, **kwargs: Any) -> Any:
        began = time.monotonic()
        appended = append_wave(*args, **kwargs)
        spans["append"][appended.wave] = (began, time.monotonic(), threading.current_thread().name)
        return appended

    def timed_finish(*args: Any, **kwargs: Any) -> Any:
        began, wave = time.monotonic(), args[4].wave  # args[4]: the appended wave
        rows = finish_wave(*args, **kwargs)
        spans["finish"][wave] = (began, time.monotonic(), threading.current_thread().name)
        return rows

    monkeypatch.setattr(backfill_module, "append_wave", timed_append)
    monkeypatch.setattr(backfill_module, "finish_wave", timed_finish)
    status = run(source, chunk_rows=2)
    assert status["state"] == "done"
    assert status["chunks_done"] == status["chunks_total"] == 6
    assert_each_row_once(source, s)
    appends, finishes = spans["append"], spans["finish"]
    assert sorted(appends) == sorted(finishes) == list(range(len(appends)))
    assert len(appends) >= 2
    for wave in range(1, len(appends)):
        # Wave w+1 started before wave w's facts were written, on the second thread.
        assert appends[wave][0] < finishes[wave - 1][1]
        assert appends[wave][2].startswith("mssql-cdc-wave")
        assert appends[wave][0] >= appends[wave - 1][1]  # appends stay in wave order


def test_a_crash_with_two_waves_in_flight_is_resumed_with_every_row_once(
    source: Source,
) -> None:
    source.insert(*range(1, 9))
    s = opened(source)
    with failpoints({"backfill.waves_in_flight": "raise"}), pytest.raises(InjectedFault):
        run(source, chunk_rows=2)
    assert wave_commits(source) == Counter({0: 1, 1: 1})  # both in bronze
    assert source.facts_rows("snapshot_chunk") == []  # neither has its facts rows
    status = run(source)
    assert status["state"] == "done"
    assert_each_row_once(source, s)
    assert source.rebuilt(s) == source.source_rows()


def test_max_waves_bounds_an_overlapped_call(source: Source) -> None:
    source.insert(*range(1, 9))
    s = opened(source)
    first = run(source, chunk_rows=2, max_waves=1)
    assert first["state"] == "running"
    assert first["chunks_done"] == 1
    assert wave_commits(source) == Counter({0: 1})  # no wave started past the limit
    assert run(source)["state"] == "done"
    assert_each_row_once(source, s)
