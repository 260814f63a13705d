"""Small appends, keyed or not, to a local path Delta table, committed in process by deltalake.

A facts commit is a row or a few. Through Spark it costs a job for the rows and, for its
transaction key, Delta's reconstruction of the table's state: on a small
cluster several times the cost of the row, paid once per micro-batch. deltalake commits the
same actions from the driver: the rows' Parquet file, the key's SetTransaction and the
commitInfo's userMetadata. A key already recorded is skipped, as Spark's `txnVersion` is, and
two writers racing on one key cannot both commit: deltalake's conflict check fails a commit
whose own SetTransaction's app id appears in a commit that won the race, and the retry then
finds the key recorded (decision 1000).

Only a path on this driver's file system is written here: a URI's object store may lack the
atomic put-if-absent a commit needs without a lock provider, and a catalog name is Spark's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mssql_cdc.tables.reference import TableOutOfReach, is_local
from mssql_cdc.tables.refs import TableRef
from mssql_cdc.tables.retry import retry_on_conflict
from mssql_cdc.tables.shared_tables import using_table

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["append_rows", "columns_of", "writes_in_process"]


def writes_in_process(ref: TableRef) -> bool:
    """Whether `append_keyed_rows` may write `ref`: a path on this driver's file system."""
    return is_local(ref) and ref.location is not None and ref.location.startswith("/")


def columns_of(ref: TableRef) -> list[str]:
    """The column names of the table at `ref`'s path, read from its log.

    Raises:
        TableOutOfReach: as `reference.open_table`.
    """
    try:
        with using_table(ref) as table:
            return [field.name for field in table.schema().fields]
    except _errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot read the schema: {exc}") from exc


def append_rows(
    ref: TableRef,
    rows: Sequence[Mapping[str, Any]],
    *,
    key: tuple[str, int] | None,
    user_metadata: str | Mapping[str, Any] | None = None,
) -> bool:
    """Append `rows` (column name to value; a column left out is NULL) in one commit, under
    the Delta transaction key `key` (`txnAppId`, `txnVersion`) unless the table recorded that
    version or a later one for the app id; None appends without a key.

    Returns:
        True when this call committed the rows; False when the key was recorded already.
    Raises:
        TableOutOfReach: `ref` is not a local path, or deltalake cannot open, read or write the
            table (a writer feature it lacks); nothing was committed, so the caller may append
            through Spark under the same key.
    """
    if not writes_in_process(ref):
        raise TableOutOfReach(f"{ref}: only a local path is written in process")
    text = (
        user_metadata
        if user_metadata is None or isinstance(user_metadata, str)
        else json.dumps(user_metadata, separators=(",", ":"), allow_nan=False)
    )

    def commit() -> bool:
        from deltalake import CommitProperties, Transaction, write_deltalake
        from deltalake.exceptions import CommitFailedError

        try:
            with using_table(ref) as table:
                recorded = None if key is None else table.transaction_version(key[0])
                if key is not None and recorded is not None and int(recorded) >= key[1]:
                    return False
                data = _arrow_rows(table.schema().to_arrow(), rows)
                write_deltalake(
                    table,
                    data,
                    mode="append",
                    commit_properties=CommitProperties(
                        custom_metadata=_commit_info(text),
                        app_transactions=None if key is None else [Transaction(*key)],
                    ),
                )
        except CommitFailedError:
            raise  # a lost race: retried below, and the retry finds the key if the winner had it
        except _errors() as exc:
            raise TableOutOfReach(f"{ref}: deltalake cannot append: {exc}") from exc
        return True

    from deltalake.exceptions import CommitFailedError

    try:
        return retry_on_conflict(commit, what=f"{ref}: in-process append")
    except CommitFailedError as exc:  # past the retry budget; the caller's Spark append retries
        raise TableOutOfReach(f"{ref}: deltalake's commit kept failing: {exc}") from exc


def _commit_info(user_metadata: str | None) -> dict[str, Any]:
    """commitInfo fields as Spark writes them: deltalake writes no `txnId`, which the
    pre-flight's family cache needs to tell a commit from a rewritten one."""
    info: dict[str, Any] = {"txnId": str(uuid.uuid4())}
    if user_metadata is not None:
        info["userMetadata"] = user_metadata
    return info


def _arrow_rows(schema: Any, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    import pyarrow as pa

    target = pa.schema(schema)
    return pa.Table.from_pylist([dict(row) for row in rows], schema=target)


def _errors() -> tuple[type[BaseException], ...]:
    """What deltalake and pyarrow raise for a table they cannot read or write."""
    import pyarrow as pa
    from deltalake.exceptions import DeltaError

    return (DeltaError, OSError, ValueError, pa.ArrowException)
