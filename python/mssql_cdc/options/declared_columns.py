"""Structured option values: the `columns` DDL list, `snapshotKeys` and `snapshotChunks`.

Parsed and written back by `mssql_cdc.options.config` only; the results are immutable values.
Each `format_*` is the inverse of its `parse_*`: it writes the canonical text of a parsed value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.identifiers import check_identifier

__all__ = [
    "METADATA_COLUMNS",
    "DeclaredColumn",
    "KeyBound",
    "SnapshotChunk",
    "format_chunks",
    "format_columns",
    "format_keys",
    "parse_chunks",
    "parse_columns",
    "parse_keys",
]

METADATA_COLUMNS = (
    "_capture_instance",
    "_start_lsn",
    "_seqval",
    "_operation",
    "_command_id",
    "_commit_ts",
    "_batch_id",
    "_snapshot",
    "_chunk",
)
"""Names the output and bronze use for their own columns; a source column may not take one."""

_SIMPLE_TYPES = {
    "BOOLEAN": "BOOLEAN",
    "SMALLINT": "SMALLINT",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "REAL": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIMESTAMP_NTZ": "TIMESTAMP_NTZ",
    "TIMESTAMP": "TIMESTAMP",
    "STRING": "STRING",
    "BINARY": "BINARY",
}
_DECIMAL = re.compile(r"^DECIMAL\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$", re.IGNORECASE)
_ACCEPTED_TYPES = "BOOLEAN, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), DATE, "
_ACCEPTED_TYPES += "TIMESTAMP_NTZ, TIMESTAMP, STRING, BINARY (aliases INTEGER, REAL, DECIMAL(p))"


@dataclass(frozen=True, slots=True)
class DeclaredColumn:
    """One `name TYPE` pair of the `columns` option; `spark_type` is canonical (`DECIMAL(p,s)`)."""

    name: str
    spark_type: str


Scalar = str | int | float
KeyBound = Scalar | tuple[Scalar | None, ...] | None
"""A chunk bound: None for an open end, a scalar for one key column, a tuple for a composite."""


@dataclass(frozen=True, slots=True)
class SnapshotChunk:
    """One `[chunk, lo, hi]` entry of `snapshotChunks`: `lo` inclusive, `hi` exclusive."""

    chunk: int
    lo: KeyBound
    hi: KeyBound


def parse_columns(text: str) -> tuple[DeclaredColumn, ...]:
    """Parse `name TYPE, ...` (names optionally in backquotes, `` for a literal backquote)."""
    items = _split_top_level(text)
    seen: dict[str, str] = {}
    out: list[DeclaredColumn] = []
    for index, item in enumerate(items):
        name, type_text = _split_name(item, index)
        check_identifier(f"option columns: column name at entry {index}", name)
        low = name.lower()
        if low in METADATA_COLUMNS:
            raise ConfigError(
                f"option columns: column {name!r} is named like the metadata column {low}; "
                "rename it in a view over the source, or leave it out"
            )
        if low in seen:
            raise ConfigError(f"option columns: column {name!r} is listed twice ({seen[low]!r})")
        seen[low] = name
        out.append(DeclaredColumn(name, _spark_type(name, type_text)))
    if not out:
        raise ConfigError("option columns lists no column; omit it to infer the columns")
    return tuple(out)


def format_columns(columns: tuple[DeclaredColumn, ...]) -> str:
    """The `columns` text of `columns`: every name backquoted, so any name reads back as is."""
    return ", ".join(f"`{c.name.replace('`', '``')}` {c.spark_type}" for c in columns)


def _split_top_level(text: str) -> list[str]:
    items: list[str] = []
    depth, quoted = 0, False
    current: list[str] = []
    for ch in text:
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            items.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if quoted:
        raise ConfigError("option columns: a backquoted name is never closed; close it with `")
    items.append("".join(current).strip())
    if any(not item for item in items) and text.strip():
        raise ConfigError("option columns: an entry is empty; write `name TYPE, name TYPE`")
    return [item for item in items if item]


def _split_name(item: str, index: int) -> tuple[str, str]:
    if item.startswith("`"):
        i, name = 1, []
        while i < len(item):
            if item[i] == "`":
                if item[i + 1 : i + 2] == "`":
                    name.append("`")
                    i += 2
                    continue
                return "".join(name), item[i + 1 :].strip()
            name.append(item[i])
            i += 1
    parts = item.split(None, 1)
    if len(parts) != 2:
        raise ConfigError(f"option columns: entry {index} ({item!r}) is not a `name TYPE` pair")
    return parts[0], parts[1].strip()


def _spark_type(name: str, text: str) -> str:
    simple = _SIMPLE_TYPES.get(text.upper())
    if simple is not None:
        return simple
    match = _DECIMAL.match(text)
    if match:
        precision = int(match.group(1)) if match.group(1) else 10
        scale = int(match.group(2)) if match.group(2) else 0
        if not 1 <= precision <= 38 or scale > precision:
            raise ConfigError(
                f"option columns: column {name!r} has type {text!r}; DECIMAL(p,s) needs "
                "1 <= p <= 38 and 0 <= s <= p"
            )
        return f"DECIMAL({precision},{scale})"
    raise ConfigError(
        f"option columns: column {name!r} has unsupported type {text!r}; use {_ACCEPTED_TYPES}"
    )


def parse_keys(text: str) -> tuple[str, ...]:
    """Parse `snapshotKeys`: a JSON list of distinct, non-empty column names."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f'option snapshotKeys must be a JSON list of column names, like ["id"] ({exc.msg})'
        ) from None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            'option snapshotKeys must be a non-empty JSON list of column names, like ["id"]'
        )
    names = tuple(check_identifier("option snapshotKeys: a column name", v) for v in value)
    seen: set[str] = set()
    for n in names:
        if n.lower() in seen:
            raise ConfigError(f"option snapshotKeys: column {n!r} is listed twice")
        seen.add(n.lower())
    return names


