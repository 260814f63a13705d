"""The two server errors a source-table read meets through its isolation level, as this
library's own errors on every backend (docs/source-options.md, isolationLevel).

- 3952: SNAPSHOT isolation on a database that does not allow it. A ConfigError naming
  isolationLevel and the ALTER DATABASE statement that allows it.
- 1222: a READ COMMITTED read waited past its lock timeout for rows an open transaction
  holds. A LockTimeoutError naming lockTimeoutMs and the table.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mssql_cdc.errors import ConfigError, LockTimeoutError
from mssql_cdc.sqlserver.tsql.drivers import error_number

__all__ = ["LOCK_TIMEOUT", "SNAPSHOT_NOT_ALLOWED", "source_read_errors"]

SNAPSHOT_NOT_ALLOWED = 3952
"""Snapshot isolation transaction failed accessing database ... not allowed in this database."""
LOCK_TIMEOUT = 1222
"""Lock request time out period exceeded."""


def _number(exc: BaseException) -> int | None:
    number = getattr(exc, "number", None)  # the emulator's errors carry theirs
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    return error_number(exc)


@contextlib.contextmanager
def source_read_errors(
    *, table: str, lock_timeout_ms: int | None, database: str | None = None
) -> Iterator[None]:
    """Turn errors 3952 and 1222 of a read of `table` into ConfigError and LockTimeoutError."""
    try:
        yield
    except Exception as exc:  # re-raised; only 3952 and 1222 are turned into ours
        number = _number(exc)
        if number == SNAPSHOT_NOT_ALLOWED:
            name = f"[{database}]" if database else "[<database>]"
            raise ConfigError(
                "option isolationLevel=snapshot needs snapshot isolation on the database: run "
                f"ALTER DATABASE {name} SET ALLOW_SNAPSHOT_ISOLATION ON, or use "
                "isolationLevel=readCommitted"
            ) from exc
        if number == LOCK_TIMEOUT:
            waited = (
                "the server's lock timeout"
                if lock_timeout_ms is None
                else f"lockTimeoutMs={lock_timeout_ms}"
            )
            raise LockTimeoutError(
                f"reading {table} at isolationLevel=readCommitted waited longer than {waited} "
                "for rows an open transaction holds (SQL Server error 1222, Lock request time "
                "out period exceeded); let the writing transaction finish and run again, raise "
                "lockTimeoutMs, or read with isolationLevel=snapshot",
                table,
                lock_timeout_ms,
            ) from exc
        raise
