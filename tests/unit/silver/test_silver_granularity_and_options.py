"""apply_changes' granularity and options are checked before Spark is touched, naming the
argument or option that is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from mssql_cdc import apply_changes
from mssql_cdc.errors import ConfigError


def call(**extra: Any) -> None:
    apply_changes(
        None,  # type: ignore[arg-type]  # never reached: the arguments are checked first
        "lake.bronze_orders",
        "lake.silver_orders",
        keys=["id"],
        control_table="ops.control",
        facts_table="ops.facts",
        **extra,
    )


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"granularity": "row"}, "granularity='row' is not one of 'key', 'commit'"),
        ({"granularity": "KEY"}, "granularity='KEY' is not one of"),
        ({"granularity": None}, "granularity=None is not one of"),
        ({"options": ["versionAsOf", 3]}, "options=['versionAsOf', 3] must be a dict"),
        ({"options": {"readChangeFeed": "true"}}, "option 'readChangeFeed' is not a bronze"),
        ({"options": {3: 1}}, "option 3 is not a bronze reader option"),
        ({"options": {"versionAsOf": "3"}}, "option versionAsOf='3' must be a whole number"),
        ({"options": {"versionAsOf": True}}, "option versionAsOf=True must be a whole number"),
        ({"options": {"versionAsOf": -1}}, "option versionAsOf=-1 must be a whole number"),
        ({"options": {"versionAsOf": 2.0}}, "option versionAsOf=2.0 must be a whole number"),
        (
            {"options": {"versionAsOf": 1, "VERSIONASOF": 2}},
            "option versionAsOf is given twice",
        ),
    ],
    ids=lambda v: str(v) if isinstance(v, str) else None,
)
def test_a_bad_granularity_or_option_is_a_config_error_naming_it(
    extra: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match="apply_changes") as caught:
        call(**extra)
    assert says in str(caught.value)


def test_the_known_option_names_are_matched_ignoring_case_as_spark_reader_options_are() -> None:
    # Spark matches data source option names case-insensitively
    # (https://spark.apache.org/docs/latest/sql-data-sources-generic-options.html); the call
    # then gets past every argument check and stops at the missing session.
    with pytest.raises(ConfigError, match="SparkSession"):
        call(options={"VersionAsOf": 0}, granularity="commit")
