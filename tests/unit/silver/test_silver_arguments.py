"""apply_changes refuses bad arguments before it touches Spark, naming what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from mssql_cdc import apply_changes
from mssql_cdc.errors import ConfigError

GOOD: dict[str, Any] = {
    "bronze": "lake.bronze_orders",
    "target": "lake.silver_orders",
    "keys": ["id"],
    "control_table": "ops.control",
    "facts_table": "ops.facts",
}


def call(**changes: Any) -> None:
    args = {**GOOD, **changes}
    apply_changes(
        None,  # type: ignore[arg-type]  # never reached: the arguments are checked first
        args["bronze"],
        args["target"],
        keys=args["keys"],
        control_table=args["control_table"],
        facts_table=args["facts_table"],
        capture_instance=args.get("capture_instance"),
    )


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"bronze": ""}, "bronze=''"),
        ({"target": 7}, "target=7"),
        ({"control_table": None}, "control_table=None"),
        ({"facts_table": "  "}, "facts_table='  '"),
        ({"target": "lake.bronze_orders"}, "bronze and target are the same table"),
        ({"target": "`lake`.Bronze_Orders"}, "bronze and target are the same table"),
        ({"facts_table": "ops . control"}, "control_table and facts_table are the same table"),
        ({"target": "lake.silver orders"}, "target='lake.silver orders' is not a valid table"),
        ({"facts_table": "ops.control"}, "control_table and facts_table are the same table"),
        ({"keys": []}, "keys=[] must be a non-empty list"),
        ({"keys": "id"}, "keys='id' must be a non-empty list"),
        ({"keys": ["id", "id"]}, "key column 'id' is listed twice"),
        ({"keys": ["id", ""]}, "key '' must be a non-empty column name"),
        ({"capture_instance": ""}, "capture_instance='' must be a non-empty string"),
    ],
    ids=lambda v: str(v) if isinstance(v, str) else None,
)
def test_a_bad_argument_is_a_value_error_naming_it(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match="apply_changes") as caught:
        call(**changes)
    assert isinstance(caught.value, ConfigError)
    assert says in str(caught.value)


def test_apply_changes_and_its_result_type_are_exported() -> None:
    import mssql_cdc

    assert {"apply_changes", "ApplyResult"} <= set(mssql_cdc.__all__)
    assert set(mssql_cdc.ApplyResult.__annotations__) == {
        "rebuilt",
        "applied_lsn",
        "finalized_until",
        "bronze_found",
    }
