"""Repairing on purpose (issue 20): `reconcile(repair=True)` and `mssql-cdc reconcile --repair`
re-snapshot only the key tiles that differ, into the stream's next generation.

The oracle is the emulator's own table (read directly), bronze rebuilt in plain Python by the
rebuild rule, and the facts rows as a user reads them.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from mssql_cdc import ConfigError, apply_changes, reconcile
from mssql_cdc.cli import main
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.recovery_support import Orders


def _edit_bronze(spark: SparkSession, orders: Orders) -> None:
    """Bronze edited behind the library's back: key 17 lost, key 250 changed, and key 5's
    snapshot row copied as key 6 (a key the source lacks, in the first story). CDC sees none."""
    bronze = orders.target
    spark.sql(f"DELETE FROM delta.`{bronze}` WHERE order_id = 17")
    spark.sql(f"UPDATE delta.`{bronze}` SET status = 'wrong' WHERE order_id = 250")
    ghost = spark.read.format("delta").load(bronze).where("order_id = 5 AND _operation = 0")
    ghost.withColumn("order_id", F.lit(6)).write.format("delta").mode("append").save(bronze)


def _tile_of(tiles: list[list[Any]], key: int) -> int:
    """The index of the tile `[lo, hi)` holding `key` (None an open end): the oracle's own."""
    for i, (lo, hi) in enumerate(tiles):
        if (lo is None or lo <= key) and (hi is None or key < hi):
            return i
    raise AssertionError(f"no tile holds {key}: {tiles}")


def _snapshot_facts(orders: Orders, event: str, generation: int) -> list[dict[str, Any]]:
    return [r for r in orders.events(event) if r["generation"] == generation]


