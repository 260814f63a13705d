"""The target side counts each row in the tile whose key range holds it, however many tiles.

The oracle is `in_range`, the Python key order the source side and narrowing use; the Spark
side must agree with it for composite keys with NULLs, for the contiguous tiles of a first
pass and for the scattered halves narrowing asks about.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise

from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from mssql_cdc.core.row_digest import TileDigest
from mssql_cdc.reconciliation.target_side import TargetRows
from mssql_cdc.reconciliation.tile_narrowing import KeyRange, in_range

SCHEMA = StructType([StructField("a", IntegerType()), StructField("b", StringType())])


def _expected(rows: list[tuple[object, ...]], ranges: list[KeyRange]) -> list[int]:
    counts: Counter[int] = Counter()
    for row in rows:
        for i, key_range in enumerate(ranges):
            if in_range(row, key_range):
                counts[i] += 1
                break
    return [counts[i] for i in range(len(ranges))]


def test_rows_are_counted_in_the_tile_holding_their_key_for_contiguous_and_scattered_ranges(
    spark: SparkSession,
) -> None:
    rng = random.Random(20261203)
    rows: list[tuple[object, ...]] = sorted(
        {(rng.choice([None, *range(30)]), rng.choice([None, *"abcdefg"])) for _ in range(400)},
        key=lambda r: tuple((v is not None, v) for v in r),
    )
    target = TargetRows(
        spark.createDataFrame(rows, SCHEMA), keys=["a", "b"], fields=SCHEMA.fields, time_zone="UTC"
    )
    try:
        for trial in range(6):
            cuts = sorted({(rng.randrange(30), rng.choice("abcdefg")) for _ in range(70)})
            bounds = [None, *cuts, None]
            ranges: list[KeyRange] = list(pairwise(bounds))
            if trial % 2:
                ranges = rng.sample(ranges, k=len(ranges) // 3)
            got = [d.rows for d in target.digests(ranges)]
            assert got == _expected(rows, ranges)
        assert target.digests([(None, None)])[0].rows == len(rows)
        assert target.digests([((5, "c"), (5, "c"))]) == [TileDigest(0, 0)]
    finally:
        target.release()
