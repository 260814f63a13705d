"""A Delta table's log head and its commit files, read in this process without Spark.

The newest version and the table id come from `deltalake`; a commit file is a few JSON lines
read directly (a local open, or pyarrow's file system for a URI). Neither starts a Spark job
(a query on the table would: snapshot reconstruction and a scan), which is what lets the
pre-flight tell in milliseconds whether anything but micro-batch facts commits reached the
facts table since it last read it (`family_cache`). A catalog name is reached through its
location (`DESCRIBE TABLE EXTENDED`). Every failure here means "cannot tell", never an answer:
callers fall back to reading the table. A local commit file is summarized once per process
while it stays the same file (decision 1452).
"""

from __future__ import annotations

import json
import logging
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import filesystem_spec, is_store_uri, remembered_settings
from mssql_cdc.tables.delta_read import newest_version, path_of
from mssql_cdc.tables.reference import TableOutOfReach, is_local
from mssql_cdc.tables.refs import TableRef
from mssql_cdc.tables.shared_tables import FileMark, commit_mark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CommitSummary", "LogHead", "LogReader", "commit_file", "summarize"]

log = logging.getLogger(__name__)


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


def commit_file(location: str, version: int) -> list[str]:
    """The lines of commit file `version` of the table at `location` (a local path or a URI).

    Raises:
        OSError: the file is gone (log cleanup) or unreadable.
    """
    name = f"{version:020d}.json"
    store = is_store_uri(location)
    spec = filesystem_spec(location, remembered_settings(location)) if store else None
    if spec is not None and spec.kind == "s3":  # s3a: too, which pyarrow does not know
        from pyarrow import fs

        s3 = fs.S3FileSystem(**dict(spec.arguments))
        with s3.open_input_stream(posixpath.join(spec.path, "_delta_log", name)) as stream:
            return bytes(stream.read()).decode("utf-8").split("\n")
    if not location.startswith("/"):
        from pyarrow import fs

        filesystem, root = fs.FileSystem.from_uri(location)
        with filesystem.open_input_stream(posixpath.join(root, "_delta_log", name)) as stream:
            return bytes(stream.read()).decode("utf-8").split("\n")
    with open(posixpath.join(location, "_delta_log", name), encoding="utf-8") as file:
        return file.read().split("\n")


# Summaries of local commit files, shared by every reader of the process: a fan_out job's
# streams each check the commits the others added since their cache (`family_cache`), so
# each file is read once, not once per stream. An entry is used only while its file is the
# same file (inode, size, modification time): a table created again at the path has others.
_MAX_SUMMARIES = 50_000
_summaries: OrderedDict[tuple[str, int], tuple[FileMark, CommitSummary]] = OrderedDict()
_summaries_lock = threading.Lock()


class LogReader:
    """The Delta log of one table at a path this process reads."""

    def __init__(self, path: TableRef) -> None:
        self._path = path
        self._commits: dict[int, CommitSummary | None] = {}

    @classmethod
    def open(cls, spark: SparkSession, ref: TableRef) -> LogReader | None:
        """The reader of `ref`'s log; None when this process cannot read it (a catalog table
        without a location it reaches, `/dbfs/...`)."""
        try:
            path = path_of(spark, ref)
        except TableOutOfReach as exc:  # no answer here; the caller reads the table
            log.debug("%s: the Delta log is out of reach: %s", ref, exc)
            return None
        if path.location is None or (not is_local(path) and path.location.startswith("/")):
            return None
        return cls(path)

    def head(self) -> LogHead | None:
        """The newest version and the table id; None for a missing table or on any error."""
        try:
            found = newest_version(self._path)
        except TableOutOfReach as exc:  # no answer here; the caller reads the table
            log.debug("the Delta log's head is out of reach: %s", exc)
            return None
        return LogHead(table_id=found.table_id, location=self._path.name, version=found.version)

    def commit(self, version: int) -> CommitSummary | None:
        """Commit `version`'s summary; None when its file is gone (log cleanup) or unreadable."""
        if version not in self._commits:
            self._commits[version] = self._read(version)
        return self._commits[version]

    def _read(self, version: int) -> CommitSummary | None:
        location = self._path.name
        mark = commit_mark(location, version) if location.startswith("/") else None
        if mark is not None:
            with _summaries_lock:
                found = _summaries.get((location, version))
            if found is not None and found[0] == mark:
                return found[1]
        try:
            summary = summarize(version, commit_file(location, version))
        except (OSError, ValueError) as exc:  # no answer here; the caller reads the table
            log.debug("commit %d of the Delta log is unreadable: %s", version, exc)
            return None
        if mark is not None:
            with _summaries_lock:
                _summaries[(location, version)] = (mark, summary)
                while len(_summaries) > _MAX_SUMMARIES:
                    _summaries.popitem(last=False)
        return summary
