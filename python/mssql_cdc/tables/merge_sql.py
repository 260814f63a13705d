"""MERGE INTO by Spark SQL, its source a DataFrame registered as a temporary view.

Spark SQL's MERGE runs on classic and Spark Connect sessions alike; the `DeltaTable` merge
builder needs Delta's Connect server plugin (docs/decisions/0810-tables-written-by-sql.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["merge_into"]


def merge_into(target: str, source: DataFrame, *, on: str, clauses: Sequence[str]) -> None:
    """Run `MERGE INTO <target> t USING <source> s ON <on> <clauses...>`.

    `target` is the table's SQL name; `on` and the clauses name the target `t` and the source
    `s`. The view lives in the source's own session (in `foreachBatch`, the batch's), under a
    name no other call uses, and is dropped afterwards, also when the MERGE fails.
    """
    session = source.sparkSession
    view = f"mssql_cdc_merge_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    try:
        session.sql(
            f"MERGE INTO {target} t USING `{view}` s ON {on} " + " ".join(clauses)
        ).collect()
    finally:
        session.catalog.dropTempView(view)
