"""Structured option values: the `columns` DDL list, `snapshotKeys` and `snapshotChunks`.

Parsed and written back by `mssql_cdc.options.config` only; the results are immutable values.
Each `format_*` is the inverse of its `parse_*`: it writes the canonical text of a parsed value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mssql_cdc.core import sort_part
from mssql_cdc.errors import ConfigError
from mssql_cdc.options.identifiers import check_identifier
from mssql_cdc.options.key_order import Part, compare_keys, part_kind

__all__ = [
    "MAX_CHUNK",
    "METADATA_COLUMNS",
    "DeclaredColumn",
    "KeyBound",
    "SnapshotChunk",
    "check_chunk_order",
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

MAX_CHUNK = 2**31 - 1
"""The largest chunk number: bronze's `_chunk` column is an INT."""

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
    value = _load_json("snapshotKeys", text, 'a JSON list of column names, like ["id"]', depth=1)
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
    """Parse `snapshotChunks`: a JSON list of `[chunk, lo, hi]` (see docs/source-options.md).

    The chunks must be listed in key order and must not overlap; each `lo` is below its `hi`,
    only the first may be open below and only the last open above. Strings equal but for
    trailing spaces are one key; two other strings are of an order only the key column's
    collation knows, which `check_chunk_order` applies once the source has it.
    """
    value = _load_json("snapshotChunks", text, "a JSON list of [chunk, lo, hi]", depth=3)
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
        if number > MAX_CHUNK:
            raise ConfigError(
                f"{where}: chunk {number} is above {MAX_CHUNK}, the largest the INT column "
                "_chunk holds; number the chunks from 0"
            )
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
    _check_kinds(chunks)
    _check_order(chunks)
    return tuple(chunks)


def format_chunks(chunks: tuple[SnapshotChunk, ...]) -> str:
    """The `snapshotChunks` text of `chunks`: a JSON list of `[chunk, lo, hi]`, composite bounds
    as lists."""
    return json.dumps([[c.chunk, c.lo, c.hi] for c in chunks])


def _load_json(option: str, text: str, shape: str, *, depth: int) -> object:
    """`text` as JSON; lists and objects nested deeper than `depth` are refused before the
    decoder, whose recursion would otherwise raise RecursionError."""
    level, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            if level > depth:
                raise ConfigError(
                    f"option {option} nests lists deeper than {depth} level(s); it must be {shape}"
                )
        elif ch in "]}":
            level -= 1
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"option {option} must be {shape} ({exc.msg})") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ConfigError(
            f"option {option} must be {shape} (a number in it has too many digits)"
        ) from None


def _parts(bound: KeyBound) -> tuple[Part, ...]:
    return bound if isinstance(bound, tuple) else (bound,)


def _padless(bound: KeyBound) -> tuple[Part, ...]:
    """A bound as one key: trailing spaces never count in SQL Server's = (key_order)."""
    return tuple(p.rstrip(" ") if isinstance(p, str) else p for p in _parts(bound))


def _shown_bound(bound: KeyBound) -> str:
    text = json.dumps(list(bound) if isinstance(bound, tuple) else bound)
    return text if len(text) <= 60 else text[:60] + "..."


def _check_kinds(chunks: list[SnapshotChunk]) -> None:
    # Python cannot order a number against a string, nor can the server CAST both to one type.
    first: dict[int, tuple[str, int]] = {}
    for index, chunk in enumerate(chunks):
        for bound in (chunk.lo, chunk.hi):
            if bound is None:
                continue
            for position, part in enumerate(_parts(bound)):
                kind = part_kind(part)
                if kind == "null":
                    continue
                seen = first.setdefault(position, (kind, index))
                if seen[0] != kind:
                    raise ConfigError(
                        f"option snapshotChunks: key part {position} is a {seen[0]} in entry "
                        f"{seen[1]} and a {kind} in entry {index}; bounds of one key column "
                        "cannot be ordered across types: write them all as numbers or all as "
                        "strings"
                    )


