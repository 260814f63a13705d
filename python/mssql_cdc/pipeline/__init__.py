"""The entry that composes the stages: `stream(spark, options) -> CdcStream`, the checked
arguments of `to_delta`, `fan_out()`, many streams in one job, and the stream's figures in
Spark's progress (`OBSERVED_METRICS`) with their Prometheus exporter.

These names are the package's face; other packages import them from here.
"""

from mssql_cdc.pipeline.cdc_stream import CdcStream, stream
from mssql_cdc.pipeline.fan_out_job import FanOutJob, fan_out
from mssql_cdc.pipeline.fan_out_plan import StreamEntry
from mssql_cdc.pipeline.observed_metrics import OBSERVED_FIELDS, OBSERVED_METRICS, observed_figures
from mssql_cdc.pipeline.prometheus import PROMETHEUS_FAMILIES, PrometheusTextExporter

__all__ = [
    "OBSERVED_FIELDS",
    "OBSERVED_METRICS",
    "PROMETHEUS_FAMILIES",
    "CdcStream",
    "FanOutJob",
    "PrometheusTextExporter",
    "StreamEntry",
    "fan_out",
    "observed_figures",
    "stream",
]
