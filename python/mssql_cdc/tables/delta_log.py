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

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.tables.commit_files import CommitSummary, commit_file, summarize
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
