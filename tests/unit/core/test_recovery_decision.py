"""The recovery decision through the binding: types in and out, refusals as errors."""

from __future__ import annotations

import dataclasses
import math

import pytest

from mssql_cdc.core import recovery_decision as rd
from mssql_cdc.core.checkpoint import GenerationState, StreamOffset
from mssql_cdc.errors import ConfigError, DataLossError


def lsn(n: int) -> str:
    return f"0x{n:020X}"  # the oracle: Python's own integers


NOW = "2026-11-20T12:00:00+00:00"
PURGED = rd.Observation(
    max_lsn=lsn(1000),
    instances=(rd.Instance("dbo_orders", lsn(1), lsn(500), "2026-11-05T00:00:00.000"),),
)
START = StreamOffset(lsn(100), "2026-11-01T10:00:00.000")


def inputs(**changes: object) -> rd.DecideInputs:
    base = rd.DecideInputs(
        target="bronze.orders",
        app_id="orders-v1",
        state=GenerationState(),
        start=START,
        mode="full",
        observation=PURGED,
        now=NOW,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_lost_finds_the_purge_exactly_below_min_lsn() -> None:
    assert rd.loss_after(lsn(499), PURGED) is None  # its next LSN is min_lsn itself
    assert rd.loss_after(lsn(498), PURGED) == rd.Loss(
        lsn(500), "2026-11-05T00:00:00.000", "dbo_orders"
    )
    assert rd.loss_after(lsn(1000), PURGED) is None  # nothing captured after it


def test_has_range_needs_a_max_lsn_above_the_start() -> None:
    assert rd.has_range(START, lsn(101))
    assert not rd.has_range(START, lsn(100))
    assert not rd.has_range(START, None)


def test_a_purged_stream_re_snapshots_into_generation_one() -> None:
    d = rd.decide(inputs())
    assert d.action == "resnapshot"
    assert (d.generation, d.next_generation) == (0, 1)
    assert d.start == START
    assert (d.lost_from_ts, d.lost_to_ts) == ("2026-11-01T10:00:00.000", "2026-11-05T00:00:00.000")
    assert d.reuse == rd.Reuse("none", None, 0)
    assert d.steps == ("write_full_open", "take_snapshot", "write_event")
    assert d.error_kind == "none"
    assert d.warning.endswith(
        "Recovering into generation 1, sink app_id orders-v1.g1: taking a full snapshot."
    )


def test_an_unpurged_stream_does_nothing_and_clears_a_stale_recovering() -> None:
    state = GenerationState(recovering=StreamOffset(lsn(600), None))
    d = rd.decide(inputs(state=state, start=StreamOffset(lsn(600), None)))
    assert d.action == "none"
    assert d.steps == ("clear_recovering",)


def test_the_anti_loop_guard_is_a_data_loss_error_naming_the_interval() -> None:
    state = GenerationState(
        generation=1, snapshot=StreamOffset(lsn(50), None), at="2026-11-18T00:00:00+00:00"
    )
    d = rd.decide(inputs(state=state))
    assert d.action == "blocked"
    assert (d.error_kind, d.steps) == ("data_loss", ())
    assert not d.interval_ok
    error = rd.error_from(d)
    assert isinstance(error, DataLossError)
    assert "resnapshot_interval_days=7 of the previous re-snapshot" in str(error)
    assert error.capture_instance == "dbo_orders"
    assert error.lost_to_ts == "2026-11-05T00:00:00.000"
    assert rd.decide(inputs(state=state, interval_days=0)).action == "resnapshot"


def test_the_mode_lock_is_a_value_error() -> None:
    opens = (rd.OpenRow(0, "chunked", "bootstrap", StreamOffset(lsn(5), None)),)
    d = rd.decide(inputs(opens=opens))
    assert d.action == "blocked"
    assert d.error_kind == "invalid_argument"
    error = rd.error_from(d)
    assert isinstance(error, ConfigError)
    assert isinstance(error, ValueError)
    assert "cannot use snapshot='full'" in str(error)
    direct = rd.lock_violation("full", opens, (), PURGED, target="bronze.orders", app_id="a")
    assert direct is not None
    assert "backfill(bronze.orders, app_id=a, ...)" in direct


def test_a_completion_of_the_next_generation_is_reused_after_a_crash() -> None:
    completion = rd.CompletionRow(1, StreamOffset(lsn(700), "2026-11-19T00:00:00.000"))
    d = rd.decide(inputs(completions=(completion,)))
    assert d.reuse == rd.Reuse("completion", completion.lsn, 1)
    assert d.steps == ()


def test_the_target_snapshot_is_reused_and_concluded_into_the_state_to_write() -> None:
    snapshot = StreamOffset(lsn(800), "2026-11-20T11:00:00.000")
    d = rd.decide(inputs(newest_whole=snapshot))
    assert d.reuse.kind == "target"
    c = rd.conclude(d, snapshot, PURGED, GenerationState(), "2026-11-20T12:00:05.250+00:00")
    assert c.ok
    assert c.state_to_write == GenerationState(
        generation=1, snapshot=snapshot, at="2026-11-20T12:00:05+00:00"
    )
    assert (
        c.message
        == f"bronze.orders: generation 1 starts at {lsn(800)}; reused the snapshot at {lsn(800)}."
    )


def test_a_snapshot_purged_during_its_own_read_records_a_failed_attempt() -> None:
    state = GenerationState(recovering=START)
    d = rd.decide(inputs(state=state))
    later = rd.Observation(lsn(2000), (rd.Instance("dbo_orders", lsn(1), lsn(900), None),))
    c = rd.conclude(d, StreamOffset(lsn(850), None), later, state, NOW, rows=3, duration_ms=10)
    assert not c.ok
    assert c.state_to_write == GenerationState(recovering=START, failed_at=NOW)
    assert "took longer than the CDC retention" in c.message
    assert "snapshot='chunked'" in c.message
    assert "resnapshot_interval_days=0" in c.message


def test_resolve_start_prefers_an_open_recovery_and_guards_against_a_path_mix_up() -> None:
    base = rd.StartInputs(
        state=GenerationState(recovering=START),
        last_committed=StreamOffset(lsn(900), None),
        has_metadata=True,
        live_batches_in_facts=True,
        bootstrap=False,
        starting_lsn=None,
        newest_known=None,
        live_checkpoint="/ckpt",
    )
    assert rd.resolve_start(base) == rd.StartResult(START, "recovering")
    no_recovery = dataclasses.replace(base, state=GenerationState())
    assert rd.resolve_start(no_recovery).source == "checkpoint"
    mixed_up = dataclasses.replace(no_recovery, last_committed=None, has_metadata=False)
    with pytest.raises(ConfigError, match="Python cannot see Spark's commits in /ckpt"):
        rd.resolve_start(mixed_up)
    explicit = dataclasses.replace(mixed_up, live_batches_in_facts=False, starting_lsn="0x2a")
    assert rd.resolve_start(explicit) == rd.StartResult(StreamOffset(lsn(42), None), "starting_lsn")


def test_the_estimate_is_the_median_rate_against_half_the_retention() -> None:
    e = rd.estimate_snapshot(1_000_000, [(1000, 10_000), (3000, 10_000), (2000, 10_000)], 1.0)
    assert e.rows_per_second == 200.0
    assert e.seconds == 5000.0
    assert e.fits is False
    refused = rd.decide(inputs(estimate=e, duration_guard="refuse"))
    assert refused.action == "blocked"
    assert isinstance(rd.error_from(refused), DataLossError)
    assert "snapshot='chunked'" in refused.error_message


@pytest.mark.parametrize("interval", [-1.0, math.inf, math.nan])
def test_a_nonsense_interval_is_a_value_error(interval: float) -> None:
    with pytest.raises(ValueError, match="resnapshot_interval_days"):
        rd.decide(inputs(interval_days=interval))


def test_a_purge_test_without_the_instances_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="capture instance"):
        rd.decide(inputs(observation=rd.Observation(lsn(1000), ())))


def test_error_from_refuses_a_decision_that_is_not_blocked() -> None:
    with pytest.raises(ValueError, match="not 'blocked'"):
        rd.error_from(rd.decide(inputs()))


def test_a_decision_survives_the_trip_to_native_and_back() -> None:
    d = rd.decide(inputs(newest_whole=StreamOffset(lsn(800), None)))
    assert rd.Decision.from_native(dataclasses.asdict(d)) == d  # type: ignore[arg-type]
