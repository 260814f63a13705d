"""The driver's stateful planner of `mssql_cdc`: offsets, admission control and partitions.

docs/source.md describes what it plans ('Offsets', 'Guards', 'Capture instances', 'Processes').
It is the only stateful object of a query: one backend connection (dropped and reopened on
transient errors through `sqlserver.retry`), the resolved table, the AvailableNow end and the
last `max_lsn`. Pickling drops all of it: Spark ships the reader to executors only to call
`read()`, which opens its own backend. With the batch figures on, the planning's events ride
on the batch's last range to its task (decision 1391).

With snapshotMode `initial` or `when_needed` the stream reads its own snapshot first, and with
`when_needed` again after a loss, as batches of key ranges (`source.stream_snapshot`; decision
1395); its rows carry `_snapshot` (decision 1396). With `gapDeletesFrom`, the batch that completes a
re-snapshot also derives the gap's delete rows in a task of its own (`source.gap_deletes`;
decision 1426). The first batch of an in-stream re-snapshot records the loss as a certain
`data_skipped` event file in the metrics folder, which `delta_sink` writes as a facts row of
that batch (decision 1445).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from mssql_cdc.core import (
    EventRecord,
    LsnRange,
    Offset,
    StreamOffset,
    clock,
    format_commit_ts,
    initial_lsn,
    lsn,
    write_json_atomic,
)
from mssql_cdc.errors import DataLossError
from mssql_cdc.options import KeyBound, SourceConfig, open_folder
from mssql_cdc.source.batch_plan import planned_batch
from mssql_cdc.source.gap_deletes import GapDeletesPartition, read_gap_deletes
from mssql_cdc.source.loss_guards import range_after_is_purged, resnapshot_event, skip_end
from mssql_cdc.source.range_reader import read_range
from mssql_cdc.source.snapshot_format import SnapshotPartition, read_snapshot
from mssql_cdc.source.stream_snapshot import SnapshotCursor, SourceOffset, snapshot_keys
from mssql_cdc.source.table_schema import ResolvedTable, resolve_table
from mssql_cdc.sqlserver import (
    Backend,
    ReadColumn,
    Reconnecting,
    call_with_retries,
    open_backend,
    serving_instance,
)
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CdcStreamReader", "SparkLsnRange"]

_log = logging.getLogger("mssql_cdc.source.formats")

RESNAPSHOT_INTERVAL = timedelta(days=7)
"""The anti-loop guard of snapshotMode=when_needed: at most one re-snapshot in this interval,
the default of to_delta's resnapshot_interval_days."""


def _plain(offset: Offset) -> dict[str, str]:
    """The offset as Spark takes it: a plain dict, keys in the contract's order."""
    return {"lsn": offset["lsn"], "commit_ts": offset["commit_ts"]}


@dataclass(frozen=True)
class SparkLsnRange(LsnRange, InputPartition):
    """An `LsnRange` Spark can carry as an input partition; `LsnRange` itself imports no pyspark.

    `planned_events` names the events planning found (on the batch's last range only), which
    the task hands on with its batch figures."""

    planned_events: tuple[str, ...] = ()

    @classmethod
    def of(cls, part: LsnRange, planned_events: tuple[str, ...] = ()) -> SparkLsnRange:
        fields = {name: getattr(part, name) for name in LsnRange.__dataclass_fields__}
        return cls(**fields, planned_events=planned_events if part.last else ())


class CdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The `mssql_cdc` stream reader: plans on the driver, reads on executors."""

    def __init__(
        self,
        config: SourceConfig,
        columns: Sequence[ReadColumn],
        num_partitions: int,
        *,
        connect: Callable[[SourceConfig], Backend] = open_backend,
        figures: pa.Schema | None = None,
        output: pa.Schema | None = None,
    ) -> None:
        """`figures`: the output's Arrow schema when the batch figures ride along (the internal
        option `BATCH_FIGURES_OPTION`); None for the plain change rows. `output`: the output's
        Arrow schema, which the gap's delete rows are built in (option gapDeletesFrom)."""
        self._config = config
        self._columns = tuple(columns)
        self._num_partitions = num_partitions
        self._figures = figures
        self._output = output
        self._connect = connect  # the driver's connection factory; executors use their own
        self._slot: Reconnecting[Backend] | None = None
        self._table: ResolvedTable | None = None
        self._time_zone: str | None = None
        self._available_now_end: lsn.Lsn | None = None
        self._last_max: lsn.Lsn | None = None
        self._times: dict[str, str] = {}  # commit times of LSNs this run already looked up
        self._warned_limit = False

    def __getstate__(self) -> dict[str, Any]:
        return {
            "_config": self._config,
            "_columns": self._columns,
            "_num_partitions": self._num_partitions,
            "_connect": self._connect,
            "_figures": self._figures,
            "_output": self._output,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["_config"],
            state["_columns"],
            state["_num_partitions"],
            connect=state["_connect"],
            figures=state.get("_figures"),
            output=state.get("_output"),
        )

    def _backend_slot(self) -> Reconnecting[Backend]:
        if self._slot is None:
            self._slot = Reconnecting(lambda: self._connect(self._config), lambda b: b.close())
        return self._slot

    def _resolved(self, backend: Backend, *, refresh: bool = False) -> ResolvedTable:
        if self._table is None or refresh:
            self._table = resolve_table(
                backend.catalog, self._config.capture_instance, remembered=self._table
            )
        return self._table

    def _zone(self, backend: Backend) -> str:
        if self._time_zone is None:
            self._time_zone = backend.catalog.resolve_time_zone(self._config.source_time_zone)
        return self._time_zone

    def _commit_ts(self, backend: Backend, at: lsn.Lsn) -> str | None:
        if at not in self._times:
            moment = backend.planner.commit_time(at, self._zone(backend))
            self._times[at] = format_commit_ts(moment)
        return self._times[at] or None

    def initialOffset(self) -> dict[str, str]:
        def work(backend: Backend) -> dict[str, str]:
            table = self._resolved(backend)
            if self._config.snapshot_mode != "never":  # the snapshot at S, nothing read yet
                return SourceOffset(self._stamp(backend, table), SnapshotCursor(None)).to_json()
            oldest = table.instances[0]
            chosen = initial_lsn(
                self._config.starting_lsn,
                capture_instance=table.instance.name,
                max_lsn=backend.planner.max_lsn(),
                oldest_min_lsn=backend.planner.min_lsn(oldest.name),
                oldest_start_lsn=oldest.start_lsn,
                start_lsn=table.instance.start_lsn,
            )
            return _plain(StreamOffset(chosen, self._commit_ts(backend, chosen)).to_json())

        return call_with_retries("initialOffset", self._backend_slot(), work)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self._config.max_commits_per_batch
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        def work(backend: Backend) -> lsn.Lsn:
            return backend.planner.max_lsn() or lsn.ZERO

        self._available_now_end = call_with_retries(
            "prepareForTriggerAvailableNow", self._backend_slot(), work
        )

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:
        begin = SourceOffset.from_json(start)

        def work(backend: Backend) -> dict[str, str]:
            if begin.reading:
                return self._next_chunk(backend, begin, limit).to_json()
            if self._config.snapshot_mode == "when_needed":
                again = self._resnapshot_if_lost(backend, begin, limit)
                if again is not None:
                    return again.to_json()
            offset = self._latest(backend, begin.position, limit)
            if offset == begin.position.to_json():
                return begin.to_json()  # an idle poll keeps the offset as it was
            return SourceOffset(StreamOffset.from_json(offset), None, begin.resnapshot_at).to_json()

        return call_with_retries("latestOffset", self._backend_slot(), work)

    def _stamp(self, backend: Backend, table: ResolvedTable) -> StreamOffset:
        """A new snapshot's S: the `latest` rule, as the batch format stamps its snapshots."""
        stamp = initial_lsn(
            "latest",
            capture_instance=table.instance.name,
            max_lsn=backend.planner.max_lsn(),
            oldest_min_lsn=None,
            oldest_start_lsn=None,
            start_lsn=table.instance.start_lsn,
        )
        return StreamOffset(stamp, self._commit_ts(backend, stamp))

    def _keys(self, table: ResolvedTable) -> tuple[str, ...]:
        return tuple(self._config.snapshot_keys or table.instance.index_columns)

    def _cursor(self, backend: Backend, after: KeyBound, limit: ReadLimit) -> SnapshotCursor:
        """Where the batch that reads from key `after` (None: the first key) ends: after at
        most the read limit's rows (maxCommitsPerBatch counts a snapshot's rows), else at the
        table's end."""
        table = self._resolved(backend)
        keys = self._keys(table)
        if not isinstance(limit, ReadMaxRows) or not keys:
            return SnapshotCursor(None, done=True)
        hi = backend.chunks.key_at(
            table.source_schema,
            table.source_table,
            keys,
            after,
            inclusive=True,
            position=limit.max_rows,
        )
        return SnapshotCursor(None, done=True) if hi is None else SnapshotCursor(hi)

    def _next_chunk(self, backend: Backend, begin: SourceOffset, limit: ReadLimit) -> SourceOffset:
        after = None if begin.cursor is None else begin.cursor.next_key
        cursor = self._cursor(backend, after, limit)
        return SourceOffset(begin.position, cursor, begin.resnapshot_at)

    def _resnapshot_if_lost(
        self, backend: Backend, begin: SourceOffset, limit: ReadLimit
    ) -> SourceOffset | None:
        """With when_needed: a new snapshot's first batch when the changes after `begin` were
        purged (the driver guard's test), else None.

        Raises:
            DataLossError: the anti-loop guard: the stream re-snapshotted less than
                RESNAPSHOT_INTERVAL ago.
        """
        start = begin.position
        newest = backend.planner.max_lsn()
        if (newest or lsn.ZERO) <= start.lsn:
            return None  # an idle poll: nothing after start, so nothing purged
        table = self._resolved(backend, refresh=True)
        serving = serving_instance(table.instances, lsn.increment(start.lsn))
        found = backend.planner.min_lsn(serving.name)
        if not range_after_is_purged(start.lsn, newest, found):
            return None
        now = clock.now()
        last = begin.resnapshot_at
        if last is not None and now - last < RESNAPSHOT_INTERVAL:
            raise DataLossError(
                f"capture instance '{serving.name}': changes from {lsn.increment(start.lsn)} on "
                f"were purged by CDC cleanup again, and this stream re-snapshotted at "
                f"{last.isoformat(timespec='seconds')} UTC, less than "
                f"{RESNAPSHOT_INTERVAL.days} days ago; snapshotMode=when_needed re-snapshots at "
                "most once in that interval so a cleanup faster than the stream cannot loop. "
                "Raise the capture instance's retention or the stream's rate, then restart the "
                "query from a new checkpoint",
                serving.name,
                start.commit_ts,
                None,
                lsn.increment(start.lsn),
                found,
                False,
            )
        stamp = self._stamp(backend, table)
        _log.warning(
            "capture instance '%s': changes from %s on were purged by CDC cleanup before this "
            "stream read them (min_lsn %s); snapshotMode=when_needed: re-snapshotting the table "
            "at %s inside the stream",
            serving.name,
            lsn.increment(start.lsn),
            found,
            stamp.lsn,
        )
        return SourceOffset(stamp, self._cursor(backend, None, limit), now)

    def _latest(self, backend: Backend, start: StreamOffset, limit: ReadLimit) -> Offset:
        newest = backend.planner.max_lsn() or lsn.ZERO
        self._last_max = newest
        if newest <= start.lsn:
            return start.to_json()  # an idle poll: one query
        target = newest
        if self._available_now_end is not None:
            target = min(target, self._available_now_end)
        if target <= start.lsn:
            return start.to_json()
        end = target
        if isinstance(limit, ReadMaxRows):
            nth = backend.planner.nth_commit_after(start.lsn, limit.max_rows)
            end = target if nth is None or nth > target else nth
        elif not isinstance(limit, ReadAllAvailable) and not self._warned_limit:
            self._warned_limit = True
            _log.warning("read limit %r is not supported; reading all available", limit)
        if not self._config.fail_on_data_loss:
            table = self._resolved(backend, refresh=True)
            serving = serving_instance(table.instances, lsn.increment(start.lsn))
            end = skip_end(start.lsn, end, target, backend.planner.min_lsn(serving.name))
        return StreamOffset(end, self._commit_ts(backend, end)).to_json()

    def reportLatestOffset(self) -> dict[str, str] | None:
        if self._last_max is None:
            return None
        return {"lsn": self._last_max, "commit_ts": self._times.get(self._last_max, "")}

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        first, last = SourceOffset.from_json(start), SourceOffset.from_json(end)
        keys = snapshot_keys(first, last)
        if keys is not None:
            # a re-snapshot's last batch: its gap's deletes too
            gap = last.resnapshot_at is not None and keys[1] is None
            if not first.reading and last.cursor is not None:  # a re-snapshot's first batch
                self._record_resnapshot(first.position, last.position)
            return self._snapshot_partitions(last.position, *keys, gap_deletes=gap)
        begin, finish = first.position, last.position
        if finish.lsn <= begin.lsn:
            return []  # no range, no guard, no query, no file

        def work(backend: Backend) -> tuple[list[LsnRange], tuple[str, ...]]:
            if self._time_zone is not None and self._time_zone[:1] in ("+", "-"):
                self._time_zone = None  # a server offset without a zone is re-read per batch
            table = self._resolved(backend, refresh=True)
            return planned_batch(
                backend,
                self._config,
                table,
                self._columns,
                begin,
                finish,
                time_zone=self._zone(backend),
                num_partitions=self._num_partitions,
            )

        try:
            ranges, events = call_with_retries("partitions", self._backend_slot(), work)
        except DataLossError as exc:
            if self._config.snapshot_mode != "when_needed" or exc.possible:
                raise
            # The batch's offsets are in Spark's log already (a cleanup after latestOffset, or
            # a replay after a stop): the batch becomes the whole table, stamped at its end.
            _log.warning(
                "%s; snapshotMode=when_needed: this batch reads the whole table instead, "
                "stamped %s, in one batch",
                exc.args[0].split(". ")[0],
                finish.lsn,
            )
            if exc.first_lsn is not None and exc.min_lsn is not None:
                self._write_event(
                    resnapshot_event(
                        exc.capture_instance,
                        exc.first_lsn,
                        exc.min_lsn,
                        finish.lsn,
                        min_commit_ts=exc.lost_to_ts,
                        lost_from_ts=exc.lost_from_ts,
                        batch_start_lsn=begin.lsn,
                        batch_end_lsn=finish.lsn,
                    )
                )
            return self._snapshot_partitions(finish, None, None, gap_deletes=True)
        return [SparkLsnRange.of(r, events) for r in ranges]

    def _record_resnapshot(self, begin: StreamOffset, stamp: StreamOffset) -> None:
        """The loss that opened the re-snapshot at `stamp` after the change offset `begin`, as
        the batch's certain `data_skipped` event file; nothing when the instance's min_lsn no
        longer shows it (a new instance since)."""

        def work(backend: Backend) -> EventRecord | None:
            table = self._resolved(backend, refresh=True)
            first = lsn.increment(begin.lsn)
            serving = serving_instance(table.instances, first)
            found = backend.planner.min_lsn(serving.name)
            if found is None or not range_after_is_purged(begin.lsn, stamp.lsn, found):
                return None
            return resnapshot_event(
                serving.name,
                first,
                found,
                stamp.lsn,
                min_commit_ts=self._commit_ts(backend, found),
                lost_from_ts=begin.commit_ts,
                batch_start_lsn=begin.lsn,
                batch_end_lsn=stamp.lsn,
            )

        if self._config.metrics_path is None:
            return  # as a skip's: the WARNING of latestOffset is the only record
        record = call_with_retries("partitions", self._backend_slot(), work)
        if record is not None:
            self._write_event(record)

    def _write_event(self, record: EventRecord) -> None:
        """`record` as its event file in the metrics folder (none without metricsPath); its
        name comes from the record, so a replayed batch rewrites the same file."""
        where = self._config.metrics_path
        if where is not None:
            folder = open_folder(where, self._config.store)
            write_json_atomic(where, record.file_name, record.to_json(), folder)

    def _snapshot_partitions(
        self, stamp: StreamOffset, lo: KeyBound, hi: KeyBound, *, gap_deletes: bool = False
    ) -> list[InputPartition]:
        """The one partition of a batch of the stream's own snapshot at `stamp`: keys `[lo, hi)`;
        with `gap_deletes` (the batch completes a snapshot after a loss) and the option
        gapDeletesFrom, a second one that derives the gap's delete rows."""

        def work(backend: Backend) -> SnapshotPartition:
            table = self._resolved(backend)
            return SnapshotPartition(
                table.instance.name,
                table.source_schema,
                table.source_table,
                stamp.lsn,
                stamp.commit_ts,
                self._zone(backend),
                self._keys(table),
                ((None, lo, hi),),
            )

        part = call_with_retries("partitions", self._backend_slot(), work)
        if lo is not None:
            failpoint("source.inside_snapshot")  # a batch in the middle of the snapshot
        table = self._config.gap_deletes_from
        if not gap_deletes or table is None:
            return [part]
        if not part.keys:
            _log.warning(
                "capture instance '%s' has no key columns (no unique index and no snapshotKeys "
                "option), so gapDeletesFrom derives no deletes for the re-snapshot at %s",
                part.capture_instance,
                stamp.lsn,
            )
            return [part]
        deletes = GapDeletesPartition(
            table,
            part.source_schema,
            part.source_table,
            stamp.lsn,
            stamp.commit_ts,
            part.keys,
        )
        return [part, deletes]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, GapDeletesPartition):
            if self._output is None:
                raise TypeError("mssql_cdc: a gap-deletes partition needs the output schema")
            return read_gap_deletes(self._config, self._columns, self._output, partition)
        if isinstance(partition, SnapshotPartition):
            rows = read_snapshot(self._config, self._columns, partition, progress=False)
            return _marked(rows, partition.stamp_lsn)
        if not isinstance(partition, LsnRange):
            raise TypeError(f"mssql_cdc reads LsnRange partitions, not {type(partition)}")
        planned = getattr(partition, "planned_events", ())
        rows = read_range(
            self._config, self._columns, partition, figures=self._figures, planned_events=planned
        )
        return rows if self._config.snapshot_mode == "never" else _marked(rows, None)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to do: Spark calls it one batch late, and the source keeps no state."""

    def stop(self) -> None:
        if self._slot is not None:
            self._slot.drop()


def _marked(rows: Iterator[pa.RecordBatch], stamp: str | None) -> Iterator[pa.RecordBatch]:
    """`rows` with `_snapshot` last: the snapshot's S on its rows, NULL on changes."""
    import pyarrow as pa

    for batch in rows:
        n = batch.num_rows
        mark = pa.nulls(n, pa.string()) if stamp is None else pa.array([stamp] * n, pa.string())
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, mark], names=[*batch.schema.names, "_snapshot"]
        )
