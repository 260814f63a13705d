"""Opening DB-API connections with `mssql-python` or `pymssql`, and running statements on them.

Both drivers are optional: each is imported when its first connection opens, and a missing
one is an ImportError naming the pip package. A `Session` renders statements for its driver's
parameter style and returns rows as dicts keyed by column name.
"""

from __future__ import annotations

import importlib
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from mssql_cdc.errors import ConfigError, ConnectError, quoted
from mssql_cdc.options import ConnectionString, Credentials
from mssql_cdc.sqlserver.tsql.statements import Paramstyle, Statement

__all__ = [
    "Cursor",
    "DbConnection",
    "Driver",
    "Session",
    "error_number",
    "import_driver",
    "open_session",
]

Driver = Literal["mssql-python", "pymssql"]

_PACKAGES: dict[Driver, tuple[str, str]] = {
    "mssql-python": ("mssql_python", "mssql-python>=1.5"),
    "pymssql": ("pymssql", "pymssql"),
}


class Cursor(Protocol):
    """The DB-API cursor calls the backends use."""

    @property
    def description(self) -> Sequence[Sequence[Any]] | None: ...
    def execute(self, operation: str, params: Any = ...) -> Any: ...
    def fetchmany(self, size: int = ...) -> Sequence[Sequence[Any]]: ...
    def fetchall(self) -> Sequence[Sequence[Any]]: ...
    def nextset(self) -> bool | None: ...
    def close(self) -> None: ...


class DbConnection(Protocol):
    def cursor(self) -> Any: ...
    def close(self) -> None: ...


def import_driver(driver: Driver) -> Any:
    """Import a driver module, or raise ImportError naming the pip package to install."""
    module, requirement = _PACKAGES[driver]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"backend '{driver}' needs the Python package {requirement.split('>')[0]}, which "
            f"is not installed: pip install '{requirement}' on the driver and every executor"
            + (", or use backend 'pymssql'" if driver == "mssql-python" else "")
        ) from exc


_SERVER = re.compile(r"^(?:tcp:)?([^,]+?)(?:,(\d{1,5}))?$", re.IGNORECASE)


def pymssql_arguments(
    connection: ConnectionString, connect_timeout: int, credentials: Credentials | None = None
) -> dict[str, Any]:
    """Turn a `Server`/`Database`/`UID`/`PWD`/`App` connection string into pymssql.connect's
    keyword arguments, with options `user` and `password` as `user` and `password` (options
    parsing refused them beside UID and PWD). Never echoes a value but the server's."""
    server = connection.get("server")
    if not server:
        raise ConfigError("option connectionString needs a Server=host[,port] key for pymssql")
    match = _SERVER.match(server.strip())
    if not match:
        raise ConfigError(
            f"option connectionString: Server {server!r} is not host, host,port or tcp:host,port"
        )
    args: dict[str, Any] = {
        "server": match.group(1),
        "login_timeout": connect_timeout,
        "autocommit": True,
        # FreeTDS's "auto" version tries 7.4 down to 7.0, each waiting login_timeout: seven
        # times connectTimeout. Every supported server speaks 7.4.
        "tds_version": "7.4",
    }
    if match.group(2):
        args["port"] = match.group(2)
    for key, name in (("database", "database"), ("uid", "user"), ("pwd", "password")):
        value = connection.get(key)
        if value is not None:
            args[name] = value
    if credentials is not None and credentials.user is not None:
        args["user"] = credentials.user
    if credentials is not None and credentials.password is not None:
        args["password"] = credentials.password
    app = connection.get("app")
    args["appname"] = app if app else "mssql-cdc"
    encrypt = connection.get("encrypt")
    if encrypt is not None:
        args["encryption"] = _pymssql_encryption(encrypt)
    return args


_ENCRYPTION = {
    "yes": "require",
    "true": "require",
    "mandatory": "require",
    "optional": "request",
    "no": "request",
    "false": "request",
}


def _pymssql_encryption(value: str) -> str:
    """FreeTDS's `encryption` for an ODBC `Encrypt` value. `no` still lets FreeTDS encrypt the
    login when the server offers it, as ODBC does; FreeTDS checks no certificate unless told to,
    so `TrustServerCertificate` needs no counterpart."""
    found = _ENCRYPTION.get(value.strip().lower())
    if found is None:
        raise ConfigError(
            f"option connectionString: Encrypt={value!r} cannot be used with pymssql; give "
            "yes, no or optional (strict, TDS 8.0, needs backend mssql-python)"
        )
    return found


SQL_COPT_SS_ACCESS_TOKEN = 1256
"""The ODBC pre-connect attribute that carries a Microsoft Entra access token."""


