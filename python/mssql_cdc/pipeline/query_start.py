"""Starting a stream's query: the `mssql_cdc` source at the generation's start, with its batch
figures, observed as the `mssql_cdc` metric of the query's progress, into the Delta sink
through `foreachBatch` (the figures' rows dropped first), in the generation's Spark checkpoint,
rid first of a first write a killed run left (decisions 1382, 1391, 1404). The Py4J connection
the sink's calls come in on is noted, for `release` to close once the query has ended
(decision 1450)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from mssql_cdc.core import (
    BATCH_FIGURES_OPTION,
    GenerationPaths,
    StoreSettings,
    check_inside,
    drop_abandoned_first_writes,
    is_store_uri,
    lsn,
)
from mssql_cdc.facts import sink_id
from mssql_cdc.options import SourceConfig
from mssql_cdc.pipeline.arguments import ToDeltaArgs
from mssql_cdc.pipeline.callback_connections import CallbackConnections, track
from mssql_cdc.pipeline.observed_metrics import observed_stream, without_figures
from mssql_cdc.tables import store_settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["start_query"]


def start_query(
    spark: SparkSession,
    config: SourceConfig,
    args: ToDeltaArgs,
    paths: GenerationPaths,
    start: str | None,
) -> StreamingQuery:
    """Start the streaming query of the live generation: the source at `start` (None: the
    options' own start) into the Delta sink, in the generation's checkpoint."""
    from mssql_cdc.sink import delta_sink

    metrics = paths.metrics_path or None
    store = config.store
    if metrics is not None and is_store_uri(metrics):
        # The executors reach the store as the session's S3A connector does: its settings
        # travel as `fs.*` options; ones the caller gave win (docs/object-stores.md).
        found = store_settings(spark, metrics).to_options()
        store = StoreSettings.of({**found, **config.store.to_options()})
    elif metrics is not None:
        # The sink cleans this folder: a symbolic link at <metricsPath>/<sink id> must not
        # lead its cleaning elsewhere.
        root = config.metrics_path or paths.checkpoint
        check_inside(metrics, root, what="the generation's metrics folder")
    sink = delta_sink(
        args.target,
        args.app_id,
        args.facts_table,
        metrics_path=metrics,
        generation=paths.generation,
        counted_by_reader=True,
    )
    # The generation's start and metrics folder replace any the caller gave.
    reader = replace(
        config,
        starting_lsn=config.starting_lsn if start is None else lsn.normalize(start),
        metrics_path=metrics,
        store=store,
    )
    options = {**reader.to_options(), BATCH_FIGURES_OPTION: "true"}
    changes = spark.readStream.format("mssql_cdc").options(**options).load()
    opened_by = None
    if start is not None:
        opened_by = ("resnapshot" if paths.generation > 0 else "bootstrap", lsn.normalize(start))
    connections = CallbackConnections()
    writer = (
        observed_stream(changes, paths.generation, opened_by)
        .writeStream.foreachBatch(_answerable(sink, connections))
        .option("checkpointLocation", paths.checkpoint)
        .queryName(args.query_name or sink_id(args.app_id, paths.generation))
    )
    if args.trigger:
        writer = writer.trigger(**args.trigger)
    if not is_store_uri(paths.checkpoint):
        drop_abandoned_first_writes(paths.checkpoint)  # else Spark refuses batch 0 for good
    query = writer.start()
    track(query, connections)
    return query


def _answerable(
    sink: Callable[[DataFrame, int], None], connections: CallbackConnections
) -> Callable[[DataFrame, int], None]:
    """`sink` as Spark calls it through Py4J, handed the batch's change rows alone (the
    figures' rows and column dropped). Py4J answers only an `Exception`: any other
    BaseException (a failpoint's InjectedFault, KeyboardInterrupt) would end Py4J's callback
    thread unanswered and leave the query waiting forever, so it fails the batch instead.
    Each call notes the connection it came in on in `connections`."""

    def call(df: DataFrame, batch_id: int) -> None:
        connections.note()
        try:
            sink(without_figures(df), batch_id)
        except Exception:
            raise
        except BaseException as exc:
            raise RuntimeError(
                f"batch {batch_id} was interrupted by {type(exc).__name__}: {exc}"
            ) from exc

    return call
