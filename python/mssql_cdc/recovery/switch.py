"""`snapshotOnSwitch`: a capture-instance switch ahead of the stream that changes what the stream
can carry across it is met, before the query starts, by a snapshot into the next generation
rather than by a batch that fails in the sink or a copy that keeps stale values
(docs/source-options.md, decisions 1120 and 1378).

It re-snapshots when the newer instance captures a column the older did not (its values on
keys unchanged since the switch were never captured), no longer captures one the older did
(those keys would keep their last values), reads a bronze column in another type, or keys the
table by other columns; a switch that changes none of these continues without a snapshot.

The new generation starts at the snapshot's LSN, at or past the newer instance's start, so no
batch of it straddles the switch, and silver rebuilds from rows that all carry the new shape.
"""

from __future__ import annotations

import logging
from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.core import Instance, Observation, last_processed_offset, live_paths, read_state
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.options import SourceConfig
from mssql_cdc.recovery.preflight import RecoveryRequest
from mssql_cdc.snapshot import bronze_retypes, open_probe
from mssql_cdc.sqlserver import CaptureInstance, instances_named, open_backend
from mssql_cdc.tables import allow_type_widening, open_for_read, table_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SwitchChange", "switch_ahead", "switch_change", "switch_snapshot_due"]

log = logging.getLogger("mssql_cdc.recovery.preflight")


def switch_ahead(observation: Observation, position: str) -> Instance | None:
    """The newer instance the stream at `position` has yet to switch to, once capture reached
    its start; None when there is none."""
    if len(observation.instances) < 2 or observation.max_lsn is None:
        return None
    newer = observation.instances[-1]
    if position < newer.start_lsn <= observation.max_lsn:
        return newer
    return None


@dataclass(frozen=True, slots=True)
class SwitchChange:
    """What a switch from one capture instance to the next changes of what the stream carries.

    Attributes:
        old: the instance the stream reads up to the switch.
        new: the instance it reads after.
        added: columns `new` captures and `old` did not (names as `new` spells them).
        dropped: columns `old` captured and `new` does not (as `old` spells them).
        old_key: `old`'s unique index columns, in key order.
        new_key: `new`'s, likewise.
    """

    old: str
    new: str
    added: tuple[str, ...]
    dropped: tuple[str, ...]
    old_key: tuple[str, ...]
    new_key: tuple[str, ...]

    @property
    def key_changed(self) -> bool:
        """Whether `new` keys the table by other columns, or in another order (names ignoring
        case, as SQL Server's default collation compares them)."""
        return [k.lower() for k in self.old_key] != [k.lower() for k in self.new_key]

    def reasons(self) -> list[str]:
        """Why this switch needs a snapshot, one phrase each; empty when it needs none."""
        out = []
        if self.added:
            out.append(f"captures {', '.join(self.added)} the older instance did not")
        if self.dropped:
            out.append(f"no longer captures {', '.join(self.dropped)}")
        if self.key_changed:
            out.append(f"keys the table by ({', '.join(self.new_key)}), not "
                       f"({', '.join(self.old_key)})")  # fmt: skip
        return out


def switch_change(old: CaptureInstance, new: CaptureInstance) -> SwitchChange:
    """The columns and key a switch from `old` to `new` changes (names ignoring case)."""
    before = {c.lower() for c in old.captured_columns}
    after = {c.lower() for c in new.captured_columns}
    return SwitchChange(
        old.name,
        new.name,
        tuple(c for c in new.captured_columns if c.lower() not in before),
        tuple(c for c in old.captured_columns if c.lower() not in after),
        tuple(old.index_columns),
        tuple(new.index_columns),
    )


def _change_ahead(config: SourceConfig, old: Instance, new: Instance) -> SwitchChange | None:
    """The change of the switch from `old` to `new`, read from the capture catalog; None when
    either instance is gone from it (disabled meanwhile: the stream meets that as before)."""
    with closing(open_backend(config)) as backend:
        # Both are instances of one table: that table's instances hold them.
        by_name = {i.name: i for i in instances_named(backend.catalog, old.name)}
    if old.name not in by_name or new.name not in by_name:
        return None
    return switch_change(by_name[old.name], by_name[new.name])


def _processed_position(checkpoint: str, app_id: str) -> str | None:
    """The last LSN the live generation processed (its snapshot's before its first batch)."""
    state = read_state(checkpoint)
    last = last_processed_offset(live_paths(checkpoint, app_id, state).checkpoint)
    if last is not None:
        return last.offset().lsn
    if state is not None and state.snapshot is not None:
        return str(state.snapshot.lsn)
    return None


def switch_snapshot_due(
    spark: SparkSession, config: SourceConfig, request: RecoveryRequest
) -> bool:
    """Whether a switch ahead changes what the stream carries (the module docstring), so the
    next generation must open from a snapshot; when a bronze column is retyped, bronze is first
    let widen it.

    Nothing is read of the table and nothing written unless a switch is ahead: a stream that
    has not started, a bronze that does not exist yet, and a switch that keeps the captured
    columns, their types and the key are left to the stream. A retyped column alone is left to
    the sink when bronze already allows type widening.
    Raises:
        SchemaChangedError: a retyped column bronze's values do not fit (a narrowing or another
            type family): no snapshot into this bronze can hold it; nothing written.
    """
    position = _processed_position(request.checkpoint, request.app_id)
    bronze = open_for_read(spark, request.target, "bronze")
    if position is None or bronze is None:
        return False
    with closing(open_probe(config)) as probe:
        observation = probe.observe()
    newer = switch_ahead(observation, position)
    if newer is None:
        return False
    change = _change_ahead(config, observation.instances[-2], newer)
    reasons = [] if change is None else change.reasons()
    widening = table_properties(spark, bronze.ref).get("delta.enableTypeWidening") == "true"
    retyped = (  # with widening on, the sink widens a column itself
        []
        if widening
        else bronze_retypes(spark, config, bronze.ref, at=observation.max_lsn or position)
    )
    narrowed = [r for r in retyped if not r.widens]
    if narrowed:
        first = narrowed[0]
        raise SchemaChangedError(
            f"{request.target}: capture instance '{newer.name}' reads column {first.column} as "
            f"{first.new_type}, which cannot hold bronze's {first.bronze_type} values, so no "
            "snapshot into this bronze can (snapshotOnSwitch); start a new bronze table",
            newer.name,
        )
    if retyped:
        reasons.append(
            "retypes " + ", ".join(f"{r.column} {r.bronze_type} -> {r.new_type}" for r in retyped)
        )
    if not reasons:
        return False
    log.warning(
        "%s: capture instance '%s' %s at %s; snapshotOnSwitch re-snapshots into the next "
        "generation",
        request.target,
        newer.name,
        "; ".join(reasons),
        newer.start_lsn,
    )
    if retyped:
        allow_type_widening(spark, bronze.ref)
    return True
