"""Folders at a URI: the metrics folder on an object store, and deltalake's storage options
(docs/object-stores.md; decisions 1351, 1352).

`metricsPath` may be a URI (`s3a://`, `s3://`, `gs://`, `abfss://`, `file:`) that the driver and
every executor reach. Its files are written, listed, read and deleted through pyarrow's file
systems (`options.StoreFolder`; this module loads no pyarrow), which both sides load the same
way. Hadoop's schemes map onto them (`filesystem_spec`): `s3a`, `s3n` and `s3` to
`S3FileSystem`, `gs` to `GcsFileSystem`, `abfss` and `abfs` to `AzureFileSystem`.

Where the store is, and who may write it, is said in Hadoop's names, the ones Spark's S3A
connector reads: `fs.s3a.endpoint`, `fs.s3a.access.key`, ... and their per-bucket spellings
`fs.s3a.bucket.<bucket>.<key>`, the latter first. The driver reads them from the Spark session's
configuration; the reader's executors get them as source options named the same (Spark redacts
option values whose names hold `secret` or `access.key`). Without them, pyarrow and deltalake
use the environment's credential chain (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, ...).
`StoreSettings` never shows a value: its repr lists the names only, and no message of this
module quotes one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

__all__ = [
    "STORE_KEYS",
    "FileSystemSpec",
    "StoreFiles",
    "StoreSettings",
    "deltalake_options",
    "filesystem_spec",
    "is_store_uri",
    "remember_settings",
    "remembered_settings",
    "settings_from_conf",
]

_S3 = frozenset({"s3a", "s3n", "s3"})
_GCS = frozenset({"gs", "gcs"})
_AZURE = frozenset({"abfss", "abfs"})
_SCHEMES = _S3 | _GCS | _AZURE | {"file"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")

STORE_KEYS = (
    "endpoint",
    "endpoint.region",
    "access.key",
    "secret.key",
    "session.token",
    "path.style.access",
    "connection.ssl.enabled",
)
"""The S3A settings the library reads, each as `fs.s3a.<key>` or `fs.s3a.bucket.<b>.<key>`."""


def is_store_uri(text: str) -> bool:
    """Whether `text` is a URI of a scheme this module opens (`s3a:`, `s3:`, `s3n:`, `gs:`,
    `gcs:`, `abfss:`, `abfs:`, `file:`)."""
    match = _SCHEME.match(text)
    return match is not None and match.group(1).lower() in _SCHEMES


def _scheme(uri: str) -> str:
    match = _SCHEME.match(uri)
    return "" if match is None else match.group(1).lower()


@dataclass(frozen=True, slots=True, repr=False)
class StoreSettings:
    """Hadoop-named file-system settings (`fs.s3a.endpoint`, `fs.s3a.bucket.<b>.secret.key`).

    Values are never shown: the repr names the keys only.
    """

    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, values: Mapping[str, str]) -> StoreSettings:
        """The settings of `values` whose names start with `fs.`, sorted by name."""
        kept = {k: v for k, v in values.items() if k.lower().startswith("fs.")}
        return cls(tuple(sorted(kept.items())))

    def get(self, key: str, bucket: str) -> str | None:
        """`fs.s3a.bucket.<bucket>.<key>`, else `fs.s3a.<key>`; None when neither is set."""
        found = dict(self.values)
        for name in (f"fs.s3a.bucket.{bucket}.{key}", f"fs.s3a.{key}"):
            if found.get(name):
                return found[name]
        return None

    def to_options(self) -> dict[str, str]:
        """The settings as source options, named as in Hadoop; hand them on, never log them."""
        return dict(self.values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def __repr__(self) -> str:
        return f"StoreSettings({', '.join(k for k, _ in self.values)})"


def settings_from_conf(get: Callable[[str], str | None], uri: str) -> StoreSettings:
    """The S3A settings of `uri`'s bucket as a Spark session's configuration holds them.

    `get` answers a configuration key (None when unset), such as a wrapper of
    `spark.conf.get(key, None)`. Each key of `STORE_KEYS` is read per bucket and then plainly,
    each as set at runtime (`fs.s3a...`) and at start-up (`spark.hadoop.fs.s3a...`). A URI of
    another scheme has none.
    """
    if _scheme(uri) not in _S3:
        return StoreSettings()
    bucket = urlsplit(uri).netloc
    values: dict[str, str] = {}
    for key in STORE_KEYS:
        for name in (f"fs.s3a.bucket.{bucket}.{key}", f"fs.s3a.{key}"):
            value = get(name) or get(f"spark.hadoop.{name}")
            if value:
                values[name] = value
    return StoreSettings.of(values)


_REMEMBERED: dict[str, StoreSettings] = {}


def _root(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.scheme.lower()}://{parts.netloc}"


def remember_settings(uri: str, settings: StoreSettings) -> None:
    """Keep `settings` for `uri`'s bucket in this process, for readers given no session."""
    if settings:
        _REMEMBERED[_root(uri)] = settings


