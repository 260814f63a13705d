"""The two Spark data sources, `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch).

`register(spark)` registers both (docs/source.md). Options are parsed once into a
`SourceConfig` in each DataSource's constructor; `schema()` resolves the table on the driver,
with retries of transient errors (docs/source.md, 'Processes'). `connect`, the driver's
connection factory, is an attribute a test may replace (in a subclass) to inject faults.
An internal option of `to_delta` adds each task's figures as a column and a row (decision 1391).
Inside a Spark Declarative Pipeline's definition file `register` skips the `EXPLAIN` and the
conf change the pipeline refuses and warns what to set instead (decision 1425). With
`gapDeletesFrom` the reader gets the output's Arrow schema, which the gap's delete rows are built
in (decision 1426).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from mssql_cdc.core import BATCH_FIGURES_OPTION, FIGURES_COLUMN, FIGURES_FIELDS
from mssql_cdc.errors import ConfigError
from mssql_cdc.options import SourceConfig
from mssql_cdc.source.parallelism import default_parallelism
from mssql_cdc.source.pipeline_refusals import refused_by_pipeline
from mssql_cdc.source.table_schema import (
    declared_columns,
    read_columns,
    resolve_table,
    spark_schema,
)
from mssql_cdc.sqlserver import Backend, Reconnecting, call_with_retries, open_backend

if TYPE_CHECKING:
    from pyspark.sql.types import StructField

__all__ = ["CdcDataSource", "CdcSnapshotDataSource", "Connect", "register"]

Connect = Callable[[SourceConfig], Backend]

log = logging.getLogger(__name__)

_NEEDED = ("ReadMaxRows", "ReadAllAvailable", "SupportsTriggerAvailableNow")


def _infer_schema(
    config: SourceConfig, *, chunk: bool, connect: Connect, marked: bool = False
) -> StructType:
    def work(backend: Backend) -> StructType:
        backend.catalog.resolve_time_zone(config.source_time_zone)  # a bad zone fails at load
        table = resolve_table(backend.catalog, config.capture_instance)
        columns = declared_columns(backend.catalog, config, table)
        return spark_schema(
            columns, include_command_id=config.include_command_id, chunk=chunk, marked=marked
        )

    slot = Reconnecting(lambda: connect(config), lambda b: b.close())
    try:
        return call_with_retries("schema()", slot, work)
    finally:
        slot.drop()


def _figures_field() -> StructField:
    """`FIGURES_COLUMN` as a nullable struct of `FIGURES_FIELDS` (no JVM needed)."""
    from pyspark.sql.types import DoubleType, StringType, StructField

    kinds = {"STRING": StringType(), "DOUBLE": DoubleType()}
    struct = StructType([StructField(name, kinds[kind], True) for name, kind in FIGURES_FIELDS])
    return StructField(FIGURES_COLUMN, struct, True)


class _ConfiguredSource(DataSource):
    """A format whose options are parsed once, when Spark creates it, into `config`.

    `default_num_partitions` is the session's parallelism, set by `register` on each format
    (None until then); `connect` opens the SQL Server seam the options name.
    """

    default_num_partitions: ClassVar[int | None] = None

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.config = SourceConfig.from_options(options)
        self.connect: Connect = open_backend


class CdcDataSource(_ConfiguredSource):
    """`spark.readStream.format("mssql_cdc")`: every committed change of one table.

    The internal option `BATCH_FIGURES_OPTION` (set by `to_delta`, never by users) adds the
    column `FIGURES_COLUMN` and one row of figures per task."""

    def __init__(self, options: dict[str, str]) -> None:
        internal = BATCH_FIGURES_OPTION.lower()
        self.figures = any(
            k.lower() == internal and str(v).strip().lower() == "true" for k, v in options.items()
        )
        super().__init__({k: v for k, v in options.items() if k.lower() != internal})

    @classmethod
    def name(cls) -> str:
        return "mssql_cdc"

    def schema(self) -> StructType:
        marked = self.config.snapshot_mode != "never"
        found = _infer_schema(self.config, chunk=False, connect=self.connect, marked=marked)
        if not self.figures:
            return found
        return StructType([*found.fields, _figures_field()])

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        from mssql_cdc.source.planner import CdcStreamReader

        n = self.config.partitions(type(self).default_num_partitions)
        from pyspark.sql.pandas.types import to_arrow_schema

        figures = to_arrow_schema(schema, timezone="UTC") if self.figures else None
        output = None
        if self.config.gap_deletes_from is not None:  # the gap's delete rows
            output = to_arrow_schema(schema, timezone="UTC")
        return CdcStreamReader(
            self.config,
            read_columns(schema),
            n,
            connect=self.connect,
            figures=figures,
            output=output,
        )


class CdcSnapshotDataSource(_ConfiguredSource):
    """`spark.read.format("mssql_cdc_snapshot")`: the table's rows stamped with one LSN."""

    @classmethod
    def name(cls) -> str:
        return "mssql_cdc_snapshot"

    def schema(self) -> StructType:
        chunk = self.config.snapshot_chunks is not None
        return _infer_schema(self.config, chunk=chunk, connect=self.connect)

    def reader(self, schema: Any) -> DataSourceReader:
        from mssql_cdc.source.snapshot_format import CdcSnapshotReader

        n = self.config.partitions(type(self).default_num_partitions)
        return CdcSnapshotReader(self.config, read_columns(schema), n)


