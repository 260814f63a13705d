"""Credentials apart from the connection string through Spark (decisions 1385, 1386).

A stream that logs in with options `user` and `password` keeps the password out of its plan
and its checkpoint. A Spark read through mssql-python logs in with a Microsoft Entra access
token from `accessTokenProvider`, against the emulator served over TLS with that token.

The provider is a module of this test's own (shipped to Spark's Python workers with
`addPyFile`) that records the process of every call, so the test sees it called in the driver
and in the processes that plan and read, each time one connects. Oracle: SQL Server refuses a
bad login with error 18456 (learn.microsoft.com/en-us/sql/relational-databases/errors-events/
mssqlserver-18456-database-engine-error), and plain counting of the rows the test wrote.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import register, stream
from mssql_cdc.emulator.serve import serve
from tests.support import emulator_profile

TOKEN = "eyJhbGciOiJub25lIn0.eyJleHAiOjQxMDI0NDQ4MDAsIm9pZCI6InRlc3QifQ.c2ln"  # exp: 2100
WRONG = "eyJhbGciOiJub25lIn0.eyJleHAiOjQxMDI0NDQ4MDB9.d3Jvbmc"
PASSWORD = "Spark-Opt-Pa55;word"

PROVIDER = """
import os
from pathlib import Path

def token() -> str:
    with open({calls!r}, "a", encoding="utf-8") as log:
        log.write(f"{{os.getpid()}}\\n")
    return Path({token!r}).read_text(encoding="utf-8")
"""


def provider(spark: SparkSession, tmp_path: Path, token: str, monkeypatch: Any) -> tuple[str, Path]:
    """A new provider module returning `token`: its `module:function` and its calls file."""
    name = f"token_provider_{uuid.uuid4().hex}"
    folder = tmp_path / "provider"
    folder.mkdir()
    (folder / "token.txt").write_text(token, encoding="utf-8")
    calls = folder / "calls.txt"
    calls.touch()
    module = folder / f"{name}.py"
    module.write_text(
        PROVIDER.format(calls=str(calls), token=str(folder / "token.txt")), encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(folder))
    spark.sparkContext.addPyFile(str(module))
    return f"{name}:token", calls


def served(tmp_path: Path) -> Path:
    path = tmp_path / "e.db"
    emu = emulator_profile.create(path, pinned="immediate", start="2026-09-28T13:50:00")
    emu.create_table("dbo.items", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.items")
    emu.commit([("insert", "dbo.items", {"id": i}) for i in range(12)], at="2026-09-28T14:00")
    emu.close()
    return path


def read(spark: SparkSession, port: int, spec: str) -> list[Any]:
    register(spark)
    return (
        spark.read.format("mssql_cdc_snapshot")
        .options(
            captureInstance="dbo_items",
            backend="mssql-python",
            connectionString=(
                f"Server=127.0.0.1,{port};Database=e;Encrypt=yes;TrustServerCertificate=yes"
            ),
            accessTokenProvider=spec,
            numPartitions="3",
            snapshotChunks="[[0, null, 4], [1, 4, 8], [2, 8, null]]",
        )
        .load()
        .collect()
    )


def test_a_spark_read_logs_in_with_a_fresh_token_at_every_connection_on_driver_and_tasks(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = served(tmp_path)
    spec, calls = provider(spark, tmp_path, TOKEN, monkeypatch)
    with serve(path, tls=True, access_token=TOKEN) as server:
        rows = read(spark, server.port, spec)
    assert sorted(r["id"] for r in rows) == list(range(12))
    pids = calls.read_text(encoding="utf-8").split()
    # Each of the three read tasks connects once and asks for its own token, and planning
    # (the schema, the snapshot's LSN) connects before them: not one token made and shipped.
    assert len(pids) >= 4, pids
    # Spark's Python workers, not this test's process, ask when they connect.
    assert set(pids) - {str(os.getpid())}, pids


def test_a_wrong_token_from_the_provider_fails_the_read_with_login_failed(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = served(tmp_path)
    spec, calls = provider(spark, tmp_path, WRONG, monkeypatch)
    with (
        serve(path, tls=True, access_token=TOKEN) as server,
        pytest.raises(Exception, match="Login failed for user") as caught,
    ):
        read(spark, server.port, spec)
    message = str(caught.value)
    assert "access token" in message  # the library's advice names what to check
    assert WRONG not in message
    assert TOKEN not in message
    assert calls.read_text(encoding="utf-8").split()  # it was asked


def test_a_stream_with_a_password_option_keeps_it_out_of_its_plan_and_every_file_it_writes(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, lake = served(tmp_path), tmp_path / "lake"
    register(spark)
    with serve(path, password=PASSWORD) as server:
        options = {
            "captureInstance": "dbo_items",
            "backend": "pymssql",
            "connectionString": f"Server=127.0.0.1,{server.port};Database=e",
            "user": server.login,
            "password": PASSWORD,
            "metricsPath": str(lake / "metrics"),
        }
        plan = spark.readStream.format("mssql_cdc").options(**options).load()
        shown = plan._jdf.queryExecution().toString()
        query = stream(spark, options).to_delta(
            str(lake / "bronze"),
            app_id="items",
            checkpoint=str(lake / "ckpt"),
            facts_table=str(lake / "facts"),
            trigger={"availableNow": True},
            bootstrap=True,
            on_data_loss="resnapshot",
        )
        assert query.awaitTermination(300)
    rows = spark.read.format("delta").load(str(lake / "bronze")).collect()
    assert sorted(r["id"] for r in rows) == list(range(12))
    assert "password=*********(redacted)" in shown
    assert PASSWORD not in shown
    # Bronze, the facts table, the checkpoint (offsets, commits, the state file, the family
    # cache) and the metrics folder: nothing the stream wrote holds the password.
    written = [f for f in lake.rglob("*") if f.is_file()]
    assert {f.relative_to(lake).parts[0] for f in written} >= {"bronze", "facts", "ckpt"}
    assert not [f for f in written if PASSWORD.encode() in f.read_bytes()]
