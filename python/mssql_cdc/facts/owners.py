"""Which stream a checkpoint belongs to, as the cheap records tell it: no Spark job.

A checkpoint names no app_id of its own: Spark's `metadata` holds a query id, its offsets and
commits hold offsets. What does name it is the pre-flight's family cache under the checkpoint
(`app_id`), and the facts table: the row of the checkpoint's last committed batch (same
generation, batch id and end offset) and the events of the snapshot its live generation
starts from carry the sink id that wrote them. A facts table at a local path is read here by
deltalake; one out of reach (a catalog name, a URI) tells nothing, and the check is skipped.
"""

from __future__ import annotations

import logging
import os
import stat

from mssql_cdc.facts.family_cache import load
from mssql_cdc.tables import TableOutOfReach, is_local, read_rows, table_ref

__all__ = ["cached_app_id", "checkpoint_owners", "family_of"]

log = logging.getLogger(__name__)

_OPENING_EVENTS = ("snapshot_open", "resnapshot")


def family_of(row_app_id: str, generation: int) -> str:
    """The stream app_id of a facts row's sink id: `A` for `A` (generation 0) and `A.g<n>`."""
    suffix = f".g{generation}"
    if generation > 0 and row_app_id.endswith(suffix):
        return row_app_id[: -len(suffix)]
    return row_app_id


def cached_app_id(checkpoint: str) -> str | None:
    """The app_id the pre-flight's family cache under `checkpoint` was written for; None
    without a readable cache (a pipe or folder of that name is never opened)."""
    from mssql_cdc.facts.family_cache import CACHE_FILE_NAME

    try:
        if not stat.S_ISREG(os.stat(os.path.join(checkpoint, CACHE_FILE_NAME)).st_mode):
            return None
    except OSError:
        return None
    entry = load(checkpoint)
    return None if entry is None else entry.app_id


def checkpoint_owners(
    facts_table: str,
    *,
    generation: int,
    last_batch: tuple[int, str] | None,
    snapshot_lsn: str | None,
) -> frozenset[str]:
    """The stream app_ids whose facts rows record this checkpoint's live generation.

    Args:
        facts_table: the facts table's path.
        generation: the live generation.
        last_batch: the live checkpoint's last committed batch id and its offset's LSN.
        snapshot_lsn: the LSN the live generation starts from (generation > 0).
    Returns:
        The app_ids (never sink ids) of the rows found; empty when the table is out of reach
        in this process, or records neither.
    """
    import pyarrow.compute as pc

    ref = table_ref(facts_table, argument="facts_table")
    if not is_local(ref):
        return frozenset()
    at_generation = pc.field("generation") == generation
    conditions = []
    if last_batch is not None:
        batch_id, end_lsn = last_batch
        conditions.append(
            pc.field("event").is_null()
            & (pc.field("batch_id") == batch_id)
            & (pc.field("end_lsn") == end_lsn)
        )
    if snapshot_lsn is not None and generation > 0:
        conditions.append(
            pc.field("event").isin(list(_OPENING_EVENTS)) & (pc.field("min_lsn") == snapshot_lsn)
        )
    if not conditions:
        return frozenset()
    wanted = conditions[0] if len(conditions) == 1 else conditions[0] | conditions[1]
    try:
        rows = read_rows(ref, columns=("app_id", "generation"), where=at_generation & wanted)
    except TableOutOfReach as exc:
        log.debug("%s", exc)
        return frozenset()
    return frozenset(
        family_of(r["app_id"], int(r["generation"]))
        for r in rows.to_pylist()
        if r["app_id"] is not None
    )
