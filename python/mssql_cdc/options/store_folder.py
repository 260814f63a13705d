"""A folder at a store URI through pyarrow's file systems: the metrics folder on an object
store, which the reader's tasks write and the sink reads (docs/object-stores.md; decision 1351).

`core.stores` says which file system a URI needs and with which settings; this module builds it,
so that `core` loads no pyarrow. An object PUT is atomic per object: a reader sees the whole
previous object or the whole new one, never part of one, so a file is written in one PUT under
its final name, with no temporary name.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mssql_cdc.core import FileSystemSpec, StoreSettings, filesystem_spec, is_store_uri

if TYPE_CHECKING:
    from pyarrow import fs

__all__ = ["StoreFolder", "open_folder", "store_filesystem"]


def store_filesystem(uri: str, settings: StoreSettings) -> tuple[fs.FileSystem, str]:
    """pyarrow's file system for `uri` with `settings`, and the path in it.

    Raises:
        ValueError: `uri` is not of a scheme `core.is_store_uri` accepts.
    """
    spec = filesystem_spec(uri, settings)
    return _build(spec), spec.path


def _build(spec: FileSystemSpec) -> fs.FileSystem:
    from pyarrow import fs  # loaded only for a folder on a store

    arguments = dict(spec.arguments)
    if spec.kind == "s3":
        return fs.S3FileSystem(**arguments)
    if spec.kind == "gcs":
        return fs.GcsFileSystem(**arguments)
    if spec.kind == "azure":
        return fs.AzureFileSystem(**arguments)
    return fs.LocalFileSystem()


def open_folder(path: str | None, settings: StoreSettings) -> StoreFolder | None:
    """The folder at `path` when it is a store URI; None for a local path (or no path)."""
    if path is None or not is_store_uri(path):
        return None
    return StoreFolder(path, settings)


class StoreFolder:
    """One folder at a store URI: its plain files listed, read, written whole and deleted
    (`core.StoreFiles`)."""

    def __init__(self, uri: str, settings: StoreSettings) -> None:
        self.uri = uri.rstrip("/")
        self._fs, self._path = store_filesystem(self.uri, settings)
        self._local = filesystem_spec(self.uri, settings).kind == "local"

    def __repr__(self) -> str:
        return f"StoreFolder({self.uri!r})"

    def file(self, name: str) -> str:
        """The URI of `name` in this folder."""
        return f"{self.uri}/{name}"

    def names(self) -> list[str]:
        """The names of the plain files directly in the folder, sorted; none when it is
        missing."""
        from pyarrow import fs

        selector = fs.FileSelector(self._path, allow_not_found=True, recursive=False)
        found = self._fs.get_file_info(selector)
        return sorted(posixpath.basename(i.path) for i in found if i.type == fs.FileType.File)

    def read(self, name: str) -> bytes:
        """The bytes of file `name`.

        Raises:
            OSError: it is missing or unreadable.
        """
        with self._fs.open_input_stream(posixpath.join(self._path, name)) as stream:
            return bytes(stream.read())

    def write(self, name: str, data: bytes) -> None:
        """Write `data` as file `name` in one PUT (an object store has no folder to create).

        Raises:
            OSError: the store refused it.
        """
        if self._local:
            self._fs.create_dir(self._path, recursive=True)
        with self._fs.open_output_stream(posixpath.join(self._path, name)) as stream:
            stream.write(data)

    def delete(self, names: Iterable[str]) -> None:
        """Delete files `names`; one already gone is fine. (pyarrow leaves an empty
        `<folder>/` marker object behind on S3 so that the folder still lists.)"""
        for name in names:
            try:
                self._fs.delete_file(posixpath.join(self._path, name))
            except FileNotFoundError:
                continue