def format_keys(keys: tuple[str, ...]) -> str:
    """The `snapshotKeys` text of `keys`: a JSON list."""
    return json.dumps(list(keys))


def parse_chunks(text: str) -> tuple[SnapshotChunk, ...]:
    """Parse `snapshotChunks`: a JSON list of `[chunk, lo, hi]` (see docs/source-options.md)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"option snapshotChunks must be a JSON list of [chunk, lo, hi] ({exc.msg})"
        ) from None
    if not isinstance(value, list) or not value:
        raise ConfigError("option snapshotChunks must be a non-empty JSON list of [chunk, lo, hi]")
    chunks: list[SnapshotChunk] = []
    numbers: set[int] = set()
    arity: int | None = None
    for index, entry in enumerate(value):
        where = f"option snapshotChunks: entry {index}"
        if not isinstance(entry, list) or len(entry) != 3:
            raise ConfigError(f"{where} must be a list [chunk, lo, hi]")
        number, lo, hi = entry
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise ConfigError(f"{where}: chunk must be an integer >= 0")
        if number in numbers:
            raise ConfigError(f"{where}: chunk {number} appears twice; chunk numbers are distinct")
        numbers.add(number)
        bounds = (_bound(where, "lo", lo), _bound(where, "hi", hi))
        for bound in bounds:
            if bound is None:
                continue
            width = len(bound) if isinstance(bound, tuple) else 1
            if arity is not None and width != arity:
                raise ConfigError(
                    f"{where}: a bound has {width} key part(s) where earlier ones have {arity}"
                )
            arity = width
        chunks.append(SnapshotChunk(number, bounds[0], bounds[1]))
    return tuple(chunks)


def format_chunks(chunks: tuple[SnapshotChunk, ...]) -> str:
    """The `snapshotChunks` text of `chunks`: a JSON list of `[chunk, lo, hi]`, composite bounds
    as lists."""
    return json.dumps([[c.chunk, c.lo, c.hi] for c in chunks])


def _bound(where: str, which: str, value: object) -> KeyBound:
    if value is None:
        return None
    if isinstance(value, list):
        if not value:
            raise ConfigError(f"{where}: {which} is an empty list; use null for an open end")
        return tuple(_scalar(where, which, part, allow_null=True) for part in value)
    return _scalar(where, which, value, allow_null=False)


def _scalar(where: str, which: str, value: object, *, allow_null: bool) -> Scalar | None:
    if value is None and allow_null:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(
            f"{where}: {which} must be a number, a string, null or a list of them "
            f"(got {json.dumps(value)})"
        )
    return value
