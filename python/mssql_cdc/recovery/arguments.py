"""The checked arguments that name a stream and say how it recovers, before any I/O.

`to_delta`, `CdcStream.resnapshot`, `CdcStream.plan_recovery` and `reconcile(repair=True)` all
name a stream the same way (bronze, app_id, checkpoint, facts table) and take the same recovery
settings; they are checked here, in one fixed order, so one call always names the same defect.
Every refusal is a `ConfigError` (a `ValueError`) raised before anything is read, written or
started. The stream's folders are compared resolved and kept apart (decision 1310). The raw
source options are consulted only to tell whether the caller gave
`startingLsn` (its default, `earliest`, cannot be told apart once parsed). The source's own
snapshots (option snapshotMode other than never) are refused here: these calls take their
snapshots themselves, into generations (decision 1397).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from mssql_cdc.core import (
    check_apart,
    check_checkpoint_path,
    check_checkpoint_place,
    check_sink_folders,
    place,
    spark_only,
)
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import validate_app_id
from mssql_cdc.options import OnDataLoss, SnapshotMode, SourceConfig, given_option
from mssql_cdc.recovery.preflight import RecoveryRequest
from mssql_cdc.tables import require_distinct, table_ref

__all__ = [
    "MAX_INTERVAL_DAYS",
    "RecoverySettings",
    "StreamArguments",
    "check_recovery",
    "check_recovery_settings",
    "check_stream_names",
]

MAX_INTERVAL_DAYS = 36_500
"""The longest anti-loop interval, in days: a century, beyond any stream's life."""


@dataclass(frozen=True, slots=True)
class RecoverySettings:
    """How a run treats a loss, checked: the first half of a stream's arguments."""

    checkpoint: str  # absolute, unless only Spark reads it (a URI or /dbfs/..., with "fail")
    on_data_loss: OnDataLoss
    interval_days: float  # the anti-loop interval, from 0 to MAX_INTERVAL_DAYS
    mode: SnapshotMode
    bootstrap: bool
    gap_deletes: bool


@dataclass(frozen=True, slots=True)
class StreamArguments:
    """A stream's checked arguments: which tables and checkpoint it uses and how it recovers.

    `checkpoint` is absolute unless only Spark reads it (a URI or /dbfs/..., with
    on_data_loss="fail"); `facts_table` is None when the caller gave none.
    """

    target: str
    app_id: str
    checkpoint: str
    facts_table: str | None
    bootstrap: bool
    on_data_loss: OnDataLoss
    interval_days: float  # the anti-loop interval, in days
    mode: SnapshotMode
    gap_deletes: bool = False  # a completed re-snapshot derives the gap's deletes

    @property
    def checkpoint_is_spark_only(self) -> bool:
        """Whether only Spark can read the checkpoint (a URI or /dbfs/...): no state file."""
        return spark_only(self.checkpoint)

    def recovery_request(self, config: SourceConfig) -> RecoveryRequest:
        """What the pre-flight is asked to do for these arguments. Of the startingLsn option
        only an LSN is an explicit start: earliest and latest leave the start to the decision."""
        start = config.starting_lsn
        return RecoveryRequest(
            target=self.target,
            app_id=self.app_id,
            checkpoint=self.checkpoint,
            mode=self.mode,
            bootstrap=self.bootstrap,
            starting_lsn=None if start in ("earliest", "latest") else str(start),
            interval_days=self.interval_days,
            duration_guard=config.snapshot_duration_guard,
            metrics_path=config.metrics_path,
            gap_deletes=self.gap_deletes,
        )


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        choices = " or ".join(repr(a) for a in allowed)
        raise ConfigError(f"{name}={value!r}: pass {choices}")
    return value


def _interval(value: object) -> float:
    days = value if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
    if not 0 <= days <= MAX_INTERVAL_DAYS:  # NaN too
        raise ConfigError(
            f"resnapshot_interval_days={value!r}: pass a number of days from 0 to "
            f"{MAX_INTERVAL_DAYS:,} (0 re-snapshots now)"
        )
    return float(days)


