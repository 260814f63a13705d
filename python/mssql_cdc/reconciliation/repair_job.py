"""A repair's job: the checked arguments of `reconcile(..., repair=True)` and what it read
before writing anything (the mode lock's facts, the keys the tiles are cut by)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from mssql_cdc.errors import ConfigError
from mssql_cdc.options import SourceConfig
from mssql_cdc.recovery import RecoveryRequest, check_recovery
from mssql_cdc.snapshot import open_probe, usable_keys

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.facts import SnapshotFacts

__all__ = ["RepairJob", "check_repair_arguments", "prepare_repair"]


@dataclass(frozen=True, slots=True)
class RepairJob:
    """A repair's checked arguments, what the mode lock read, and the table's chunk keys.

    `request` is the requested chunked re-snapshot the repair runs (it derives the gap's
    deletes); `facts` the family's snapshot rows the mode lock read, None without any; `keys`
    the unique index the tiles bound and `kind` how a chunk bound is written.
    """

    target: str
    app_id: str
    checkpoint: str
    facts_table: str
    request: RecoveryRequest
    facts: SnapshotFacts | None
    keys: tuple[str, ...]
    kind: Literal["int", "keyset"]


def check_repair_arguments(
    against: object,
    *,
    app_id: str | None,
    checkpoint: str | None,
    facts_table: str | None,
) -> None:
    """Refuse a repair the arguments cannot describe, before anything is read or written."""
    if against != "bronze":
        raise ConfigError(
            "reconcile: repair=True repairs bronze, and silver follows bronze through "
            "apply_changes' rebuild; reconcile the bronze table with against='bronze' and "
            "repair=True, then run apply_changes"
        )
    missing = [
        name
        for name, value in (
            ("app_id", app_id),
            ("checkpoint", checkpoint),
            ("facts_table", facts_table),
        )
        if value is None
    ]
    if missing:
        raise ConfigError(
            f"reconcile: repair=True needs the stream's {', '.join(missing)}, as to_delta "
            "takes them: the repair opens the stream's next generation"
        )


def prepare_repair(
    spark: SparkSession,
    config: SourceConfig,
    options: Mapping[str, object],
    target: str,
    *,
    app_id: str,
    checkpoint: str,
    facts_table: str,
    interval_days: float,
    keys: Sequence[str] | None,
) -> RepairJob:
    """Check everything a repair needs, writing nothing: the stream's arguments (as resnapshot()
    checks them), a stopped stream, the mode lock and keys that can bound a chunk.

    Raises:
        ConfigError: the first defect found.
    """
    from mssql_cdc.snapshot import checked_family
    from mssql_cdc.source import register

    args = check_recovery(
        config, options, target, app_id, checkpoint, facts_table, interval_days, "chunked", False
    )
    running = [q.name for q in spark.streams.active if _in_family(q.name, args.app_id)]
    if running:
        raise ConfigError(
            f"reconcile: the stream {running[0]!r} is running in this session; stop it "
            "(query.stop()) before repair=True, which opens its next generation"
        )
    with closing(open_probe(config)) as probe:
        index, kind = usable_keys(probe)
    if kind is None:
        raise ConfigError(
            f"reconcile: the key of {target} ({', '.join(index) or 'none'}) cannot bound a "
            "chunk, so no tiles can be re-read; take a whole re-snapshot with "
            "CdcStream.resnapshot() instead"
        )
    if keys is not None and [k.lower() for k in keys] != [k.lower() for k in index]:
        raise ConfigError(
            f"reconcile: repair=True tiles the table by its unique index ({', '.join(index)}); "
            "leave keys out"
        )
    register(spark)
    facts = checked_family(
        spark,
        config,
        args.target,
        app_id=args.app_id,
        facts_table=args.facts_table,
        checkpoint=None if args.checkpoint_is_spark_only else args.checkpoint,
        mode="chunked",
        bootstrap=False,
        resnapshot=True,
    )
    request = replace(args.recovery_request(config), requested=True, gap_deletes=True)
    return RepairJob(
        args.target,
        args.app_id,
        args.checkpoint,
        args.facts_table or facts_table,
        request,
        facts,
        tuple(index),
        kind,
    )


def _in_family(name: str | None, app_id: str) -> bool:
    """Whether a query of this name streams the family of `app_id` (any generation)."""
    return name is not None and (name == app_id or name.startswith(f"{app_id}.g"))
