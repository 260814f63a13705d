"""Keys of types whose order Python and Spark do not share with SQL Server (issue 34, item 3):
a chunked bootstrap, a chunked re-snapshot, silver and reconcile (equal, then with one
difference) end equal to the source, each key read once per snapshot (decisions 1330-1331).

SQL Server's orders, the oracle the key values are chosen against:
- uniqueidentifier orders by its last six bytes first, then bytes 8-9, 6-7, 4-5 and 0-3
  (https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/sql/comparing-guid-and-uniqueidentifier-values),
  so its text's order is not its order;
- datetimeoffset compares as UTC
  (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetimeoffset-transact-sql),
  so an earlier local time can be a later instant;
- date covers 0001-01-01 to 9999-12-31
  (https://learn.microsoft.com/en-us/sql/t-sql/data-types/date-transact-sql).
The expected tables are the rows the test inserted, in plain Python.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pymssql
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from mssql_cdc import apply_changes, reconcile, stream
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from tests.spark.support.backends import Backend, backend_options, server_of

START = datetime(2026, 9, 28, 13, 50)


def _guid(groups: tuple[int, int, int, int, int]) -> str:
    a, b, c, d, e = groups
    return f"{a:08X}-{b:04X}-{c:04X}-{d:04X}-{e:012X}"


# Each GUID differs from the next in one byte group, and text order disagrees with the
# server's: a larger first group with a smaller last group sorts first on the server.
GUIDS = [
    _guid((0xFFFFFFFF - i, 0x1000 * (i % 3), 0x0100 * (i % 5), 0x0001 * (i % 7), 15 - i))
    for i in range(14)
] + [
    "3AAAAAAA-BBBB-CCCC-DDDD-2EEEEEEEEEEE",
    "2AAAAAAA-BBBB-CCCC-DDDD-1EEEEEEEEEEE",
    "1AAAAAAA-BBBB-CCCC-DDDD-3EEEEEEEEEEE",
]
# Local times rise while the instants fall: the offsets grow faster than the clock.
OFFSETS = [
    datetime(2026, 1, 1, 10, i, tzinfo=timezone(timedelta(hours=i % 12 - 5))) for i in range(16)
]
DATES = [
    date(1, 1, 1),
    date(1, 1, 2),
    date(1899, 12, 31),
    date(1969, 12, 31),
    date(1970, 1, 1),
    date(1970, 1, 2),
    date(9999, 12, 30),
    date(9999, 12, 31),
    *[date(1900 + 7 * i, 1 + i % 12, 1) for i in range(9)],
]
KEYS: dict[str, list[Any]] = {
    "uniqueidentifier": GUIDS,
    "datetimeoffset(6)": OFFSETS,
    "date": DATES,
}


def _comparable(value: Any) -> Any:
    """A key as the test compares it: a GUID's text upper case, a time as its UTC instant,
    other text as it is (a character key must keep the server's spelling exactly)."""
    if isinstance(value, str) and len(value) == 36 and value.count("-") == 4:
        return str(uuid.UUID(value)).upper()
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.astimezone()
        return aware.astimezone(UTC)
    return value


class Keyed:
    """dbo.t (k <sql_type> PRIMARY KEY, v nvarchar(20)) streamed into bronze with chunked
    snapshots, silver applied from it."""

    def __init__(self, spark: SparkSession, root: Path, sql_type: str, backend: Backend) -> None:
        self.spark, self.root, self.minute = spark, root, 0
        self.emu = Emulator.create(root / "e.db", start=START)
        self.emu.create_table("dbo.t", {"k": sql_type, "v": "nvarchar(20)"}, primary_key="k")
        self.emu.enable_cdc("dbo.t")
        self.options = {**backend_options(self.emu.path, backend), "captureInstance": "dbo_t"}
        self.paths = {n: str(root / n) for n in ("bronze", "ckpt", "facts", "silver", "control")}

    def commit(self, *changes: tuple[Any, ...]) -> None:
        """Each change is (op, k, v), or ("update", new_k, v, old_k): an UPDATE of the key."""
        self.minute += 1
        rows: list[tuple[Any, ...]] = []
        for op, k, v, *old in changes:
            row = {"k": k} if op == "delete" else {"k": k, "v": v}
            rows.append((op, "dbo.t", row, {"k": old[0]}) if old else (op, "dbo.t", row))
        self.emu.commit(rows, at=START + timedelta(minutes=self.minute))

    def source(self) -> dict[Any, str]:
        return {_comparable(r["k"]): r["v"] for r in self.emu.rows("dbo.t")}

    def run(self) -> None:
        p = self.paths
        query = stream(self.spark, self.options).to_delta(
            p["bronze"], "keys", p["ckpt"], p["facts"],
            trigger={"availableNow": True}, bootstrap=True, snapshot="chunked",
        )  # fmt: skip
        assert query.awaitTermination(300)
        assert query.exception() is None

    def backfill(self) -> None:
        status = stream(self.spark, self.options).backfill(
            self.paths["bronze"], app_id="keys", facts_table=self.paths["facts"], chunk_rows=4
        )
        assert status["state"] == "done"
        assert (status["chunks_total"] or 0) >= 3  # several chunks, so bounds were compared

    def snapshot_reads(self) -> list[Counter[Any]]:
        """Per snapshot (its `_snapshot` LSN), how often each key was read into bronze."""
        rows = self.spark.read.format("delta").load(self.paths["bronze"]).collect()
        found: dict[str, Counter[Any]] = {}
        for r in rows:
            if r["_operation"] == 0:
                found.setdefault(r["_snapshot"], Counter())[_comparable(r["k"])] += 1
        return [found[s] for s in sorted(found)]

    def silver(self) -> dict[Any, str]:
        p = self.paths
        apply_changes(
            self.spark, p["bronze"], p["silver"], keys=["k"],
            control_table=p["control"], facts_table=p["facts"],
        )  # fmt: skip
        rows = self.spark.read.format("delta").load(p["silver"]).collect()
        assert len(rows) == len({_comparable(r["k"]) for r in rows})
        return {_comparable(r["k"]): r["v"] for r in rows}

    def reconcile(self) -> tuple[bool, list[Any], list[Any]]:
        found = reconcile(
            self.spark, self.options, self.paths["silver"],
            control_table=self.paths["control"], tiles=4,
        )  # fmt: skip
        return found.equal, list(found.missing), list(found.different)


def _story(
    spark: SparkSession, root: Path, sql_type: str, backend: Backend, keys: list[Any] | None = None
) -> None:
    keys = KEYS[sql_type] if keys is None else keys
    t = Keyed(spark, root, sql_type, backend)
    t.commit(*[("insert", k, f"v{i}") for i, k in enumerate(keys)])
    t.run()
    t.commit(("update", keys[3], "changed"), ("delete", keys[5], None))
    t.backfill()
    t.run()
    expected = {_comparable(k): f"v{i}" for i, k in enumerate(keys)}
    expected[_comparable(keys[3])] = "changed"
    del expected[_comparable(keys[5])]
    assert t.source() == expected  # the oracle agrees with the emulator's own table
    [bootstrap] = t.snapshot_reads()
    # the waves read after the delete: every key then present once, none twice
    assert bootstrap == Counter(dict.fromkeys(expected, 1))
    assert t.silver() == expected
    assert t.reconcile() == (True, [], [])

    p = t.paths
    stream(spark, t.options).resnapshot(
        p["bronze"], "keys", p["ckpt"], p["facts"], resnapshot_interval_days=0, snapshot="chunked"
    )
    t.run()
    t.backfill()
    t.run()
    _, again = t.snapshot_reads()
    assert again == Counter(dict.fromkeys(expected, 1))
    assert t.silver() == expected

    gone, changed = keys[0], keys[-1]
    spark.sql(f"UPDATE delta.`{p['silver']}` SET v = 'drifted' WHERE v = 'v{len(keys) - 1}'")
    spark.sql(f"DELETE FROM delta.`{p['silver']}` WHERE v = 'v0'")
    equal, missing, different = t.reconcile()
    assert not equal
    assert [_comparable(_from_json(k, sql_type)) for k in missing] == [_comparable(gone)]
    assert [_comparable(_from_json(k, sql_type)) for k in different] == [_comparable(changed)]


def _from_json(value: Any, sql_type: str) -> Any:
    """A reconcile result's key (JSON: times as UTC text) as the test's value."""
    if sql_type == "date":
        return date.fromisoformat(value)
    if sql_type.startswith("datetimeoffset"):
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value


# Each story takes a minute; uniqueidentifier, whose order differs most from Spark's, runs in
# every `make test`, the other types in `make test-long` (decision 1454).
@pytest.mark.parametrize(
    "sql_type",
    [k if k == "uniqueidentifier" else pytest.param(k, marks=pytest.mark.long) for k in KEYS],
)
def test_keys_the_server_orders_its_own_way_snapshot_once_and_reconcile_in_the_emulator(
    spark: SparkSession, tmp_path: Path, sql_type: str
) -> None:
    _story(spark, tmp_path, sql_type, "emulator")


# Character keys. SQL Server compares them under the column's collation
# (https://learn.microsoft.com/en-us/sql/relational-databases/collations/collation-and-unicode-support):
# _CI_ ignores case, _CS_ orders lower case before upper case of one letter, _BIN2 compares code
# points, and every collation ignores trailing spaces in = and <
# (https://learn.microsoft.com/en-us/troubleshoot/sql/database-design/sql-server-trailing-spaces).
# Spark's own order (code points, spaces counted) differs from each, so these keys put rows in
# other tiles unless the library compares by the collation (decision 1332).
CASED = ["a", "A", "b", "B", "ab", "aB", "Ab", "AB", "a b", "z", "Z", "0", "9z", "m", "M", "Mm"]
TEXT_KEYS: dict[str, list[str]] = {
    "nvarchar(20) COLLATE Latin1_General_CS_AS": CASED,
    "nvarchar(20) COLLATE Latin1_General_BIN2": [*CASED, "n", "N"],
}


@pytest.mark.parametrize(  # _BIN2 in `make test-long`: _CS_AS's case order is the harder one
    "sql_type", [k if "_CS_" in k else pytest.param(k, marks=pytest.mark.long) for k in TEXT_KEYS]
)
def test_text_keys_under_a_case_sensitive_or_binary_collation_snapshot_once_and_reconcile(
    spark: SparkSession, tmp_path: Path, sql_type: str
) -> None:
    _story(spark, tmp_path, sql_type, "emulator", TEXT_KEYS[sql_type])


def test_a_case_insensitive_key_keeps_the_servers_latest_spelling_one_row_per_key(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Under the default SQL_Latin1_General_CP1_CI_AS, 'n' and 'N ' are one key: the source
    cannot hold both. An UPDATE that respells a key's case or trailing spaces (which the
    emulator captures as a delete and an insert, decision 1346) and a delete named by another
    spelling leave silver with the server's spelling, one row per key; reconcile agrees."""
    t = Keyed(spark, tmp_path, "nvarchar(20)", "emulator")
    first = ["n", "a ", "b", "c", "Dd", "e", "F", "g", "h1", "i", "J", "k"]
    t.commit(*[("insert", k, f"v{i}") for i, k in enumerate(first)])
    t.run()
    t.commit(("update", "N", "cased", "n"))  # UPDATE t SET k = N'N', v = ... WHERE k = N'n'
    t.commit(("update", "a", "trimmed", "a "))
    t.commit(("delete", "B", None), ("update", "DD ", "by another spelling"))
    t.backfill()
    t.run()
    expected = {k: f"v{i}" for i, k in enumerate(first)}
    del expected["n"], expected["a "], expected["b"]
    expected |= {"N": "cased", "a": "trimmed", "Dd": "by another spelling"}
    assert t.source() == expected  # SQL Server keeps the stored spelling, not the predicate's
    assert t.silver() == expected
    assert t.reconcile() == (True, [], [])

    p = t.paths
    spark.sql(f"UPDATE delta.`{p['silver']}` SET v = 'drifted' WHERE k = 'J'")
    spark.sql(f"DELETE FROM delta.`{p['silver']}` WHERE k = 'N'")
    spark.sql(f"UPDATE delta.`{p['silver']}` SET k = 'K ' WHERE k = 'k'")  # one key, respelled
    equal, missing, different = t.reconcile()
    assert (equal, missing, different) == (False, ["N"], ["J", "k"])


def test_guid_keys_over_tds_snapshot_once_and_reconcile(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Over TDS the server compares `k < CAST(? AS uniqueidentifier)` in SqlGuid order too, so
    the bounds a T-SQL backend sends agree with the keys' order (decision 1325)."""
    _story(spark, tmp_path, "uniqueidentifier", "pymssql")


def test_silver_and_reconcile_refuse_a_datetime2_7_key_held_as_a_timestamp_naming_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    """datetime2(7) keeps 100 ns (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql)
    and Spark microseconds (spec 10 section 6.4): two keys 100 ns apart are two rows on the
    server and one key in Spark, so silver and reconcile refuse rather than key rows by it
    (decisions 1333, 1343); bronze records the column's SQL type, and silver writes nothing.
    Chunked over TDS: the in-process reader refuses to cut chunks by such a key."""
    t = Keyed(spark, tmp_path, "datetime2(7)", "pymssql")
    t.commit(*[("insert", datetime(2026, 1, 1, 10, i), f"v{i}") for i in range(12)])
    t.run()
    t.backfill()
    t.run()
    bronze = DeltaTable(t.paths["bronze"]).metadata().configuration
    assert json.loads(bronze["mssql_cdc.sql_types"])["k"] == "datetime2(7)"
    p = t.paths
    for refused in (
        t.silver,
        lambda: reconcile(spark, t.options, p["bronze"], against="bronze", tiles=4),
    ):
        with pytest.raises(ConfigError) as caught:
            refused()
        message = str(caught.value)
        assert "key column k is datetime2(7)" in message
        assert "columns option" in message
        assert "datetime2(6)" in message
    assert not Path(p["silver"]).exists()


def test_a_repair_of_a_case_sensitive_key_reads_or_carries_each_key_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A repair carries the equal tiles from bronze: each carried key's chunk is found in the
    collation's order (lower case first under _CS_AS), so no key is both carried and read, and
    none is left out (decisions 1330, 1332)."""
    t = Keyed(spark, tmp_path, "nvarchar(20) COLLATE Latin1_General_CS_AS", "emulator")
    t.commit(*[("insert", k, f"v{i}") for i, k in enumerate(CASED)])
    t.run()
    t.backfill()
    t.run()
    p = t.paths
    spark.sql(f"UPDATE delta.`{p['bronze']}` SET v = 'wrong' WHERE k = 'B' AND _operation = 0")
    found = reconcile(
        spark, t.options, p["bronze"], against="bronze", tiles=4, repair=True,
        app_id="keys", checkpoint=p["ckpt"], facts_table=p["facts"],
    )  # fmt: skip
    assert list(found.different) == ["B"]
    assert 0 < (found.repaired_tiles or 0) < 4  # some tiles carried, some read
    t.run()
    _, repaired = t.snapshot_reads()
    assert repaired == Counter(dict.fromkeys(CASED, 1))
    assert t.silver() == {k: f"v{i}" for i, k in enumerate(CASED)}


def test_reconcile_refuses_a_case_insensitive_key_holding_punctuation_naming_the_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Windows collations order punctuation their own way (`a-b` is not placed by code point),
    so a linguistic key holding `-` cannot be put in the server's tiles in Spark (decision
    1332): reconcile refuses, naming the column, the value and the collation."""
    t = Keyed(spark, tmp_path, "nvarchar(20)", "emulator")
    keys = ["a", "a-b", *"bcdefghijk"]
    t.commit(*[("insert", k, f"v{i}") for i, k in enumerate(keys)])
    t.run()
    t.backfill()
    t.run()
    assert len(t.silver()) == len(keys)
    with pytest.raises(ConfigError) as caught:
        t.reconcile()
    message = str(caught.value)
    assert "key column k holds 'a-b'" in message
    assert "SQL_Latin1_General_CP1_CI_AS" in message


# datetime2(7) text as CONVERT writes it, `yyyy-mm-dd hh:mi:ss.nnnnnnn`
# (https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql): fixed
# width, so its order is the value's. Pairs 100 ns apart, before 1970 and at the very end
# (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql); in the order
# SQL Server keeps them.
SEVEN_DIGIT_KEYS = [
    "0001-01-01 00:00:00.0000000",
    "0001-01-01 00:00:00.0000001",
    "1899-12-31 23:59:59.9999999",
    "1969-12-31 23:59:59.9999998",
    "1969-12-31 23:59:59.9999999",
    "1970-01-01 00:00:00.0000000",
    "1970-01-01 00:00:00.0000001",
    "2026-01-01 12:00:00.1234567",
    "2026-01-01 12:00:00.1234568",
    "2026-01-01 12:00:00.1234569",
    "2026-01-01 12:00:00.1234570",
    "9999-12-31 23:59:59.9999997",
    "9999-12-31 23:59:59.9999998",
    "9999-12-31 23:59:59.9999999",
]


def _over_tds(t: Keyed, *statements: str) -> None:
    """Run T-SQL through the emulator's TDS server (with pymssql, whichever driver the test
    reads with), each statement its own transaction: a
    Python value stops at microseconds, a text literal keeps the seventh digit."""
    server = server_of(t.root / "e.db")
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        for sql in statements:
            cursor.execute(sql)
            conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(  # pymssql in `make test-long`: the two drivers' wire reads of
    # datetime2(7) are compared with the in-process backend in the unit tier
    "backend",
    [pytest.param("pymssql", marks=pytest.mark.long), "mssql-python"],
)
def test_a_datetime2_7_key_declared_string_keeps_keys_100_ns_apart_through_every_step(
    spark: SparkSession, tmp_path: Path, backend: Backend
) -> None:
    """The remedy silver and reconcile name (decision 1344): declared STRING, a datetime2(7) key
    reads as its seven-digit text over TDS (`CONVERT(nvarchar(max), k)`), so keys 100 ns apart
    stay apart: a chunked bootstrap and re-snapshot read each key once, silver holds each, and
    reconcile finds the copy equal, then exactly the one row changed and the one removed."""
    keys = SEVEN_DIGIT_KEYS
    t = Keyed(spark, tmp_path, "datetime2(7)", backend)
    t.options["columns"] = "k STRING, v STRING"
    values = ", ".join(f"('{k}', 'v{i}')" for i, k in enumerate(keys))
    _over_tds(t, f"INSERT INTO dbo.t (k, v) VALUES {values}")
    t.run()
    _over_tds(
        t,
        f"UPDATE dbo.t SET v = 'changed' WHERE k = '{keys[8]}'",
        f"DELETE FROM dbo.t WHERE k = '{keys[12]}'",
    )
    t.backfill()
    t.run()
    expected = {k: f"v{i}" for i, k in enumerate(keys)}
    expected[keys[8]] = "changed"
    del expected[keys[12]]
    [bootstrap] = t.snapshot_reads()
    assert bootstrap == Counter(dict.fromkeys(expected, 1))
    assert t.silver() == expected
    assert t.reconcile() == (True, [], [])

    p = t.paths
    stream(spark, t.options).resnapshot(
        p["bronze"], "keys", p["ckpt"], p["facts"], resnapshot_interval_days=0, snapshot="chunked"
    )
    t.run()
    t.backfill()
    t.run()
    _, again = t.snapshot_reads()
    assert again == Counter(dict.fromkeys(expected, 1))
    assert t.silver() == expected

    # one key of each 100-ns pair: the other must stay equal
    spark.sql(f"UPDATE delta.`{p['silver']}` SET v = 'drifted' WHERE k = '{keys[9]}'")
    spark.sql(f"DELETE FROM delta.`{p['silver']}` WHERE k = '{keys[1]}'")
    assert t.reconcile() == (False, [keys[1]], [keys[9]])


def test_a_bronze_created_before_types_were_recorded_takes_new_batches_and_keeps_its_behaviour(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A bronze without `mssql_cdc.sql_types` (as one made before decision 1343) takes batches
    whose fields carry SQL types without a schema error, and silver keys its datetime2(7) rows
    by their microsecond value as before, unrefused (the values here differ by minutes; chunked
    over TDS, as the in-process reader refuses to cut chunks by such a key)."""
    t = Keyed(spark, tmp_path, "datetime2(7)", "pymssql")
    t.commit(*[("insert", datetime(2026, 1, 1, 10, i), f"v{i}") for i in range(12)])
    t.run()
    t.backfill()
    t.run()
    p = t.paths
    spark.sql(f"ALTER TABLE delta.`{p['bronze']}` UNSET TBLPROPERTIES ('mssql_cdc.sql_types')")
    assert "mssql_cdc.sql_types" not in DeltaTable(p["bronze"]).metadata().configuration
    t.commit(("insert", datetime(2026, 1, 1, 11), "later"))
    t.run()
    expected = {datetime(2026, 1, 1, 10, i): f"v{i}" for i in range(12)}
    expected[datetime(2026, 1, 1, 11)] = "later"
    assert t.silver() == {_comparable(k): v for k, v in expected.items()}
