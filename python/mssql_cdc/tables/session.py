"""The Spark session a public entry point is handed, checked before it is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["check_session", "kind_of"]


def check_session(spark: object, *, argument: str = "spark") -> SparkSession:
    """Return `spark` when it is a SparkSession, classic or Spark Connect.

    Raises:
        ConfigError: `spark` is anything else; the message names `argument`.
    """
    from pyspark.sql import SparkSession

    # Spark Connect's session is its own class, whose module is imported only when it is used.
    connect = any(
        c.__name__ == "SparkSession" and c.__module__.startswith("pyspark.sql.connect")
        for c in type(spark).__mro__
    )
    if isinstance(spark, SparkSession) or connect:
        return spark  # type: ignore[return-value]
    raise ConfigError(
        f"{argument} must be a SparkSession (got {kind_of(spark)}); pass the active session, "
        "such as SparkSession.builder.getOrCreate() or mssql_cdc.spark.local_session()"
    )


def kind_of(value: object) -> str:
    """How a message names what a caller passed: "None", or "a <type name>"."""
    return "None" if value is None else f"a {type(value).__name__}"
