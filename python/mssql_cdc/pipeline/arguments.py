"""The arguments of `to_delta` and `plan_recovery`, checked before any I/O.

Every refusal is a `ConfigError` (a `ValueError`) raised before anything is read, written or
started. The raw source options are consulted only to tell whether the caller gave
`startingLsn` (its default, `earliest`, cannot be told apart once parsed).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.core.checkpoint import check_checkpoint_path, spark_only
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts.keys import validate_app_id
from mssql_cdc.options.config import OnDataLoss, SnapshotMode, SourceConfig
from mssql_cdc.tables import refs as tables

if TYPE_CHECKING:
    from mssql_cdc.recovery.preflight import RecoveryRequest

__all__ = [
    "MAX_INTERVAL_DAYS",
    "ToDeltaArgs",
    "check_recovery",
    "check_to_delta",
    "given_option",
]


@dataclass(frozen=True, slots=True)
class ToDeltaArgs:
    """to_delta's arguments after validation; `checkpoint` is absolute unless only Spark reads
    it (a URI or /dbfs/..., with on_data_loss="fail")."""

    target: str
    app_id: str
    checkpoint: str
    facts_table: str | None
    bootstrap: bool
    on_data_loss: OnDataLoss
    interval_days: float
    mode: SnapshotMode
    trigger: Mapping[str, Any] | None
    query_name: str | None
    gap_deletes: bool = False  # a completed re-snapshot derives the gap's deletes

    @property
    def checkpoint_is_spark_only(self) -> bool:
        return spark_only(self.checkpoint)

    def recovery_request(self, config: SourceConfig) -> RecoveryRequest:
        """What the pre-flight's recovery is asked to do for these arguments."""
        from mssql_cdc.recovery.entry import recovery_request

        return recovery_request(
            config,
            target=self.target,
            app_id=self.app_id,
            checkpoint=self.checkpoint,
            mode=self.mode,
            bootstrap=self.bootstrap,
            interval_days=self.interval_days,
            gap_deletes=self.gap_deletes,
        )


def given_option(options: Mapping[str, object], name: str) -> bool:
    """Whether the caller set option `name` (ignoring case; a None value is not set)."""
    return any(k.strip().lower() == name.lower() and v is not None for k, v in options.items())


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        choices = " or ".join(repr(a) for a in allowed)
        raise ConfigError(f"{name}={value!r}: pass {choices}")
    return value


MAX_INTERVAL_DAYS = 36_500
"""The longest anti-loop interval: a century, beyond any stream's life."""


def _interval(value: object) -> float:
    days = value if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
    if not 0 <= days <= MAX_INTERVAL_DAYS:  # NaN too
        raise ConfigError(
            f"resnapshot_interval_days={value!r}: pass a number of days from 0 to "
            f"{MAX_INTERVAL_DAYS:,} (0 re-snapshots now)"
        )
    return float(days)


_TRIGGER_HINT = (
    "pass one of {'processingTime': '10 seconds'}, {'availableNow': True}, {'once': True}"
)


# What Spark's Trigger.ProcessingTime parses (checked against Spark 4.2): an optional
# `interval`, then `<number> <unit>` pairs; abbreviations, months, years and signs it refuses.
_INTERVAL_PART = r"\d+(?:\.\d+)?\s+(?:week|day|hour|minute|second|millisecond|microsecond)s?"
_PROCESSING_TIME = re.compile(
    rf"\s*(?:interval\s+)?{_INTERVAL_PART}(?:\s+{_INTERVAL_PART})*\s*", re.IGNORECASE
)


def _trigger(value: object) -> Mapping[str, Any] | None:
    """The keyword arguments of DataStreamWriter.trigger: exactly one, of a type it takes."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"trigger={value!r}: {_TRIGGER_HINT}, or None for Spark's default")
    if len(value) != 1:
        raise ConfigError(
            f"trigger={value!r} gives {len(value)} keys where Spark takes exactly one: "
            f"{_TRIGGER_HINT}, or None for Spark's default"
        )
    ((key, setting),) = value.items()
    if key == "continuous":
        raise ConfigError(
            f"trigger={value!r}: continuous processing runs no foreachBatch sink, and to_delta "
            "writes through one; use {'processingTime': ...} or {'availableNow': True}"
        )
    if key == "processingTime":
        if not isinstance(setting, str) or not _PROCESSING_TIME.fullmatch(setting):
            raise ConfigError(
                f"trigger={value!r}: processingTime takes an interval Spark reads, such as "
                "'10 seconds', '1 minute 30 seconds' or '500 milliseconds': numbers >= 0, "
                "each with a unit of week, day, hour, minute, second, millisecond or "
                "microsecond (plural allowed, no abbreviations, no months or years)"
            )
    elif key in ("once", "availableNow"):
        if setting is not True:
            raise ConfigError(
                f"trigger={value!r}: {key} takes True only; pass None for Spark's default"
            )
    else:
        raise ConfigError(
            f"trigger={value!r}: {key!r} is not a keyword of DataStreamWriter.trigger "
            "(processingTime, once, availableNow; continuous is not supported); "
            f"{_TRIGGER_HINT}"
        )
    return {key: setting}


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
) -> ToDeltaArgs:
    """The checked arguments of a to_delta(..., on_data_loss="resnapshot") run, for the
    calls that plan or request a re-snapshot without starting a query.

    Raises:
        ConfigError: the first defect found, as `check_to_delta` names it.
    """
    return check_to_delta(
        config,
        options,
        target=target,
        app_id=app_id,
        checkpoint=checkpoint,
        facts_table=facts_table,
        bootstrap=bootstrap,
        on_data_loss="resnapshot",
        interval_days=interval_days,
        mode=mode,
    )


def check_to_delta(
    config: SourceConfig,
    options: Mapping[str, object],
    *,
    target: object,
    app_id: object,
    checkpoint: object,
    facts_table: object,
    bootstrap: object,
    on_data_loss: object,
    interval_days: object,
    mode: object,
    trigger: object = None,
    query_name: object = None,
    gap_deletes: object = False,
) -> ToDeltaArgs:
    """Validate to_delta's arguments in a fixed order, so one call always names the same defect.

    Raises:
        ConfigError: the first defect found, naming the argument and what to pass.
    """
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
    checked_trigger = _trigger(trigger)
    if query_name is not None and (not isinstance(query_name, str) or not query_name):
        raise ConfigError(f"query_name={query_name!r}: pass a non-empty string or None")
    checked_app_id = validate_app_id(app_id)
    target_ref = tables.table_ref(target, argument="target")
    if facts_table is not None:
        tables.table_ref(facts_table, argument="facts_table")
    tables.require_distinct(target=target, facts_table=facts_table)
    return ToDeltaArgs(
        target=target_ref.text,
        app_id=checked_app_id,
        checkpoint=ckpt,
        facts_table=None if facts_table is None else str(facts_table),
        bootstrap=bootstrap,
        on_data_loss="resnapshot" if loss == "resnapshot" else "fail",
        interval_days=interval,
        mode="chunked" if snapshot == "chunked" else "full",
        trigger=checked_trigger,
        query_name=query_name,
        gap_deletes=gap_deletes,
    )
