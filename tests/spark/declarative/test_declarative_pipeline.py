"""The example Spark Declarative Pipeline (examples/declarative-pipeline) run by
`spark-pipelines run` against the emulator: bootstrap, changes, a loss and the source's
re-snapshot inside the stream, and `--full-refresh bronze`. The copy's configuration lacks
the example's redaction pattern, so `mssql_cdc.register` in the definition file meets both of
the pipeline's refusals (`EXPLAIN` and `spark.conf.set`; decision 1425).

Each step is one `spark-pipelines run` in a process of its own (the CLI starts its own local
Spark Connect server); the tables are read back with deltalake, without Spark. The oracles
are plain Python: the emulator's table rows (`Emulator.rows`) and a merge of bronze's rows
(`merged` of tests/spark/support/stream_snapshot_support.py) from the rules of docs/source.md,
'Snapshots in the stream': rows apply in (`_start_lsn`, `_seqval`, `_operation`) order, a
delete (1) removes its key, a snapshot row (0), an insert (2) or an update's after-image (4)
sets it, and once a snapshot at S is in bronze the keys it lacks whose last row is older than
S are gone.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyspark
import yaml
from deltalake import DeltaTable

from mssql_cdc.spark import delta_jars
from tests.spark.support.stream_snapshot_support import merged, source_table
from tests.support import emulator_profile

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "declarative-pipeline"
START = "2026-09-28T13:50:00"
# PySpark 4.2's CLI fails after a run that used a Python data source: the server's last
# response carries the Python workers' accumulators, which the CLI's event loop refuses.
ACCUMULATOR_RESPONSE = "[UNKNOWN_RESPONSE] Unknown response: Plan observed(__python_accumulator__"


REDACTION = "spark.sql.redaction.options.regex"


def at_second(seconds: int) -> str:
    m, s = divmod(seconds, 60)
    return f"2026-09-28T14:{m:02d}:{s:02d}"


def spark_pipelines() -> Path:
    """The `spark-pipelines` script of this interpreter's environment, else PySpark's own."""
    beside = Path(sys.executable).parent / "spark-pipelines"
    return beside if beside.exists() else Path(pyspark.__file__).parent / "bin" / "spark-pipelines"


def pipeline(tmp_path: Path, emulator_file: Path) -> Path:
    """A copy of the example whose configuration reads the emulator file; every file a run
    writes is under `tmp_path`: the checkpoints in `storage`, the tables and the catalog in the
    copy's folder, where the run starts. Delta's jars come from the local copy of `make setup`
    when there is one (on the server's class path), else from Maven Central as in the
    example's conf/spark-defaults.conf."""
    folder = tmp_path / "pipeline"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    try:
        jars = delta_jars()
    except Exception:  # noqa: BLE001 - no local copy: the example's spark.jars.packages
        jars = []
    if jars:
        defaults = folder / "conf" / "spark-defaults.conf"
        lines = defaults.read_text(encoding="utf-8").splitlines()
        lines = [line for line in lines if not line.startswith("spark.jars.packages")]
        lines.append("spark.driver.extraClassPath " + os.pathsep.join(str(j) for j in jars))
        defaults.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec_file = folder / "spark-pipeline.yml"
    spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
    # Without the example's redaction pattern `mssql_cdc.register` meets the pipeline's refusal
    # of `spark.conf.set` (and with no `spark.default.parallelism`, its refusal of `EXPLAIN`):
    # the runs show that it registers anyway and warns what to set.
    del spec["configuration"][REDACTION]
    spec["configuration"].update(
        {
            "mssql_cdc.source.backend": "emulator",
            "mssql_cdc.source.emulatorPath": str(emulator_file),
            "mssql_cdc.source.maxCommitsPerBatch": "4",  # a snapshot of several batches
            "spark.sql.shuffle.partitions": "2",
            "spark.databricks.delta.snapshotPartitions": "2",
        }
    )
    spec["storage"] = (tmp_path / "storage").as_uri()
    spec_file.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return folder


# A local `spark-pipelines run` starts its Spark Connect server on Spark Connect's default port
# and its client connects there: two at once on one machine collide (BindException).
CONNECT_PORT = 15002


def wait_for_connect_port(seconds: float = 300) -> None:
    """Wait until no other local Spark Connect server holds CONNECT_PORT."""
    deadline = time.monotonic() + seconds
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", CONNECT_PORT))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
        time.sleep(2)


def run_pipeline(folder: Path, *args: str) -> str:
    """One `spark-pipelines run`; returns its output after checking that the run completed."""
    wait_for_connect_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_CONF_DIR": str(folder / "conf"),
    }
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(
        [str(spark_pipelines()), "run", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = done.stdout + done.stderr
    assert "Run is COMPLETED." in out, out[-6000:]
    # exit status 0, or PySpark's failure after the completed run (see ACCUMULATOR_RESPONSE)
    assert done.returncode == 0 or ACCUMULATOR_RESPONSE in out, out[-6000:]
    return out


def table_rows(warehouse: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = DeltaTable(str(warehouse / name)).to_pyarrow_table().to_pylist()
    return rows


def silver_table(warehouse: Path) -> dict[int, str | None]:
    rows = table_rows(warehouse, "silver")
    keys = [r["order_id"] for r in rows]
    assert len(keys) == len(set(keys)), "silver holds a key twice"
    return {r["order_id"]: r["status"] for r in rows}


def test_the_example_pipeline_keeps_bronze_and_silver_equal_to_the_table_through_a_loss(
    tmp_path: Path,
) -> None:
    """Four runs; after each, bronze merged and silver equal the emulator's table.

    The loss is a CDC cleanup (sys.sp_cdc_cleanup_change_table,
    https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-cleanup-change-table-transact-sql)
    that deletes changes the stream had not read: the key deleted in that gap has no delete row
    anywhere, and only the source's re-snapshot (snapshotMode=when_needed) removes it.
    """
    path = tmp_path / "e.db"
    emu = emulator_profile.create(path, start=START)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    for k in range(10):
        emu.commit([("insert", "dbo.orders", {"order_id": k, "status": "new"})], at=at_second(k))
    emulator_profile.wait_for_capture(emu, at_second(9))
    folder = pipeline(tmp_path, path)
    warehouse = folder / "spark-warehouse"

    # 1. bootstrap: the source's initial snapshot, in batches of at most 4 rows; `register`
    # ran in the definition file without the redaction pattern, and said what to set
    out = run_pipeline(folder)
    assert f"set {REDACTION} to " in out, out[-6000:]
    bronze = table_rows(warehouse, "bronze")
    assert {r["_operation"] for r in bronze} == {0}
    assert sorted(r["order_id"] for r in bronze) == list(range(10))  # each key once
    first_stamp = bronze[0]["_snapshot"]
    assert merged(bronze) == source_table(emu) == silver_table(warehouse)

    # 2. changes after the snapshot arrive as change rows
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "paid"})], at=at_second(20))
    emu.commit([("delete", "dbo.orders", {"order_id": 2})], at=at_second(21))
    emu.commit([("insert", "dbo.orders", {"order_id": 20, "status": "new"})], at=at_second(22))
    emulator_profile.wait_for_capture(emu, at_second(22))
    run_pipeline(folder)
    bronze = table_rows(warehouse, "bronze")
    changes = sorted((r["order_id"], r["_operation"]) for r in bronze if r["_operation"] != 0)
    assert changes == [(1, 3), (1, 4), (2, 1), (20, 2)]
    assert merged(bronze) == source_table(emu) == silver_table(warehouse)

    # 3. a loss: cleanup purges changes the stream never read; the next run re-snapshots
    emu.commit([("delete", "dbo.orders", {"order_id": 3})], at=at_second(30))
    emu.commit([("update", "dbo.orders", {"order_id": 4, "status": "gap"})], at=at_second(31))
    emu.commit([("insert", "dbo.orders", {"order_id": 21, "status": "new"})], at=at_second(32))
    emulator_profile.wait_for_capture(emu, at_second(32))
    newest = emu.max_lsn()
    assert newest is not None
    emu.cleanup("dbo_orders", newest)  # the three commits above are gone from the change table
    run_pipeline(folder)
    bronze = table_rows(warehouse, "bronze")
    stamps = sorted({r["_snapshot"] for r in bronze if r["_operation"] == 0})
    assert len(stamps) == 2  # one re-snapshot, after the first
    assert stamps[0] == first_stamp
    assert not [r for r in bronze if r["order_id"] == 3 and r["_operation"] == 1]  # no delete row
    assert 3 not in source_table(emu)
    assert merged(bronze) == source_table(emu) == silver_table(warehouse)

    # 4. --full-refresh bronze: emptied, then a new snapshot
    emu.commit([("update", "dbo.orders", {"order_id": 5, "status": "late"})], at=at_second(40))
    emulator_profile.wait_for_capture(emu, at_second(40))
    # a selection runs only what it names: silver is refreshed too, or it keeps the last run's rows
    run_pipeline(folder, "--full-refresh", "bronze", "--refresh", "silver")
    bronze = table_rows(warehouse, "bronze")
    assert {r["_snapshot"] for r in bronze} - {None} == {bronze[0]["_snapshot"]}  # one snapshot
    assert bronze[0]["_snapshot"] not in stamps
    assert merged(bronze) == source_table(emu) == silver_table(warehouse)
