"""backfill()'s pure decisions: the chunks of the next wave under target_wave_seconds, and the
refusal when the table's key is no longer the one the chunked open recorded."""

from __future__ import annotations

import pytest

from mssql_cdc.snapshot.wave_sizing import WaveTime, key_change, next_wave_chunks


def test_without_a_budget_a_wave_reads_the_default_chunks_whatever_was_measured() -> None:
    slow = [WaveTime(4, 400.0)]
    assert next_wave_chunks(slow, target_seconds=None, default=4, remaining=100) == 4
    assert next_wave_chunks([], target_seconds=None, default=4, remaining=3) == 3


def test_the_first_wave_of_a_call_reads_the_default_chunks() -> None:
    assert next_wave_chunks([], target_seconds=10.0, default=2, remaining=50) == 2


def test_a_wave_that_took_twice_the_budget_halves_the_next() -> None:
    # 8 chunks in 20 s: 2.5 s a chunk, so a 10 s budget holds 4.
    assert next_wave_chunks([WaveTime(8, 20.0)], target_seconds=10.0, default=8, remaining=99) == 4


def test_a_wave_far_over_the_budget_shrinks_the_next_by_half_at_most() -> None:
    # One slow wave (a busy source) must not cut the next to one chunk at once.
    waves = [WaveTime(8, 800.0)]
    assert next_wave_chunks(waves, target_seconds=10.0, default=8, remaining=99) == 4


def test_a_fast_wave_doubles_the_next_at_most() -> None:
    waves = [WaveTime(2, 0.5)]
    assert next_wave_chunks(waves, target_seconds=60.0, default=2, remaining=99) == 4


def test_a_fixed_cost_per_wave_is_told_apart_from_the_cost_per_chunk() -> None:
    # The oracle: seconds = 3 + 1.5 * chunks exactly; a 12 s budget then holds 6 chunks.
    waves = [WaveTime(2, 6.0), WaveTime(4, 9.0)]
    assert next_wave_chunks(waves, target_seconds=12.0, default=2, remaining=99) == 6


def test_a_budget_below_the_fixed_cost_still_reads_some_chunks() -> None:
    waves = [WaveTime(2, 6.0), WaveTime(4, 9.0)]  # 3 s per wave before any chunk
    assert next_wave_chunks(waves, target_seconds=1.0, default=2, remaining=99) == 2


def test_the_next_wave_never_reads_more_chunks_than_are_left_nor_none() -> None:
    waves = [WaveTime(4, 1.0)]
    assert next_wave_chunks(waves, target_seconds=100.0, default=4, remaining=3) == 3
    assert next_wave_chunks([WaveTime(1, 500.0)], target_seconds=1.0, default=1, remaining=9) == 1
    assert next_wave_chunks(waves, target_seconds=1.0, default=4, remaining=0) == 0


def test_waves_measured_at_no_time_grow_the_next_by_one_step() -> None:
    waves = [WaveTime(3, 0.0)]
    assert next_wave_chunks(waves, target_seconds=5.0, default=3, remaining=99) == 6


def test_noisy_waves_where_more_chunks_took_less_time_fall_back_to_the_mean_rate() -> None:
    # 12 chunks in 12 s over two waves: 1 s a chunk, so 5 fit in 5 s (within 2x of the last 8).
    waves = [WaveTime(4, 8.0), WaveTime(8, 4.0)]
    assert next_wave_chunks(waves, target_seconds=5.0, default=4, remaining=99) == 5


@pytest.mark.parametrize(
    ("recorded", "current"),
    [(["order_id"], ["order_id"]), (["Order_ID"], ["order_id"]), (["a", "b"], ["A", "B"])],
)
def test_the_same_key_in_any_case_lets_the_backfill_go_on(
    recorded: list[str], current: list[str]
) -> None:
    assert key_change(recorded, current) is None


def test_a_snapshot_opened_without_a_key_reads_one_chunk_that_no_key_change_breaks() -> None:
    assert key_change([], ["order_id"]) is None


@pytest.mark.parametrize(
    ("recorded", "current", "says"),
    [
        (["order_id"], ["code"], "planned on key (order_id), and the table's key is now (code)"),
        (["a", "b"], ["b", "a"], "planned on key (a, b), and the table's key is now (b, a)"),
        (["a", "b"], ["a"], "planned on key (a, b), and the table's key is now (a)"),
        (["order_id"], [], "the table's key is now (no usable unique key)"),
    ],
)
def test_another_key_names_both_the_recorded_and_the_current_one(
    recorded: list[str], current: list[str], says: str
) -> None:
    assert says in (key_change(recorded, current) or "")
