"""Result sets as Arrow record batches in the declared schema (docs/source.md, 'Rows').

mssql-python hands Arrow batches, which are cast; pymssql hands tuples, which are turned into
Arrow here. Either way every batch has exactly the output schema, and a value that does not
fit fails naming its column.

Commit times in a repeated local hour take the instant LSN order gives them (decision 1320).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.errors import ConnectionLostError
from mssql_cdc.sqlserver.metadata import ReadColumn

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "FIRST_BATCH_ROWS",
    "MAX_BATCH_BYTES",
    "BatchSizer",
    "ChangeShape",
    "arrow_type",
    "cast_batches",
    "change_schema",
    "change_shape",
    "fetch_batches",
    "repeats",
    "rows_to_batch",
    "table_schema",
    "to_schema",
    "with_candidates",
]

FIRST_BATCH_ROWS = 64
MAX_BATCH_BYTES = 64 * 1024 * 1024
_DECIMAL = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")


def arrow_type(spark_type: str) -> pa.DataType:
    """The Arrow type of a canonical Spark type name (as `SourceConfig.columns` holds them)."""
    import pyarrow as pa

    simple = {
        "BOOLEAN": pa.bool_(),
        "SMALLINT": pa.int16(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "DATE": pa.date32(),
        "TIMESTAMP_NTZ": pa.timestamp("us"),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
        "STRING": pa.string(),
        "BINARY": pa.binary(),
    }
    if spark_type in simple:
        return simple[spark_type]
    match = _DECIMAL.match(spark_type)
    if match:
        return pa.decimal128(int(match.group(1)), int(match.group(2)))
    raise ValueError(f"no Arrow type for Spark type {spark_type!r}")


def change_schema(columns: Sequence[ReadColumn], *, include_command_id: bool) -> pa.Schema:
    """The output schema of change rows: metadata columns, then the declared columns."""
    import pyarrow as pa

    fields = [
        pa.field("_capture_instance", pa.string()),
        pa.field("_start_lsn", pa.string()),
        pa.field("_seqval", pa.string()),
        pa.field("_operation", pa.int32()),
    ]
    if include_command_id:
        fields.append(pa.field("_command_id", pa.int32()))
    fields.append(pa.field("_commit_ts", pa.timestamp("us")))
    fields += [pa.field(c.name, arrow_type(c.spark_type)) for c in columns]
    return pa.schema(fields)


@dataclass(frozen=True, slots=True)
class ChangeShape:
    """One change read, as every backend asks for it and casts it."""

    schema: pa.Schema  # the output schema
    read: tuple[ReadColumn, ...]  # the declared columns to read; the others read NULL
    constants: dict[str, Any]  # columns every row of the read holds, by name


def change_shape(
    capture_instance: str,
    columns: Sequence[ReadColumn],
    *,
    include_command_id: bool,
    null_columns: Sequence[str],
) -> ChangeShape:
    """What to read of `capture_instance`: the declared columns it captures (those named in
    `null_columns` it does not), the schema to cast to, `_capture_instance` as a constant."""
    skipped = set(null_columns)
    return ChangeShape(
        schema=change_schema(columns, include_command_id=include_command_id),
        read=tuple(c for c in columns if c.name not in skipped),
        constants={"_capture_instance": capture_instance},
    )


def with_candidates(schema: pa.Schema, time_zone: str) -> pa.Schema:
    """`schema` with the candidate columns `statements.change_rows` reads after `_commit_ts` in
    a named zone; those are dropped before a batch leaves the reader."""
    import pyarrow as pa

    if time_zone == "UTC" or time_zone[:1] in "+-":
        return schema
    extra = [pa.field("_commit_ts" + s, pa.timestamp("us")) for s in _CANDIDATE_SUFFIXES]
    return pa.schema([*schema, *extra])


_CANDIDATE_SUFFIXES = ("_local", "_later", "_later_local")


def repeats(batch: pa.RecordBatch) -> bool:
    """Whether a row's commit time is a local time a fall-back repeats: its later candidate is
    later than its earliest and maps back to the same local time (`with_candidates`)."""
    import pyarrow.compute as pc

    names = batch.schema.names
    if "_commit_ts_later" not in names:
        return False
    later = batch.column("_commit_ts_later")
    same = pc.equal(batch.column("_commit_ts_later_local"), batch.column("_commit_ts_local"))
    found = pc.and_(pc.greater(later, batch.column("_commit_ts")), same)
    return bool(pc.any(pc.fill_null(found, False)).as_py())


def table_schema(columns: Sequence[ReadColumn]) -> pa.Schema:
    """The schema of a snapshot read of the table: the declared columns only."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, arrow_type(c.spark_type)) for c in columns])


