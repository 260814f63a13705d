"""A minimal `mssql_cdc_snapshot` format over the emulator, for these tests only until the real
one (branch spark-source) is in main: `install(spark)` does nothing once `mssql_cdc.register`
exists. It follows 10-source.md section 10 for the options the snapshot code passes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import mssql_cdc
from mssql_cdc.emulator import EmulatorReader


def _spark_type(arrow_type: str) -> str:
    text = arrow_type.lower()
    for prefix, spark_type in (
        ("int8", "TINYINT"),
        ("uint8", "SMALLINT"),
        ("int16", "SMALLINT"),
        ("int32", "INT"),
        ("int64", "BIGINT"),
        ("bool", "BOOLEAN"),
        ("double", "DOUBLE"),
        ("float", "FLOAT"),
        ("timestamp", "TIMESTAMP_NTZ"),
        ("date", "DATE"),
        ("decimal", "DECIMAL(38,10)"),
        ("binary", "BINARY"),
        ("fixed_size_binary", "BINARY"),
    ):
        if text.startswith(prefix):
            return spark_type
    return "STRING"


def install(spark: Any) -> None:
    if getattr(mssql_cdc, "register", None) is not None:
        return
    import sys

    from pyspark import cloudpickle
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    # Python workers cannot import this test module: ship its classes by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    class _Chunks(InputPartition):  # type: ignore[misc]
        def __init__(self, chunks: list[list[Any]]) -> None:
            self.chunks = chunks

    class _Reader(DataSourceReader):  # type: ignore[misc]
        def __init__(self, options: dict[str, str], columns: list[str]) -> None:
            self.options = options
            self.columns = columns

        def partitions(self) -> list[_Chunks]:
            raw = self.options.get("snapshotchunks")
            chunks = json.loads(raw) if raw else [[None, None, None]]
            return [_Chunks(chunks)]

        def read(self, partition: _Chunks) -> Iterator[tuple[Any, ...]]:
            reader = EmulatorReader(self.options["emulatorpath"])
            found = reader.resolve_instance(self.options["captureinstance"])
            stamp = self.options["snapshotlsn"]
            moment = reader.lsn_to_time(stamp)
            keys = (
                json.loads(self.options["snapshotkeys"]) if "snapshotkeys" in self.options else None
            )
            chunked = "snapshotchunks" in self.options
            for chunk, lo, hi in partition.chunks:
                started = time.monotonic()
                table = reader.read_table(
                    str(found["table"]),
                    tuple(lo) if isinstance(lo, list) else lo,
                    tuple(hi) if isinstance(hi, list) else hi,
                    columns=self.columns,
                    key_columns=keys,
                ).read_all()
                for row in table.to_pylist():
                    head = (found["name"], stamp, None, 0, None, moment)
                    tail = (chunk,) if chunked else ()
                    yield head + tuple(row[c] for c in self.columns) + tail
                if chunked and self.options.get("metricspath"):
                    path = os.path.join(self.options["metricspath"], f"chunk-{chunk}.json")
                    with open(path, "w", encoding="utf-8") as out:
                        json.dump(
                            {
                                "kind": "chunk",
                                "chunk": chunk,
                                "rows": table.num_rows,
                                "bytes": table.nbytes,
                                "seconds": time.monotonic() - started,
                                "stamp_lsn": stamp,
                                "high_lsn": reader.max_lsn(),
                            },
                            out,
                        )

    class _Format(DataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "mssql_cdc_snapshot"

        def _columns(self) -> list[tuple[str, str]]:
            reader = EmulatorReader(self.options["emulatorpath"])
            found = reader.resolve_instance(self.options["captureinstance"])
            info = reader.table_info(str(found["table"]))
            return [(str(c["name"]), _spark_type(str(c["arrow_type"]))) for c in info["columns"]]

        def schema(self) -> str:
            head = (
                "_capture_instance STRING, _start_lsn STRING, _seqval STRING, _operation INT, "
                "_command_id INT, _commit_ts TIMESTAMP_NTZ"
            )
            body = ", ".join(f"`{n}` {t}" for n, t in self._columns())
            tail = ", _chunk INT" if "snapshotchunks" in self.options else ""
            return f"{head}, {body}{tail}"

        def reader(self, schema: Any) -> _Reader:
            options = {k.lower(): v for k, v in self.options.items()}
            return _Reader(options, [n for n, _ in self._columns()])

    spark.dataSource.register(_Format)
