"""The recovery decision's inputs and outputs as frozen dataclasses, and the calls that make it.

The decision itself is C++ (`mssql_cdc._native.recovery`, decision 0150): a pure function
of what was observed. This module only converts types; the `recovery` module gathers the
observations and acts on the decision. LSNs and times are canonical text; an unknown commit
time is None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import mssql_cdc._native as _native
from mssql_cdc.core.checkpoint import GenerationState, offset_from_native, offset_to_native
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.errors import ConfigError, DataLossError, MssqlCdcError

if TYPE_CHECKING:  # the binding's dict shapes exist only in _native.pyi
    from mssql_cdc._native import DecisionDict, LossDict

__all__ = [
    "Action",
    "CompletionRow",
    "Conclusion",
    "DecideInputs",
    "Decision",
    "DurationGuard",
    "ErrorKind",
    "Estimate",
    "Instance",
    "Loss",
    "Mode",
    "Observation",
    "OpenRow",
    "Reuse",
    "ReuseKind",
    "StartInputs",
    "StartResult",
    "StartSource",
    "Step",
    "conclude",
    "decide",
    "error_from",
    "estimate_snapshot",
    "has_range",
    "lock_violation",
    "loss_after",
    "loss_error",
    "resolve_start",
]

Mode = Literal["full", "chunked"]
Action = Literal["none", "resnapshot", "blocked"]
ReuseKind = Literal["none", "completion", "open", "target"]
StartSource = Literal["recovering", "checkpoint", "state", "bootstrap", "starting_lsn", "none"]
DurationGuard = Literal["warn", "refuse", "off"]
ErrorKind = Literal["none", "data_loss", "invalid_argument"]
# The durable steps of a decision, acted on in the order Decision.steps lists them.
Step = Literal[
    "write_full_open", "take_snapshot", "open_chunked", "write_event", "clear_recovering"
]


def _plain(value: Any) -> Any:
    """The dict form the binding reads: the field names of these dataclasses are its keys."""
    return dataclasses.asdict(value)


def _from_offset(d: _native.OffsetDict | None) -> StreamOffset | None:
    return offset_from_native(d) if d is not None else None


@dataclass(frozen=True, slots=True)
class Instance:
    """A capture instance of the source table; min_lsn is None on a just-enabled one."""

    name: str
    start_lsn: str
    min_lsn: str | None
    min_commit_ts: str | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """The source read afresh: max_lsn (None before any capture) and instances, oldest first."""

    max_lsn: str | None
    instances: tuple[Instance, ...] = ()


@dataclass(frozen=True, slots=True)
class OpenRow:
    """A 'snapshot_open' facts row of the stream's family, at snapshot LSN `s`."""

    generation: int
    mode: Mode
    kind: str
    s: StreamOffset


@dataclass(frozen=True, slots=True)
class CompletionRow:
    """A 'bootstrap' or 'resnapshot' facts row of the family, at its max_lsn."""

    generation: int
    lsn: StreamOffset


@dataclass(frozen=True, slots=True)
class Loss:
    """Where the capture instance begins now that cleanup purged the range after a start."""

    low: str
    low_commit_ts: str | None
    instance: str

    @classmethod
    def from_native(cls, d: LossDict | None) -> Loss | None:
        return cls(d["low"], d["low_commit_ts"], d["instance"]) if d is not None else None


@dataclass(frozen=True, slots=True)
class StartInputs:
    """What resolve_start() needs to say where the stream is.

    docs/data-loss.md, 'What happens on a loss', step 1, lists the places it looks.
    """

    state: GenerationState
    last_committed: StreamOffset | None
    has_metadata: bool
    live_batches_in_facts: bool
    bootstrap: bool
    starting_lsn: str | None
    newest_known: StreamOffset | None
    live_checkpoint: str


@dataclass(frozen=True, slots=True)
class StartResult:
    start: StreamOffset | None
    source: StartSource


@dataclass(frozen=True, slots=True)
class Estimate:
    """How long a full read would take against the observed CDC retention; None = unknown."""

    rows: int | None = None
    rows_per_second: float | None = None
    seconds: float | None = None
    retention_hours: float | None = None
    fits: bool | None = None


@dataclass(frozen=True, slots=True)
class DecideInputs:
    """Everything decide() looks at; it reads nothing else, the clock included."""

    target: str
    app_id: str
    state: GenerationState
    start: StreamOffset | None
    mode: Mode
    observation: Observation
    now: str  # "YYYY-MM-DDTHH:MM:SS+00:00"
    opens: tuple[OpenRow, ...] = ()
    completions: tuple[CompletionRow, ...] = ()
    newest_whole: StreamOffset | None = None
    interval_days: float = 7.0
    estimate: Estimate = field(default_factory=Estimate)
    duration_guard: DurationGuard = "warn"
    requested: bool = False  # a person asked for a re-snapshot without a loss (issue 20)


