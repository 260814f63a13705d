"""The emulator over the network: a TDS server that SQL Server drivers connect to.

`Emulator.serve()` and `mssql-cdc emulator serve` start one. The protocol and the statements it
answers live in C++ (`cpp/tds`, decision 0700); this module holds the handle a caller gets.
The server checks a SQL login's password against a salted PBKDF2 hash made here; the clear
password stays in the caller's handle, never in the file or the server (decision 1361). With
`access_token`, it also accepts that Microsoft Entra token over TLS, as the login; it gets only
the token's SHA-256 and expiry (decision 1386). The server survives its clients: a computing
query stops when its client cancels or leaves or the server stops (decision 1415), a request's
buffered rows are bounded (decision 1416), a connection must log in within 10 s (decision
1417), and a file that is no emulator database is refused at start (decision 1418). With
`log_statements`, it writes what clients send and the errors it returns, passwords masked
(decision 1421).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import os
import secrets
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import mssql_cdc._native as _native
from mssql_cdc.core import EndsWithBlock
from mssql_cdc.emulator.wire_faults import WireFault, wire_faults

__all__ = ["DEFAULT_LOGIN", "DEFAULT_MAX_CONNECTIONS", "ClientDriver", "TdsServer", "serve"]

ClientDriver = Literal["mssql-python", "pymssql", "python-tds", "jdbc"]

DEFAULT_MAX_CONNECTIONS = 64
"""Live connections one server accepts; one past it gets error 17809 at login and is closed."""

DEFAULT_LOGIN = "sa"
"""The SQL login a server accepts when `serve` is given none."""

# PBKDF2-HMAC-SHA256 of the password's UTF-8 bytes; each login pays this many rounds.
_HASH_ITERATIONS = 20_000


class TdsServer(EndsWithBlock):
    """A running TDS front end over one emulator file, until `stop()` (or the `with` block ends).

    Attributes:
        host: the address it listens on.
        port: the TCP port, chosen by the system when `serve` was given port 0.
        database: the database name clients see and may name in a login or `USE`.
        tls: whether it offers TLS (`serve(tls=True)`).
        certificate_pem: with TLS, its self-signed certificate as PEM (public; the key never
            leaves the server), for a client that verifies it; None without TLS.
    """

    def __init__(self, server: Any, login: str, password: str) -> None:
        """Use `serve()` or `Emulator.serve()`."""
        self._server: Any = server
        self.login: str = login
        self._password = password
        self.host: str = server.host
        self.port: int = server.port
        self.database: str = server.database
        pem: str = server.certificate_pem
        self.certificate_pem: str | None = pem or None
        self.tls: bool = self.certificate_pem is not None

    def connection_string(self, driver: ClientDriver) -> str:
        """A ready connection string for `driver`.

        `mssql-python` and `pymssql` get the ODBC-style form the library's `connectionString`
        option takes (`Server=host,port;Database=...;UID=...;PWD=...`). With TLS every form
        asks for encryption and trusts the self-signed certificate; without, mssql-python's
        says `Encrypt=no` (ODBC 18 encrypts by default). `python-tds` gets pymssql's form;
        `jdbc` gets Microsoft's JDBC URL.
        """
        if driver == "jdbc":
            return (
                f"jdbc:sqlserver://{self.host}:{self.port};databaseName={self.database};"
                f"user={self.login};password={self._password};encrypt={str(self.tls).lower()};"
                "trustServerCertificate=true"
            )
        odbc = (
            f"Server={self.host},{self.port};Database={self.database};"
            f"UID={self.login};PWD={self._password}"
        )
        if self.tls:
            return f"{odbc};Encrypt=yes;TrustServerCertificate=yes"
        if driver == "mssql-python":
            return f"{odbc};Encrypt=no;TrustServerCertificate=yes"
        return odbc

    def connect_kwargs(self, driver: Literal["pymssql", "python-tds"]) -> dict[str, Any]:
        """Keyword arguments for `pymssql.connect` or `pytds.connect` that reach this server.
        With TLS, pymssql's require encryption; python-tds encrypts only given a `cafile` (a
        file holding `certificate_pem`) and `validate_host=False`."""
        if driver == "pymssql":
            return {
                "server": self.host,
                "port": str(self.port),
                "user": self.login,
                "password": self._password,
                "database": self.database,
                "autocommit": True,
            } | ({"encryption": "require"} if self.tls else {})
        return {
            "dsn": self.host,
            "port": self.port,
            "user": self.login,
            "password": self._password,
            "database": self.database,
            "autocommit": True,
        }

    @property
    def password(self) -> str:
        """The login's password, for a client to connect with; never printed by `repr`."""
        return self._password

    def live_connections(self) -> int:
        """Connections open right now."""
        count: int = self._server.live_connections()
        return count

    def stop(self) -> None:
        """Close the listener and every connection, and wait for their threads; idempotent."""
        self._server.stop()

    def _end(self) -> None:  # the end of a `with` block
        self.stop()

    def __repr__(self) -> str:
        tls = ", tls" if self.tls else ""
        return f"TdsServer({self.host}:{self.port}, database={self.database!r}{tls})"


