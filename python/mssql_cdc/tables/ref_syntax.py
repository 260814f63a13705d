"""The text of a table argument: a path normalized, a catalog name parsed and quoted.

A path (`tables.refs` decides: a `/` or `:` in the text) is made absolute against the working
directory, `.`, `..`, doubled and trailing slashes removed; a URI keeps its scheme and authority
as written and has its path normalized.

A catalog name is one to three parts (`table`, `schema.table`, `catalog.schema.table`) joined
by dots. A part is either plain, letters, digits and underscores (Spark's unquoted identifier),
or backquoted, where a doubled backquote stands for one. Spaces around a part are ignored, as
Spark's parser ignores them. Names reach Spark SQL and the name-taking APIs only through
`quote_parts`, so a name can never add SQL of its own.
"""

from __future__ import annotations

import os
import posixpath
import re

from mssql_cdc.errors import ConfigError

__all__ = ["MAX_PARTS", "normalize_path", "parse_name", "quote_parts"]

MAX_PARTS = 3
_PLAIN = re.compile(r"[A-Za-z0-9_]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Plain text Spark's lexer reads as a number literal (123, 1e5, 10L, 2BD), never as a name.
_NUMBER = re.compile(r"[0-9]+(?:e[0-9]+)?(?:l|s|y|d|f|bd)?", re.IGNORECASE)
_SHOWN = 200  # a message quotes at most this much of a bad name
# A scheme of two or more characters, then the authority when `//` follows: `s3://bucket`,
# `dbfs:`, `abfss://c@a.dfs.core.windows.net`. Everything after it is the path.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:(?://[^/]*)?")


def normalize_path(text: str) -> str:
    """Return a table path absolute and normalized, without a trailing `/`."""
    uri = _URI.match(text)
    if uri is None:
        return os.path.abspath(text)
    path = text[uri.end() :]
    if not path:
        return text
    normal = posixpath.normpath(path)
    if normal.startswith("//"):  # normpath keeps two leading slashes; a URI's path needs one
        normal = "/" + normal.lstrip("/")
    return uri.group() + normal


def parse_name(text: str, *, argument: str = "table") -> tuple[str, ...]:
    """Return the parts of the catalog name `text`, backquotes removed.

    Raises:
        ConfigError: `text` is not one to three plain or backquoted parts joined by dots;
            the message names `argument` and says how to write the name.
    """
    parts: list[str] = []
    at = _skip_space(text, 0)
    while True:
        if text.startswith("`", at):
            part, at = _backquoted(text, at, argument)
        else:
            plain = _PLAIN.match(text, at)
            if plain is None:
                raise _refused(text, argument, _what_is_wrong(text, at))
            part, at = plain.group(), plain.end()
            if _NUMBER.fullmatch(part):
                raise _refused(text, argument, f"{part!r} is a number; enclose it in backquotes")
        if not part:
            raise _refused(text, argument, "a part is empty")
        if _CONTROL.search(part):
            raise _refused(text, argument, "a part holds a control character")
        parts.append(part)
        at = _skip_space(text, at)
        if at == len(text):
            break
        if text[at] != ".":
            raise _refused(text, argument, _what_is_wrong(text, at))
        at = _skip_space(text, at + 1)
    if len(parts) > MAX_PARTS:
        reason = f"it has {len(parts)} parts, at most {MAX_PARTS} are allowed"
        raise _refused(text, argument, reason)
    return tuple(parts)


def quote_parts(parts: tuple[str, ...]) -> str:
    """Return the parts as Spark SQL's backquoted multi-part identifier (`` `a`.`b` ``)."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in parts)


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _backquoted(text: str, at: int, argument: str) -> tuple[str, int]:
    """The part opened by the backquote at `at`, and the position after its closing one."""
    pieces: list[str] = []
    start = at + 1
    while True:
        close = text.find("`", start)
        if close < 0:
            raise _refused(text, argument, "a backquote is not closed")
        pieces.append(text[start:close])
        if text.startswith("`", close + 1):
            pieces.append("`")
            start = close + 2
            continue
        return "".join(pieces), close + 1


def _what_is_wrong(text: str, at: int) -> str:
    if at >= len(text):
        return "it ends with a dot" if text.strip() else "it is empty"
    if text[at] == ".":
        return "a part is empty"
    return f"{text[at]!r} at position {at} is not allowed outside backquotes"


def _refused(text: str, argument: str, reason: str) -> ConfigError:
    shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    return ConfigError(
        f"{argument}={shown!r} is not a valid table name: {reason}. Pass table, schema.table or "
        "catalog.schema.table, each part letters, digits and underscores or enclosed in "
        "backquotes (`my-schema`.orders), or a path holding '/'"
    )
