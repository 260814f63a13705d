"""The library's bookkeeping reads of a path facts table run no Spark job and answer what the
same reads through Spark answer (the oracle: each read again with the in-process path cut)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.facts import keys as facts_keys
from mssql_cdc.facts import rows as facts
from mssql_cdc.facts import snapshot_family
from mssql_cdc.facts.snapshot_family import now_naive
from mssql_cdc.silver import facts_view
from mssql_cdc.silver import table_state as table_state_module
from mssql_cdc.sink import state as sink_state
from mssql_cdc.tables import refs as tables
from mssql_cdc.tables import writes as table_writes
from mssql_cdc.tables.commit_lookup import find_commits
from mssql_cdc.tables.reference import TableOutOfReach

S = "0x0000002A000001F00003"
M = "0x0000002B000000100001"
T = TypeVar("T")


def spark_jobs(spark: SparkSession, read: Callable[[], T]) -> tuple[T, int]:
    """What `read` returns and how many Spark jobs it ran."""
    context = spark.sparkContext
    group = f"bookkeeping-{id(read)}"
    context.setJobGroup(group, "a bookkeeping read")
    try:
        value = read()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return value, len(context.statusTracker().getJobIdsForGroup(group))


@pytest.fixture
def facts_path(spark: SparkSession, table_dir: Path) -> str:
    path = str(table_dir / "facts")
    tables.ensure_table(spark, path, "facts")
    now = now_naive().replace(microsecond=123_000)
    batch = [
        facts.FactsRow(
            app_id="orders",
            generation=0,
            batch_id=b,
            end_lsn=M,
            retention_headroom_hours=10.0 + b,
            source_max_commit_ts=now - timedelta(minutes=b),
            written_at=now - timedelta(hours=b),
        )
        for b in (1, 2)
    ]
    event = facts.FactsRow(
        app_id="orders",
        generation=0,
        batch_id=1,
        event="schema_change",
        min_lsn=M,
        detail='{"ddl":"x"}',
        target=path,
    )
    facts.append_facts(
        spark,
        path,
        [*batch, event],
        key=facts_keys.facts_key("orders", 0, 2),
        user_metadata=facts.batch_facts_metadata(app_id="orders", generation=0, batch_id=2),
    )
    opened = facts.FactsRow(
        app_id="orders.g1",
        generation=1,
        event="snapshot_open",
        min_lsn=S,
        min_commit_ts=now,
        detail=json.dumps({"mode": "chunked", "kind": "resnapshot", "generation": 1}),
        target=path,
        written_at=now,
        lost_from_ts=now - timedelta(days=3),
    )
    done = facts.FactsRow(
        app_id="orders.g1",
        generation=1,
        event="resnapshot",
        rows=12,
        max_lsn=S,
        max_commit_ts=now,
        duration_ms=900,
        target=path,
        written_at=now,
    )
    facts.append_facts(spark, path, [opened, done], key=facts_keys.events_key("orders", 1))
    return path


def reads(spark: SparkSession, path: str) -> dict[str, Callable[[], Any]]:
    event = facts.FactsRow(
        app_id="orders", generation=0, batch_id=5, event="schema_change", min_lsn=M
    )
    return {
        "snapshot facts": lambda: (
            snapshot_family.snapshot_facts(spark, path, "orders", checked=True).rows
        ),
        "newest batch": lambda: snapshot_family.newest_batch(spark, path, "orders"),
        "batch samples": lambda: snapshot_family.batch_samples(spark, path, "orders"),
        "sink has batches": lambda: snapshot_family.sink_has_batches(spark, path, "orders"),
        "last batch": lambda: facts.last_batch(spark, path, "orders"),
        "events already recorded": lambda: sink_state.already_recorded(
            spark, tables.table_ref(path), "orders", 5, [event]
        ),
        "silver's snapshot facts": lambda: facts_view.read_snapshot_facts(spark, path, path),
        "txn version": lambda: table_writes.txn_version(spark, path, "orders#events"),
        "commits": lambda: find_commits(spark, path, lambda m: m.get("facts") == "batch"),
        "table state": lambda: table_state_module.table_state(spark, tables.table_ref(path)),
    }


def test_bookkeeping_reads_of_a_path_table_run_no_spark_job(
    spark: SparkSession, facts_path: str
) -> None:
    for name, read in reads(spark, facts_path).items():
        _, jobs = spark_jobs(spark, read)
        assert jobs == 0, name


def test_bookkeeping_reads_in_process_answer_as_the_reads_through_spark(
    spark: SparkSession, facts_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_process = {name: read() for name, read in reads(spark, facts_path).items()}

    def out_of_reach(*_: object, **__: object) -> Any:
        raise TableOutOfReach("as for a catalog name")

    for module in (snapshot_family, facts, sink_state, facts_view):
        monkeypatch.setattr(module, "read_rows", out_of_reach)
    monkeypatch.setattr(table_state_module, "newest_version", out_of_reach)
    from mssql_cdc.tables import commit_lookup

    monkeypatch.setattr(commit_lookup, "logged_history", out_of_reach)
    through_spark = {name: read() for name, read in reads(spark, facts_path).items()}

    assert in_process["snapshot facts"]  # the oracle compares something
    assert in_process["events already recorded"] == {("schema_change", M, '{"ddl":"x"}')}
    assert in_process["last batch"] == (2, M)
    for name, value in through_spark.items():
        if name == "snapshot facts":
            key = lambda r: (r["event"], r["app_id"])  # noqa: E731 - a sort key
            assert sorted(in_process[name], key=key) == sorted(value, key=key), name
        elif name == "batch samples":
            assert sorted(in_process[name], key=repr) == sorted(value, key=repr), name
        else:
            assert in_process[name] == value, name