def check_recovery_settings(
    config: SourceConfig,
    options: Mapping[str, object],
    on_data_loss: object,
    mode: object,
    interval_days: object,
    bootstrap: object,
    gap_deletes: object,
    facts_table: object,
    checkpoint: object,
) -> RecoverySettings:
    """Check the recovery settings and the checkpoint, in the order of the parameters (a facts
    table is checked only for being given, its name by `check_stream_names`).

    Raises:
        ConfigError: the first defect found, naming the argument and what to pass.
    """
    if config.snapshot_mode != "never":
        raise ConfigError(
            f"option snapshotMode={config.snapshot_mode} makes the source snapshot the table "
            "itself, and to_delta takes its snapshots itself (bootstrap=True, "
            "on_data_loss='resnapshot'), into generations: remove snapshotMode (or set it to "
            "never) here, or read spark.readStream.format('mssql_cdc') into a sink of your own"
        )
    loss = _choice("on_data_loss", on_data_loss, ("fail", "resnapshot"))
    snapshot = _choice("snapshot", mode, ("full", "chunked"))
    interval = _interval(interval_days)
    if not isinstance(bootstrap, bool):
        raise ConfigError(f"bootstrap={bootstrap!r}: pass True or False")
    if not isinstance(gap_deletes, bool):
        raise ConfigError(f"gap_deletes={gap_deletes!r}: pass True or False")
    if gap_deletes and loss != "resnapshot":
        raise ConfigError(
            "gap_deletes=True derives deletes when a re-snapshot completes, and only "
            "on_data_loss='resnapshot' re-snapshots: pass both, or leave gap_deletes False"
        )
    if snapshot == "chunked" and facts_table is None:
        raise ConfigError(
            "snapshot='chunked' needs a facts_table: a chunked snapshot's opens, plan and "
            "chunks are facts rows"
        )
    if bootstrap and given_option(options, "startingLsn"):
        raise ConfigError("bootstrap=True and startingLsn: use one or the other")
    if loss == "resnapshot" and facts_table is None:
        raise ConfigError(
            "on_data_loss='resnapshot' needs a facts_table: without its event rows an emptied "
            "table's re-snapshot is invisible downstream"
        )
    if config.snapshot_on_switch and loss != "resnapshot":
        raise ConfigError(
            "option snapshotOnSwitch needs on_data_loss='resnapshot': its snapshot opens the "
            "next generation through the recovery's steps (a facts_table, a local checkpoint)"
        )
    if not isinstance(checkpoint, str | os.PathLike) or not os.fspath(checkpoint):
        raise ConfigError(f"checkpoint={checkpoint!r}: pass the stream's checkpoint folder")
    ckpt = os.fspath(checkpoint)
    if not isinstance(ckpt, str):
        raise ConfigError(f"checkpoint={checkpoint!r}: pass the folder as a str path")
    if loss == "resnapshot":
        try:
            ckpt = check_checkpoint_path(ckpt)  # refuses URIs and /dbfs, makes it absolute
        except ConfigError as exc:
            raise ConfigError(
                f"on_data_loss='resnapshot' reads Spark's offset log with Python: {exc}, or run "
                "with on_data_loss='fail'"
            ) from None
    elif not spark_only(ckpt):
        ckpt = check_checkpoint_path(ckpt)
    if loss == "resnapshot" and not config.fail_on_data_loss:
        raise ConfigError("on_data_loss='resnapshot' needs failOnDataLoss true")
    return RecoverySettings(
        checkpoint=ckpt,
        on_data_loss="resnapshot" if loss == "resnapshot" else "fail",
        interval_days=interval,
        mode="chunked" if snapshot == "chunked" else "full",
        bootstrap=bootstrap,
        gap_deletes=gap_deletes,
    )


def check_stream_names(
    settings: RecoverySettings,
    *,
    target: object,
    app_id: object,
    facts_table: object,
    metrics_path: str | None = None,
) -> StreamArguments:
    """Check the names of the stream's app_id and tables, after its `settings`, and that its
    folders keep apart (`core.check_apart`): the checkpoint is not a table's
    folder, inside one, or holding one, nor inside another stream's checkpoint, and the
    metrics folder (the metricsPath option) is not inside a table and holds none of the
    stream's folders where its sink cleans.

    Raises:
        ConfigError: an invalid app_id or table name, a facts table that is the target, or
            two of the stream's folders where one is, or lies inside, the other.
    """
    checked_app_id = validate_app_id(app_id)
    target_ref = table_ref(target, argument="target")
    facts_ref = None if facts_table is None else table_ref(facts_table, argument="facts_table")
    require_distinct(target=target, facts_table=facts_table)
    checkpoint = place(settings.checkpoint, what="checkpoint")
    check_checkpoint_place(checkpoint)
    tables = [
        place(ref.text, what=argument)
        for argument, ref in (("target", target_ref), ("facts_table", facts_ref))
        if ref is not None and ref.is_path
    ]
    check_apart([checkpoint, *tables])
    if metrics_path is not None:
        metrics = place(metrics_path, what="metricsPath")
        check_sink_folders(metrics, checked_app_id, tables=tables, checkpoint=checkpoint)
    return StreamArguments(
        target=target_ref.text,
        app_id=checked_app_id,
        checkpoint=settings.checkpoint,
        facts_table=None if facts_table is None else str(facts_table),
        bootstrap=settings.bootstrap,
        on_data_loss=settings.on_data_loss,
        interval_days=settings.interval_days,
        mode=settings.mode,
        gap_deletes=settings.gap_deletes,
    )


def check_recovery(
    config: SourceConfig,
    options: Mapping[str, object],
    target: object,
    app_id: object,
    checkpoint: object,
    facts_table: object,
    interval_days: object,
    mode: object,
    bootstrap: object,
) -> StreamArguments:
    """The checked arguments of a to_delta(..., on_data_loss="resnapshot") run, for the calls
    that plan or request a re-snapshot without starting a query.

    Raises:
        ConfigError: the first defect found, as to_delta's checks name it.
    """
    settings = check_recovery_settings(
        config,
        options,
        "resnapshot",
        mode,
        interval_days,
        bootstrap,
        False,
        facts_table,
        checkpoint,
    )
    return check_stream_names(
        settings,
        target=target,
        app_id=app_id,
        facts_table=facts_table,
        metrics_path=config.metrics_path,
    )
