"""The row digest of decision 1100, pinned against hashlib over text written out by hand."""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from decimal import Decimal

import pytest

from mssql_cdc.core.row_digest import MODULUS, TileDigest, digestible, row_digest, row_text


def _by_hand(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-16-le")).digest()[:8], "big")


def test_a_row_digest_is_sha256_of_its_marked_fields_in_utf16() -> None:
    row = [
        7,
        "Zoë",
        None,
        Decimal("0E-8"),
        True,
        date(2026, 1, 2),
        datetime(2026, 1, 2, 3, 4, 5, 6),
    ]
    text = (
        "\x027\x1f\x02Zoë\x1f\x01\x1f\x020.00000000\x1f\x021"
        "\x1f\x022026-01-02\x1f\x022026-01-02 03:04:05.000006"
    )
    assert row_text(row) == text
    assert row_digest(row) == _by_hand(text)


def test_null_and_empty_text_and_column_order_give_different_digests() -> None:
    assert row_digest([None]) != row_digest([""])
    assert row_digest([1, 2]) != row_digest([2, 1])


def test_a_tile_digest_does_not_depend_on_the_order_of_its_rows() -> None:
    rows = [[k, f"v{k}"] for k in range(50)]
    forward = TileDigest.of(row_digest(r) for r in rows)
    backward = TileDigest.of(row_digest(r) for r in reversed(rows))
    assert forward == backward
    assert forward.rows == 50
    assert forward.digest == sum(row_digest(r) for r in rows) % MODULUS


def test_removing_a_row_and_adding_it_back_is_the_same_digest() -> None:
    whole = TileDigest.of(row_digest([k]) for k in range(10))
    one = TileDigest(1, row_digest([3]))
    assert whole.minus(one).plus(one) == whole
    assert whole.minus(one) == TileDigest.of(row_digest([k]) for k in range(10) if k != 3)


@pytest.mark.parametrize(
    ("spark_type", "expected"),
    [
        ("INT", True),
        ("DECIMAL(12,2)", True),
        ("TIMESTAMP_NTZ", True),
        ("DOUBLE", False),
        ("BINARY", False),
    ],
)
def test_only_types_with_a_canonical_text_are_digestible(spark_type: str, expected: bool) -> None:
    assert digestible(spark_type) is expected


def test_a_float_has_no_canonical_text() -> None:
    with pytest.raises(TypeError, match="float"):
        row_digest([1.5])


def test_a_batch_digested_by_arrow_equals_its_rows_digested_one_by_one() -> None:
    import random

    import pyarrow as pa

    from mssql_cdc.sqlserver.emulated.tiles import batch_digests

    rng = random.Random(7)

    def maybe(value: object) -> object:
        return None if rng.random() < 0.2 else value

    rows = [
        (
            maybe(rng.randrange(-(2**63), 2**63)),
            maybe(rng.choice(["", "a", "Zoë", "𝄞", "x\u001fy"])),
            maybe(Decimal(rng.randrange(-(10**9), 10**9)).scaleb(-2)),
            maybe(Decimal(rng.randrange(0, 3)).scaleb(-8)),
            maybe(rng.random() < 0.5),
            maybe(date(2026, 1, 1 + rng.randrange(28))),
            maybe(datetime(2026, 1, 2, 3, 4, 5, rng.randrange(10**6))),
        )
        for _ in range(500)
    ]
    schema = pa.schema(
        [("a", pa.int64()), ("b", pa.string()), ("c", pa.decimal128(12, 2)),
         ("d", pa.decimal128(20, 8)), ("e", pa.bool_()), ("f", pa.date32()),
         ("g", pa.timestamp("us"))]
    )  # fmt: skip
    batch = pa.RecordBatch.from_pylist(
        [dict(zip(schema.names, r, strict=True)) for r in rows], schema=schema
    )
    assert batch_digests(batch) == [row_digest(list(r)) for r in rows]


def test_the_emulators_native_digest_of_known_rows_equals_sha256_by_hashlib() -> None:
    """The in-process backend's native digest (decision 1432) against hashlib over the row
    texts written out by hand, as the module docstring of core.row_digest lays them out."""
    import pyarrow as pa

    from mssql_cdc.sqlserver.emulated.tiles import batch_digests, batch_tile

    schema = pa.schema(
        [("a", pa.int64()), ("b", pa.string()), ("c", pa.decimal128(12, 2)), ("d", pa.bool_()),
         ("e", pa.date32()), ("f", pa.timestamp("us")), ("g", pa.int8())]
    )  # fmt: skip
    rows = [
        (7, "Zoë 𝄞", None, True, date(2026, 1, 2), datetime(2026, 1, 2, 3, 4, 5, 6), -8),
        (-12, "", Decimal("-1.50"), False, date(1970, 1, 1), datetime(1969, 12, 31, 23, 59), 0),
        (None, None, Decimal("0.05"), None, None, None, None),
    ]
    texts = [
        "\x027\x1f\x02Zoë 𝄞\x1f\x01\x1f\x021\x1f\x022026-01-02\x1f\x022026-01-02 03:04:05.000006"
        "\x1f\x02-8",
        "\x02-12\x1f\x02\x1f\x02-1.50\x1f\x020\x1f\x021970-01-01\x1f\x021969-12-31 23:59:00.000000"
        "\x1f\x020",
        "\x01\x1f\x01\x1f\x020.05\x1f\x01\x1f\x01\x1f\x01\x1f\x01",
    ]
    batch = pa.RecordBatch.from_pylist(
        [dict(zip(schema.names, r, strict=True)) for r in rows], schema=schema
    )
    expected = [_by_hand(t) for t in texts]
    assert batch_digests(batch) == expected
    assert batch_digests(batch.slice(1)) == expected[1:]
    assert batch_tile(batch) == TileDigest(3, sum(expected) % MODULUS)


def test_the_native_digest_refuses_a_batch_that_is_not_arrow() -> None:
    from mssql_cdc._native import emu

    with pytest.raises(TypeError, match="record batch"):
        emu.batch_tile([1, 2])
