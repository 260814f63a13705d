"""Credentials given apart from the connection string: `user`, `password`, `accessToken` and
`accessTokenProvider` (decision 1385).

A secret store hands a password or a token to the options; the backends pass each to the driver
as an argument of its own, never pasted into `connectionString`. A credential given both as an
option and as a connection-string key is refused, never silently resolved. The password and the
token are never printed, logged, stored or quoted in a message; the provider's name is not a
secret and may be shown.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from mssql_cdc.errors import ConfigError, quoted
from mssql_cdc.options.connection_string import ConnectionString

__all__ = ["CREDENTIAL_OPTIONS", "Credentials", "parse_credentials"]

CREDENTIAL_OPTIONS = ("user", "password", "accessToken", "accessTokenProvider")
"""The credential options, in the order `to_options` writes them."""

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PROVIDER = re.compile(rf"^{_NAME}(\.{_NAME})*:{_NAME}$")
# Connection-string keys that name a login method; an access token is a login method of its own.
_LOGIN_KEYS = ("uid", "pwd", "authentication", "trusted_connection")
_MAX_USER = 128  # a login name is a sysname
# Encrypt values that let a connection run, or log in, without TLS around the token.
_PLAIN = frozenset({"no", "false", "optional"})


@dataclass(frozen=True, slots=True, repr=False)
class Credentials:
    """The credential options, parsed. All None: the connection string carries the login."""

    user: str | None = None
    password: str | None = None
    access_token: str | None = None
    access_token_provider: str | None = None  # "package.module:function"

    @property
    def uses_token(self) -> bool:
        """Whether the login is a Microsoft Entra access token (fixed or from a provider)."""
        return self.access_token is not None or self.access_token_provider is not None

    def secrets(self) -> tuple[str, ...]:
        """The values no message may show: the password and the fixed token, when given."""
        return tuple(v for v in (self.password, self.access_token) if v)

    def token(self) -> str | None:
        """The access token for one new connection: the fixed one, or a fresh one from the
        provider, which is imported and called on every call. None without a token.

        Raises:
            ConfigError: the provider cannot be imported, raises, or returns no non-empty
                string; the message names option accessTokenProvider, never a token.
        """
        if self.access_token is not None:
            return self.access_token
        if self.access_token_provider is None:
            return None
        provider = _import_provider(self.access_token_provider)
        try:
            token = provider()
        except Exception as exc:
            raise ConfigError(
                f"option accessTokenProvider: {self.access_token_provider} raised "
                f"{type(exc).__name__} while making an access token; fix the function or its "
                "credentials (its error is this one's cause)"
            ) from exc
        if not isinstance(token, str) or not token.strip():
            got = "an empty string" if isinstance(token, str) else f"a {type(token).__name__}"
            raise ConfigError(
                f"option accessTokenProvider: {self.access_token_provider} returned {got}; "
                "it must return the access token as a non-empty str"
            )
        return token.strip()

    def to_options(self) -> dict[str, str]:
        """The credential options as text, for Spark's readers: hand on, never log or print."""
        values = {
            "user": self.user,
            "password": self.password,
            "accessToken": self.access_token,
            "accessTokenProvider": self.access_token_provider,
        }
        return {name: value for name, value in values.items() if value is not None}

    def __repr__(self) -> str:
        password = None if self.password is None else "<hidden>"
        token = None if self.access_token is None else "<hidden>"
        return (
            f"Credentials(user={self.user!r}, password={password}, access_token={token}, "
            f"access_token_provider={self.access_token_provider!r})"
        )


def _import_provider(spec: str) -> Callable[[], object]:
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"option accessTokenProvider: module {module_name} cannot be imported "
            f"({type(exc).__name__}); install it on the driver and every executor"
        ) from exc
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ConfigError(
            f"option accessTokenProvider: module {module_name} has no function {attribute}; "
            "give package.module:function naming a function that takes no argument"
        )
    return function  # type: ignore[no-any-return]


