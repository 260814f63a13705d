"""Builds and runs the Debezium harness (tests/debezium/harness): Debezium's SQL Server connector
in its embedded engine, a client of the emulator's TDS server that nobody here wrote."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mssql_cdc.emulator import TdsServer

HARNESS = Path(__file__).parent / "harness"
JAR = HARNESS / "target" / "debezium-harness-1.jar"
TOPIC_PREFIX = "emu"  # the harness's topic.prefix

# The JDBC driver Debezium depends on (mssql-jdbc 12.4) fails the TLS handshake with the
# emulator's TLS ("bad_record_mac"), so the connection asks for no encryption: the only
# property the harness passes beyond the connector's required ones (docs/emulator.md, 'Debezium').
EXTRA_PROPERTIES = "database.encrypt=false"


def build() -> None:
    """`mvn package` when the jar is missing or older than the harness's sources (Maven Central,
    cached in ~/.m2; `make setup` runs it first)."""
    sources = [HARNESS / "pom.xml", *HARNESS.glob("src/**/*.java")]
    if JAR.exists() and all(JAR.stat().st_mtime >= s.stat().st_mtime for s in sources):
        return
    subprocess.run(
        ["mvn", "-q", "-B", "-f", str(HARNESS / "pom.xml"), "package", "-DskipTests"],
        check=True,
        timeout=900,
    )


@dataclass(frozen=True)
class Run:
    """One run of the harness: its events (tombstones and schema changes left out), every record
    it printed, and its stderr (the connector's log)."""

    events: list[dict[str, Any]]
    records: list[dict[str, Any]]
    stderr: str


def run(server: TdsServer, table: str, state: Path, events: int, timeout_seconds: int = 90) -> Run:
    """Runs the engine with offsets and schema history in `state` until it has `events` change
    events on `table`'s topic or `timeout_seconds` passed."""
    classpath = f"{JAR}{os.pathsep}{JAR.parent / 'lib' / '*'}"
    state.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            "java",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            classpath,
            "mssqlcdc.debezium.Harness",
            server.host,
            str(server.port),
            server.login,
            server.password,
            server.database,
            table,
            str(state),
            str(events),
            str(timeout_seconds),
        ],
        capture_output=True,
        text=True,
        timeout=timeout_seconds + 60,
        env={**os.environ, "HARNESS_EXTRA_PROPERTIES": EXTRA_PROPERTIES},
    )
    if done.returncode != 0:
        raise AssertionError(f"the harness exited {done.returncode}:\n{done.stderr[-6000:]}")
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    topic = f"{TOPIC_PREFIX}.{server.database}.{table}"
    changes = [r["value"] for r in records if r["destination"] == topic and r["value"] is not None]
    return Run(changes, records, done.stderr)
