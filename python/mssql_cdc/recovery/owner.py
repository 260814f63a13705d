"""The checkpoint's own stream: a run with another stream's app_id is refused before it starts.

The app_id keys a stream's facts family, its Delta transaction ids and its metrics folders, and
the checkpoint says where the stream is; a run that pairs one stream's checkpoint with another
app_id would split the family between two names (and a re-snapshot would read the wrong
family). So once the checkpoint has committed a batch or holds a state file, the records that
name its stream (`mssql_cdc.facts.checkpoint_owners`, the family cache) must not name only
other app_ids. The check reads files only: no Spark session is needed or started. A family
cache that names the caller's app_id settles it without reading the facts table (decision
1434).
"""

from __future__ import annotations

import os

from mssql_cdc.core import last_processed_offset, live_paths, read_state
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import cached_app_id, checkpoint_owners

__all__ = ["check_started_stream", "check_stream_owner"]


def check_started_stream(checkpoint: str, app_id: str) -> None:
    """Refuse a checkpoint folder that does not exist, for a call on a running stream.

    Raises:
        ConfigError: `checkpoint` is missing or not a folder.
    """
    if os.path.isdir(checkpoint):
        return
    what = "is not a folder" if os.path.exists(checkpoint) else "does not exist"
    raise ConfigError(
        f"checkpoint {checkpoint} {what}: the stream {app_id!r} has not started there, so there "
        "is nothing to re-snapshot; pass the checkpoint folder given to to_delta"
    )


def check_stream_owner(checkpoint: str, app_id: str, facts_table: str | None) -> None:
    """Refuse `app_id` when the checkpoint's records name only other streams.

    `checkpoint` is absolute and local (a URI or /dbfs/... is not checked here: Python cannot
    read it). Without a committed batch or a state file nothing is checked: a new stream.

    Raises:
        ConfigError: the family cache or the facts table names other app_ids for this
            checkpoint; both app_ids are named.
        StateFileError / ConfigError: an invalid state file or offset log.
    """
    if not os.path.isdir(checkpoint):
        return
    state = read_state(checkpoint)
    generation = 0 if state is None else state.generation
    paths = live_paths(checkpoint, app_id, state)
    last = last_processed_offset(paths.checkpoint)
    if state is None and last is None:
        return
    owners: set[str] = set()
    sources: list[str] = []
    cached = cached_app_id(checkpoint)
    if cached == app_id:
        # The verdict is made: more owners found in the facts table could not refuse it. So
        # the facts table, which grows by a file per batch of every stream writing it, is not
        # scanned at every start of a stream that has run before.
        return
    if cached is not None:
        owners.add(cached)
        sources.append("the checkpoint's family cache")
    if facts_table is not None:
        snapshot = None if state is None or state.snapshot is None else state.snapshot.lsn
        batch = None if last is None else (last.batch_id, str(last.offset().lsn))
        found = checkpoint_owners(
            facts_table, generation=generation, last_batch=batch, snapshot_lsn=snapshot
        )
        if found:
            owners |= found
            sources.append(f"the facts table {facts_table}")
    if not owners or app_id in owners:
        return
    named = ", ".join(repr(o) for o in sorted(owners))
    raise ConfigError(
        f"app_id={app_id!r} is not the stream of checkpoint {checkpoint}: "
        f"{' and '.join(sources)} record it as the stream {named}. Running a checkpoint under "
        "another app_id splits its facts family between two names: pass "
        f"app_id={sorted(owners)[0]!r} to continue that stream, or a new checkpoint folder "
        "for a new stream"
    )