def test_a_repair_reads_only_the_differing_tiles_and_the_next_generation_is_right(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Immediate: a commit during the reconcile is corrected only once captured; on the
    # realistic profile it is a difference until capture catches up (docs/reconcile.md, Limits).
    orders = Orders(spark, tmp_path, app_id="repair-v1", profile="immediate")
    orders.commit(*[("insert", k, "new") for k in range(400)])
    orders.commit(("update", 5, "paid"), ("delete", 6, None))
    orders.run()
    silver, control = str(tmp_path / "silver"), str(tmp_path / "control")
    apply_changes(spark, orders.target, silver, keys=["order_id"], control_table=control,
                  facts_table=orders.facts)  # fmt: skip
    _edit_bronze(spark, orders)
    args: dict[str, Any] = {"app_id": orders.app_id, "facts_table": orders.facts}
    repair = {**args, "repair": True, "checkpoint": str(orders.checkpoint)}

    # Silver follows bronze: repairing it is refused before anything is written.
    facts_before = len(orders.facts_rows())
    with pytest.raises(ConfigError, match="against='bronze' and repair=True"):
        reconcile(spark, orders.options(), silver, control_table=control, tiles=8, **repair)
    assert len(orders.facts_rows()) == facts_before

    # Changes land after the stream stopped, in tiles the repair carries: the new generation,
    # opened at bronze's own position, streams them; a workload keeps committing meanwhile.
    orders.commit(("update", 120, "before-repair"), ("delete", 130, None), ("insert", 450, "x"))
    stop = threading.Event()
    failed: list[BaseException] = []

    def workload() -> None:
        n = 0
        try:
            while not stop.is_set() and n < 200:
                orders.commit(("insert", 1000 + n, "late"), ("update", 200 + n % 40, f"m{n}"))
                n += 1
                stop.wait(0.05)
        except Exception as exc:  # noqa: BLE001 - the test asserts there was none, below
            failed.append(exc)

    writer = threading.Thread(target=workload)
    writer.start()
    try:
        found = reconcile(spark, orders.options(), orders.target, against="bronze", tiles=8,
                          **repair)  # fmt: skip
    finally:
        stop.set()
        writer.join()
    assert failed == []
    assert not found.equal
    assert (found.missing, found.extra, found.different) == ((17,), (6,), (250,))
    assert (found.differing_tiles, found.repaired_tiles, found.tiles) == (2, 2, 8)

    # One new generation, opened at bronze's position, as a requested chunked snapshot.
    [opened] = _snapshot_facts(orders, "snapshot_open", 1)
    detail = json.loads(opened["detail"])
    assert (detail["mode"], detail["requested"]) == ("chunked", True)
    assert int(opened["max_lsn"], 16) == int(found.lsn, 16) + 1  # just above bronze's position
    tiles = detail["repair"]["chunks"]
    edited = sorted({_tile_of(tiles, k) for k in (6, 17, 250)})
    assert detail["repair"]["differing"] == edited
    facts = _snapshot_facts(orders, "snapshot_chunk", 1)
    chunks = {json.loads(r["detail"])["chunk"]: json.loads(r["detail"]) for r in facts}
    assert sorted(chunks) == list(range(len(tiles))) == list(range(8))
    read = sorted(i for i, d in chunks.items() if not d.get("carried"))
    assert read == edited  # SQL Server was asked for the edited tiles only
    [done] = _snapshot_facts(orders, "resnapshot", 1)
    completion = json.loads(done["detail"])
    assert (completion["read"], completion["carried"], completion["chunks"]) == (2, 6, 8)
    assert len(edited) == 2

    # The stream restarted runs on in the new generation; silver rebuilds from it.
    query = orders.run()
    assert query.name == "repair-v1.g1"
    apply_changes(spark, orders.target, silver, keys=["order_id"], control_table=control,
                  facts_table=orders.facts)  # fmt: skip
    source = orders.source()
    assert orders.rebuilt() == source
    silver_rows = spark.read.format("delta").load(silver).collect()
    rows = sorted((r["order_id"], r["status"]) for r in silver_rows)
    assert rows == source
    assert {(120, "before-repair"), (450, "x"), (17, "new"), (250, "new")} <= set(rows)
    assert all(k not in (6, 130) for k, _ in rows)

    on_silver = reconcile(spark, orders.options(), silver, control_table=control, tiles=8)
    assert on_silver.equal, on_silver
    # An equal copy repairs nothing: no snapshot is opened.
    again = reconcile(spark, orders.options(), orders.target, against="bronze", tiles=8, **repair)
    assert again.equal, again
    assert again.repaired_tiles == 0
    assert len(orders.events("snapshot_open")) == 2

    # The CLI takes --repair; an equal bronze exits 0.
    options = tmp_path / "options.json"
    options.write_text(json.dumps(orders.options()))
    cli = ["reconcile", "--options", str(options), "--target", orders.target, "--against"]
    cli += ["bronze", "--repair", "--app-id", orders.app_id, "--checkpoint", str(orders.checkpoint)]
    assert main([*cli, "--facts", orders.facts, "--tiles", "8"]) == 0
    assert "equal" in capsys.readouterr().out


def test_a_repair_a_crash_interrupted_is_finished_by_the_rerun_once(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    orders = Orders(spark, tmp_path, app_id="crash-v1")
    orders.commit(*[("insert", k, "new") for k in range(400)])
    orders.run()
    _edit_bronze(spark, orders)
    repair = {
        "app_id": orders.app_id,
        "facts_table": orders.facts,
        "repair": True,
        "checkpoint": str(orders.checkpoint),
    }
    with failpoints({"backfill.after_wave_append": "raise"}), pytest.raises(InjectedFault):
        reconcile(spark, orders.options(), orders.target, against="bronze", tiles=8, **repair)
    orders.commit(("update", 300, "between"))

    # The rerun, through the CLI, finishes the same repair: exit 1, a difference was repaired.
    options = tmp_path / "options.json"
    options.write_text(json.dumps(orders.options()))
    cli = ["reconcile", "--options", str(options), "--target", orders.target, "--against"]
    cli += ["bronze", "--repair", "--app-id", orders.app_id, "--checkpoint", str(orders.checkpoint)]
    assert main([*cli, "--facts", orders.facts, "--tiles", "8", "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["repaired_tiles"] == 2
    assert len(_snapshot_facts(orders, "snapshot_open", 1)) == 1
    assert len(_snapshot_facts(orders, "resnapshot", 1)) == 1
    [opened] = _snapshot_facts(orders, "snapshot_open", 1)
    s = opened["max_lsn"]
    snapshot_rows = [r for r in orders.bronze() if r["_operation"] == 0 and r["_snapshot"] == s]
    keys = [r["order_id"] for r in snapshot_rows]
    assert len(keys) == len(set(keys))  # no key written twice
    assert sorted(keys) == list(range(400))  # every key once, 17 restored

    orders.run()
    assert orders.rebuilt() == orders.source()
    assert (300, "between") in orders.source()
