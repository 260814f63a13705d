"""Opening a chunked snapshot at S (docs/snapshots.md, 'Chunked snapshots'): nothing of the
table is read but the key's extent; the stream starts at S at once and `backfill()` reads the
chunks later.
"""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING, Literal

from mssql_cdc.core import StreamOffset, loss_after
from mssql_cdc.core import clock as _clock
from mssql_cdc.errors import ConfigError, InternalError
from mssql_cdc.facts import (
    RepairDetail,
    SnapshotOpenDetail,
    format_time,
    is_complete,
    parse_time,
    snapshot_facts,
    snapshots_key,
    validate_app_id,
)
from mssql_cdc.options import SourceConfig
from mssql_cdc.snapshot.chunk_plan import key_extent
from mssql_cdc.snapshot.open_row import append_open
from mssql_cdc.snapshot.probe import SourceProbe, open_probe, stamp
from mssql_cdc.tables import require_distinct, table_ref
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["open_chunked"]


def open_chunked(
    spark: SparkSession,
    config: SourceConfig,
    target: str,
    *,
    kind: Literal["bootstrap", "resnapshot"],
    generation: int,
    app_id: str,
    facts_table: str,
    lost_from_ts: str | None = None,
    lost_to_ts: str | None = None,
    requested: bool = False,
    gap_deletes: bool = False,
    at: StreamOffset | None = None,
    repair: RepairDetail | None = None,
) -> StreamOffset:
    """Open a chunked snapshot for `generation` and return its S (the stored one, when an
    earlier attempt or a concurrent run stored an open of that generation first).

    `gap_deletes`: the open asks `backfill()` to derive the gap's deletes when it completes it
    (a re-snapshot only; docs/data-loss.md, 'Deletes across a gap'). `at`: S itself instead
    of a new stamp, and `repair` the chunks it is read in: `reconcile(repair=True)`'s open at
    the stream's own position.

    Raises:
        ValueError: a bad argument, no stamp yet, or a full open of this generation that is
            still being read (neither complete nor purged).
    """
    validate_app_id(app_id)
    table_ref(target, argument="target")
    table_ref(facts_table, argument="facts_table")
    require_distinct(target=target, facts_table=facts_table)
    if kind == "bootstrap" and generation != 0:
        raise InternalError(
            f"a bootstrap snapshot opens generation 0, not {generation}; a snapshot after a "
            "loss has kind 'resnapshot'"
        )
    with closing(open_probe(config)) as probe:
        started = _clock.now()
        s = stamp(probe) if at is None else at
        keys, extent = key_extent(probe)
        detail: SnapshotOpenDetail = {
            "mode": "chunked",
            "kind": kind,
            "generation": generation,
            "lost_from_ts": format_time(parse_time(lost_from_ts)),
            "lost_to_ts": format_time(parse_time(lost_to_ts)),
            "keys": keys,
            "plan": extent,
        }
        if requested:
            detail["requested"] = True
        if gap_deletes and kind == "resnapshot":
            detail["gap_deletes"] = True
        if repair is not None:
            detail["repair"] = repair
        append_open(
            spark,
            facts_table,
            app_id=app_id,
            target=target,
            at=s,
            detail=detail,
            started=started,
            key=snapshots_key(app_id, generation),
        )
        stored = _stored_open(spark, facts_table, app_id, generation, target, probe)
        failpoint("chunked.after_open")
        return stored


def _stored_open(
    spark: SparkSession,
    facts_table: str,
    app_id: str,
    generation: int,
    target: str,
    probe: SourceProbe,
) -> StreamOffset:
    """The stored chunked open of the generation (a second attempt gets the first one's S), then
    the race re-check against full opens (the facts table was opened for write just before)."""
    facts = snapshot_facts(spark, facts_table, app_id, checked=True)
    opens = [o for o in facts.opens() if o.generation == generation]
    chunked = [o for o in opens if o.mode == "chunked"]
    if not chunked:
        raise InternalError(
            f"{facts_table}: the chunked snapshot_open row of generation {generation} was not "
            "found after writing it; check that nothing else deletes facts rows"
        )
    mine = chunked[0]
    completions = facts.completions()
    full = [o for o in opens if o.mode == "full" and not is_complete(o, completions)]
    if full:
        observation = probe.observe()
        for other in full:
            if loss_after(other.s.lsn, observation) is None:
                raise ConfigError(
                    f"{target}: another run opened a full snapshot of generation {generation} "
                    f"at {other.s.lsn} first and may still be reading it; rerun with "
                    "snapshot='full', or wait until CDC cleanup passes it"
                )
    return mine.s