def _check_order(chunks: list[SnapshotChunk]) -> None:
    where = "option snapshotChunks: entry"
    starts: dict[tuple[Part, ...], int] = {}
    ends: dict[tuple[Part, ...], int] = {}
    for index, chunk in enumerate(chunks):
        if chunk.lo is None and index > 0:
            raise ConfigError(
                f"{where} {index} is open below (lo null), so it must be listed first; only one "
                "chunk may be open below, and chunks are listed in key order"
            )
        if chunk.hi is None and index < len(chunks) - 1:
            raise ConfigError(
                f"{where} {index} is open above (hi null), so it must be listed last; only one "
                "chunk may be open above, and chunks are listed in key order"
            )
        if chunk.lo is not None and chunk.hi is not None:
            order = compare_keys(_parts(chunk.lo), _parts(chunk.hi))
            if order is not None and order >= 0:
                raise ConfigError(
                    f"{where} {index}: lo {_shown_bound(chunk.lo)} is not below hi "
                    f"{_shown_bound(chunk.hi)}; lo is inclusive and hi exclusive, so the chunk "
                    "would read nothing"
                )
        for bound, seen, name in ((chunk.lo, starts, "lo"), (chunk.hi, ends, "hi")):
            if bound is None:
                continue
            earlier = seen.setdefault(_padless(bound), index)
            if earlier != index:
                raise ConfigError(
                    f"{where} {index} has the {name} {_shown_bound(bound)} of entry {earlier}, "
                    "so the two overlap; each key must fall in one chunk at most"
                )
        if index > 0:
            _check_after(chunks[index - 1], chunk, index)


def _check_after(before: SnapshotChunk, chunk: SnapshotChunk, index: int) -> None:
    if before.hi is None or chunk.lo is None:
        return  # refused by the caller: only the last is open above, only the first below
    # Where strings leave the order to the server, the starts and the ends still tell.
    lo, hi = _parts(chunk.lo), _parts(before.hi)
    wrong = compare_keys(lo, hi) == -1
    if before.lo is not None:
        wrong = wrong or compare_keys(lo, _parts(before.lo)) == -1
    if chunk.hi is not None:
        wrong = wrong or compare_keys(_parts(chunk.hi), hi) == -1
    if wrong:
        raise ConfigError(
            f"option snapshotChunks: entry {index} [{_shown_bound(chunk.lo)}, "
            f"{_shown_bound(chunk.hi)}) starts below the hi {_shown_bound(before.hi)} of entry "
            f"{index - 1}: the chunks overlap or are out of order; list them in key order, "
            "each lo at or above the hi before it"
        )


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
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: {which} must be a finite number (got {value})")
    return value


def check_chunk_order(
    chunks: Sequence[SnapshotChunk], keys: Sequence[str], key_types: Sequence[str | None]
) -> None:
    """Refuse `snapshotChunks` whose bounds are out of order under the key columns' SQL types
    and collations (`core.sort_part`), as far as the library can order them: a comparison
    involving a character only the server orders is left to it, as in `parse_chunks`.

    Raises:
        ConfigError: a chunk's lo is not below its hi, or a chunk starts below the hi of the
            chunk before it, under the key's collation.
    """

    def order(bound: KeyBound) -> list[tuple[bool, object]]:
        parts = zip(_parts(bound), key_types, strict=True)
        return [(p is not None, sort_part(p, t)) for p, t in parts]

    def below(a: KeyBound, b: KeyBound) -> bool | None:
        try:
            return bool(order(a) < order(b))
        except (TypeError, ValueError):  # unknown to the library: the server decides
            return None

    shown = ", ".join(
        f"{k} ({t})" for k, t in zip(keys, key_types, strict=True) if " COLLATE " in (t or "")
    )
    under = f" under {shown}" if shown else ""
    for index, chunk in enumerate(chunks):
        where = f"option snapshotChunks: entry {index}"
        if chunk.lo is not None and chunk.hi is not None and below(chunk.lo, chunk.hi) is False:
            raise ConfigError(
                f"{where}: lo {_shown_bound(chunk.lo)} is not below hi {_shown_bound(chunk.hi)}"
                f"{under}, as SQL Server compares them; the chunk would read nothing, so give "
                "bounds in the key column's collation order"
            )
        before = chunks[index - 1] if index else None
        if before is None or before.hi is None or chunk.lo is None:
            continue
        if below(chunk.lo, before.hi) is True:
            raise ConfigError(
                f"{where} starts at {_shown_bound(chunk.lo)}, below the hi "
                f"{_shown_bound(before.hi)} of entry {index - 1}{under}, as SQL Server compares "
                "them: the chunks overlap and would read keys twice; list them in the key "
                "column's collation order"
            )