def parse_credentials(
    values: dict[str, str | None], backend: str, connection: ConnectionString | None
) -> Credentials:
    """Check the credential options against the backend and the connection string.

    `values` maps each name of CREDENTIAL_OPTIONS to its text or None (absent); the password
    and token are taken as given, not trimmed.

    Raises:
        ConfigError: a credential is empty, given for the emulator backend, given twice (an
            option and a connection-string key), or a token is mixed with another login or
            given for pymssql. Messages name options and keys, never a value.
    """
    given = {name: value for name, value in values.items() if value is not None}
    if not given:
        return Credentials()
    for name, value in given.items():
        if not value.strip():
            raise ConfigError(f"option {name} must not be empty; omit it instead")
    if backend == "emulator":
        raise ConfigError(
            f"option {sorted(given)[0]} is for backends mssql-python and pymssql; backend "
            "'emulator' opens the file and logs in to nothing: remove it"
        )
    creds = Credentials(
        user=given.get("user", "").strip() or None,
        password=given.get("password"),
        access_token=None if "accessToken" not in given else given["accessToken"].strip(),
        access_token_provider=given.get("accessTokenProvider", "").strip() or None,
    )
    _check_user(creds)
    _check_against_connection(creds, connection)
    if creds.uses_token:
        _check_token(creds, backend, connection)
    return creds


def _check_user(creds: Credentials) -> None:
    if creds.user is not None and (
        len(creds.user) > _MAX_USER or any(ord(c) < 0x20 or ord(c) == 0x7F for c in creds.user)
    ):
        raise ConfigError(
            f"option user must be a login name of at most {_MAX_USER} characters without "
            f"control characters (got {quoted(creds.user)})"
        )


def _check_against_connection(creds: Credentials, connection: ConnectionString | None) -> None:
    if connection is None:
        return
    for option, key in (("user", "uid"), ("password", "pwd")):
        if option in creds.to_options() and connection.get(key) is not None:
            raise ConfigError(
                f"option {option} and the connectionString key {key.upper()} both give the "
                f"login's {'name' if option == 'user' else 'password'}; give it once: remove "
                f"{key.upper()} from connectionString, or option {option}"
            )


def _check_token(creds: Credentials, backend: str, connection: ConnectionString | None) -> None:
    name = "accessToken" if creds.access_token is not None else "accessTokenProvider"
    if creds.access_token is not None and creds.access_token_provider is not None:
        raise ConfigError(
            "options accessToken and accessTokenProvider both give the access token; give one: "
            "accessTokenProvider for a token made fresh at every connection"
        )
    if backend == "pymssql":
        raise ConfigError(
            f"option {name} needs backend mssql-python: pymssql (FreeTDS) cannot send a "
            "Microsoft Entra access token; set backend=mssql-python, or log in with options "
            "user and password"
        )
    if creds.user is not None or creds.password is not None:
        raise ConfigError(
            f"option {name} is the login, so options user and password cannot be given with "
            "it; remove them, or remove the token to log in with a SQL login"
        )
    found = [k for k in _LOGIN_KEYS if connection is not None and connection.get(k) is not None]
    if found:
        keys = ", ".join(k.capitalize() for k in found)
        raise ConfigError(
            f"option {name} is the login, so the connectionString cannot also name one ({keys}); "
            "remove those keys from connectionString"
        )
    encrypt = None if connection is None else connection.get("encrypt")
    if encrypt is not None and encrypt.strip().lower() in _PLAIN:
        raise ConfigError(
            f"option {name} needs an encrypted connection, and connectionString says "
            f"Encrypt={encrypt.strip()}: the driver would send the token as it is; remove "
            "Encrypt (ODBC 18 encrypts by default) or write Encrypt=yes"
        )
    spec = creds.access_token_provider
    if spec is not None and not _PROVIDER.match(spec):
        raise ConfigError(
            f"option accessTokenProvider must be package.module:function (got {quoted(spec)}); "
            "name a function that takes no argument and returns the token as a str"
        )
