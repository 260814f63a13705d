"""Builds and runs the Debezium harness (tests/debezium/harness): Debezium's SQL Server connector
in its embedded engine, a client of the emulator's TDS server that nobody here wrote, with the
connector's default settings over TLS 1.2 (decision 1444)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mssql_cdc.emulator import TdsServer

HARNESS = Path(__file__).parent / "harness"
JAR = HARNESS / "target" / "debezium-harness-1.jar"
TOPIC_PREFIX = "emu"  # the harness's topic.prefix

TRUST_STORE_PASSWORD = "changeit"  # guards nothing: the store holds one public certificate


def trust_store(server: TdsServer, folder: Path) -> Path:
    """A PKCS12 trust store with the certificate of a `serve(tls=True)` server, so the JDBC
    driver's default (encrypt=true, the server's certificate validated) connects unchanged."""
    assert server.certificate_pem is not None, "the server must be serving with tls=True"
    pem = folder / "emulator.pem"
    pem.write_text(server.certificate_pem)
    store = folder / "trust.p12"
    store.unlink(missing_ok=True)
    subprocess.run(
        [
            *("keytool", "-importcert", "-noprompt", "-storetype", "PKCS12", "-alias", "emulator"),
            *("-keystore", str(store), "-storepass", TRUST_STORE_PASSWORD, "-file", str(pem)),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return store


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


def run(
    server: TdsServer,
    table: str,
    state: Path,
    events: int,
    timeout_seconds: int = 90,
    during: tuple[int, Callable[[], None]] | None = None,
) -> Run:
    """Runs the engine with offsets and schema history in `state` until it has `events` change
    events on `table`'s topic or `timeout_seconds` passed; `during=(k, act)` calls `act` once
    the k-th event has arrived, while the engine runs. The connector's settings are its
    defaults; the JVM trusts the server's certificate (host `localhost`, its CN) and is otherwise
    Java's default: the server offers TLS 1.2, as SQL Server does over TDS 7.x."""
    classpath = f"{JAR}{os.pathsep}{JAR.parent / 'lib' / '*'}"
    state.mkdir(parents=True, exist_ok=True)
    store = trust_store(server, state)
    command = [
        "java",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        f"-Djavax.net.ssl.trustStore={store}",
        f"-Djavax.net.ssl.trustStorePassword={TRUST_STORE_PASSWORD}",
        "-Djavax.net.ssl.trustStoreType=PKCS12",
        "-cp",
        classpath,
        "mssqlcdc.debezium.Harness",
        "localhost",
        str(server.port),
        server.login,
        server.password,
        server.database,
        table,
        str(state),
        str(events),
        str(timeout_seconds),
    ]
    topic = f"{TOPIC_PREFIX}.{server.database}.{table}"
    records: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "HARNESS_EXTRA_PROPERTIES"},
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:  # ends when the harness exits (it has its own timeout)
                if not line.startswith("{"):
                    continue
                record = json.loads(line)
                records.append(record)
                if record["destination"] == topic and record["value"] is not None:
                    changes.append(record["value"])
                    if during is not None and len(changes) == during[0]:
                        during[1]()
            code = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        stderr.seek(0)
        log = stderr.read()
    if code != 0:
        raise AssertionError(f"the harness exited {code}:\n{log[-6000:]}")
    return Run(changes, records, log)
