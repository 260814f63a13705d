"""B1's second baseline: the same ranges read through the source in plain batch form.

The `mssql_cdc` source is a stream only. This batch data source (registered for the bench
alone) plans one micro-batch's ranges exactly as the stream does (`CdcStreamReader`: the same
offsets, the same `partitions(start, end)`) and reads each range through the same partition
reader on Spark's Python workers. Appending what it reads with a plain Delta append costs
what B1 would cost without to_delta's own work (the cache, the counts, the keyed commits, the
facts commit, the streaming engine's logs), so the two ratios separate the sink's overhead
from the cost of reading the emulator through Python.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from mssql_cdc.source.formats import CdcDataSource
from mssql_cdc.source.table_schema import read_columns

NAME = "b1_plain_changes"


class PlainRangeReader(DataSourceReader):
    """Reads the ranges of one planned micro-batch `(start, end]`."""

    def __init__(self, source: CdcDataSource, schema: Any, start: str, end: str) -> None:
        from mssql_cdc.source.planner import CdcStreamReader

        self._stream = CdcStreamReader(source.config, read_columns(schema), 2)
        self._start = json.loads(start)
        self._end = json.loads(end)

    def partitions(self) -> Sequence[InputPartition]:
        try:
            return self._stream.partitions(self._start, self._end)
        finally:
            self._stream.stop()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return self._stream.read(partition)


class PlainChanges(CdcDataSource):
    """`spark.read.format("b1_plain_changes")` with options b1Start and b1End (offset JSON)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def reader(self, schema: Any) -> DataSourceReader:
        return PlainRangeReader(self, schema, self.options["b1Start"], self.options["b1End"])


def register(spark: Any) -> None:
    """Register the bench's source; its module travels to the workers by value."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(PlainChanges)


def plan_offsets(options: dict[str, str], batches: int) -> list[tuple[dict[str, str], ...]]:
    """The (start, end) offsets of the stream's micro-batches, planned as availableNow does."""
    from mssql_cdc.options.config import SourceConfig
    from mssql_cdc.source.planner import CdcStreamReader
    from mssql_cdc.source.table_schema import declared_columns, resolve_table
    from mssql_cdc.sqlserver.backend_choice import open_backend

    config = SourceConfig.from_options(options)
    backend = open_backend(config)
    table = resolve_table(backend.catalog, config.capture_instance)
    reader = CdcStreamReader(config, declared_columns(backend.catalog, config, table), 2)
    backend.close()
    reader.prepareForTriggerAvailableNow()
    limit = reader.getDefaultReadLimit()
    start = reader.initialOffset()
    found: list[tuple[dict[str, str], ...]] = []
    while True:
        end = reader.latestOffset(start, limit)
        if end["lsn"] <= start["lsn"]:
            break
        found.append((start, end))
        start = end
    reader.stop()
    if len(found) != batches:
        raise RuntimeError(f"B1: planned {len(found)} batches, not {batches}")
    return found


def _plain_schema(spark: Any, options: dict[str, str]) -> Any:
    """The batches' schema, resolved once, as the stream resolves it once per query."""
    base = spark.read.format(NAME).options(**options)
    return base.option("b1Start", "{}").option("b1End", "{}").load().schema


def _batch_frame(
    spark: Any, options: dict[str, str], schema: Any, start: dict[str, str], end: dict[str, str]
) -> Any:
    """One planned batch `(start, end]` in plain form."""
    return (
        spark.read.format(NAME)
        .options(**options)
        .option("b1Start", json.dumps(start))
        .option("b1End", json.dumps(end))
        .schema(schema)
        .load()
    )


def run_plain(
    spark: Any, options: dict[str, str], offsets: list[tuple[dict[str, str], ...]], target: str
) -> float:
    """Seconds to read each planned batch through the source's reader and append it plainly.

    The schema is resolved once before the clock, as the stream resolves it once per query.
    """
    schema = _plain_schema(spark, options)
    started = time.perf_counter()
    for start, end in offsets:
        frame = _batch_frame(spark, options, schema, start, end)
        frame.write.format("delta").mode("append").save(target)
    return time.perf_counter() - started


def run_spec_floor(
    spark: Any, options: dict[str, str], offsets: list[tuple[dict[str, str], ...]], target: str
) -> tuple[float, float, float]:
    """Seconds of the two passes the earlier, cached sink made over a batch, and nothing else.

    Before decision 1350 the sink cached each batch, read it into the cache (its counts were
    needed before the append) and appended from the cache. Each planned batch is read as
    `run_plain` reads it, cached as that sink cached it (`MEMORY_AND_DISK_DESER`), read into
    the cache by a one-job pass without a shuffle, then appended plainly from the cache (no
    key, no metadata, no facts, no streaming engine). Returns (total, cache passes, appends):
    no sink that caches its batches this way can beat the total on this machine, so where it
    is slower than `run_plain`, the one-pass sink has nothing to gain from the cache.
    """
    from pyspark.storagelevel import StorageLevel

    from mssql_cdc.sink.micro_batch import read_partitions

    schema = _plain_schema(spark, options)
    cache_s = append_s = 0.0
    for start, end in offsets:
        frame = _batch_frame(spark, options, schema, start, end)
        began = time.perf_counter()
        cached = frame.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        read_partitions(cached)
        read = time.perf_counter()
        cached.write.format("delta").mode("append").save(target)
        done = time.perf_counter()
        cached.unpersist()
        cache_s += read - began
        append_s += done - read
    return cache_s + append_s, cache_s, append_s


def floor_notes(
    floors: list[tuple[float, float, float]], plain_s: float, ours_s: float
) -> list[str]:
    """The report's lines on the two-pass floor, from `run_spec_floor`'s rounds (medians)."""
    import statistics

    total = statistics.median(f[0] for f in floors)
    cache = statistics.median(f[1] for f in floors)
    append = statistics.median(f[2] for f in floors)
    return [
        f"the two-pass floor (b1_plain.run_spec_floor: the same batches cached as the sink "
        f"before decision 1350 cached them, read into the cache by a one-job pass, then "
        f"appended plainly from the cache): s per round {[round(f[0], 1) for f in floors]}, of "
        f"which the cache passes {cache:.1f} s and the appends {append:.1f} s (medians); plain "
        f"/ floor {plain_s / total:.2f}, the highest ratio a sink that caches its batches could "
        f"reach on this machine; ours (one pass) reaches {total / ours_s:.2f} of that floor's "
        f"speed, so the cached shape is {'slower' if total > plain_s else 'faster'} than one "
        f"pass even before a sink's fixed costs"
    ]
