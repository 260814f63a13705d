"""Reading raw source options: names ignoring case, values trimmed, strict typed parsers.

Only `mssql_cdc.options.config` reads options through this module's parsers; everything else
receives a `SourceConfig`, and asks `given_option` only whether the caller set an option.
Messages name the option and what it accepts, and quote a value only when it cannot be a secret.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

from mssql_cdc.core import did_you_mean, is_store_uri, lsn
from mssql_cdc.errors import ConfigError, quoted

__all__ = ["OptionReader", "given_option", "is_uri", "parse_lsn", "shown"]

_log = logging.getLogger("mssql_cdc.options.config")

_TRUE = frozenset({"true", "1", "yes", "y"})
_FALSE = frozenset({"false", "0", "no", "n"})
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # one letter before ':' is a drive, not a scheme
_SECRET = re.compile(r"(pwd|password|secret|token|key)\s*=", re.IGNORECASE)
_COUNT = re.compile(r"^[0-9]+$")

_warned_unknown: set[str] = set()

T = TypeVar("T", bound=str)


def given_option(options: Mapping[str, object], name: str) -> bool:
    """Whether the caller set option `name` (ignoring case; a None value is not set)."""
    return any(k.strip().lower() == name.lower() and v is not None for k, v in options.items())


def shown(value: str) -> str:
    """Quote `value` for a message, unless it looks like it carries a secret."""
    if _SECRET.search(value):
        return "(a value that looks like it holds a secret, not shown)"
    return quoted(value)


def parse_lsn(text: str) -> lsn.Lsn:
    """Return the canonical LSN of `text`: optional 0x and 1 to 20 hex digits.

    Raises:
        ValueError: `text` is not such an LSN.
    """
    bare = text[2:] if text[:2].lower() == "0x" else text
    if not 1 <= len(bare) <= 20:
        raise ValueError(f"not an LSN: {text!r}")
    return lsn.normalize("0x" + bare)


def is_uri(path: str) -> bool:
    """Tell whether `path` starts with a URI scheme (`dbfs:`, `s3a:`...); `C:` is a drive."""
    return _URI.match(path) is not None


class OptionReader:
    """Case-insensitive, trimmed access to an options mapping; values are read, never echoed
    when secret."""

    def __init__(self, options: Mapping[str, object], known: Iterable[str]) -> None:
        self._known = {name.lower(): name for name in known}
        self._values: dict[str, tuple[str, str]] = {}
        self._untrimmed: dict[str, str] = {}
        for raw_name, raw_value in options.items():
            if not isinstance(raw_name, str):
                raise ConfigError(f"option names must be strings (got {type(raw_name).__name__})")
            name = raw_name.strip()
            if raw_value is None:
                continue  # a Python caller's None means "not given", as Spark has no None
            value = _as_text(name, raw_value)
            key = name.lower()
            if key in self._values and self._values[key][1] != value:
                raise ConfigError(
                    f"options {self._values[key][0]} and {name} name the same option "
                    f"{self._known.get(key, name)} with different values; give it once"
                )
            self._values[key] = (name, value)
            self._untrimmed[key] = raw_value if isinstance(raw_value, str) else value
        self._warn_unknown()

    def _warn_unknown(self) -> None:
        for key, (name, _) in self._values.items():
            if key not in self._known and key not in _warned_unknown:
                _warned_unknown.add(key)
                _log.warning(
                    "unknown option %s is ignored%s; known options: %s",
                    name,
                    did_you_mean(key, self._known.values()),
                    ", ".join(sorted(self._known.values(), key=str.lower)),
                )

    def get(self, name: str) -> str | None:
        """Return the trimmed value of `name`, or None when it is absent."""
        found = self._values.get(name.lower())
        return None if found is None else found[1]

    def untrimmed(self, name: str) -> str | None:
        """Return the value of `name` as given (a password may begin or end with a space)."""
        return self._untrimmed.get(name.lower())

    def has(self, name: str) -> bool:
        return name.lower() in self._values

    def required(self, name: str, *, hint: str = "") -> str:
        value = self.get(name)
        if value is None or value == "":
            raise ConfigError(f"option {name} is required{hint}")
        return value

    def boolean(self, name: str, *, default: bool) -> bool:
        value = self.get(name)
        if value is None:
            return default
        low = value.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ConfigError(
            f"option {name} must be true or false (got {shown(value)}); "
            "accepted: true, false, 1, 0, yes, no, y, n, in any case"
        )

    def count(self, name: str, *, default: int | None, maximum: int, hint: str = "") -> int | None:
        """A decimal integer from 1 to `maximum`; `hint` is added to the error (e.g. how to
        say 'none')."""
        value = self.get(name)
        if value is None:
            return default
        number = _whole(value, maximum)
        if number is not None and number >= 1:
            return number
        extra = f"; {hint}" if hint else ""
        raise ConfigError(
            f"option {name} must be a positive whole number at most {maximum:,} "
            f"(got {shown(value)}){extra}"
        )

    def non_negative(self, name: str, *, maximum: int) -> int | None:
        """A decimal integer from 0 to `maximum`, or None when absent."""
        value = self.get(name)
        if value is None:
            return None
        number = _whole(value, maximum)
        if number is not None:
            return number
        raise ConfigError(
            f"option {name} must be a whole number >= 0 and at most {maximum:,} "
            f"(got {shown(value)})"
        )

    def choice(self, name: str, allowed: Iterable[T], *, default: T) -> T:
        """One of `allowed`, matched ignoring case, returned in its canonical spelling."""
        value = self.get(name)
        if value is None:
            return default
        options = list(allowed)
        for option in options:
            if option.lower() == value.lower():
                return option
        raise ConfigError(f"option {name} must be one of {', '.join(options)} (got {shown(value)})")

    def lsn(self, name: str) -> lsn.Lsn | None:
        value = self.get(name)
        if value is None:
            return None
        try:
            return parse_lsn(value)
        except (ValueError, OverflowError):
            raise ConfigError(
                f"option {name} must be an LSN: optional 0x and 1 to 20 hex digits "
                f"(got {shown(value)})"
            ) from None

    def local_path(self, name: str) -> str | None:
        """A local or FUSE path: a URI (`dbfs:/...`, `abfss://...`) is refused."""
        return self._path(name, stores=False)

    def folder(self, name: str) -> str | None:
        """A local or FUSE path, or a URI of an object store the library opens (`s3a://`,
        `s3://`, `gs://`, `abfss://`, `file:`; `core.stores`); another URI is refused."""
        return self._path(name, stores=True)

    def _path(self, name: str, *, stores: bool) -> str | None:
        value = self.get(name)
        if value is None:
            return None
        if value == "":
            raise ConfigError(f"option {name} must not be empty; omit it or give a directory")
        if stores and is_store_uri(value):
            return value
        if is_uri(value):
            also = ", or a URI of s3a, s3, gs, abfss or file" if stores else ""
            raise ConfigError(
                f"option {name} must be a local or FUSE path (such as /Volumes/...){also}, "
                f"not {shown(value)}; Python's file calls cannot open that URI"
            )
        return value


def _whole(value: str, maximum: int) -> int | None:
    """`value` as a decimal integer within 0..maximum, else None."""
    if not _COUNT.match(value):
        return None
    digits = value.lstrip("0") or "0"
    # Compared by length first: Python refuses to convert an integer of over 4300 digits.
    if len(digits) > len(str(maximum)) or int(digits) > maximum:
        return None
    return int(digits)


def _as_text(name: str, value: object) -> str:
    # Spark hands strings; a Python caller of stream() may pass bools and ints, which Spark's
    # own DataStreamReader.options would turn into the same text.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    raise ConfigError(
        f"option {name} must be given as a string (got a {type(value).__name__}); "
        "options are text, as in spark.readStream.option(...)"
    )
