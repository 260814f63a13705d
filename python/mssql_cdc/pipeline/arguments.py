"""The arguments of `to_delta`, checked before any I/O.

Every refusal is a `ConfigError` (a `ValueError`) raised before anything is read, written or
started. The stream's names and recovery settings are checked by `mssql_cdc.recovery`, as every
call that names a stream checks them; this module adds what only a query takes, its trigger and
its name, checked between the two halves so the order of refusals stays fixed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from mssql_cdc.errors import ConfigError
from mssql_cdc.options import SourceConfig
from mssql_cdc.recovery import StreamArguments, check_recovery_settings, check_stream_names

__all__ = ["ToDeltaArgs", "check_to_delta"]


@dataclass(frozen=True, slots=True)
class ToDeltaArgs(StreamArguments):
    """to_delta's arguments after validation: the stream's, and how its query runs.

    `trigger` holds the one keyword of DataStreamWriter.trigger, None for Spark's default;
    `query_name` is None for the app id's default name.
    """

    trigger: Mapping[str, Any] | None = None
    query_name: str | None = None


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
    settings = check_recovery_settings(
        config,
        options,
        on_data_loss=on_data_loss,
        mode=mode,
        interval_days=interval_days,
        bootstrap=bootstrap,
        gap_deletes=gap_deletes,
        facts_table=facts_table,
        checkpoint=checkpoint,
    )
    checked_trigger = _trigger(trigger)
    if query_name is not None and (not isinstance(query_name, str) or not query_name):
        raise ConfigError(f"query_name={query_name!r}: pass a non-empty string or None")
    stream = check_stream_names(
        settings,
        target=target,
        app_id=app_id,
        facts_table=facts_table,
        metrics_path=config.metrics_path,
    )
    return ToDeltaArgs(
        **{f.name: getattr(stream, f.name) for f in fields(stream)},
        trigger=checked_trigger,
        query_name=query_name,
    )
