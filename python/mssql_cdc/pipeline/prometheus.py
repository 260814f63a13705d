"""`PrometheusTextExporter`: the newest `mssql_cdc` figures of each query, in Prometheus's text
exposition format (decision 1383).

A `StreamingQueryListener` (`exporter.listener()`) hands it each progress; `render()` writes
one gauge family per figure, a sample per query labelled with the query's name and id, for an
HTTP handler, a textfile collector or a push to a gateway to serve. The format is written here
from Prometheus's documented grammar
(https://prometheus.io/docs/instrumenting/exposition_formats/): a `# HELP` and a `# TYPE` line
before each family's samples, label values with backslash, double quote and line feed escaped,
every line ended by a line feed.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from mssql_cdc.pipeline.observed_metrics import OBSERVED_FIELDS, observed_figures, progress_fields

if TYPE_CHECKING:
    from pyspark.sql.streaming.listener import StreamingQueryListener

__all__ = ["PROMETHEUS_FAMILIES", "PrometheusTextExporter"]

_EVENT: Final = "event"  # the events of the newest batch, a sample each
_EVENT_TIME: Final = "event_timestamp"  # per event, the newest batch that recorded it

PROMETHEUS_FAMILIES: Final = (
    ("mssql_cdc_batch_id", "batchId", "Id of the newest micro-batch that observed figures."),
    ("mssql_cdc_batch_rows", "rows", "Change rows the newest micro-batch read."),
    ("mssql_cdc_batch_inserts", "inserts", "Inserts (operation 2) in the newest micro-batch."),
    ("mssql_cdc_batch_updates", "updates", "Update after-images (operation 4) in it."),
    ("mssql_cdc_batch_deletes", "deletes", "Deletes (operation 1) in the newest micro-batch."),
    ("mssql_cdc_generation", "generation", "Checkpoint generation; a rise is a re-snapshot."),
    (
        "mssql_cdc_batch_timestamp_seconds",
        "timestamp",
        "Unix time the newest micro-batch started, from its progress.",
    ),
    (
        "mssql_cdc_retention_headroom_hours",
        "retention_headroom_hours",
        "Hours from CDC cleanup's watermark to the stream's end at the newest batch.",
    ),
    (
        "mssql_cdc_ingestion_lag_seconds",
        "ingestion_lag_seconds",
        "Seconds the stream's end was behind the source's newest commit at the newest batch.",
    ),
    (
        "mssql_cdc_capture_lag_seconds",
        "capture_lag_seconds",
        "Seconds from the source's newest captured commit to when the newest batch read.",
    ),
    (
        "mssql_cdc_batch_event",
        _EVENT,
        "1 for each event (label event) the newest micro-batch recorded.",
    ),
    (
        "mssql_cdc_event_timestamp_seconds",
        _EVENT_TIME,
        "Unix time of the newest micro-batch that recorded each event (label event).",
    ),
)
"""Each gauge family: its name, the figure it shows and its `# HELP` text. The last two have
a sample per event name (`bootstrap`, `resnapshot`, `data_skipped`, `schema_change`,
`capture_instance_switched`), labelled `event`, and none before a batch names one."""

# the figures taken from the observed metric; batchId and timestamp are the progress's own
_OBSERVED_KEYS: Final = tuple(k for _, k, _ in PROMETHEUS_FAMILIES if k in OBSERVED_FIELDS)


@dataclass(frozen=True, slots=True)
class _Latest:
    """One query's newest figures, keyed by the names of `PROMETHEUS_FAMILIES`' figures; the
    newest batch's events, and per event the start time of the newest batch that named it."""

    name: str
    query_id: str
    figures: Mapping[str, float]
    events: tuple[str, ...] = ()
    event_times: Mapping[str, float] = field(default_factory=dict)


class PrometheusTextExporter:
    """The newest `mssql_cdc` figures of each streaming query, rendered for Prometheus.

    Thread-safe: Spark calls listeners on its own thread while a scrape renders. A progress
    without the `mssql_cdc` observed metric (another query's, or an idle trigger's) changes
    nothing, so a query keeps its newest batch's figures until the process ends.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, _Latest] = {}

    def record(self, progress: Any) -> bool:
        """Keep the figures of one progress of a streaming query.

        Args:
            progress: a `StreamingQueryProgress` (a listener's `event.progress`,
                `query.lastProgress`), its `json` text, or that JSON as a mapping.
        Returns:
            True when the progress held the `mssql_cdc` observed metric and was kept.
        Raises:
            ConfigError (a ValueError): `progress` is none of those.
        """
        fields = progress_fields(progress)
        observed = observed_figures(fields)
        if observed is None:
            return False
        figures = {key: _number(observed.get(key)) for key in _OBSERVED_KEYS}
        figures["batchId"] = _number(fields.get("batchId"))
        figures["timestamp"] = _unix_seconds(fields.get("timestamp"))
        query_id = str(fields.get("id") or "")
        events = tuple(e for e in str(observed.get("events") or "").split(",") if e)
        with self._lock:
            before = self._latest.get(query_id)
            times = dict(before.event_times) if before is not None else {}
            times.update((event, figures["timestamp"]) for event in events)
            name = str(fields.get("name") or "")
            self._latest[query_id] = _Latest(name, query_id, figures, events, times)
        return True

    def render(self) -> str:
        """The text exposition of every kept query: `# HELP` and `# TYPE ... gauge`, then one
        sample per query; an empty string before any progress was kept."""
        with self._lock:
            kept = sorted(self._latest.values(), key=lambda q: (q.name, q.query_id))
        if not kept:
            return ""
        lines: list[str] = []
        for family, key, help_text in PROMETHEUS_FAMILIES:
            lines.append(f"# HELP {family} {_escape_help(help_text)}")
            lines.append(f"# TYPE {family} gauge")
            for query in kept:
                labels = f'query="{_escape_label(query.name)}",id="{_escape_label(query.query_id)}"'
                for event, value in _samples(query, key):
                    extra = "" if event is None else f',event="{_escape_label(event)}"'
                    lines.append(f"{family}{{{labels}{extra}}} {_sample(value)}")
        return "\n".join(lines) + "\n"

    def listener(self) -> StreamingQueryListener:
        """A `StreamingQueryListener` that records every query progress here; add it with
        `spark.streams.addListener(...)` (classic Spark and Spark Connect)."""
        from pyspark.sql.streaming.listener import StreamingQueryListener

        exporter = self

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                exporter.record(event.progress)

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        return _Listener()


def _samples(query: _Latest, key: str) -> list[tuple[str | None, float]]:
    """A family's samples of one query: (its `event` label or None, its value)."""
    if key == _EVENT:
        return [(event, 1.0) for event in sorted(query.events)]
    if key == _EVENT_TIME:
        return sorted(query.event_times.items())
    return [(None, query.figures[key])]


def _number(value: Any) -> float:
    """A figure as a float; NaN when the batch had none (Prometheus's missing value)."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _unix_seconds(value: Any) -> float:
    """Spark's progress `timestamp` (ISO 8601 in UTC, ending in Z) as Unix seconds."""
    if not isinstance(value, str) or not value:
        return math.nan
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.nan


def _sample(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
