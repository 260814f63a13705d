"""backfill() checks its arguments before it touches Spark, the facts or the source."""

from __future__ import annotations

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