def _column(name: str, values: Sequence[Any], target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    try:
        return pa.array(values, type=target, from_pandas=False, safe=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as exc:
        raise ValueError(
            f"column {name!r}: a value does not fit the declared type {target} ({exc}); "
            "declare a wider type in the columns option"
        ) from None


def rows_to_batch(
    rows: Sequence[Sequence[Any]],
    names: Sequence[str],
    schema: pa.Schema,
    constants: dict[str, Any],
) -> pa.RecordBatch:
    """Build a batch of `schema` from DB-API rows whose columns are `names`.

    Fields missing from `names` take the value in `constants` (e.g. `_capture_instance`), or
    NULL (columns the instance does not capture).
    """
    import pyarrow as pa

    index = {name: i for i, name in enumerate(names)}
    arrays = []
    for field in schema:
        if field.name in index:
            i = index[field.name]
            values = [_normalize(row[i]) for row in rows]
            arrays.append(_column(field.name, values, field.type))
        else:
            value = constants.get(field.name)
            arrays.append(_column(field.name, [value] * len(rows), field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _normalize(value: Any) -> Any:
    # A datetimeoffset arrives aware from some drivers; the declared TIMESTAMP is UTC.
    if isinstance(value, datetime) and value.tzinfo is not None:
        from datetime import UTC

        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def to_schema(
    batches: Iterable[pa.RecordBatch], schema: pa.Schema, constants: dict[str, Any]
) -> Iterator[pa.RecordBatch]:
    """Cast driver-made Arrow batches to `schema`, adding constant and NULL columns."""
    import pyarrow as pa

    for batch in batches:
        arrays = []
        for field in schema:
            position = batch.schema.get_field_index(field.name)
            if position >= 0:
                column = batch.column(position)
                try:
                    arrays.append(column.cast(field.type, safe=True))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise ValueError(
                        f"column {field.name!r}: a value does not fit the declared type "
                        f"{field.type} ({exc}); declare a wider type in the columns option"
                    ) from None
            else:
                value = constants.get(field.name)
                arrays.append(_column(field.name, [value] * batch.num_rows, field.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def cast_batches(
    raw: Iterable[pa.RecordBatch], schema: pa.Schema, constants: dict[str, Any]
) -> Iterator[pa.RecordBatch]:
    """Cast batches a reader made in process (the emulator's) to `schema` (see `to_schema`).

    The first batch yielded holds at most FIRST_BATCH_ROWS rows, as with a driver's; empty
    batches are dropped.
    """
    first = True
    for batch in to_schema(raw, schema, constants):
        if first and batch.num_rows > FIRST_BATCH_ROWS:
            yield batch.slice(0, FIRST_BATCH_ROWS)
            batch = batch.slice(FIRST_BATCH_ROWS)
        first = False
        if batch.num_rows:
            yield batch


class BatchSizer:
    """Rows to fetch next: 64 first, then as many as stay under 64 MiB, at most `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.rows = 0
        self.bytes = 0

    def next_size(self) -> int:
        if self.rows == 0:
            return min(FIRST_BATCH_ROWS, self.limit)
        per_row = max(1, self.bytes // self.rows)
        return max(1, min(self.limit, MAX_BATCH_BYTES // per_row))

    def record(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        self.bytes += batch.nbytes


_LINK_FAILURE = "Communication link failure"


def raise_if_cut(cursor: Any) -> None:
    """Raise ConnectionLostError when the driver ended a result because the link broke.

    mssql-python (ODBC) returns the rows that arrived and reports the failure only in
    `cursor.messages`; a cut read would otherwise look complete.
    """
    for message in getattr(cursor, "messages", None) or ():
        text = message[1] if isinstance(message, tuple) and len(message) > 1 else message
        if _LINK_FAILURE in str(text):
            raise ConnectionLostError(
                "the connection to SQL Server broke while change rows were arriving "
                f"({str(text).strip()[:200]}); the rows read are not all, so the task fails "
                "and Spark's retry reads the range again on a new connection"
            )


def fetch_batches(
    cursor: Any, *, arrow: bool, schema: pa.Schema, constants: dict[str, Any], batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """Fetch a cursor's rows as batches of `schema`, sized by `BatchSizer`.

    With `arrow`, the driver makes each batch (mssql-python's `cursor.arrow_batch(n)`, empty at
    the end) and it is cast; otherwise `fetchmany(n)` tuples are converted here.
    """
    sizer = BatchSizer(batch_rows)
    names = [column[0] for column in cursor.description or ()]
    while True:
        size = sizer.next_size()
        if arrow:
            raw = cursor.arrow_batch(size)
            if raw.num_rows == 0:
                raise_if_cut(cursor)
                return
            [batch] = to_schema([raw], schema, constants)
        else:
            rows = cursor.fetchmany(size)
            if not rows:
                raise_if_cut(cursor)
                return
            batch = rows_to_batch(rows, names, schema, constants)
        sizer.record(batch)
        yield batch
