"""`local_session`'s quiet start, without a JVM: the stderr filter a launched process gets, and
the log4j2 configuration it passes (a fresh session's lines are counted by hand in decision
0923: eight before, none after)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mssql_cdc.spark import LOG4J2_PROPERTIES, quiet_configs, quiet_launch

SPARK_START = [
    "WARNING: Using incubator modules: jdk.incubator.vector",
    "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties",
    'Setting default log level to "WARN".',
    "To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).",
]


def test_a_process_started_quietly_loses_spark_start_lines_and_keeps_every_other(
    capfd: pytest.CaptureFixture[str],
) -> None:
    lines = [*SPARK_START, "Traceback (most recent call last): a real error", "WARNING: other"]
    script = f"import sys\nfor line in {lines!r}:\n    print(line, file=sys.stderr)\n"
    with quiet_launch():
        child = subprocess.Popen([sys.executable, "-c", script])
    assert child.wait(timeout=60) == 0
    deadline = time.monotonic() + 10
    err = ""
    while "WARNING: other" not in err and time.monotonic() < deadline:
        err += capfd.readouterr().err  # the forwarding thread copies the lines as they come
        time.sleep(0.05)
    assert err.splitlines() == ["Traceback (most recent call last): a real error", "WARNING: other"]
    print("after", file=sys.stderr)  # this process's stderr is its own again
    assert capfd.readouterr().err == "after\n"


def test_the_quiet_configuration_sets_log4j2_beside_the_warehouse(tmp_path: Path) -> None:
    configs = {
        "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
        "spark.driver.extraJavaOptions": "-Dderby.system.home=/d",
    }
    quiet = quiet_configs(configs)
    written = tmp_path / "log4j2-quiet.properties"
    assert quiet["spark.driver.extraJavaOptions"] == (
        f"-Dderby.system.home=/d -Dlog4j2.configurationFile={written.as_uri()}"
    )
    assert written.read_text() == LOG4J2_PROPERTIES
    assert "rootLogger.level = error" in LOG4J2_PROPERTIES
