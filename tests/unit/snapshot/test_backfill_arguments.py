"""backfill() checks its arguments before it touches Spark, the facts or the source."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from mssql_cdc.options.config import SourceConfig
from mssql_cdc.snapshot.backfill import backfill

CONFIG = SourceConfig.from_options({"captureInstance": "dbo_orders", "backend": "mssql-python",
                                    "connectionString": "Server=x;Database=y"})  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"chunk_rows": 0}, "chunk_rows=0"),
        ({"chunk_rows": True}, "chunk_rows=True"),
        ({"chunk_rows": 2.5}, "chunk_rows=2.5"),
        ({"max_waves": -1}, "max_waves=-1"),
        ({"max_seconds": 0}, "max_seconds=0"),
        ({"max_seconds": float("nan")}, "max_seconds=nan"),
        ({"min_headroom_hours": -0.5}, "min_headroom_hours=-0.5"),
        ({"min_headroom_hours": False}, "min_headroom_hours=False"),
        ({"target_wave_seconds": 0}, "target_wave_seconds=0"),
        ({"target_wave_seconds": -3}, "target_wave_seconds=-3"),
        ({"target_wave_seconds": float("inf")}, "target_wave_seconds=inf"),
        ({"target_wave_seconds": "60"}, "target_wave_seconds='60'"),
        ({"target_wave_seconds": True}, "target_wave_seconds=True"),
        ({"app_id": ""}, "app_id=''"),
        ({"app_id": "a#b"}, "app_id='a#b'"),
        ({"facts_table": ""}, "facts_table=''"),
        ({"facts_table": "bronze.orders"}, "same table"),
    ],
    ids=lambda value: str(value),
)
def test_a_bad_argument_is_a_value_error_naming_it(arguments: dict[str, Any], named: str) -> None:
    call: dict[str, Any] = {"app_id": "orders-v1", "facts_table": "ops.facts", **arguments}
    with pytest.raises(ValueError, match=r"pass|same table|app_id|must be") as refused:
        backfill(None, CONFIG, "bronze.orders", **call)  # type: ignore[arg-type]
    assert named in str(refused.value)


@pytest.mark.parametrize(
    ("arguments", "says", "allowed"),
    [
        ({"chunk_rows": 2**31}, "chunk_rows=2147483648", "an integer from 1 to 2,147,483,647"),
        ({"max_waves": 10**30}, f"max_waves={10**30}", "an integer from 1 to 2,147,483,647"),
        ({"max_seconds": 31_536_001}, "max_seconds=31536001", "above 0 up to 31,536,000"),
        ({"min_headroom_hours": 874_914}, "min_headroom_hours=874914", "from 0 up to 874,913"),
        (
            {"target_wave_seconds": 31_536_001},
            "target_wave_seconds=31536001",
            "above 0 up to 31,536,000",
        ),
    ],
    ids=lambda value: str(value),
)
def test_a_number_past_its_upper_bound_is_refused_naming_the_range(
    arguments: dict[str, Any], says: str, allowed: str
) -> None:
    call: dict[str, Any] = {"app_id": "orders-v1", "facts_table": "ops.facts", **arguments}
    with pytest.raises(ValueError, match="pass None or") as refused:
        backfill(None, CONFIG, "bronze.orders", **call)  # type: ignore[arg-type]
    assert says in str(refused.value)
    assert allowed in str(refused.value)


class PastTheChecks(Exception):
    pass


def test_the_largest_numbers_pass_the_argument_check(monkeypatch: pytest.MonkeyPatch) -> None:
    def reached(*args: object) -> None:
        raise PastTheChecks

    # The module, not the package's `backfill` function of the same name.
    backfill_module = importlib.import_module("mssql_cdc.snapshot.backfill")
    monkeypatch.setattr(backfill_module, "snapshot_facts", reached)
    call: dict[str, Any] = {
        "app_id": "orders-v1",
        "facts_table": "ops.facts",
        "chunk_rows": 2**31 - 1,
        "max_waves": 2**31 - 1,
        "max_seconds": 31_536_000,
        "min_headroom_hours": 874_913,
        "target_wave_seconds": 31_536_000,
    }
    with pytest.raises(PastTheChecks):  # the first step after the checks reads the facts
        backfill(None, CONFIG, "bronze.orders", **call)  # type: ignore[arg-type]
