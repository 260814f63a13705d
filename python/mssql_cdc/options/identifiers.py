"""SQL Server identifiers: validated, then always bracket-quoted.

docs/sqlserver.md, 'What the reader runs', gives the rules.

Names reach T-SQL text only through `quote_name`; values never reach it at all (they are
parameters). A name with a control character, or longer than SQL Server allows, is refused
before any statement is built.
"""

from __future__ import annotations

import re

from mssql_cdc.errors import ConfigError

__all__ = [
    "change_table",
    "check_collation",
    "check_identifier",
    "quote_name",
    "two_part_name",
]

_MAX_IDENTIFIER = 128
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_COLLATION = re.compile(r"^[A-Za-z0-9_]+$")


def check_identifier(what: str, name: str) -> str:
    """Return `name` if SQL Server can take it as an identifier, else raise ConfigError.

    Non-empty, at most 128 characters, no control characters (U+0000-U+001F, U+007F).
    `what` says which name it is, for the message.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{what} must be a non-empty name")
    if len(name) > _MAX_IDENTIFIER:
        raise ConfigError(f"{what} is {len(name)} characters long; SQL Server allows at most 128")
    if _CONTROL.search(name):
        raise ConfigError(f"{what} {name!r} holds a control character, which no identifier may")
    return name


def quote_name(name: str, what: str = "identifier") -> str:
    """Return `[name]` with every `]` doubled, as QUOTENAME does, after validating it."""
    check_identifier(what, name)
    return "[" + name.replace("]", "]]") + "]"


def two_part_name(schema: str, table: str) -> str:
    """Return `[schema].[table]`, both parts validated and quoted."""
    return f"{quote_name(schema, 'schema name')}.{quote_name(table, 'table name')}"


def change_table(capture_instance: str) -> str:
    """Return the quoted change table of a capture instance: `cdc.[<ci>_CT]`."""
    check_identifier("capture instance", capture_instance)
    return "cdc." + quote_name(capture_instance + "_CT", "change table name")


def check_collation(name: str) -> str:
    """Return a collation name read from sys.columns if it is plain letters, digits and `_`."""
    if not _COLLATION.match(name or ""):
        raise ConfigError(f"collation {name!r} is not a plain collation name; refusing to use it")
    return name
