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
    """Seconds of the two passes any sink must make over a batch, and nothing else.

    A sink caches each batch before it writes, so that the batch is read from the source once
    however many tables it feeds: one pass reads the batch into the cache, one appends it.

    Each planned batch is read as `run_plain` reads it, cached at the sink's storage level, read
    into the cache by the sink's own one-job pass, then appended plainly from the cache (no key,
    no metadata, no facts, no streaming engine). Returns (total, cache passes, appends): no
    design that caches its batches this way can beat the total on this machine.
    """
    from pyspark.storagelevel import StorageLevel

    from mssql_cdc.sink.micro_batch import STORAGE_LEVEL, read_into_cache

    schema = _plain_schema(spark, options)
    cache_s = append_s = 0.0
    for start, end in offsets:
        frame = _batch_frame(spark, options, schema, start, end)
        began = time.perf_counter()
        cached = frame.persist(getattr(StorageLevel, STORAGE_LEVEL))
        read_into_cache(cached)
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
        f"the two-pass floor (b1_plain.run_spec_floor: the same batches cached at the sink's "
        f"storage level, read into the cache by the sink's one-job pass, then appended plainly "
        f"from the cache; every sink makes both passes, so the source is read once): s per round "
        f"{[round(f[0], 1) for f in floors]}, of which the cache passes {cache:.1f} s and the "
        f"appends {append:.1f} s (medians); plain / floor {plain_s / total:.2f}, the highest "
        f"ratio a sink that caches its batches can reach on this machine; ours reaches "
        f"{total / ours_s:.2f} of the floor's speed, the rest being its fixed costs (tables, "
        f"keyed commits, facts, the streaming engine)"
    ]
