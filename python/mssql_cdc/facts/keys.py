"""App ids, sink ids and the Delta transaction key of every write.

docs/tables.md, 'Idempotency keys', lists every write with its key.

Delta skips a write whose txnVersion is at or below the version it recorded for the txnAppId,
so each write below is stored once however often it is offered. `A` is always the caller's
app_id, never a `.g<n>` form; its grammar, `validate_app_id`, is `core.app_id`'s, kept in this
module's names because every key below checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

from mssql_cdc.core import MAX_GENERATION, validate_app_id
from mssql_cdc.errors import ConfigError, quoted

__all__ = [
    "TxnKey",
    "batch_key",
    "events_key",
    "facts_key",
    "gap_deletes_key",
    "sink_id",
    "snapchunks_key",
    "snapplan_key",
    "snapshots_key",
    "validate_app_id",
    "wave_key",
]


@dataclass(frozen=True, slots=True)
class TxnKey:
    """A Delta idempotency key: the `txnAppId` and `txnVersion` write options."""

    app_id: str
    version: int


def _generation(generation: int) -> int:
    if (
        isinstance(generation, bool)
        or not isinstance(generation, int)
        or not 0 <= generation <= MAX_GENERATION
    ):
        raise ConfigError(
            f"generation={quoted(generation)} must be an integer from 0 to {MAX_GENERATION:,}, "
            "the generations a stream's state file holds"
        )
    return generation


def _version(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name}={value!r} must be an integer >= 0")
    return value


def sink_id(app_id: str, generation: int) -> str:
    """`A` in generation 0, `A.g<n>` in generation n."""
    validate_app_id(app_id)
    return app_id if _generation(generation) == 0 else f"{app_id}.g{generation}"


def batch_key(app_id: str, generation: int, batch_id: int) -> TxnKey:
    """Bronze micro-batch append: the sink id, the batch id."""
    return TxnKey(sink_id(app_id, generation), _version("batch_id", batch_id))


def facts_key(app_id: str, generation: int, batch_id: int) -> TxnKey:
    """A micro-batch's facts row and its event rows: `<sink id>#facts`, the batch id."""
    return TxnKey(f"{sink_id(app_id, generation)}#facts", _version("batch_id", batch_id))


def events_key(app_id: str, generation: int) -> TxnKey:
    """`bootstrap` (generation 0) and `resnapshot` (the generation it opens): `A#events`."""
    return TxnKey(f"{validate_app_id(app_id)}#events", _generation(generation))


def snapshots_key(app_id: str, generation: int) -> TxnKey:
    """A chunked `snapshot_open` row: `A#snapshots`, the generation it opens."""
    return TxnKey(f"{validate_app_id(app_id)}#snapshots", _generation(generation))


def snapplan_key(app_id: str, snapshot_lsn: str) -> TxnKey:
    """The `snapshot_plan` row of snapshot S: `A#snapplan.<S>`, version 0."""
    return TxnKey(f"{validate_app_id(app_id)}#snapplan.{snapshot_lsn}", 0)


def snapchunks_key(app_id: str, snapshot_lsn: str, wave: int) -> TxnKey:
    """The `snapshot_chunk` rows of one wave: `A#snapchunks.<S>`, the wave number."""
    return TxnKey(f"{validate_app_id(app_id)}#snapchunks.{snapshot_lsn}", _version("wave", wave))


def wave_key(app_id: str, snapshot_lsn: str, wave: int) -> TxnKey:
    """A chunked wave's bronze append: `A#snap.<S>`, the wave number."""
    return TxnKey(f"{validate_app_id(app_id)}#snap.{snapshot_lsn}", _version("wave", wave))


def gap_deletes_key(app_id: str, snapshot_lsn: str) -> TxnKey:
    """The derived deletes of re-snapshot S in bronze: `A#gapdel.<S>`, version 0."""
    return TxnKey(f"{validate_app_id(app_id)}#gapdel.{snapshot_lsn}", 0)
