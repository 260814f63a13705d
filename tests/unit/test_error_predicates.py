"""`is_data_loss` and `is_schema_changed`: one chain walk, the same rules for both errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import mssql_cdc
from mssql_cdc.errors import (
    DataLossError,
    SchemaChangedError,
    StreamFailedError,
    is_data_loss,
    is_schema_changed,
)


class StreamingQueryException(Exception):
    """Named as Spark's: it carries a worker's error back as text only."""


class PythonException(Exception):
    """Named as Spark's other wrapper of a Python worker's error."""


def raised_from(outer: Exception, inner: Exception) -> Exception:
    """`outer` as `raise outer from inner` leaves it."""
    outer.__cause__ = inner
    return outer


def raised_during(outer: Exception, inner: Exception) -> Exception:
    """`outer` as raising it inside `except` of `inner` leaves it."""
    outer.__context__ = inner
    return outer


SCHEMA = SchemaChangedError("column 'qty' changed from int to bigint", "dbo_orders")
LOSS = DataLossError("changes were purged by CDC cleanup", "dbo_orders")


@pytest.mark.parametrize(
    "exc",
    [
        SCHEMA,
        raised_from(StreamFailedError("stream orders failed", "orders-v1", "dbo_orders"), SCHEMA),
        raised_during(RuntimeError("while stopping"), SCHEMA),
        StreamingQueryException("[STREAM_FAILED] ... mssql_cdc.errors.SchemaChangedError: ..."),
        PythonException("Traceback ... SchemaChangedError: column 'qty' changed"),
        raised_from(RuntimeError("outer"), PythonException("... SchemaChangedError ...")),
    ],
    ids=["itself", "cause", "context", "streaming-query", "python-exception", "wrapped-cause"],
)
def test_a_schema_change_is_recognised_itself_in_its_chain_and_through_spark(
    exc: BaseException,
) -> None:
    assert is_schema_changed(exc) is True
    assert is_data_loss(exc) is False


@pytest.mark.parametrize(
    "exc",
    [
        LOSS,
        RuntimeError("SchemaChangedError in a plain error's text is not Spark's wrapper"),
        StreamingQueryException("[STREAM_FAILED] DataLossError: changes were purged"),
        raised_from(StreamFailedError("stream orders failed"), LOSS),
    ],
    ids=["data-loss", "plain-text", "wrapped-loss", "loss-cause"],
)
def test_what_is_no_schema_change_is_false(exc: BaseException) -> None:
    assert is_schema_changed(exc) is False


@pytest.mark.parametrize("predicate", [is_data_loss, is_schema_changed])
def test_both_predicates_end_on_a_cycle_in_the_chain(
    predicate: Callable[[BaseException], bool],
) -> None:
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first
    assert predicate(first) is False


@pytest.mark.parametrize("value", [None, "SchemaChangedError", 3, SchemaChangedError])
def test_is_schema_changed_of_what_is_no_exception_is_false(value: object) -> None:
    assert is_schema_changed(value) is False  # type: ignore[arg-type]


def test_is_schema_changed_is_exported_where_is_data_loss_is() -> None:
    assert mssql_cdc.is_schema_changed is is_schema_changed
    assert {"is_data_loss", "is_schema_changed"} <= set(mssql_cdc.__all__)
    assert {"is_data_loss", "is_schema_changed"} <= set(mssql_cdc.errors.__all__)
