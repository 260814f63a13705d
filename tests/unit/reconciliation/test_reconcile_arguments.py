"""`reconcile()`: keys and options are checked before anything is read or started."""

from __future__ import annotations

import pytest

from mssql_cdc import ConfigError, reconcile
from mssql_cdc.cli.session import session_on_first_use

OPTIONS = {"captureInstance": "dbo_t", "backend": "emulator", "emulatorPath": "/nowhere/e.db"}


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([], r"reconcile: keys=\[\] must be a non-empty list of column names"),
        ("id", r"reconcile: keys='id' must be a non-empty list of column names"),
        (["id", "id"], r"reconcile: key column 'id' is listed twice in keys=\['id', 'id'\]"),
        (["id", ""], r"reconcile: key '' must be a non-empty column name"),
    ],
    ids=["empty", "a string", "a duplicate", "an empty name"],
)
def test_keys_that_apply_changes_would_refuse_are_refused_naming_keys(
    keys: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        reconcile(object(), OPTIONS, "/lake/silver", keys=keys, control_table="/c")  # type: ignore[arg-type]


@pytest.mark.parametrize("options", [None, ["captureInstance"], "captureInstance=dbo_t"])
def test_options_that_are_not_a_mapping_are_refused_naming_options(options: object) -> None:
    spark, stop = session_on_first_use(verbose=False, app_name="never-started")
    try:
        with pytest.raises(ConfigError, match="reconcile: options must be a mapping"):
            reconcile(spark, options, "/lake/silver", control_table="/c")  # type: ignore[arg-type]
    finally:
        stop()
