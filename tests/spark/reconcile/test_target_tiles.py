"""The target side counts each row in the tile whose key range holds it, however many tiles.

The oracle is `in_range`, the Python key order the source side and narrowing use; the Spark
side must agree with it for composite keys with NULLs, for the contiguous tiles of a first
pass and for the scattered halves narrowing asks about.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from decimal import Decimal
from itertools import pairwise

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BooleanType,
    DecimalType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

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


def _by_hand(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-16-le")).digest()[:8], "big")


def test_a_tiles_digest_and_each_keys_digest_are_sha256_sums_computed_by_hand(
    spark: SparkSession,
) -> None:
    """Each row's digest is the first 8 bytes of SHA-256 over its text in UTF-16LE, and a
    tile's the sum modulo 2**64 (core.row_digest's docstring); the target side sums it in parts
    (decision 1433), so high bits and carries between the parts must come out whole."""
    schema = StructType(
        [StructField("k", IntegerType()), StructField("s", StringType()),
         StructField("m", DecimalType(12, 2)), StructField("f", BooleanType())]
    )  # fmt: skip
    rows = [
        (k, f"v{k} é𝄞" if k % 3 else None, Decimal(k * 37) / 100, k % 2 == 0) for k in range(200)
    ]
    by_hand = {
        (k,): _by_hand(
            f"\x02{k}\x1f"
            + ("\x01" if s is None else f"\x02{s}")
            + f"\x1f\x02{m:.2f}\x1f\x02{int(f)}"
        )
        for k, s, m, f in rows
    }
    target = TargetRows(
        spark.createDataFrame(rows, schema), keys=["k"], fields=schema.fields, time_zone="UTC"
    )
    try:
        ranges: list[KeyRange] = [(None, 50), (50, 150), (150, None)]
        expected = [
            TileDigest(len(ds), sum(ds) % 2**64)
            for ds in (
                [d for (k,), d in by_hand.items() if k < 50],
                [d for (k,), d in by_hand.items() if 50 <= k < 150],
                [d for (k,), d in by_hand.items() if k >= 150],
            )
        ]
        assert target.digests(ranges) == expected
        assert target.keyed((None, None)) == by_hand
    finally:
        target.release()
