"""The entry that composes the stages: `stream(spark, options) -> CdcStream`, the checked
arguments of `to_delta`, and `fan_out()`, many streams in one job.

These names are the package's face; other packages import them from here.
"""

from mssql_cdc.pipeline.cdc_stream import CdcStream, stream
from mssql_cdc.pipeline.fan_out_job import FanOutJob, fan_out
from mssql_cdc.pipeline.fan_out_plan import StreamEntry

__all__ = [
    "CdcStream",
    "FanOutJob",
    "StreamEntry",
    "fan_out",
    "stream",
]
