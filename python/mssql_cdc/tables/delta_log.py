"""A Delta table's log head and its commit files, read on the driver without a Spark job.

`DeltaLog.update()` lists the log folder and answers the version and the table id from the
newest checksum file; a commit file is a few JSON lines the log store reads directly. Neither
starts a Spark job (a query on the table would: snapshot reconstruction and a scan), which is
what lets the pre-flight tell in milliseconds whether anything but micro-batch facts commits
reached the facts table since it last read it (`family_cache`). Every failure here means
"cannot tell", never an answer: callers fall back to reading the table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException

from mssql_cdc.tables.refs import TableRef

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CommitSummary", "LogHead", "LogReader", "delta_log_of", "newest_snapshot", "summarize"]

log = logging.getLogger(__name__)

# What a JVM call can raise: Py4J's own errors, Spark's converted ones (a missing catalog
# table), and a commit file that is not what Delta writes.
_NO_ANSWER = (Py4JError, PySparkException, ValueError)


def delta_log_of(spark: SparkSession, ref: TableRef) -> Any:
    """The JVM `DeltaLog` of `ref` (a path or a catalog name), for reads that run no Spark job.

    Raises:
        AttributeError: the session has no JVM (Spark Connect); Py4JError and PySparkException
            as the JVM raises them.
    """
    jvm: Any = spark._jvm
    if ref.is_path:
        return jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, ref.name)
    from delta.tables import DeltaTable

    return DeltaTable.forName(spark, ref.name)._jdt.deltaLog()


def newest_snapshot(spark: SparkSession, delta_log: Any) -> Any:
    """The JVM snapshot of the log's newest version, after listing the log folder."""
    jvm: Any = spark._jvm
    empty = jvm.scala.Option.empty()
    return delta_log.update(False, empty, empty)


@dataclass(frozen=True, slots=True)
class LogHead:
    """The newest version of a table's log and the table's identity."""

    table_id: str  # Delta's metadata id: a table dropped and created again gets a new one
    location: str
    version: int


@dataclass(frozen=True, slots=True)
class CommitSummary:
    """What one commit file says about itself."""

    version: int
    commit_id: str | None  # commitInfo.txnId, unique per commit
    operation: str | None
    user_metadata: str | None
    txn_app_ids: tuple[str, ...]  # the SetTransaction records (txnAppId) of the commit
    kinds: frozenset[str]  # action kinds: "commitInfo", "add", "remove", "metaData", ...
    all_data_change: bool  # every add and remove is a data change (no compaction rewrite)
    output_rows: int | None = None  # commitInfo.operationMetrics.numOutputRows


def summarize(version: int, lines: Iterable[str]) -> CommitSummary:
    """Summarize the JSON lines of commit file `version`.

    Raises:
        ValueError: a line is not a JSON object with one action.
    """
    kinds: set[str] = set()
    app_ids: list[str] = []
    info: dict[str, Any] = {}
    data_change = True
    for line in lines:
        if not line.strip():
            continue
        action = json.loads(line)
        if not isinstance(action, dict) or len(action) != 1:
            raise ValueError(f"commit {version}: a line holds no single action: {line[:80]!r}")
        kind, body = next(iter(action.items()))
        kinds.add(kind)
        body = body if isinstance(body, dict) else {}
        if kind == "commitInfo":
            info = body
        elif kind == "txn":
            app_ids.append(str(body.get("appId")))
        elif kind in ("add", "remove") and body.get("dataChange") is not True:
            data_change = False
    metadata = info.get("userMetadata")
    metrics = info.get("operationMetrics")
    rows = metrics.get("numOutputRows") if isinstance(metrics, dict) else None
    return CommitSummary(
        version=version,
        commit_id=_text(info.get("txnId")),
        operation=_text(info.get("operation")),
        user_metadata=_text(metadata),
        txn_app_ids=tuple(app_ids),
        kinds=frozenset(kinds),
        all_data_change=data_change,
        output_rows=int(rows) if isinstance(rows, str | int) and str(rows).isdigit() else None,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class LogReader:
    """The Delta log of one table, reached through the session's JVM."""

    def __init__(self, spark: SparkSession, delta_log: Any) -> None:
        self._spark = spark
        self._jvm: Any = spark._jvm
        self._log = delta_log
        self._commits: dict[int, CommitSummary | None] = {}

    @classmethod
    def open(cls, spark: SparkSession, ref: TableRef) -> LogReader | None:
        """The reader of `ref`'s log; None without a JVM (Spark Connect) or a catalog entry."""
        jvm: Any = getattr(spark, "_jvm", None)
        if jvm is None:
            return None
        try:
            delta_log = delta_log_of(spark, ref)
        except _NO_ANSWER as exc:  # no answer here; the caller reads the table
            log.debug("%s: the Delta log is out of reach: %s", ref, exc)
            return None
        return cls(spark, delta_log)

    def head(self) -> LogHead | None:
        """The newest version and the table id; None for a missing table or on any error."""
        try:
            snapshot = newest_snapshot(self._spark, self._log)
            version = int(snapshot.version())
            if version < 0:
                return None
            return LogHead(
                table_id=str(snapshot.metadata().id()),
                location=str(self._log.dataPath().toString()),
                version=version,
            )
        except _NO_ANSWER as exc:  # no answer here; the caller reads the table
            log.debug("the Delta log's head is out of reach: %s", exc)
            return None

    def commit(self, version: int) -> CommitSummary | None:
        """Commit `version`'s summary; None when its file is gone (log cleanup) or unreadable."""
        if version not in self._commits:
            self._commits[version] = self._read(version)
        return self._commits[version]

    def _read(self, version: int) -> CommitSummary | None:
        try:
            path = self._jvm.org.apache.hadoop.fs.Path(self._log.logPath(), f"{version:020d}.json")
            lines = self._log.store().read(path, self._log.newDeltaHadoopConf())
            return summarize(version, str(lines.mkString("\n")).split("\n"))
        except _NO_ANSWER as exc:  # no answer here; the caller reads the table
            log.debug("commit %d of the Delta log is unreadable: %s", version, exc)
            return None