def remembered_settings(uri: str) -> StoreSettings:
    """The settings last remembered for `uri`'s bucket; none when there are none."""
    if not is_store_uri(uri) or _scheme(uri) == "file":
        return StoreSettings()
    return _REMEMBERED.get(_root(uri), StoreSettings())


def _false(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "false"


def _true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _endpoint(settings: StoreSettings, bucket: str) -> tuple[str | None, bool]:
    """The endpoint's host (and port) and whether it is plain http."""
    endpoint = settings.get("endpoint", bucket)
    plain = _false(settings.get("connection.ssl.enabled", bucket))
    if endpoint is None:
        return None, plain
    if "://" in endpoint:
        parts = urlsplit(endpoint)
        return parts.netloc, parts.scheme.lower() == "http"
    return endpoint, plain


@dataclass(frozen=True, slots=True, repr=False)
class FileSystemSpec:
    """Which pyarrow file system opens a store URI, its keyword arguments and the path in it.

    `kind` is `s3` (`S3FileSystem`), `gcs` (`GcsFileSystem`), `azure` (`AzureFileSystem`) or
    `local` (the `file:` URI's path). The arguments may hold keys: the repr shows none.
    """

    kind: str
    arguments: tuple[tuple[str, object], ...]
    path: str

    def __repr__(self) -> str:
        return f"FileSystemSpec({self.kind}, {self.path!r})"


def filesystem_spec(uri: str, settings: StoreSettings) -> FileSystemSpec:
    """The pyarrow file system `uri` needs with `settings`, as data (this module loads no
    pyarrow; `options.store_folder` builds it).

    Raises:
        ValueError: `uri` is not of a scheme `is_store_uri` accepts.
    """
    scheme = _scheme(uri)
    if scheme not in _SCHEMES:
        raise ValueError(f"{uri!r} is not a URI of s3a, s3, s3n, gs, gcs, abfss, abfs or file")
    parts = urlsplit(uri)
    key = parts.path.strip("/")
    if scheme == "file":
        return FileSystemSpec("local", (), parts.path or "/")
    if scheme in _S3:
        bucket = parts.netloc
        host, plain = _endpoint(settings, bucket)
        arguments: dict[str, object] = {
            "access_key": settings.get("access.key", bucket),
            "secret_key": settings.get("secret.key", bucket),
            "session_token": settings.get("session.token", bucket),
            "region": settings.get("endpoint.region", bucket),
            "endpoint_override": host,
            "scheme": "http" if plain else "https",
            # S3A addresses a bucket as a host name unless path-style access is on; pyarrow
            # does so only without an endpoint, unless forced
            "force_virtual_addressing": host is not None
            and not _true(settings.get("path.style.access", bucket)),
        }
        kept = tuple((k, v) for k, v in arguments.items() if v is not None)
        return FileSystemSpec("s3", kept, posixpath.join(bucket, key) if key else bucket)
    if scheme in _GCS:
        return FileSystemSpec("gcs", (), posixpath.join(parts.netloc, key) if key else parts.netloc)
    container, _, host = parts.netloc.partition("@")
    account = (("account_name", host.split(".", 1)[0]),)
    return FileSystemSpec("azure", account, posixpath.join(container, key) if key else container)


def deltalake_options(uri: str, settings: StoreSettings) -> dict[str, str]:
    """deltalake's `storage_options` for a table at `uri` (an `s3a://` table opens as `s3://`
    with them); empty for other schemes and for no settings, which leaves deltalake to the
    environment. Hand them on, never log them."""
    if _scheme(uri) not in _S3 or not settings:
        return {}
    bucket = urlsplit(uri).netloc
    out: dict[str, str] = {}
    endpoint = settings.get("endpoint", bucket)
    if endpoint is not None:
        host, plain = _endpoint(settings, bucket)
        out["AWS_ENDPOINT_URL"] = f"{'http' if plain else 'https'}://{host}"
        if plain:
            out["AWS_ALLOW_HTTP"] = "true"
    for key, option in (
        ("endpoint.region", "AWS_REGION"),
        ("access.key", "AWS_ACCESS_KEY_ID"),
        ("secret.key", "AWS_SECRET_ACCESS_KEY"),
        ("session.token", "AWS_SESSION_TOKEN"),
    ):
        value = settings.get(key, bucket)
        if value is not None:
            out[option] = value
    if endpoint is not None:  # as S3A: a bucket's host name unless path-style access is on
        path_style = _true(settings.get("path.style.access", bucket))
        out["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if path_style else "true"
    return out


class StoreFiles(Protocol):
    """One folder at a store URI (`options.StoreFolder` is the one implementation): its plain
    files listed, read, written whole and deleted."""

    uri: str

    def file(self, name: str) -> str:
        """The URI of `name` in this folder."""
        ...

    def names(self) -> list[str]:
        """The names of the plain files directly in the folder, sorted."""
        ...

    def read(self, name: str) -> bytes:
        """The bytes of file `name`; OSError when it is missing or unreadable."""
        ...

    def write(self, name: str, data: bytes) -> None:
        """Write `data` as file `name` whole; OSError when the store refused it."""
        ...

    def delete(self, names: Iterable[str]) -> None:
        """Delete files `names`; one already gone is fine."""
        ...