def serve(
    path: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    database: str | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    tls: bool = False,
    faults: Iterable[WireFault | Mapping[str, Any]] = (),
    login: str = DEFAULT_LOGIN,
    password: str | None = None,
    access_token: str | None = None,
    log_statements: str | os.PathLike[str] | bool = False,
) -> TdsServer:
    """Start a TDS server over the emulator file at `path` and return its handle.

    Results stream: the server sends each full packet while rows are made, and a client's
    cancel (ATTENTION) stops a result and is acknowledged. A query that computes without
    sending (a join, a sort) stops within a fraction of a second when its client cancels or
    leaves or the server stops; one that buffers more than 256 MiB of rows
    fails with SQL Server's error 701; a connection that has not logged in
    within 10 s is closed.

    Args:
        path: an emulator file (`Emulator.create`).
        host: an IPv4 address to listen on; keep 127.0.0.1 unless other machines must connect.
        port: the TCP port; 0 lets the system pick a free one (read it from the handle).
        database: the database name clients see; default the file's stem.
        max_connections: live connections accepted at once; one more gets SQL Server's error
            17809 at login.
        tls: offer TLS inside TDS, with a self-signed certificate for CN=localhost made now,
            valid one day and kept in memory: clients connect with `Encrypt=yes;
            TrustServerCertificate=yes` (or trust `certificate_pem`).
        faults: for tests only: errors, stalls, dropped connections and synthesized rows the
            server injects (`mssql_cdc.emulator.wire_faults`), as `WireFault`s or dicts.
        login: the SQL login clients name; the file's database users (`create_user`) may log
            in too, with the same password, and the logins `CREATE LOGIN` kept in the file
            with their own.
        password: the login's password; default a new random one, which the handle's
            connection strings carry (`TdsServer.password`). A wrong password or an unknown
            login gets SQL Server's error 18456.
        access_token: for tests of token logins: the one Microsoft Entra access token the
            server accepts (needs `tls`), in LOGIN7's FEDAUTH feature, as `login`. A JWT's
            `exp` claim is its expiry. A wrong or expired token gets error 18456. The server
            keeps only its SHA-256; the token is never printed.
        log_statements: write each login, SQL batch, RPC (with its parameters) and error
            returned, one line each with the connection's spid: True for stderr, or a file's
            path (appended to). Password literals (`CREATE LOGIN ... PASSWORD = '...'`,
            password parameters) are masked and LOGIN7's password is never written.

    Raises:
        FileNotFoundError: `path` does not exist.
        FileFormatError: `path` is no emulator database (`FormatVersionError`: one of another
            format version), refused before the server listens.
        OSError: the address cannot be bound (a port in use), or the `log_statements` file
            cannot be opened.
        ValueError: `host` is not an IPv4 address, a bound is out of range, or a fault is
            malformed.
    """
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is out of range; give 0 to 65535 (0 picks a free port)")
    if max_connections < 1:
        raise ValueError(f"max_connections {max_connections} must be at least 1")
    if not login:
        raise ValueError("login is empty; give the SQL login name clients connect as")
    if password is not None and not password:
        raise ValueError("password is empty; give one, or leave it out for a random one")
    token_check = None
    if access_token is not None:
        if not access_token.strip() or not tls:
            raise ValueError(
                "access_token needs tls=True and a non-empty token: drivers send a token only "
                "over an encrypted connection"
            )
        token = access_token.strip()
        token_check = (hashlib.sha256(token.encode("utf-8")).digest(), token_expiry(token))
    script = [fault.as_native() for fault in wire_faults(faults)]
    p = Path(path)
    name = database or p.stem
    secret = password if password is not None else secrets.token_urlsafe(18)
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), salt, _HASH_ITERATIONS)
    check = (login, salt, digest, _HASH_ITERATIONS)
    log_target = "-" if log_statements is True else os.fspath(log_statements or "")
    server = _native.tds.Server(
        str(p), host, port, name, max_connections, script, tls, check, token_check, log_target
    )
    if not _loopback(host):
        warnings.warn(
            f"the emulator's TDS server listens on {host}, reachable from other machines; "
            "give host='127.0.0.1' unless they must connect",
            UserWarning,
            stacklevel=2,
        )
    return TdsServer(server, login, secret)


def token_expiry(token: str) -> int | None:
    """The `exp` claim (Unix seconds) of a JWT `header.payload.signature`, or None when the
    token is not a JWT or has no integer `exp` (RFC 7519's expiration time claim)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, binascii.Error):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return exp if isinstance(exp, int) and not isinstance(exp, bool) else None


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
