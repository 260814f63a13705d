"""A child process that appends facts rows with its own local Spark: another writer in another
JVM, whose commit this process's Delta log cache has never seen.

Run as `python -m tests.spark.support.facts_child ARGS.json`; ARGS.json holds `warehouse`,
`facts` (a path) and `rows` (column -> value; times as ISO text).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import TimestampNTZType

from mssql_cdc.spark import local_session


def append_rows(spark: SparkSession, facts: str, given: list[dict[str, Any]]) -> None:
    """A plain Delta append of `given` rows to the facts table at `facts` (no library call)."""
    schema = spark.read.format("delta").load(facts).schema
    rows = []
    for values in given:
        row = []
        for field in schema.fields:
            value = values.get(field.name)
            if value is not None and isinstance(field.dataType, TimestampNTZType):
                value = datetime.fromisoformat(value)
            row.append(value)
        rows.append(tuple(row))
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(facts)


def main(args_file: str) -> int:
    args = json.loads(Path(args_file).read_text())
    spark = local_session("mssql-cdc-facts-child", warehouse=args["warehouse"], driver_memory="1g")
    append_rows(spark, args["facts"], args["rows"])
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
