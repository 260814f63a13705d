"""Deletes across a gap for the source's own re-snapshot, option gapDeletesFrom
(docs/pipelines.md, 'Deletes across a gap, the source on its own'; decision 1426).

A key deleted while the stream could not read has no change row left in SQL Server, so a
re-snapshot alone cannot remove it downstream. With `snapshotMode=when_needed` and
`gapDeletesFrom` naming the Delta table that holds what the stream delivered (the sink's copy of
its rows), the batch that completes a re-snapshot at S also reads, in one task of its own:

- the table's image before S: per key the last row in apply order (`_start_lsn`,
  `_command_id`, `_seqval`, `_operation`, NULLs first) among the rows delivered before S
  (change rows below S, rows of earlier snapshots), update before-images left out; the keys
  whose last row is not a delete, as `to_delta`'s gap deletes take bronze's image;
- the keys the source table holds now;

and emits one delete row (`_operation` 1, `_start_lsn` = `_snapshot` = S, `_seqval` NULL) for each
key of the image the table no longer holds: the key columns hold the key, the other columns are
NULL. A key deleted after S may get one too; its own delete change follows, so a merge ends the
same. Keys are compared in the stream's Arrow types, so a case-insensitive collation's keys that
differ only in case are different keys here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import InputPartition

from mssql_cdc.core import Operation, deltalake_options
from mssql_cdc.errors import ConfigError
from mssql_cdc.options import SourceConfig
from mssql_cdc.sqlserver import ReadColumn, open_backend

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["GapDeletesPartition", "gone_keys", "read_gap_deletes"]

# The apply order of docs/silver.md: the last row of a key is the last in this order.
APPLY_ORDER = ("_start_lsn", "_command_id", "_seqval", "_operation")


@dataclass(frozen=True)
class GapDeletesPartition(InputPartition):
    """The task that derives a re-snapshot's deletes: the snapshot's stamp S and where to look."""

    table: str  # the option gapDeletesFrom
    source_schema: str
    source_table: str
    stamp_lsn: str
    commit_ts: str | None
    keys: tuple[str, ...]


def gone_keys(
    delivered: Sequence[dict[str, Any]],
    keys: Sequence[str],
    stamp: str,
    live: set[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """The keys of `delivered`'s image before `stamp` that `live` lacks, in key order of
    first appearance.

    `delivered`: rows with the key columns and at least `_start_lsn` and `_operation`
    (`_command_id`, `_seqval`, `_snapshot` when the table has them)."""

    def before(row: dict[str, Any]) -> bool:
        mark = row.get("_snapshot")
        if mark is not None:
            return bool(mark < stamp)
        return bool(row["_start_lsn"] < stamp)

    def order(row: dict[str, Any]) -> tuple[Any, ...]:
        # NULLs first, as `to_delta`'s gap deletes order bronze's rows
        values = [row.get(n) for n in APPLY_ORDER]
        return tuple((v is not None, 0 if v is None else v) for v in values)

    rows = [
        r
        for r in delivered
        if r["_operation"] != Operation.UPDATE_BEFORE and r["_start_lsn"] is not None and before(r)
    ]
    last: dict[tuple[Any, ...], int] = {}
    for row in sorted(rows, key=order):
        last[tuple(row[k] for k in keys)] = int(row["_operation"])
    return [k for k, op in last.items() if op != Operation.DELETE and k not in live]


def read_gap_deletes(
    config: SourceConfig,
    columns: Sequence[ReadColumn],
    schema: pa.Schema,
    part: GapDeletesPartition,
) -> Iterator[pa.RecordBatch]:
    """Yield the re-snapshot's delete rows in the stream's Arrow `schema` (one batch).

    Raises:
        ConfigError: the table gapDeletesFrom names is not a Delta table deltalake can read,
            or lacks a key column, `_start_lsn` or `_operation`.
    """
    import pyarrow as pa

    keys = part.keys
    types = {k: schema.field(k).type for k in keys}
    read = [c for c in columns if c.name in keys]
    live: set[tuple[Any, ...]] = set()
    with closing(open_backend(config)) as backend:
        for batch in backend.snapshots.read_table(
            part.source_schema,
            part.source_table,
            columns=read,
            keys=keys,
            lo=None,
            hi=None,
            batch_rows=config.arrow_batch_size,
        ):
            values = [batch.column(k).cast(types[k]).to_pylist() for k in keys]
            live.update(zip(*values, strict=True))
    gone = gone_keys(_delivered(config, part, types), keys, part.stamp_lsn, live)
    n = len(gone)
    stamp_time = None if part.commit_ts is None else datetime.fromisoformat(part.commit_ts)
    fixed: dict[str, object] = {
        "_start_lsn": part.stamp_lsn,
        "_operation": int(Operation.DELETE),
        "_commit_ts": stamp_time,
        "_snapshot": part.stamp_lsn,
    }
    arrays: list[pa.Array] = []
    for field in schema:
        if field.name in keys:
            position = keys.index(field.name)
            arrays.append(pa.array([k[position] for k in gone], field.type))
        elif field.name == "_capture_instance":
            arrays.append(pa.array([config.capture_instance] * n, field.type))
        elif field.name in fixed:
            arrays.append(pa.array([fixed[field.name]] * n, field.type))
        else:
            arrays.append(pa.nulls(n, field.type))
    yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _delivered(
    config: SourceConfig, part: GapDeletesPartition, types: dict[str, pa.DataType]
) -> list[dict[str, Any]]:
    """The rows of the table gapDeletesFrom names: its key and apply-order columns."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    where = f"option gapDeletesFrom={part.table!r}"
    try:
        table = DeltaTable(
            part.table, storage_options=deltalake_options(part.table, config.store) or None
        )
    except (DeltaError, OSError) as exc:
        raise ConfigError(
            f"{where}: no Delta table deltalake can read there ({type(exc).__name__}: {exc}); "
            "name the Delta table your sink keeps the stream's rows in, written before the "
            "re-snapshot"
        ) from None
    present = {f.name for f in table.schema().fields}
    needed = [*part.keys, "_start_lsn", "_operation"]
    missing = [n for n in needed if n not in present]
    if missing:
        raise ConfigError(
            f"{where}: the table lacks the column(s) {', '.join(missing)}; it must hold the "
            "stream's rows with their key and metadata columns"
        )
    wanted = [*needed, *[n for n in ("_command_id", "_seqval", "_snapshot") if n in present]]
    data = table.to_pyarrow_table(columns=wanted)
    arrays = {n: data.column(n) for n in wanted}
    for k in part.keys:
        arrays[k] = arrays[k].cast(types[k])
    return [
        dict(zip(wanted, row, strict=True))
        for row in zip(*[arrays[n].to_pylist() for n in wanted], strict=True)
    ]
