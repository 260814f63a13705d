"""`reconcile(repair=...)`: the arguments a repair needs are checked before anything is read
(no Spark session is touched: the checks come first)."""

from __future__ import annotations

from typing import Any

import pytest

from mssql_cdc import ConfigError, reconcile

OPTIONS = {"captureInstance": "dbo_t", "backend": "emulator", "emulatorPath": "/nowhere/e.db"}
STREAM = {"app_id": "orders-v1", "checkpoint": "/lake/ckpt", "facts_table": "/lake/facts"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repair": "yes", "against": "bronze", **STREAM}, "repair must be True or False"),
        (
            {"repair": True, "control_table": "/lake/control", **STREAM},
            "repair=True repairs bronze, and silver follows bronze",
        ),
        (
            {"repair": True, "against": "bronze", "app_id": "orders-v1"},
            "repair=True needs the stream's checkpoint, facts_table",
        ),
        (
            {"repair": True, "against": "bronze", "checkpoint": "/c", "facts_table": "/f"},
            "facts_table needs app_id",
        ),
    ],
    ids=["not a bool", "a silver target", "no checkpoint or facts", "no app id"],
)
def test_a_repair_without_what_it_needs_is_refused_naming_it(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        reconcile(object(), OPTIONS, "/lake/target", **kwargs)  # type: ignore[arg-type]


def test_a_repair_refusal_says_what_to_do_instead() -> None:
    with pytest.raises(ConfigError) as refused:
        reconcile(object(), OPTIONS, "/lake/silver", control_table="/c", repair=True, **STREAM)  # type: ignore[arg-type]
    assert "then run apply_changes" in str(refused.value)
