"""The recovery's order of work (spec 30 sections 5.4-5.9, 6.2, 6.4) against an in-memory world."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mssql_cdc.core.checkpoint import GenerationState, read_state, write_state
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.core.progress import progress_of
from mssql_cdc.core.recovery_decision import CompletionRow
from mssql_cdc.errors import ConfigError, DataLossError
from mssql_cdc.recovery.plan import plan_recovery
from mssql_cdc.recovery.preflight import recover
from mssql_cdc.testing import InjectedFault, clock, failpoints
from tests.unit.support.recovery_world import L, Source, World, commit_batch, ts

NOW = "2026-10-05T00:00:00+00:00"


@pytest.fixture
def world(tmp_path: Path) -> World:
    """Generation 0 with batch 0 committed at LSN 100; cleanup moved min_lsn to 300."""
    commit_batch(tmp_path, 0, 100)
    return World(checkpoint=tmp_path)


def run(world: World, **kw: object) -> GenerationState:
    with clock(NOW):
        return recover(world.request(**kw), world, world, Source(world))


def test_a_purged_range_re_snapshots_into_generation_one(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="mssql_cdc.recovery.preflight"):
        state = run(world)
    assert state == GenerationState(1, StreamOffset(L(400), ts(400)), "2026-10-05T00:00:00+00:00")
    assert read_state(world.checkpoint) == state
    kinds = [k for k, _ in world.journal]
    assert kinds == ["open_full", "append", "event"]
    _, (generation, seen) = world.journal[0]
    assert generation == 1
    assert seen == GenerationState(recovering=StreamOffset(L(100), ts(100)))
    assert world.journal[2][1] == (1, 3, ts(100), ts(300))
    warning, snapshot, info = (
        r for r in caplog.records if r.name == "mssql_cdc.recovery.preflight"
    )
    # What a user with logging configured sees, and what a progress bar reads: steps 1 to 3.
    steps = [progress_of(r) for r in (warning, snapshot, info)]
    assert [(p.task, p.subject, p.stage, p.done, p.total) for p in steps if p] == [
        ("recovery", "bronze.orders", "started", 1, 3),
        ("recovery", "bronze.orders", "advanced", 2, 3),
        ("recovery", "bronze.orders", "finished", 3, 3),
    ]
    assert snapshot.getMessage() == (
        f"bronze.orders: the snapshot generation 1 starts from is at {L(400)}"
    )
    assert warning.levelno == logging.WARNING
    assert f"purged the changes after {L(100)}" in warning.getMessage()
    assert "generation 1, sink app_id life-v1.g1: taking a full snapshot" in warning.getMessage()
    assert info.levelno == logging.INFO
    assert info.getMessage() == (
        f"bronze.orders: generation 1 starts at {L(400)}; snapshot of 3 rows in 1.5 s."
    )


def test_an_unpurged_range_writes_nothing_and_reads_no_instances_without_a_range(
    world: World,
) -> None:
    world.max_lsn = 100  # nothing captured after the start: no purge test at all
    assert run(world) == GenerationState()
    assert read_state(world.checkpoint) is None
    assert world.journal == []
    assert world.source_reads == ["max_lsn"]


def test_a_loss_finishes_the_live_generation_s_last_batch_before_it_records_recovering(
    world: World,
) -> None:
    run(world)
    # Before any state write: the generation left for good is finished while still live.
    assert world.finished == [(0, None)]


def test_a_pre_flight_without_a_loss_finishes_no_batch(world: World) -> None:
    world.max_lsn = 100
    run(world)
    assert world.finished == []


def test_a_pre_flight_without_a_loss_reads_no_snapshot_of_the_target(world: World) -> None:
    world.min_lsn = 101  # the first LSN after the committed 100 is still there
    world.whole = [StreamOffset(L(90), ts(90))]
    assert run(world, bootstrap=True) == GenerationState()
    assert world.source_reads == ["max_lsn", "instances"]
    assert world.target_reads == []  # each is a Spark query of seconds; no answer needs them


def test_a_loss_reads_the_targets_newest_whole_snapshot_and_reuses_it(world: World) -> None:
    world.whole = [StreamOffset(L(350), ts(350))]
    state = run(world, bootstrap=True)
    assert state.snapshot == StreamOffset(L(350), ts(350))
    assert [k for k, _ in world.journal] == ["event"]  # no second read of the table
    assert world.target_reads == ["whole"]


def test_a_bootstrap_start_without_a_committed_batch_reads_the_newest_known_snapshot(
    tmp_path: Path,
) -> None:
    world = World(checkpoint=tmp_path / "fresh")
    world.whole = [StreamOffset(L(100), ts(100))]
    state = run(world, bootstrap=True)
    assert state.generation == 1
    assert world.journal[0][1] == (1, GenerationState(recovering=StreamOffset(L(100), ts(100))))
    assert world.target_reads == ["known", "whole"]


def test_a_stale_recovering_is_cleared_when_the_range_is_not_purged(world: World) -> None:
    write_state(
        world.checkpoint,
        GenerationState(
            recovering=StreamOffset(L(350), ts(350)), failed_at="2026-10-01T00:00:00+00:00"
        ),
    )
    state = run(world)
    assert state.recovering is None
    assert state.failed_at == "2026-10-01T00:00:00+00:00"  # still counts for the guard
    assert read_state(world.checkpoint) == state
    assert world.journal == []


@pytest.mark.parametrize(
    "point",
    [
        "recovery.after_recovering",
        "snapshot.before_append",
        "snapshot.after_append",
        "recovery.after_event",
        "recovery.after_state",
    ],
)
def test_a_crash_at_any_step_is_finished_by_the_next_run_with_one_event(
    world: World, point: str
) -> None:
    with failpoints({point: "raise"}), pytest.raises(InjectedFault):
        run(world)
    after_crash = read_state(world.checkpoint)
    if point == "recovery.after_state":
        assert after_crash is not None
        assert after_crash.generation == 1
    else:
        assert after_crash == GenerationState(recovering=StreamOffset(L(100), ts(100)))
    state = run(world)
    assert state.generation == 1
    assert state.recovering is None
    events = [v for k, v in world.journal if k == "event"]
    assert len(events) == 1
    assert events[0][2] == ts(100)  # lost_from_ts of the first attempt's start
    appends = [k for k, _ in world.journal if k == "append"]
    assert len(appends) == 1  # no second read after a snapshot was appended
    if point == "snapshot.after_append":
        assert events[0][1] is None  # a reused target snapshot: rows unknown


def test_a_snapshot_purged_during_its_own_read_records_failed_at_and_raises(
    world: World,
) -> None:
    world.purge_during_read = 450
    with pytest.raises(DataLossError, match="took longer than the CDC retention"):
        run(world)
    state = read_state(world.checkpoint)
    assert state is not None
    assert state.generation == 0
    assert state.recovering == StreamOffset(L(100), ts(100))
    assert state.failed_at == "2026-10-05T00:00:00+00:00"
    assert not any(k == "event" for k, _ in world.journal)

    world.purge_during_read = None
    with pytest.raises(DataLossError, match="a failed re-snapshot"):
        run(world)
    assert [k for k, _ in world.journal].count("append") == 1  # the guard read nothing

    world.next_snapshot = 480
    state = run(world, interval_days=0.0)
    assert state.generation == 1
    assert state.snapshot == StreamOffset(L(480), ts(480))
    assert state.failed_at is None
    assert state.recovering is None


def test_a_second_loss_within_the_interval_raises_and_writes_nothing(world: World) -> None:
    write_state(
        world.checkpoint,
        GenerationState(1, StreamOffset(L(50), ts(50)), "2026-10-04T00:00:00+00:00"),
    )
    commit_batch(world.checkpoint / "_generations" / "1", 0, 100)
    before = (world.checkpoint / "_mssql_cdc_generation.json").read_bytes()
    with pytest.raises(DataLossError, match="resnapshot_interval_days=7"):
        run(world)
    assert (world.checkpoint / "_mssql_cdc_generation.json").read_bytes() == before
    assert world.journal == []
    state = run(world, interval_days=0.0)
    assert state.generation == 2


def test_a_chunked_recovery_opens_at_s_and_a_crash_after_the_open_reuses_it(
    world: World,
) -> None:
    with failpoints({"chunked.after_open": "raise"}), pytest.raises(InjectedFault):
        run(world, mode="chunked")
    state = run(world, mode="chunked")
    assert state.generation == 1
    assert state.snapshot == StreamOffset(L(500), ts(500))
    assert [k for k, _ in world.journal] == ["open_chunked"]
    assert world.journal[0][1] == (1, ts(100), ts(300))


def test_a_chunked_open_passed_by_cleanup_is_skipped_for_the_next_generation(
    world: World,
) -> None:
    with failpoints({"chunked.after_open": "raise"}), pytest.raises(InjectedFault):
        run(world, mode="chunked")
    world.max_lsn, world.min_lsn = 900, 700  # cleanup passed the open S = 500
    state = run(world, mode="chunked")
    assert state.generation == 2
    assert [v[0] for k, v in world.journal if k == "open_chunked"] == [1, 2]


def test_a_chunked_run_meeting_a_full_open_being_read_raises_the_lock(world: World) -> None:
    with failpoints({"snapshot.before_append": "raise"}), pytest.raises(InjectedFault):
        run(world)
    with pytest.raises(
        ConfigError, match=r"a full snapshot open at .* \(generation 1\) has not completed"
    ):
        run(world, mode="chunked")


def test_the_duration_guard_refuses_a_read_that_would_not_fit(world: World) -> None:
    from datetime import datetime

    from tests.unit.support.recovery_world import sample

    world.timings = [(1000, 10_000)]
    world.table_rows = 1_000_000
    world.samples = [sample(datetime(2026, 10, 4, 12), 0.5, retention_hours=1.0)]
    with pytest.raises(DataLossError, match="snapshot='chunked'"):
        run(world, duration_guard="refuse")
    assert read_state(world.checkpoint) is None
    assert world.journal == []


def test_plan_recovery_reports_the_next_run_and_changes_nothing(world: World) -> None:
    world.completions.append(CompletionRow(0, StreamOffset(L(20), ts(20))))
    with clock(NOW):
        plan = plan_recovery(world.request(), world, Source(world))
    assert plan["action"] == "resnapshot"
    assert plan["next_generation"] == 1
    assert plan["interval_ok"]
    assert plan["start"] == {"lsn": L(100), "commit_ts": ts(100)}
    assert plan["reuse"] is None
    assert read_state(world.checkpoint) is None
    assert world.journal == []
    state = run(world)
    assert state.generation == plan["next_generation"]
