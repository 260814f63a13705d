"""The checkpoint toolkit against what Spark 4.2 really writes: a Python streaming source whose
offsets have this library's shape, run with availableNow, and the offset log read back."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.core import checkpoint
from mssql_cdc.core.checkpoint import StreamOffset


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def offset(n: int) -> dict[str, str]:
    return {"lsn": lsn(n), "commit_ts": f"2026-09-28T14:03:{n:02d}.117"}


@pytest.fixture(scope="module")
def probe_format(spark: SparkSession) -> str:
    """Register a source that serves LSNs 1..end as offsets of the shape the CDC source writes."""
    from pyspark import cloudpickle
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    # The Python workers cannot import this test module: ship its code to them by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    class ProbeReader(DataSourceStreamReader):
        def __init__(self, end: int) -> None:
            self.end = end

        def initialOffset(self) -> dict[str, str]:
            return offset(0)

        def latestOffset(self, start: dict[str, str], limit: Any) -> dict[str, str]:
            return offset(self.end)

        def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[InputPartition]:
            return [InputPartition((int(start["lsn"], 16), int(end["lsn"], 16)))]

        def read(self, partition: Any) -> Any:
            low, high = partition.value
            return iter([(i,) for i in range(low + 1, high + 1)])

    class ProbeSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "offset_probe"

        def schema(self) -> str:
            return "n long"

        def streamReader(self, schema: Any) -> ProbeReader:
            return ProbeReader(int(self.options["end"]))

    spark.dataSource.register(ProbeSource)
    return "offset_probe"


def run_to(spark: SparkSession, fmt: str, ckpt: Path, end: int) -> None:
    query = (
        spark.readStream.format(fmt)
        .option("end", str(end))
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None


def test_the_last_processed_offset_is_what_the_source_reported_for_the_last_commit(
    spark: SparkSession, probe_format: str, tmp_path: Path
) -> None:
    ckpt = tmp_path / "ckpt"
    assert checkpoint.last_processed_offset(ckpt) is None
    assert not checkpoint.has_metadata(ckpt)

    run_to(spark, probe_format, ckpt, 3)
    run_to(spark, probe_format, ckpt, 7)

    assert checkpoint.has_metadata(ckpt)
    last = checkpoint.last_processed_offset(ckpt)
    assert last is not None
    assert last.batch_id == max(
        int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit()
    )
    # Spark stores json.dumps of the dict verbatim: the oracle is Python's own json module.
    assert last.source_json == json.dumps(offset(7))
    assert last.offset() == StreamOffset(lsn(7), "2026-09-28T14:03:07.117")
    lines = (ckpt / "offsets" / str(last.batch_id)).read_text().split("\n")
    assert lines[0] == "v1"
    assert lines[2] == last.source_json


def test_a_batch_planned_but_not_committed_is_not_the_last_processed_offset(
    spark: SparkSession, probe_format: str, tmp_path: Path
) -> None:
    ckpt = tmp_path / "ckpt"
    run_to(spark, probe_format, ckpt, 3)
    run_to(spark, probe_format, ckpt, 7)
    committed = sorted(int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit())
    # A crash between the offset write and the commit leaves exactly this: Spark replays it.
    newest = committed[-1]
    (ckpt / "commits" / str(newest)).unlink()
    (ckpt / "commits" / f".{newest}.crc").unlink(missing_ok=True)
    last = checkpoint.last_processed_offset(ckpt)
    assert last is not None
    assert last.batch_id == committed[-2]
    assert last.offset() == StreamOffset(lsn(3), "2026-09-28T14:03:03.117")

    # And Spark agrees: rerunning replays the uncommitted batch and commits it again.
    run_to(spark, probe_format, ckpt, 7)
    again = checkpoint.last_processed_offset(ckpt)
    assert again is not None
    assert again.offset().lsn == lsn(7)
    shutil.rmtree(ckpt)
