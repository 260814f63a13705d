"""One rule for every path the library is given: resolve it once, compare it resolved.

A checkpoint, a Delta table given as a path and a metrics folder are each resolved once into a
`Place`: made absolute against the working folder, symbolic links followed, `.`, `..`, doubled
and trailing slashes removed, and compared ignoring case where the file system holding it does
(decision 1310). A URI (`s3://...`) and `/dbfs/...`, which only Spark opens, are normalized as
text; a `file:` URI is the local path it names.

Two places of one stream or one job may not be the same folder, and one may not lie inside the
other: a table's `VACUUM` deletes the files in its folder that are not the table's, and the
library and `mssql-cdc gc` manage what is inside a checkpoint. A checkpoint may not lie inside
another stream's checkpoint either, which is told by what that folder holds on disk.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from mssql_cdc.core.checkpoint import STATE_FILE_NAME
from mssql_cdc.errors import ConfigError

__all__ = ["Place", "check_apart", "check_checkpoint_place", "check_sink_folders", "place"]

# A scheme of two or more characters, then the authority when `//` follows.
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(//[^/]*)?")
_GENERATIONS = "_generations"
_ADVICE = (
    "a table's VACUUM deletes the files in its folder that are not the table's, and the "
    "library manages what is inside a checkpoint, so files would be lost; give each its own "
    "folder, neither inside the other (such as <root>/checkpoints/<name> and "
    "<root>/bronze/<name>)"
)


@dataclass(frozen=True, slots=True)
class Place:
    """A path the library was given, resolved once for comparing.

    `what` names it in messages ("checkpoint", "streams[1] (dbo_b): target"), `given` is the
    text as written; `key` is the resolved path (or normalized URI), compared ignoring case
    when `folded` (the file system holding it ignores case).
    """

    what: str
    given: str
    key: str
    folded: bool = False

    @property
    def shown(self) -> str:
        """The place in a message: what it is, as written, and where it resolves when that
        differs."""
        text = f"{self.what} {self.given!r}"
        return text if self.given == self.key else f"{text} (resolves to {self.key})"

    def same(self, other: Place) -> bool:
        """Whether `other` is this very folder once both are resolved."""
        mine, theirs = self._keys(other)
        return mine == theirs

    def holds(self, other: Place) -> bool:
        """Whether `other` lies strictly inside this folder once both are resolved."""
        return self.below(other) is not None

    def below(self, other: Place) -> str | None:
        """The path of `other` under this folder (`a/b`), None unless it lies strictly inside."""
        mine, theirs = self._keys(other)
        prefix = mine.rstrip("/") + "/"
        if theirs == mine or not theirs.startswith(prefix):
            return None
        return theirs[len(prefix) :]

    def _keys(self, other: Place) -> tuple[str, str]:
        if self.folded or other.folded:
            return self.key.casefold(), other.key.casefold()
        return self.key, other.key


def place(path: str | os.PathLike[str], *, what: str) -> Place:
    """Resolve `path` once: the `Place` every comparison of it uses."""
    given = os.fspath(path)
    uri = _URI.match(given)
    if uri is not None and uri.group(1).lower() == "file":
        local = given[uri.end() :] or "/"
        return _local(given, local, what)
    if uri is not None:
        rest = given[uri.end() :]
        normal = posixpath.normpath(rest) if rest else ""
        if normal.startswith("//"):
            normal = "/" + normal.lstrip("/")
        head = uri.group(1).lower() + ":" + (uri.group(2) or "")
        return Place(what, given, head + normal)
    if given == "/dbfs" or given.startswith("/dbfs/"):  # Spark's, not this driver's
        return Place(what, given, posixpath.normpath("/" + given.lstrip("/")))
    return _local(given, given, what)


def _local(given: str, path: str, what: str) -> Place:
    key = os.path.realpath(os.path.abspath(path))
    return Place(what, given, key, _ignores_case(key))


def _ignores_case(path: str) -> bool:
    """Whether the file system holding `path`'s deepest existing folder ignores case: that
    folder (or the nearest parent with a letter in its name) is found again under its name
    with the case swapped."""
    probe = path
    while True:
        head, name = os.path.split(probe)
        if name and name.swapcase() != name and os.path.lexists(probe):
            try:
                swapped = os.lstat(os.path.join(head, name.swapcase()))
                return os.path.samestat(os.lstat(probe), swapped)
            except OSError:
                return False
        if head == probe:
            return False
        probe = head


def check_apart(places: Iterable[Place]) -> None:
    """Raise ConfigError when two of `places` are one folder or one lies inside another.

    Raises:
        ConfigError: names both places as given, where they resolve, and what to do.
    """
    seen: list[Place] = []
    for current in places:
        for earlier in seen:
            if earlier.same(current):
                raise ConfigError(
                    f"{earlier.shown} and {current.shown} are the same folder; {_ADVICE}"
                )
            for outer, inner in ((earlier, current), (current, earlier)):
                if outer.holds(inner):
                    raise ConfigError(f"{inner.shown} lies inside {outer.shown}; {_ADVICE}")
        seen.append(current)


def check_checkpoint_place(checkpoint: Place) -> None:
    """Raise ConfigError when `checkpoint` lies inside another stream's checkpoint: a folder
    above it holds the state file, or Spark's `offsets/` and `commits/`, or holds one of them
    and the checkpoint lies in its `_generations` folder (where `mssql-cdc gc` removes old
    generations). Only a local checkpoint is looked at."""
    if not os.path.isabs(checkpoint.key) or checkpoint.key.startswith("/dbfs"):
        return
    below = checkpoint.key
    above = os.path.dirname(below)
    while above != below:
        holds = _checkpoint_files(above)
        in_generations = os.path.basename(below) == _GENERATIONS
        if STATE_FILE_NAME in holds or len(holds) == 2 or (holds and in_generations):
            raise ConfigError(
                f"{checkpoint.shown} lies inside {above}, another stream's checkpoint (it holds "
                f"{' and '.join(sorted(holds))}); a re-snapshot and `mssql-cdc gc` manage the "
                "folders there and would delete this one; pass a folder outside every "
                "stream's checkpoint"
            )
        below, above = above, os.path.dirname(above)


def _checkpoint_files(folder: str) -> set[str]:
    found = set()
    if os.path.isfile(os.path.join(folder, STATE_FILE_NAME)):
        found.add(STATE_FILE_NAME)
    for name in ("offsets", "commits"):
        if os.path.isdir(os.path.join(folder, name)):
            found.add(f"{name}/")
    return found


def check_sink_folders(
    metrics: Place, app_id: str, *, tables: Iterable[Place], checkpoint: Place
) -> None:
    """Raise ConfigError when the metrics folder `metrics` is or lies inside one of the Delta
    `tables` (their VACUUM would delete a batch's metrics files), or when a table or the
    checkpoint is or lies inside a stream's folder there, `<metrics>/<app_id>` or
    `<metrics>/<app_id>.g<n>`: the sink deletes the `*.json` files in it, and `mssql-cdc gc`
    removes an old generation's folder whole. The metrics folder may be the checkpoint or lie
    inside it (without metricsPath it is `<checkpoint>/_mssql_cdc_metrics`).

    Raises:
        ConfigError: names both places and what to do.
    """
    listed = list(tables)
    for table in listed:
        if table.same(metrics):
            raise ConfigError(f"{metrics.shown} and {table.shown} are the same folder; {_ADVICE}")
        if table.holds(metrics):
            raise ConfigError(f"{metrics.shown} lies inside {table.shown}; {_ADVICE}")
    for other in (*listed, checkpoint):
        under = metrics.below(other)
        if under is None:
            continue
        first = under.split("/")[0]
        flags = re.IGNORECASE if metrics.folded or other.folded else 0
        if re.fullmatch(re.escape(app_id) + r"(?:\.g[0-9]+)?", first, flags):
            raise ConfigError(
                f"{other.shown} lies in {metrics.key}/{first}, the metrics folder of app_id "
                f"{app_id!r}, whose *.json files the sink deletes and which `mssql-cdc gc` "
                "removes whole; pass a metricsPath that holds no table or checkpoint of the "
                "stream"
            )