@dataclass(frozen=True, slots=True)
class Reuse:
    kind: ReuseKind
    offset: StreamOffset | None
    generation: int


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do before the query starts, decided in C++ from what was observed; a refusal is
    data, not an exception."""

    action: Action
    reason: str
    error_kind: ErrorKind
    error_message: str
    target: str
    app_id: str
    generation: int
    next_generation: int
    start: StreamOffset | None
    low: Loss | None
    lost_from_ts: str | None
    lost_to_ts: str | None
    reuse: Reuse
    mode: Mode
    interval_ok: bool
    steps: tuple[Step, ...]
    warning: str

    @classmethod
    def from_native(cls, d: DecisionDict) -> Decision:
        r = d["reuse"]
        return cls(
            action=d["action"],
            reason=d["reason"],
            error_kind=d["error_kind"],
            error_message=d["error_message"],
            target=d["target"],
            app_id=d["app_id"],
            generation=d["generation"],
            next_generation=d["next_generation"],
            start=_from_offset(d["start"]),
            low=Loss.from_native(d["low"]),
            lost_from_ts=d["lost_from_ts"],
            lost_to_ts=d["lost_to_ts"],
            reuse=Reuse(r["kind"], _from_offset(r["offset"]), r["generation"]),
            mode=d["mode"],
            interval_ok=d["interval_ok"],
            steps=tuple(d["steps"]),
            warning=d["warning"],
        )


@dataclass(frozen=True, slots=True)
class Conclusion:
    """After the snapshot: the state to write, and the INFO line or the DataLossError text."""

    ok: bool
    state_to_write: GenerationState
    message: str


def loss_after(start: str, observation: Observation) -> Loss | None:
    """The driver guard at `start`: where the instance begins if the range after it is purged."""
    return Loss.from_native(_native.recovery.lost(start, _plain(observation)))


def has_range(start: StreamOffset, max_lsn: str | None) -> bool:
    """Whether anything was captured after `start` (only then can it be purged)."""
    return _native.recovery.has_range(offset_to_native(start), max_lsn)


def resolve_start(inputs: StartInputs) -> StartResult:
    """Where the stream is (docs/data-loss.md, 'What happens on a loss', step 1).

    Raises:
        ConfigError: facts show batches of the live sink id but Spark's checkpoint has none.
    """
    raw = _native.recovery.resolve_start(_plain(inputs))
    return StartResult(start=_from_offset(raw["start"]), source=raw["source"])


def lock_violation(
    mode: Mode,
    opens: Sequence[OpenRow],
    completions: Sequence[CompletionRow],
    observation: Observation,
    *,
    target: str,
    app_id: str,
) -> str | None:
    """The mode lock's error text naming the newest blocking open, or None."""
    return _native.recovery.lock_violation(
        mode,
        [_plain(o) for o in opens],
        [_plain(c) for c in completions],
        _plain(observation),
        target,
        app_id,
    )


def estimate_snapshot(
    table_rows: int | None,
    newest_first: Sequence[tuple[int, int]],
    retention_hours: float | None,
) -> Estimate:
    """The duration estimate from the table's row count, (rows, duration_ms) of earlier full
    snapshots newest first, and the smallest observed retention."""
    raw = _native.recovery.estimate_snapshot(table_rows, list(newest_first), retention_hours)
    return Estimate(**raw)


def decide(inputs: DecideInputs) -> Decision:
    """What the pre-flight does now: nothing, a re-snapshot into a generation, or a refusal.

    Raises:
        ConfigError: a negative or non-finite interval, a `now` that is no UTC instant, an
            invalid state, or a purge test without the capture instances it needs.
    """
    return Decision.from_native(_native.recovery.decide(_plain(inputs)))


def conclude(
    decision: Decision,
    snapshot: StreamOffset,
    fresh: Observation,
    state: GenerationState,
    now: str,
    *,
    rows: int | None = None,
    duration_ms: int | None = None,
) -> Conclusion:
    """Whether the snapshot the new generation starts from survived cleanup (own-LSN check)."""
    raw = _native.recovery.conclude(
        _plain(decision),
        _plain(snapshot),
        _plain(fresh),
        _plain(state),
        now,
        rows,
        duration_ms,
    )
    return Conclusion(
        ok=raw["ok"],
        state_to_write=GenerationState.from_native(raw["state_to_write"]),
        message=raw["message"],
    )


def error_from(decision: Decision) -> MssqlCdcError:
    """The exception a blocked decision raises: DataLossError or ConfigError (a ValueError).

    Raises:
        ValueError: the decision is not blocked.
    """
    if decision.action != "blocked":
        raise ValueError(f"decision is {decision.action!r}, not 'blocked': nothing to raise")
    if decision.error_kind == "data_loss":
        return loss_error(decision, decision.error_message)
    return ConfigError(decision.error_message)


def loss_error(decision: Decision, message: str, *, first_lsn: str | None = None) -> DataLossError:
    """The DataLossError of the loss `decision` saw: the capture instance where it begins now
    (its `low`; "" without one) and the decision's lost interval."""
    low = decision.low
    return DataLossError(
        message,
        low.instance if low else "",
        decision.lost_from_ts,
        decision.lost_to_ts,
        first_lsn=first_lsn,
    )
