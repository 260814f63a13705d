"""ODBC-style connection strings (`key=value;...`), parsed without ever echoing a value.

A connection string carries the password, so every message here names keys and positions only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mssql_cdc.errors import ConfigError

__all__ = ["MSSQL_PYTHON_KEYS", "PYMSSQL_KEYS", "ConnectionString"]

PYMSSQL_KEYS = ("server", "database", "uid", "pwd", "app", "encrypt", "trustservercertificate")
"""The keys a pymssql connection string may hold: those the backend turns into pymssql.connect
arguments (FreeTDS takes no ODBC keyword itself)."""

MSSQL_PYTHON_KEYS = (
    "server",
    "address",
    "addr",
    "uid",
    "pwd",
    "authentication",
    "trusted_connection",
    "database",
    "encrypt",
    "trustservercertificate",
    "trust_server_certificate",
    "hostnameincertificate",
    "servercertificate",
    "serverspn",
    "multisubnetfailover",
    "applicationintent",
    "connectretrycount",
    "connectretryinterval",
    "keepalive",
    "keepaliveinterval",
    "ipaddresspreference",
    "packet size",
    "packetsize",
)
"""The keys mssql-python accepts in a connection string (its allow-list as of version 1.16),
less `Driver` and `App`, which it sets itself and refuses."""

_OPTION = "connectionString"
_SECRET_KEY = re.compile(r"pwd|password|secret|token|key", re.IGNORECASE)


@dataclass(frozen=True, slots=True, repr=False)
class ConnectionString:
    """The raw text (handed to mssql-python as is) and its parsed `key=value` pairs."""

    text: str
    pairs: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, text: str) -> ConnectionString:
        """Parse `text`; keys are matched ignoring case, `{...}` values may hold `;` and `}}`.

        Raises:
            ConfigError: the text is empty or malformed; the message never quotes a value.
        """
        if not text.strip():
            raise ConfigError(f"option {_OPTION} must not be empty; give an ODBC-style string")
        pairs: list[tuple[str, str]] = []
        i, n = 0, len(text)
        while i < n:
            if text[i] in "; \t":
                i += 1
                continue
            eq = text.find("=", i)
            if eq < 0:
                raise ConfigError(
                    f"option {_OPTION}: the part starting at character {i + 1} has no '='; "
                    "write key=value pairs separated by ';'"
                )
            key = text[i:eq].strip()
            if not key or any(c in key for c in ";{}"):
                raise ConfigError(
                    f"option {_OPTION}: a key before character {eq + 1} is empty or holds "
                    "';', '{' or '}'; write key=value pairs separated by ';'"
                )
            value, i = _read_value(text, eq + 1)
            pairs.append((key, value))
        if not pairs:
            raise ConfigError(f"option {_OPTION} holds no key=value pair")
        return cls(text=text, pairs=tuple(pairs))

    def get(self, key: str) -> str | None:
        """Return the value of `key` (ignoring case; the last one wins), or None."""
        found = None
        for k, v in self.pairs:
            if k.lower() == key.lower():
                found = v
        return found

    def keys(self) -> tuple[str, ...]:
        """Return the keys as written, in order."""
        return tuple(k for k, _ in self.pairs)

    def check_keys(self, allowed: tuple[str, ...], *, backend: str) -> None:
        """Raise ConfigError for the first key outside `allowed` (compared ignoring case).

        A key that follows a secret's key (`PWD=ab;cd=...`) may be the rest of an unbraced
        secret, so the message names the key before it instead of quoting it.
        """
        accepted = ", ".join(k.capitalize() for k in allowed)
        before: str | None = None
        for key in self.keys():
            if key.lower() not in allowed:
                if before is not None and _SECRET_KEY.search(before):
                    raise ConfigError(
                        f"option {_OPTION}: the key after {before} is not one backend "
                        f"'{backend}' accepts ({accepted}); it is not shown, since it may be "
                        f"the rest of {before}'s value. If it is, brace the value, which "
                        f"holds ';': write {before}={{...}}, and '}}}}' for a '}}' inside it"
                    )
                raise ConfigError(
                    f"option {_OPTION}: key '{key}' is not supported with backend '{backend}'; "
                    f"it accepts only {accepted}"
                )
            before = key

    def __repr__(self) -> str:
        return f"ConnectionString(keys={list(self.keys())!r}, values hidden)"


def _read_value(text: str, start: int) -> tuple[str, int]:
    """Return the value starting at `start` and the index after its terminating ';'."""
    i = start
    while i < len(text) and text[i] in " \t":
        i += 1
    if i < len(text) and text[i] == "{":
        out: list[str] = []
        i += 1
        while i < len(text):
            if text[i] == "}":
                if i + 1 < len(text) and text[i + 1] == "}":
                    out.append("}")
                    i += 2
                    continue
                end = i + 1
                while end < len(text) and text[end] in " \t":
                    end += 1
                if end < len(text) and text[end] != ";":
                    raise ConfigError(
                        f"option {_OPTION}: text follows a closing '}}' at character {i + 1}; "
                        "end a braced value with '};'"
                    )
                return "".join(out), end + 1
            out.append(text[i])
            i += 1
        raise ConfigError(
            f"option {_OPTION}: a value opened with '{{' at character {start + 1} is never "
            "closed; close it with '}' (write '}}' for a literal '}')"
        )
    end = text.find(";", i)
    if end < 0:
        end = len(text)
    return text[i:end].strip(), end + 1
