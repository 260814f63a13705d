"""A Delta commit file, read and summarized: the JSON lines of `_delta_log/<version>.json`,
what the commit says about itself, and the files it added. Nothing here opens the table."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from mssql_cdc.core import filesystem_spec, is_store_uri, remembered_settings

__all__ = ["CommitSummary", "added_files", "commit_file", "summarize"]

_REARRANGING = frozenset({"commitInfo", "add", "remove"})


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
    any_data_change: bool = True  # some add or remove is a data change

    @property
    def rows_unchanged(self) -> bool:
        """Whether the table holds the same rows after this commit as before: it only adds and
        removes files with `dataChange` false (a compaction), which the Delta protocol defines
        as rearranging rows already there, or touches no file at all."""
        return self.kinds <= _REARRANGING and not self.any_data_change


def summarize(version: int, lines: Iterable[str]) -> CommitSummary:
    """Summarize the JSON lines of commit file `version`.

    Raises:
        ValueError: a line is not a JSON object with one action.
    """
    kinds: set[str] = set()
    app_ids: list[str] = []
    info: dict[str, Any] = {}
    data_change, any_change = True, False
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
        elif kind in ("add", "remove"):
            flag = body.get("dataChange")
            data_change = data_change and flag is True
            any_change = any_change or flag is not False  # absent: assume it changes rows
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
        any_data_change=any_change,
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


def added_files(lines: Sequence[str]) -> list[str]:
    """The paths of the files a commit file's `add` actions name, URL-decoded, in order.

    Raises:
        ValueError: a line that is not JSON.
    """
    found: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        add = json.loads(line).get("add")
        if isinstance(add, dict) and isinstance(add.get("path"), str):
            found.append(unquote(add["path"]))
    return found
