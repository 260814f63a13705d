"""Hand-built bronze, facts and control tables for silver's tests, and the LATEST oracle.

The builder plays a source table under CDC: it keeps the table's rows (`source`, the SOURCE
oracle) and writes what the stream, snapshots and recovery would write to bronze and facts.
Nothing here imports the silver code under test.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

Key = Any
Image = dict[str, Any]

CAPTURED = (("id", "INT"), ("name", "STRING"), ("qty", "INT"))
BRONZE_COLUMNS = (
    ("_capture_instance", "STRING"),
    ("_start_lsn", "STRING"),
    ("_seqval", "STRING"),
    ("_operation", "INT"),
    ("_command_id", "INT"),
    ("_commit_ts", "TIMESTAMP_NTZ"),
    *CAPTURED,
    ("_batch_id", "BIGINT"),
    ("_snapshot", "STRING"),
    ("_chunk", "INT"),
)
FACTS_COLUMNS = (
    ("app_id", "STRING"),
    ("generation", "INT"),
    ("batch_id", "BIGINT"),
    ("rows", "BIGINT"),
    ("min_lsn", "STRING"),
    ("max_lsn", "STRING"),
    ("min_commit_ts", "TIMESTAMP_NTZ"),
    ("max_commit_ts", "TIMESTAMP_NTZ"),
    ("deletes", "BIGINT"),
    ("inserts", "BIGINT"),
    ("updates", "BIGINT"),
    ("started_at", "TIMESTAMP_NTZ"),
    ("duration_ms", "BIGINT"),
    ("read_seconds", "DOUBLE"),
    ("read_mb", "DOUBLE"),
    ("retention_watermark_ts", "TIMESTAMP_NTZ"),
    ("retention_headroom_hours", "DOUBLE"),
    ("event", "STRING"),
    ("lost_from_ts", "TIMESTAMP_NTZ"),
    ("lost_to_ts", "TIMESTAMP_NTZ"),
    ("source_max_commit_ts", "TIMESTAMP_NTZ"),
    ("capture_lag_seconds", "DOUBLE"),
    ("ingestion_lag_seconds", "DOUBLE"),
    ("end_lsn", "STRING"),
    ("end_commit_ts", "TIMESTAMP_NTZ"),
    ("detail", "STRING"),
    ("target", "STRING"),
    ("written_at", "TIMESTAMP_NTZ"),
)
CONTROL_COLUMNS = (
    ("table_name", "STRING"),
    ("finalized_until", "TIMESTAMP_NTZ"),
    ("end_lsn", "STRING"),
    ("end_commit_ts", "TIMESTAMP_NTZ"),
    ("updated_at", "TIMESTAMP_NTZ"),
    ("applied_lsn", "STRING"),
    ("snapshot_lsn", "STRING"),
    ("open_snapshot_lsn", "STRING"),
    ("snapshot_wave", "INT"),
)
T0 = datetime(2026, 11, 1)


def lsn_text(n: int) -> str:
    return f"0x{n:020X}"


def create(spark: SparkSession, path: str, columns: Iterable[tuple[str, str]], kind: str) -> None:
    builder = DeltaTable.createIfNotExists(spark).location(path)
    for name, sql_type in columns:
        builder = builder.addColumn(name, sql_type)
    builder.property("mssql_cdc.kind", kind).execute()


def schema(columns: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"{n} {t}" for n, t in columns)


@dataclass
class Tx:
    """One source transaction: its rows share one _start_lsn; seqval and command id grow."""

    source: SourceTable
    lsn: int
    changes: list[Image] = field(default_factory=list)

    def _row(self, op: int, image: Image) -> None:
        step = len(self.changes) + 1
        self.changes.append(
            {
                **image,
                "_operation": op,
                "_seqval": lsn_text(self.lsn * 1000 + step),
                "_command_id": step,
            }
        )

    def insert(self, image: Image) -> None:
        assert image["id"] not in self.source.rows, image
        self.source.rows[image["id"]] = dict(image)
        self._row(2, image)

    def update(self, key: Key, **values: Any) -> None:
        """An UPDATE; a new `id` moves the row to another key (3 on the old, 4 on the new)."""
        old = self.source.rows.pop(key)
        new = {**old, **values}
        assert new["id"] == key or new["id"] not in self.source.rows, new
        self.source.rows[new["id"]] = new
        seq = len(self.changes) + 1
        for op, image in ((3, old), (4, new)):  # one update: same seqval and command id
            self.changes.append(
                {
                    **image,
                    "_operation": op,
                    "_seqval": lsn_text(self.lsn * 1000 + seq),
                    "_command_id": seq,
                }
            )

    def delete(self, key: Key) -> None:
        self._row(1, self.source.rows.pop(key))


class SourceTable:
    """A source table under CDC: `rows` is SOURCE; commits go to bronze only when `capture`."""

    def __init__(self, spark: SparkSession, root: str, *, ci: str = "dbo_orders") -> None:
        self.spark, self.ci = spark, ci
        self.bronze, self.facts = f"{root}/bronze", f"{root}/facts"
        self.control, self.silver = f"{root}/control", f"{root}/silver"
        self.rows: dict[Key, Image] = {}
        self.next_lsn = 0x10
        self.pending: list[dict[str, Any]] = []
        self.batch = 0
        create(spark, self.bronze, BRONZE_COLUMNS, "bronze")

    def ts(self, lsn: int) -> datetime:
        return T0 + timedelta(seconds=lsn)

    def take_lsn(self) -> int:
        self.next_lsn += 7
        return self.next_lsn

    @contextmanager
    def commit(self, *, captured: bool = True) -> Iterator[Tx]:
        """A transaction; its rows go to the next bronze batch unless purged (captured=False)."""
        tx = Tx(self, self.take_lsn())
        yield tx
        if captured:
            for row in tx.changes:
                self.pending.append(self._bronze_row(row, tx.lsn, batch=self.batch))

    def _bronze_row(self, row: dict[str, Any], lsn: int, **extra: Any) -> dict[str, Any]:
        out = {
            "_capture_instance": self.ci,
            "_start_lsn": lsn_text(lsn),
            "_commit_ts": self.ts(lsn),
            "_seqval": None,
            "_command_id": None,
            "_batch_id": None,
            "_snapshot": None,
            "_chunk": None,
        }
        out.update(row)
        if "batch" in extra:
            out["_batch_id"] = extra["batch"]
        for name in ("_snapshot", "_chunk"):
            if name in extra:
                out[name] = extra[name]
        return out

    def flush(self, rng: random.Random | None = None) -> None:
        """Append the pending change rows as one micro-batch, in an arbitrary order."""
        if rng is not None:
            rng.shuffle(self.pending)
        self._append(self.pending)
        self.pending = []
        self.batch += 1

    def _append(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        names = [n for n, _ in BRONZE_COLUMNS]
        df = self.spark.createDataFrame(
            [tuple(r[n] for n in names) for r in rows], schema(BRONZE_COLUMNS)
        )
        df.write.format("delta").mode("append").save(self.bronze)

    def late_chunk(self, snapshot: str, chunk: int, stamp: int, rows: list[Image]) -> None:
        """Append one chunk of a chunked snapshot whose rows were read at `stamp` earlier."""
        self._append(
            [
                self._bronze_row({**r, "_operation": 0}, stamp, _snapshot=snapshot, _chunk=chunk)
                for r in rows
            ]
        )

    def whole_snapshot(self, *, rows: bool = True) -> str:
        """A full snapshot of SOURCE at a new LSN S (op-0 rows, _snapshot = S); returns S."""
        lsn = self.take_lsn()
        if rows:
            self._append(
                [
                    self._bronze_row({**r, "_operation": 0}, lsn, _snapshot=lsn_text(lsn))
                    for r in self.rows.values()
                ]
            )
        return lsn_text(lsn)

    def chunk_rows(self, snapshot: str, chunk: int, lo: int | None, hi: int | None) -> int:
        """Append one chunk of a chunked snapshot, read now at stamp L; returns L."""
        stamp = self.take_lsn()
        inside = [
            r
            for k, r in self.rows.items()
            if k is not None and (lo is None or k >= lo) and (hi is None or k < hi)
        ]
        if lo is None:
            inside += [r for k, r in self.rows.items() if k is None]
        self._append(
            [
                self._bronze_row({**r, "_operation": 0}, stamp, _snapshot=snapshot, _chunk=chunk)
                for r in inside
            ]
        )
        return stamp

    def event(
        self,
        event: str,
        lsn: str,
        *,
        max_lsn: str | None = None,
        detail: dict[str, Any] | None = None,
        rows: int = 0,
    ) -> None:
        """Append one facts event row for this bronze, as recovery or backfill() writes it."""
        create(self.spark, self.facts, FACTS_COLUMNS, "facts")
        values: dict[str, Any] = {n: None for n, _ in FACTS_COLUMNS}
        values.update(
            app_id="orders",
            generation=0,
            rows=rows,
            min_lsn=lsn,
            max_lsn=max_lsn or lsn,
            end_lsn=lsn,
            event=event,
            target=self.bronze,
            detail=json.dumps(detail, separators=(",", ":")) if detail else None,
            written_at=datetime(2026, 11, 2),
        )
        df = self.spark.createDataFrame(
            [tuple(values[n] for n, _ in FACTS_COLUMNS)], schema(FACTS_COLUMNS)
        )
        df.write.format("delta").mode("append").save(self.facts)

    def bronze_verdict(self, finalized_until: datetime, end_lsn: str) -> None:
        """Store bronze's verdict in the control table, as finalization.advance would."""
        create(self.spark, self.control, CONTROL_COLUMNS, "control")
        table = DeltaTable.forPath(self.spark, self.control)
        row = (
            self.bronze,
            finalized_until,
            end_lsn,
            finalized_until,
            datetime(2026, 11, 2),
            None,
            None,
            None,
            None,
        )
        src = self.spark.createDataFrame([row], schema(CONTROL_COLUMNS))
        (
            table.alias("t")
            .merge(src.alias("s"), "t.table_name = s.table_name")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    def bronze_rows(self) -> list[dict[str, Any]]:
        return [r.asDict() for r in self.spark.read.format("delta").load(self.bronze).collect()]

    def silver_rows(self) -> dict[Key, Image]:
        rows = self.spark.read.format("delta").load(self.silver).collect()
        out = {r["id"]: {n: r[n] for n, _ in CAPTURED} for r in rows}
        assert len(out) == len(rows), "silver holds a key twice"
        return out

    def silver_version(self) -> int:
        return int(DeltaTable.forPath(self.spark, self.silver).history(1).first()["version"])


def apply_order(row: dict[str, Any]) -> tuple[Any, ...]:
    """(_start_lsn, _command_id, _seqval, _operation), NULLs first."""
    return tuple(
        (v is not None, v)
        for v in (row["_start_lsn"], row["_command_id"], row["_seqval"], row["_operation"])
    )


def latest(rows: Iterable[dict[str, Any]]) -> dict[Key, Image]:
    """LATEST: fold bronze rows in apply order; 1 and 3 remove the key, 0, 2 and 4 set it."""
    state: dict[Key, Image] = {}
    for row in sorted(rows, key=apply_order):
        image = {n: row[n] for n, _ in CAPTURED}
        if row["_operation"] in (1, 3):
            state.pop(image["id"], None)
        else:
            state[image["id"]] = image
    return state


def rebuild_oracle(rows: list[dict[str, Any]], snapshot: str) -> dict[Key, Image]:
    """LATEST over the rows of snapshot P and the changes after it (the rebuild rule)."""
    chosen = [
        r
        for r in rows
        if (r["_operation"] == 0 and (r["_snapshot"] or r["_start_lsn"]) == snapshot)
        or (r["_operation"] != 0 and r["_start_lsn"] > snapshot)
    ]
    return latest(chosen)


def random_commits(
    src: SourceTable, rng: random.Random, count: int, *, captured: bool = True
) -> None:
    """`count` transactions of random inserts, updates, key-moving updates and deletes.

    Keys come from a small range, so deleted keys come back; one row may have a NULL key.
    Keys from 100 up are left alone, for the tests' own rows.
    """
    for _ in range(count):
        with src.commit(captured=captured) as tx:
            for _ in range(rng.randint(1, 4)):
                free = [k for k in range(40) if k not in src.rows]
                if None not in src.rows and rng.random() < 0.05:
                    free = [None]
                taken = [k for k in src.rows if k is None or k < 100]  # 100+: tests' own
                kind = rng.choice(["insert", "insert", "update", "move", "delete"])
                if kind == "insert" or not taken:
                    key = rng.choice(free)
                    tx.insert(
                        {"id": key, "name": f"n{rng.randint(0, 999)}", "qty": rng.randint(0, 9)}
                    )
                elif kind == "update":
                    tx.update(
                        rng.choice(taken), name=f"u{rng.randint(0, 999)}", qty=rng.randint(0, 9)
                    )
                elif kind == "move" and free:
                    tx.update(rng.choice(taken), id=rng.choice(free), qty=rng.randint(0, 9))
                else:
                    tx.delete(rng.choice(taken))
