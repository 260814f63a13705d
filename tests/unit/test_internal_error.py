"""A broken rule of the library's own raises InternalError, which is no ConfigError."""

from __future__ import annotations

import pickle
from datetime import datetime
from typing import Any, cast

import pytest

from mssql_cdc.errors import ConfigError, InternalError, MssqlCdcError
from mssql_cdc.facts import snapshot_rows
from mssql_cdc.tables import writes


def test_the_message_says_what_happened_and_asks_for_a_report() -> None:
    error = InternalError("t: the snapshot_plan row was not found after writing it")
    text = str(error)
    assert text.startswith("t: the snapshot_plan row was not found after writing it; ")
    assert "this is a bug in mssql-cdc: please report it" in text
    assert isinstance(error, MssqlCdcError)
    assert not isinstance(error, ValueError | ConfigError)  # nothing the caller passed is wrong


def test_it_pickles_with_its_message_once() -> None:
    error = InternalError("t: a bootstrap snapshot opens generation 0, not 2")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is InternalError
    assert str(again) == str(error)
    assert str(again).count("please report it") == 1


def test_a_bootstrap_row_of_a_later_generation_is_an_internal_error() -> None:
    # Only the library builds completion rows, always with the generation it snapshotted.
    with pytest.raises(InternalError, match="a bootstrap row belongs to generation 0") as raised:
        snapshot_rows.snapshot_completion_row(
            "bootstrap", app_id="orders", generation=2, target="t",
            snapshot_lsn="0x0000002A000001F00003", commit_ts=None, rows=0, started_at=None,
            duration_ms=None, written_at=datetime(2026, 10, 1, 12),
        )  # fmt: skip
    assert not isinstance(raised.value, ConfigError)


def test_an_idempotent_append_without_a_key_is_an_internal_error() -> None:
    # Keys come from facts.keys, which checks the app_id and the version; the DataFrame is not
    # reached, so none is needed.
    df = cast(Any, None)
    with pytest.raises(InternalError, match="was given an empty txnAppId"):
        writes.append_idempotent(df, "/tmp/bronze", "", 0)
    with pytest.raises(InternalError, match="was given txnVersion=-1"):
        writes.append_idempotent(df, "/tmp/bronze", "orders", -1)