def access_token_struct(token: str) -> bytes:
    """The ODBC driver's access-token structure: a little-endian 4-byte length, then the token
    as UTF-16LE bytes (learn.microsoft.com/sql/connect/odbc/using-azure-active-directory)."""
    data = token.encode("utf-16-le")
    return struct.pack("<I", len(data)) + data


def mssql_python_arguments(
    connection: ConnectionString, connect_timeout: int, credentials: Credentials | None = None
) -> dict[str, Any]:
    """mssql-python connect()'s arguments but the connection string: options `user` and
    `password` as its `uid` and `pwd` keyword arguments (which it quotes itself), and an access
    token, fetched now (a provider is called once per connection), as the pre-connect
    attribute SQL_COPT_SS_ACCESS_TOKEN."""
    args: dict[str, Any] = {"autocommit": True, "timeout": connect_timeout}
    if credentials is None:
        return args
    if credentials.user is not None:
        args["uid"] = credentials.user
    if credentials.password is not None:
        args["pwd"] = credentials.password
    token = credentials.token()
    if token is not None:
        args["attrs_before"] = {SQL_COPT_SS_ACCESS_TOKEN: access_token_struct(token)}
    return args


def open_session(
    driver: Driver,
    connection: ConnectionString,
    *,
    connect_timeout: int,
    credentials: Credentials | None = None,
) -> Session:
    """Open a new autocommit connection (the reader only reads) and wrap it in a Session.

    `credentials` are passed as the driver's own arguments, never pasted into the connection
    string; an access token provider is called for this connection.

    Raises:
        ConfigError: the access token provider failed (the message names the option).
        ConnectError: the driver could not connect; the message names the server and what to
            check, never a secret, and the driver's error is its `__cause__`.
    """
    module = import_driver(driver)
    if driver == "mssql-python":
        arguments = mssql_python_arguments(connection, connect_timeout, credentials)
        sent = arguments.get("attrs_before", {}).get(SQL_COPT_SS_ACCESS_TOKEN)
        token = None if sent is None else sent[4:].decode("utf-16-le")
        try:
            conn = module.connect(connection.text, **arguments)
        except Exception as exc:
            raise connect_error(
                driver, connection, connect_timeout, exc, credentials, token
            ) from exc
        return Session(conn, "qmark", arrow=True)
    arguments = pymssql_arguments(connection, connect_timeout, credentials)
    try:
        conn = module.connect(**arguments)
    except Exception as exc:
        raise connect_error(driver, connection, connect_timeout, exc, credentials) from exc
    return Session(conn, "pyformat", arrow=False)


_LOGIN_FAILED = 18456
_SECRET_KEYS = ("pwd", "password")


def connect_error(
    driver: Driver,
    connection: ConnectionString,
    connect_timeout: int,
    exc: BaseException,
    credentials: Credentials | None = None,
    token: str | None = None,
) -> ConnectError:
    """The ConnectError for a driver's failed connect(): the server, the driver's reason with
    every secret value cut out (the connection string's, option password's, and the token
    sent, a provider's included), and what to check."""
    server = (connection.get("server") or connection.get("address") or "").strip()
    named = repr(server) if server else "(no Server key given)"
    reason = " ".join(str(exc).split())
    secrets = [v for k, v in connection.pairs if k.lower() in _SECRET_KEYS and v]
    if credentials is not None:
        secrets.extend(credentials.secrets())
    if token:
        secrets.append(token)
    for value in sorted(secrets, key=len, reverse=True):
        reason = reason.replace(value, "***").replace(" ".join(value.split()), "***")
    if error_number(exc) == _LOGIN_FAILED and token is not None:
        check = (
            "check the access token (option accessToken or what accessTokenProvider returns): "
            "that it is current, issued for https://database.windows.net/, and that its "
            "identity is a user of the Database the connection string names"
        )
    elif error_number(exc) == _LOGIN_FAILED:
        check = (
            "check the login (UID) and its password (PWD), or options user and password, and "
            "that the login may open the Database the connection string names"
        )
    else:
        check = (
            "check that the server is running and reachable from this machine at that host "
            "and port (a firewall, TCP enabled on the server, host,port written with a comma), "
            f"and raise option connectTimeout ({connect_timeout} s now) for a slow network"
        )
    return ConnectError(
        f"cannot connect to SQL Server {named} with backend '{driver}': "
        f"{quoted(reason, 300)}; {check}",
        server,
    )


