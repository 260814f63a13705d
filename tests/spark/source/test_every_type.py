"""Every SQL Server type the source carries, through the three backends (issue 34).

One table holds a column of each type with edge values. Each backend reads it three ways: the
snapshot reader, the change stream (inserts, an update, a delete) and silver after `to_delta`.
The Spark schema must equal a literal written from the type table of docs/source.md, and the
values must equal an oracle computed here in plain Python from what was inserted, using SQL
Server's documented rounding rules. All three backends check against the same oracle, so they
also agree with each other. The four types without a Spark form are refused at load.

The emulator keeps microseconds, so a seventh fractional digit of `time(7)`, `datetime2(7)` and
`datetimeoffset(7)` cannot be written here (Python's own types stop at microseconds too).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import register, stream
from mssql_cdc.silver import apply_changes
from tests.spark.support.backends import BACKENDS, Backend, backend_options
from tests.support import emulator_profile

START = datetime(2026, 9, 28, 13, 50)

COLUMNS = {
    "id": "int",
    "c_bit": "bit",
    "c_tinyint": "tinyint",
    "c_smallint": "smallint",
    "c_int": "int",
    "c_bigint": "bigint",
    "c_dec38": "decimal(38,0)",
    "c_num38": "numeric(38,10)",
    "c_money": "money",
    "c_smallmoney": "smallmoney",
    "c_float": "float",
    "c_real": "real",
    "c_date": "date",
    "c_time": "time(7)",
    "c_datetime": "datetime",
    "c_smalldatetime": "smalldatetime",
    "c_datetime2": "datetime2(7)",
    "c_dto": "datetimeoffset(7)",
    "c_char": "char(10)",
    "c_varchar": "varchar(40)",
    "c_nchar": "nchar(10)",
    "c_nvarchar": "nvarchar(40)",
    "c_varchar_max": "varchar(max)",
    "c_nvarchar_max": "nvarchar(max)",
    "c_binary": "binary(8)",
    "c_varbinary": "varbinary(40)",
    "c_varbinary_max": "varbinary(max)",
    "c_guid": "uniqueidentifier",
    "c_xml": "xml",
}

# Written from the type table of docs/source.md (the source's contract), not from the code.
EXPECTED_SCHEMA = [
    ("id", "int"),
    ("c_bit", "boolean"),
    ("c_tinyint", "smallint"),  # 0..255 does not fit Spark's signed TINYINT
    ("c_smallint", "smallint"),
    ("c_int", "int"),
    ("c_bigint", "bigint"),
    ("c_dec38", "decimal(38,0)"),
    ("c_num38", "decimal(38,10)"),
    ("c_money", "decimal(19,4)"),
    ("c_smallmoney", "decimal(10,4)"),
    ("c_float", "double"),
    ("c_real", "float"),
    ("c_date", "date"),
    ("c_time", "string"),
    ("c_datetime", "timestamp_ntz"),
    ("c_smalldatetime", "timestamp_ntz"),
    ("c_datetime2", "timestamp_ntz"),
    ("c_dto", "timestamp"),
    ("c_char", "string"),
    ("c_varchar", "string"),
    ("c_nchar", "string"),
    ("c_nvarchar", "string"),
    ("c_varchar_max", "string"),
    ("c_nvarchar_max", "string"),
    ("c_binary", "binary"),
    ("c_varbinary", "binary"),
    ("c_varbinary_max", "binary"),
    ("c_guid", "string"),
    ("c_xml", "string"),
]

_MAX_COLUMNS = ("c_varchar_max", "c_nvarchar_max", "c_varbinary_max")
_GUID = "a1b2c3d4-e5f6-4a5b-8c9d-0e1f2a3b4c5d"

# What was written, per row id.
ROWS: dict[int, dict[str, Any]] = {
    1: {  # the top of every range
        "c_bit": True,
        "c_tinyint": 255,
        "c_smallint": 32767,
        "c_int": 2**31 - 1,
        "c_bigint": 2**63 - 1,
        "c_dec38": Decimal("9" * 38),
        "c_num38": Decimal("9" * 28 + "." + "9" * 10),
        "c_money": Decimal("922337203685477.5807"),
        "c_smallmoney": Decimal("214748.3647"),
        "c_float": 1.7976931348623157e308,
        "c_real": 3.4028234663852886e38,
        "c_date": date(9999, 12, 31),
        "c_time": time(23, 59, 59, 999999),
        "c_datetime": datetime(1998, 1, 1, 23, 59, 59, 999000),
        "c_smalldatetime": datetime(2079, 6, 6, 12, 34, 29, 998000),
        "c_datetime2": datetime(9999, 12, 31, 23, 59, 59, 999999),
        "c_dto": datetime(
            2026, 3, 1, 1, 30, 15, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30))
        ),
        "c_char": "abc",
        "c_varchar": "Crème brûlée",
        "c_nchar": "Zoë",
        "c_nvarchar": "naïve 😀 𝄞 ñ",
        "c_varchar_max": "x" * 9000,
        "c_nvarchar_max": "é" * 5000 + "😀" * 100,
        "c_binary": b"\x01\x02",
        "c_varbinary": b"\x00\xff\x10",
        "c_varbinary_max": bytes(range(256)) * 40,
        "c_guid": _GUID,
        "c_xml": '<order id="1"><item qty="2">Tea</item></order>',
    },
    2: {  # the bottom of every range, and empty values that are not NULL
        "c_bit": False,
        "c_tinyint": 0,
        "c_smallint": -32768,
        "c_int": -(2**31),
        "c_bigint": -(2**63),
        "c_dec38": Decimal("-" + "9" * 38),  # not -Decimal(...): that rounds to 28 digits
        "c_num38": Decimal("-" + "9" * 28 + "." + "9" * 10),
        "c_money": Decimal("-922337203685477.5808"),
        "c_smallmoney": Decimal("-214748.3648"),
        "c_float": -2.2250738585072014e-308,
        "c_real": -1.1754943508222875e-38,
        "c_date": date(1, 1, 1),
        "c_time": time(0, 0),
        "c_datetime": datetime(1753, 1, 1),
        "c_smalldatetime": datetime(1900, 1, 1),
        "c_datetime2": datetime(1, 1, 1),
        "c_dto": datetime(2026, 6, 15, 8, 0, tzinfo=timezone(timedelta(hours=-7))),
        "c_char": "",
        "c_varchar": "",
        "c_nchar": "",
        "c_nvarchar": "",
        "c_varchar_max": "",
        "c_nvarchar_max": "",
        "c_binary": b"",
        "c_varbinary": b"",
        "c_varbinary_max": b"",
        "c_guid": "00000000-0000-0000-0000-000000000000",
        "c_xml": "<note>empty</note>",
    },
    3: {name: None for name in COLUMNS if name != "id"},  # NULL in every nullable column
    4: {  # the rounding rules
        "c_bit": True,
        "c_tinyint": 7,
        "c_smallint": -1,
        "c_int": 0,
        "c_bigint": 1,
        "c_dec38": Decimal("12345678901234567890123456789012345678"),
        "c_num38": Decimal("-1234567890123456789012345678.0123456789"),
        "c_money": Decimal("0.0001"),
        "c_smallmoney": Decimal("-0.0001"),
        "c_float": 0.1,
        "c_real": 0.1,
        "c_date": date(2024, 2, 29),
        "c_time": time(12, 0, 0, 5),
        "c_datetime": datetime(1998, 1, 1, 23, 59, 59, 995000),
        "c_smalldatetime": datetime(2007, 5, 8, 12, 59, 59, 998000),
        "c_datetime2": datetime(2026, 9, 28, 14, 0, 0, 1),
        "c_dto": datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=14))),
        "c_char": "0123456789",
        "c_varchar": "plain",
        "c_nchar": "𝄞",
        "c_nvarchar": "Ελληνικά",
        "c_varchar_max": "y" * 8001,
        "c_nvarchar_max": "ü" * 4001,
        "c_binary": bytes(range(8)),
        "c_varbinary": bytes([0]) * 40,
        "c_varbinary_max": b"\xab" * 8001,
        "c_guid": str(uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")),
        "c_xml": "<r><c>é</c></r>",
    },
}

# The second commit: an update of row 4 that leaves the (max) columns alone, a delete of row
# 2 and an insert of row 5.
UPDATE_4 = {
    "c_int": 42,
    "c_datetime": datetime(1998, 1, 1, 23, 59, 59, 992000),
    "c_smalldatetime": datetime(2007, 5, 8, 12, 35, 29, 999000),
    "c_dto": datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=-12))),
    "c_nvarchar": "changed ✓",
}
ROW_5 = {
    **ROWS[4],
    "c_datetime": datetime(1998, 1, 1, 23, 59, 59, 991000),
    "c_real": 16777217.0,
    "c_guid": _GUID.upper(),
}


def _round_datetime(value: datetime) -> datetime:
    """datetime keeps 1/300 s shown as .000, .003 or .007: .999 rounds to the next second,
    .995-.998 to .997, .992-.994 to .993, .990-.991 to .990
    (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime-transact-sql, 'Rounding
    of datetime fractional second precision')."""
    ms = value.microsecond // 1000
    tens, last = divmod(ms, 10)
    shown = {0: 0, 1: 0, 2: 3, 3: 3, 4: 3, 5: 7, 6: 7, 7: 7, 8: 7, 9: 10}[last]
    return value.replace(microsecond=0) + timedelta(milliseconds=tens * 10 + shown)


def _round_smalldatetime(value: datetime) -> datetime:
    """29.998 seconds or less round down to the minute, 29.999 or more up
    (https://learn.microsoft.com/en-us/sql/t-sql/data-types/smalldatetime-transact-sql)."""
    minute = value.replace(second=0, microsecond=0)
    return minute + timedelta(minutes=1) if value - minute >= timedelta(seconds=29.999) else minute


def _real(value: float) -> float:
    """real is a 4-byte IEEE float (https://learn.microsoft.com/en-us/sql/t-sql/data-types/float-and-real-transact-sql)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def expected(written: Mapping[str, Any]) -> dict[str, Any]:
    """What Spark must show for a written row, computed without the library."""
    out: dict[str, Any] = {}
    for name, value in written.items():
        sql_type = COLUMNS[name]
        if value is None:
            out[name] = None
        elif sql_type == "real":
            out[name] = _real(value)
        elif sql_type == "time(7)":
            out[name] = value.strftime("%H:%M:%S.%f") + "0"  # HH:MM:SS.fffffff
        elif sql_type == "datetime":
            out[name] = _round_datetime(value)
        elif sql_type == "smalldatetime":
            out[name] = _round_smalldatetime(value)
        elif sql_type.startswith("datetimeoffset"):
            # The instant; Spark's session zone is UTC, so TIMESTAMP collects as naive UTC.
            out[name] = value.astimezone(UTC).replace(tzinfo=None)
        elif sql_type in ("char(10)", "nchar(10)"):
            # Fixed length: padded with spaces to n (n UTF-16 units for nchar)
            # (https://learn.microsoft.com/en-us/sql/t-sql/data-types/char-and-varchar-transact-sql).
            units = len(value.encode("utf-16-le")) // 2
            out[name] = value + " " * (10 - units)
        elif sql_type == "binary(8)":
            # Padded with 0x00 to n (https://learn.microsoft.com/en-us/sql/t-sql/data-types/binary-and-varbinary-transact-sql).
            out[name] = value + b"\x00" * (8 - len(value))
        elif sql_type == "uniqueidentifier":
            out[name] = str(uuid.UUID(value)).upper()
        else:
            out[name] = value
    return out


def _comparable(row: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name in COLUMNS:
        value = row[name]
        out[name] = bytes(value) if isinstance(value, bytearray) else value
    return out


def _differences(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> list[str]:
    """Column-level differences, readable when a big value differs."""
    if len(got) != len(want):
        return [f"{len(got)} rows, expected {len(want)}"]
    out = []
    for g, w in zip(got, want, strict=True):
        for name in w:
            if g.get(name) != w[name]:
                shown, wanted = str(g.get(name))[:80], str(w[name])[:80]
                out.append(
                    f"row {w.get('id')} op {w.get('_operation')} {name}: {shown} != {wanted}"
                )
    return out


def _schema(df_schema: Any) -> list[tuple[str, str]]:
    return [
        (f.name, f.dataType.simpleString()) for f in df_schema.fields if not f.name.startswith("_")
    ]


def _build(path: Path) -> Any:
    emu = emulator_profile.create(path, start=START.isoformat())
    emu.create_table("dbo.every_type", COLUMNS, primary_key="id")
    emu.enable_cdc("dbo.every_type")
    emu.commit(
        [("insert", "dbo.every_type", {"id": i, **row}) for i, row in ROWS.items()],
        at=(START + timedelta(minutes=1)).isoformat(),
    )
    emulator_profile.wait_for_capture(emu, (START + timedelta(minutes=1)).isoformat())
    return emu


def _second_commit(emu: Any) -> None:
    when = (START + timedelta(minutes=2)).isoformat()
    emu.commit(
        [
            ("update", "dbo.every_type", {"id": 4, **UPDATE_4}),
            ("delete", "dbo.every_type", {"id": 2}),
            ("insert", "dbo.every_type", {"id": 5, **ROW_5}),
        ],
        at=when,
    )
    emulator_profile.wait_for_capture(emu, when)


def _current() -> list[dict[str, Any]]:
    rows = {1: ROWS[1], 3: ROWS[3], 4: {**ROWS[4], **UPDATE_4}, 5: ROW_5}
    return [{"id": i, **expected(r)} for i, r in sorted(rows.items())]


def _changes() -> list[dict[str, Any]]:
    """The change rows in stream order: the first commit's inserts, then the update's two
    images, the delete and the insert. The update's before-image holds NULL in the (max)
    columns the update left alone; the delete holds the deleted values
    (https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql,
    'Large object data types')."""
    out = [{"_operation": 2, "id": i, **expected(r)} for i, r in sorted(ROWS.items())]
    before = {"_operation": 3, "id": 4, **expected(ROWS[4])}
    before.update(dict.fromkeys(_MAX_COLUMNS))
    out += [
        before,
        {"_operation": 4, "id": 4, **expected({**ROWS[4], **UPDATE_4})},
        {"_operation": 1, "id": 2, **expected(ROWS[2])},
        {"_operation": 2, "id": 5, **expected(ROW_5)},
    ]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_type_reads_the_same_through_snapshot_stream_and_silver_on_every_backend(
    spark: SparkSession, tmp_path: Path, backend: Backend
) -> None:
    register(spark)
    emu = _build(tmp_path / "e.db")
    options = {**backend_options(emu.path, backend), "captureInstance": "dbo_every_type"}

    snapshot = spark.read.format("mssql_cdc_snapshot").options(**options).load()
    assert _schema(snapshot.schema) == EXPECTED_SCHEMA
    got = sorted((_comparable(r.asDict()) for r in snapshot.collect()), key=lambda r: r["id"])
    want = [{"id": i, **expected(r)} for i, r in sorted(ROWS.items())]
    assert not _differences(got, want), _differences(got, want)

    bronze, facts, ckpt = (str(tmp_path / n) for n in ("bronze", "facts", "ckpt"))
    for run in ("bootstrap", "changes"):  # the snapshot, then the second commit's changes
        if run == "changes":
            _second_commit(emu)
        query = stream(spark, options).to_delta(
            bronze, "every-type", ckpt, facts, trigger={"availableNow": True}, bootstrap=True
        )
        assert query.awaitTermination(300)
        assert query.exception() is None

    changes = spark.readStream.format("mssql_cdc").options(**options).load()
    assert _schema(changes.schema) == EXPECTED_SCHEMA
    name = f"every_type_{backend.replace('-', '_')}"
    query = (
        changes.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "ckpt-memory"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    rows = [r.asDict() for r in spark.sql(f"SELECT * FROM {name}").collect()]
    rows.sort(key=lambda r: (r["_start_lsn"], r["_seqval"], r["_operation"]))
    got = [{"_operation": r["_operation"], **_comparable(r)} for r in rows]
    assert not _differences(got, _changes()), _differences(got, _changes())

    silver, control = str(tmp_path / "silver"), str(tmp_path / "control")
    apply_changes(spark, bronze, silver, keys=["id"], control_table=control, facts_table=facts)
    table = spark.read.format("delta").load(silver)
    assert _schema(table.schema) == EXPECTED_SCHEMA
    got = sorted((_comparable(r.asDict()) for r in table.collect()), key=lambda r: r["id"])
    assert not _differences(got, _current()), _differences(got, _current())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sql_type", ["sql_variant", "geography", "geometry", "hierarchyid"])
def test_a_type_without_a_spark_form_is_refused_at_load_naming_the_column_and_the_remedy(
    spark: SparkSession, tmp_path: Path, backend: Backend, sql_type: str
) -> None:
    """docs/source.md: sql_variant, geography, geometry and hierarchyid have no Spark type;
    the source refuses them when it loads, before reading a row."""
    register(spark)
    emu = emulator_profile.create(tmp_path / "e.db", start=START.isoformat())
    emu.create_table("dbo.odd", {"id": "int", "shape": sql_type}, primary_key="id")
    emu.enable_cdc("dbo.odd")
    emu.commit(
        [("insert", "dbo.odd", {"id": 1, "shape": b"\x01"})],
        at=(START + timedelta(minutes=1)).isoformat(),
    )
    options = {**backend_options(emu.path, backend), "captureInstance": "dbo_odd"}
    for source in ("mssql_cdc", "mssql_cdc_snapshot"):
        reader = spark.readStream if source == "mssql_cdc" else spark.read
        # Spark wraps the source's ValueError in its own exception.
        with pytest.raises(Exception, match=f"column 'shape' has type {sql_type}") as refused:
            reader.format(source).options(**options).load().schema  # noqa: B018
        text = str(refused.value)
        assert "ValueError" in text or "ConfigError" in text, text
        assert f"column 'shape' has type {sql_type}" in text, text
        for remedy in ("columns option", "nvarchar(max)", "varbinary(max)"):
            assert remedy in text, text
