"""The app_id grammar: the one check of the name every stream is keyed by (docs/security.md).

An app_id becomes a Delta transaction id, the prefix of its facts keys (`<app_id>#facts`), a
Spark query name and a folder name under `metricsPath` (`<app_id>` or `<app_id>.g<n>`), so it
must be one safe path component that no other stream's derived ids can equal. It lives in
`core` because every layer that takes an app_id, the CLI included, may import `core`.
"""

from __future__ import annotations

import re
import string

from mssql_cdc.errors import ConfigError

__all__ = ["APP_ID_RULE", "MAX_APP_ID_LENGTH", "validate_app_id"]

# Leaves room for `.g<n>` and the file-name limit of 255 bytes of common file systems.
MAX_APP_ID_LENGTH = 100
APP_ID_RULE = (
    f"an app_id is 1 to {MAX_APP_ID_LENGTH} ASCII letters, digits, '_', '-' and '.', starts "
    "with a letter, a digit or '_', holds no '..' and does not end in '.' or '.g<digits>'"
)
_ALLOWED = frozenset(string.ascii_letters + string.digits + "_-.")
_GENERATION_SUFFIX = re.compile(r"\.g([0-9]+)\Z")
_SHOWN_MAX = 60


def validate_app_id(app_id: object) -> str:
    """Return `app_id` when it follows the grammar of APP_ID_RULE.

    Raises:
        ConfigError: otherwise; the message quotes the value (cut when long), says what is
            wrong with it and states the rule.
    """
    if not isinstance(app_id, str) or not app_id:
        raise ConfigError(f"app_id={app_id!r}: pass a non-empty string naming the stream")
    problem = _problem(app_id)
    if problem is not None:
        raise ConfigError(f"app_id={_shown(app_id)} {problem}; {APP_ID_RULE}")
    return app_id


def _problem(app_id: str) -> str | None:
    if len(app_id) > MAX_APP_ID_LENGTH:
        return f"is {len(app_id)} characters long, over the limit of {MAX_APP_ID_LENGTH}"
    for ch in app_id:
        if ch in _ALLOWED:
            continue
        if ch == "#":
            return (
                "contains '#', which separates the ids derived from it (<app_id>#facts, "
                "<app_id>#events); choose an app_id without '#'"
            )
        if ch in "/\\":
            return f"contains the path separator {ch!r}, but it names one folder under metricsPath"
        if ord(ch) < 32 or ord(ch) == 127:
            return "contains a control character"
        return f"contains {ch!r}"
    if ".." in app_id:
        return "contains '..', which a path reads as the parent folder"
    if app_id[0] in ".-":
        return f"starts with {app_id[0]!r}"
    if app_id.endswith("."):
        return "ends with '.'"
    suffix = _GENERATION_SUFFIX.search(app_id)
    if suffix is not None:
        stream = app_id[: suffix.start()]
        return (
            f"ends in {suffix.group()!r}, the sink id of generation {int(suffix.group(1))} of "
            f"the stream {stream!r}: the two would share transaction ids, facts keys and "
            "metrics folders"
        )
    return None


def _shown(app_id: str) -> str:
    if len(app_id) <= _SHOWN_MAX:
        return repr(app_id)
    return f"{app_id[:_SHOWN_MAX]!r}... ({len(app_id)} characters)"