class Session:
    """One connection and its parameter style; the only place statements are executed."""

    def __init__(self, connection: DbConnection, paramstyle: Paramstyle, *, arrow: bool) -> None:
        self.connection: DbConnection | None = connection
        self.paramstyle = paramstyle
        self.arrow = arrow  # the driver's cursor makes Arrow batches: arrow_batch(n)

    def execute(self, statement: Statement) -> Any:
        """Run `statement` on a new cursor and return the cursor, positioned on its rows."""
        if self.connection is None:
            raise RuntimeError("this SQL Server session is closed")
        text, params = statement.render(self.paramstyle)
        cursor = self.connection.cursor()
        if params is None:
            cursor.execute(text)
        else:
            cursor.execute(text, params)
        return cursor

    def rows(self, statement: Statement) -> list[dict[str, Any]]:
        """All rows of the first result set that has columns, as dicts keyed by column name."""
        cursor = self.execute(statement)
        try:
            while cursor.description is None:
                if not cursor.nextset():
                    return []
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def scalar(self, statement: Statement) -> Any:
        """The first column of the first row, or None when there is no row."""
        found = self.rows(statement)
        return next(iter(found[0].values())) if found else None

    def run(self, statement: Statement) -> None:
        """Run a statement that returns no rows (a SET)."""
        self.execute(statement).close()

    def __getstate__(self) -> object:
        # Nothing live crosses to an executor: a reader pickled with its session is a bug.
        raise TypeError(
            "a SQL Server session cannot be pickled; drop it in __getstate__ and open a new "
            "one where it is used"
        )

    def close(self) -> None:
        if self.connection is not None:
            connection, self.connection = self.connection, None
            connection.close()


_NUMBER_IN_TEXT = re.compile(r"\[SQL Server\][^\n]*?\((\d+)\)")
# mssql-python's messages carry the server's text but not its error number; these English
# texts identify the errors the backends act on (most specific first).
_KNOWN_TEXTS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), number)
    for pattern, number in (
        (r"Login failed for user", 18456),
        (r"VIEW SERVER STATE permission was denied", 300),
        (r"The SELECT permission was denied", 229),
        (r"Invalid object name", 208),
        (r"is not a recognized built-in function name", 195),
        (r"was deadlocked on .*resources", 1205),
        (r"Snapshot isolation transaction failed", 3952),
        (r"Lock request time out period exceeded", 1222),
        (r"is not currently available\. Please retry the connection later", 40613),
        (r"The service has encountered an error processing your request", 40197),
        (r"The service is currently busy\. Retry the request after 10 seconds", 40501),
        (r"Not enough resources to process request", 49918),
    )
)


_DB_LIB_MESSAGE = re.compile(r"DB-Lib error message (\d+)")


_GENERAL_SERVER_ERROR = 20018  # DB-Library's pointer to the server's own message


def _pymssql_number(number: int, message: object) -> int:
    """pymssql's number, unless its text shows the failure was DB-Library's own.

    pymssql numbers an error with the last server message the process received, however old,
    and appends DB-Library's messages to that message's text. Text before the first DB-Library
    message is the server's, so the number is its; without it, the first DB-Library number is
    the cause (a timeout after an old failed login would otherwise read as 18456), unless it
    is 20018, "General SQL Server error: Check messages from the SQL Server": then the server
    did answer, with the number pymssql gives (a message it has seen before loses its text).
    """
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    server_text, _, _ = text.partition("DB-Lib error message")
    found = _DB_LIB_MESSAGE.search(text)
    if found is None or server_text.strip() or int(found.group(1)) == _GENERAL_SERVER_ERROR:
        return number
    return int(found.group(1))


def error_number(exc: BaseException) -> int | None:
    """The SQL Server or DB-Library error number an exception carries, when it has one.

    pymssql puts `(number, message)` first in `args` (connect() wraps the pair in one more
    tuple). mssql-python has only message text: a "(229)" after the server's text when
    present, else one of a few known English server messages. A ConnectError answers with
    the number of the driver error it wraps.
    """
    if isinstance(exc, ConnectError) and exc.__cause__ is not None:
        return error_number(exc.__cause__)
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], tuple) and args[0]:
        args = args[0]  # connect() passes its (number, message) pair as one argument
    if args and isinstance(args[0], int) and not isinstance(args[0], bool):
        return _pymssql_number(args[0], args[1]) if len(args) > 1 else args[0]
    text = getattr(exc, "ddbc_error", None) or str(exc)
    match = _NUMBER_IN_TEXT.search(text)
    if match:
        return int(match.group(1))
    for pattern, number in _KNOWN_TEXTS:
        if pattern.search(text):
            return number
    return None


OpenSession = Callable[[], Session]