def register(spark: Any) -> None:
    """Register the formats `mssql_cdc` and `mssql_cdc_snapshot` with `spark`.

    Stores Spark's default parallelism (None where unavailable, e.g. Spark Connect) for
    `numPartitions=auto`, since planning processes have no SparkSession. Extends the session's
    `spark.sql.redaction.options.regex` so plans show `connectionString`, `password` and
    `accessToken` as redacted.

    In a Spark Declarative Pipeline's definition file, which refuses `EXPLAIN` and
    `spark.conf.set`, the parallelism is `spark.default.parallelism` (else None) and a
    redaction pattern that lacks those names is left as it is, with a WARNING naming the
    pattern to put in the pipeline's configuration (docs/pipelines.md).

    Raises:
        ConfigError: `spark` is not a SparkSession (classic or Spark Connect).
        ImportError: the installed PySpark lacks Spark 4.2's admission-control API.
    """
    import pyspark
    from pyspark.sql.streaming import datasource as streaming

    # What registering uses of the session; anything without both (None, a string, a
    # context) is refused before a half-made registration.
    if not (hasattr(spark, "dataSource") and hasattr(spark, "conf")):
        got = "None" if spark is None else f"a {type(spark).__name__}"
        raise ConfigError(
            f"register: spark must be a SparkSession (got {got}); pass the active session, "
            "such as SparkSession.builder.getOrCreate()"
        )

    missing = [name for name in _NEEDED if not hasattr(streaming, name)]
    if missing:
        raise ImportError(
            f"mssql_cdc needs PySpark 4.2 or newer (pyspark.sql.streaming.datasource with "
            f"{', '.join(_NEEDED)}); the installed PySpark {pyspark.__version__} lacks "
            f"{', '.join(missing)}: pip install 'pyspark==4.2.0'"
        )
    parallelism = default_parallelism(spark)
    redact_connection_strings(spark.conf)
    for source in (CdcDataSource, CdcSnapshotDataSource):
        source.default_num_partitions = parallelism
        # Spark pickles the registered class into its planning workers; a subclass made here
        # is pickled by value, so the class attribute travels with it.
        spark.dataSource.register(
            type(source.__name__, (source,), {"default_num_partitions": parallelism})
        )


_REDACTION = "spark.sql.redaction.options.regex"
_SECRET_OPTIONS = ("connectionString", "password", "accessToken")


def redact_connection_strings(conf: Any) -> None:
    """Make Spark redact the secret options wherever it prints a plan: `connectionString`,
    `password` and `accessToken` (whose pattern also covers `accessTokenProvider`).

    A streaming query's plan lists its source options (in `explain()`, in the UI, and in the
    message of a failed query); Spark's default pattern redacts only `url`. The pattern is
    extended, never replaced: each name it does not already mention is added. Where a
    pipeline's definition file refuses the change, the pattern stays and a WARNING names the
    one to set in the pipeline's configuration.
    """
    current = str(conf.get(_REDACTION, "(?i)url") or "")
    missing = [name for name in _SECRET_OPTIONS if name.lower() not in current.lower()]
    if not missing:
        return
    parts = ([current] if current else []) + [f"(?i){name}" for name in missing]
    try:
        conf.set(_REDACTION, "|".join(parts))
    except Exception as error:
        if not refused_by_pipeline(error):
            raise
        log.warning(
            "register: this Spark Declarative Pipeline refuses spark.conf.set, so %s stays %r "
            "and plans may show the source options %s; set %s to %r in the pipeline's "
            "configuration (spark-pipeline.yml) to redact them (docs/pipelines.md)",
            _REDACTION,
            current,
            ", ".join(missing),
            _REDACTION,
            "|".join(parts),
        )
