"""Reconcile's row digests computed by the emulator's native code (decision 1432).

A batch's rows, given as a pyarrow record batch, are digested as `core.row_digest` defines it:
each row's text (its fields' canonical texts joined by U+001F), SHA-256 over the text's
UTF-16LE bytes, the first 8 bytes as an unsigned big-endian integer. The native texts cover
integer, boolean, string, decimal128, date32 and microsecond timestamp columns without a zone;
give any other column as its canonical text (a string column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mssql_cdc._native as _native

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["batch_row_digests", "batch_tile_digest"]


def batch_row_digests(batch: pa.RecordBatch) -> list[int]:
    """Each row's digest, in order.

    Raises:
        TypeError: a column of a type without a native text, naming it.
    """
    return _native.emu.batch_digests(batch)


def batch_tile_digest(batch: pa.RecordBatch) -> tuple[int, int]:
    """(rows, their digests summed modulo 2**64), the tile digest of the batch's rows.

    Raises:
        TypeError: a column of a type without a native text, naming it.
    """
    return _native.emu.batch_tile(batch)
